"""A cache store on an S3-compatible object store (boto3; the ``s3`` extra).

Objects: ``<prefix>entries/<key>`` holds an entry's bytes, ``<prefix>leases/<key>`` a lease,
whose body is ``{"owner": ..., "expires": <unix time>}``.

- ``put`` is one ``PutObject``: S3 makes an object visible whole or not at all, and
  acknowledges only once it is stored durably.
- ``try_lease`` creates the lease object with ``PutObject(IfNoneMatch="*")``, which the
  server refuses (412, or 409 for a conflicting concurrent conditional write) when the
  object exists, so exactly one of several owners creates it. When it exists: the caller's
  own lease is renewed with ``PutObject(IfMatch=<etag>)``; another owner's lease that has
  expired is removed with ``DeleteObject(IfMatch=<etag>)`` (so two takers can't delete a
  lease a third just created) and the create is tried again, at most three rounds (each
  round that fails means another owner made progress; the caller reports "not leased").
- ``release`` deletes the lease with ``DeleteObject(IfMatch=<etag>)`` only after reading that
  the caller owns it.

Expiry is judged on the *server's* clock, so client clocks don't matter (a process whose
clock is two minutes ahead can't take a live lease): a lease body is ``{"owner", "ttl"}``,
the lease expires ``ttl`` seconds after the object's ``LastModified`` (set by the server at
the create or the renewal), and "now" is the ``Date`` header of the server's answer to the
read of the lease. Both have one-second resolution, so a lease may end up to a second early
or late (far below the default 30 s ttl). A server that sends no ``Date`` header leaves
"now" to this machine's clock, which then must agree with the server's within the ttl.
With an injected ``clock`` (tests), expiry is judged by it instead: the body then says
``expires`` (clock + ttl), as leases did before. An unreadable lease body counts as expired.

Server support: AWS S3 has honoured ``If-None-Match`` on PutObject since August 2024 and
``If-Match`` on DeleteObject since September 2025. moto (5.x) checks both headers, but as a
read followed by a write inside one request, not atomically across requests served by
different threads of its threaded server; the tests therefore run moto's server with one
request thread, which gives the serialised behaviour S3 guarantees (docs/remote-cache.md).

Degenerate cases: ``cleanup`` does nothing (a stale lease is removed by the next owner who
wants it); a missing bucket is an error from the first call, not created here.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_llmjudge.errors import ConfigError, MissingDependencyError
from pytest_llmjudge.execution.stores.base import check_ttl

DEFAULT_PREFIX = "llmjudge/"
_LOST = {"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "404", "409", "412"}
_ROUNDS = 3


class S3Store:
    """Cache entries and leases as objects under one bucket prefix."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] | None = None,
        *,
        owns_client: bool = False,
    ) -> None:
        """``client`` is a boto3 S3 client; ``close`` closes it only if ``owns_client``."""
        self._client = client
        self._owns_client = owns_client
        self._bucket = bucket
        self._prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._clock = clock

    @classmethod
    def from_url(cls, url: str, *, clock: Callable[[], float] | None = None) -> S3Store:
        """``s3://bucket/prefix?endpoint_url=...&region=...&addressing_style=path|virtual``.

        Credentials come from boto3's usual chain (environment, config files, instance
        role), never from the URL.
        """
        try:
            import boto3
            from botocore.config import Config
        except ImportError as error:
            raise MissingDependencyError("boto3", "s3", "The S3 cache store") from error
        parts = urlsplit(url)
        if not parts.netloc:
            raise ConfigError(f"S3 cache URL {url!r} names no bucket (s3://bucket/prefix)")
        options = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        unknown = set(options) - {"endpoint_url", "region", "addressing_style"}
        if unknown:
            raise ConfigError(f"S3 cache URL {url!r}: unknown option(s) {', '.join(sorted(unknown))}")
        endpoint = options.get("endpoint_url")
        # A custom endpoint (MinIO, moto, Ceph) usually has no per-bucket DNS names: path style.
        style = options.get("addressing_style", "path" if endpoint else "auto")
        client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint,
            region_name=options.get("region"),
            # A wrong endpoint fails the start-up probe in seconds (connect timeout, 3 attempts).
            config=Config(
                s3={"addressing_style": style},
                max_pool_connections=32,
                connect_timeout=5,
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        )
        prefix = parts.path.lstrip("/")
        return cls(client, parts.netloc, prefix if prefix else DEFAULT_PREFIX, clock, owns_client=True)

    @property
    def client(self) -> Any:
        """The boto3 client (run history keeps its objects beside the cache: ``history.py``)."""
        return self._client

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def prefix(self) -> str:
        return self._prefix

    def _entry(self, key: str) -> str:
        return f"{self._prefix}entries/{key}"

    def _lease(self, key: str) -> str:
        return f"{self._prefix}leases/{key}"

    def get(self, key: str) -> bytes | None:
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=self._entry(key))
        except self._client.exceptions.NoSuchKey:
            return None
        return bytes(response["Body"].read())

    def put(self, key: str, data: bytes) -> None:
        self._client.put_object(Bucket=self._bucket, Key=self._entry(key), Body=data)

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        for key, data in entries:  # S3 has no multi-object put
            self.put(key, data)

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        check_ttl(ttl_seconds)
        name = self._lease(key)
        for _ in range(_ROUNDS):
            record: dict[str, Any] = {"owner": owner, "ttl": ttl_seconds}
            if self._clock is not None:
                record["expires"] = self._clock() + ttl_seconds
            body = json.dumps(record).encode()
            if self._conditional(self._client.put_object, Bucket=self._bucket, Key=name, Body=body, IfNoneMatch="*"):
                return True
            current = self._read_lease(name)
            if current is None:  # released between our create and our read: try again
                continue
            holder, left, etag = current
            if holder == owner:
                if self._conditional(self._client.put_object, Bucket=self._bucket, Key=name, Body=body, IfMatch=etag):
                    return True
                continue
            if left > 0:
                return False
            self._conditional(self._client.delete_object, Bucket=self._bucket, Key=name, IfMatch=etag)
        return False

    def release(self, key: str, owner: str) -> None:
        name = self._lease(key)
        current = self._read_lease(name)
        if current is not None and current[0] == owner:
            self._conditional(self._client.delete_object, Bucket=self._bucket, Key=name, IfMatch=current[2])

    def lease_holder(self, key: str) -> tuple[str, float] | None:
        """(owner, seconds left by the server's clock) of the live lease on ``key``, or None."""
        current = self._read_lease(self._lease(key))
        if current is None or current[1] <= 0:
            return None
        return current[0], current[1]

    def cleanup(self) -> None:
        """Nothing to do: an expired lease is removed by the next owner who wants the key."""

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _read_lease(self, name: str) -> tuple[str, float, str] | None:
        """(owner, seconds left, etag) of the lease object, or None if there is none."""
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=name)
        except self._client.exceptions.NoSuchKey:
            return None
        etag = str(response["ETag"])
        try:
            record = json.loads(response["Body"].read())
            owner = str(record["owner"])
            if self._clock is not None:
                return owner, float(record["expires"]) - self._clock(), etag
            modified = response["LastModified"].timestamp()
            return owner, modified + float(record["ttl"]) - _server_now(response), etag
        except (ValueError, KeyError, TypeError, AttributeError):
            return "", float("-inf"), etag  # unreadable (or an old client's): expired, so it can be taken over

    @staticmethod
    def _conditional(call: Callable[..., Any], **kwargs: Any) -> bool:
        """Run a conditional request: True if it applied, False if its precondition failed."""
        from botocore.exceptions import ClientError

        try:
            call(**kwargs)
        except ClientError as error:
            if str(error.response.get("Error", {}).get("Code")) in _LOST:
                return False
            raise
        return True


def _server_now(response: Mapping[str, Any]) -> float:
    """The server's clock when it answered (its ``Date`` header); this machine's clock if it sent none."""
    date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    if date:
        try:
            return email.utils.parsedate_to_datetime(str(date)).timestamp()
        except (TypeError, ValueError):
            pass
    return time.time()
