"""A cache store on a Redis server (redis-py's sync client; the ``redis`` extra).

Keys: ``<prefix>e:<key>`` holds an entry's bytes, ``<prefix>l:<key>`` a lease (its value
is the owner). The default prefix ``llmjudge:`` lets one Redis database serve several
projects with different prefixes.

- ``put`` is one ``SET``: atomic (Redis applies a command whole). It returns when the server
  has acknowledged it; whether it survives a *server* crash is the server's persistence
  setting (AOF ``appendfsync always`` for every write, ``everysec`` loses at most about a
  second, no persistence loses everything), not something a client can add.
- ``try_lease`` is ``SET <lease> <owner> NX PX <ttl>``: Redis decides the one winner and
  expires the lease on its own clock, so client clocks don't matter. If the key is taken,
  a Lua script restarts the ttl when the caller already is the owner (one round trip,
  atomic: no other command runs in between).
- ``lease_holder`` reads a lease's owner and the time it has left (``PTTL``, the server's
  clock) in one ``MULTI``, for the waiters' messages.
- ``release`` is a Lua script that deletes the lease only while its value is the owner, so
  an owner whose lease expired and was taken over can't free the new owner's lease.

Degenerate cases: a ttl below a millisecond rounds up to 1 ms (``PX`` takes integers);
``cleanup`` does nothing (Redis expires leases itself).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pytest_llmjudge.errors import ConfigError, MissingDependencyError
from pytest_llmjudge.execution.stores.base import check_ttl

DEFAULT_PREFIX = "llmjudge:"

# KEYS[1] lease key; ARGV[1] owner, ARGV[2] ttl in ms. 1 if the owner holds it (ttl restarted).
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
end
return 0
"""

# KEYS[1] lease key; ARGV[1] owner. Deletes only the caller's own lease.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisStore:
    """Cache entries and leases in one Redis database."""

    def __init__(self, client: Any, prefix: str = DEFAULT_PREFIX) -> None:
        self._client = client
        self._prefix = prefix
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @classmethod
    def from_url(cls, url: str) -> RedisStore:
        """``redis://[user:password@]host:port/db?prefix=...`` (also ``rediss://`` for TLS)."""
        try:
            import redis
        except ImportError as error:
            raise MissingDependencyError("redis", "redis", "The Redis cache store") from error
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        prefix = DEFAULT_PREFIX
        rest = []
        for name, value in query:
            if name == "prefix":
                prefix = value
            else:
                rest.append((name, value))
        try:
            # Bounded waits (the URL's own socket_timeout / socket_connect_timeout win): a wrong
            # host fails the start-up probe in seconds, not after the system's TCP timeout.
            client = redis.Redis.from_url(
                urlunsplit(parts._replace(query=urlencode(rest))), socket_connect_timeout=5.0, socket_timeout=30.0
            )
        except ValueError as error:
            raise ConfigError(f"invalid Redis cache URL {_redact(url)}: {error}") from error
        return cls(client, prefix)

    @property
    def client(self) -> Any:
        """The redis-py client (run history keeps its list beside the cache: ``history.py``)."""
        return self._client

    @property
    def prefix(self) -> str:
        return self._prefix

    def _entry(self, key: str) -> str:
        return f"{self._prefix}e:{key}"

    def _lease(self, key: str) -> str:
        return f"{self._prefix}l:{key}"

    def get(self, key: str) -> bytes | None:
        value = self._client.get(self._entry(key))
        return None if value is None else bytes(value)

    def put(self, key: str, data: bytes) -> None:
        self._client.set(self._entry(key), data)

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        pipeline = self._client.pipeline(transaction=False)  # one round trip; SETs apply in order
        for key, data in entries:
            pipeline.set(self._entry(key), data)
        pipeline.execute()

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        check_ttl(ttl_seconds)
        ttl_ms = max(1, math.ceil(ttl_seconds * 1000))
        if self._client.set(self._lease(key), owner, nx=True, px=ttl_ms):
            return True
        return bool(self._renew(keys=[self._lease(key)], args=[owner, ttl_ms]))

    def release(self, key: str, owner: str) -> None:
        self._release(keys=[self._lease(key)], args=[owner])

    def lease_holder(self, key: str) -> tuple[str, float] | None:
        """(owner, seconds left by the server's clock) of the lease on ``key``, or None if it is free."""
        pipeline = self._client.pipeline(transaction=True)  # MULTI/EXEC: both read at one moment
        pipeline.get(self._lease(key))
        pipeline.pttl(self._lease(key))
        owner, left_ms = pipeline.execute()
        if owner is None or left_ms is None or left_ms < 0:
            return None
        return bytes(owner).decode("utf-8", "replace"), left_ms / 1000.0

    def cleanup(self) -> None:
        """Nothing to do: Redis expires leases on its own clock."""

    def close(self) -> None:
        self._client.close()


def _redact(url: str) -> str:
    """The URL without its password, for error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
