"""The judge reply cache: content-addressed, verified on every read, optionally signed.

Key: ``sha256`` of the canonical JSON (sorted keys, no whitespace) of everything that
shapes a reply: provider, endpoint, model, full system and user prompt (which contains the
rubric text), temperature, seed, max tokens and response format (``ProviderRequest.
cache_payload``). Credentials are never part of a request payload, so never in the cache:
API keys aren't request fields, and the endpoint enters without the user info and
credential-like query parameters a URL can carry (``judges.base.public_url``). Retry
counts and timeouts are left out: they don't change a reply.

An entry is one canonical JSON object: ``key``, ``request`` (the payload), ``reply``
(text, the served model, usage, and OpenAI's ``system_fingerprint`` when the reply had one:
the served identity the drift sentinel compares, ``calibration/drift/``; and the integer
tokens' log-probabilities when ``scoring: expected`` asked for them, ``judges/logprobs.py``), ``reply_sha256`` (sha256 of the reply's canonical JSON), creation
time, and with a secret (``LLMJUDGE_CACHE_SECRET``) ``hmac_sha256`` = HMAC-SHA256(secret,
key NL canonical request NL canonical reply). ``request`` is its last member, so a read
hashes the request's stored bytes as they are (no re-serialising): verifying costs two
sha256 of a few kilobytes per read, and the request is never parsed.

The bytes live in a :class:`~pytest_llmjudge.execution.stores.base.CacheStore` (by
default :class:`~pytest_llmjudge.execution.cache_directory.DirectoryStore`,
``<root>/v1/<key[:2]>/<key>.json``); this layer is store-agnostic. With a secret, the store
is seen through a :class:`~pytest_llmjudge.execution.stores.namespace.NamespacedStore`:
signed entries are stored under ``<key id><key>`` (the key id names the secret), so jobs
with different secrets keep apart.

Leases (:meth:`JudgeCache.lease`) let concurrent processes on one store pay once per
prompt: whoever holds a key's lease is asking the judge for it, the others wait for its
entry (``execution/runner.py``).

A read uses an entry only if it is well formed, its request hashes to the key it was
asked for (a copied or misplaced file is not), its reply matches ``reply_sha256`` (a
naive edit is not), and, with a secret set, its HMAC verifies (unsigned entries and
entries signed with another secret are not). Anything else is *rejected*: it reads as a
miss, is reported to ``on_reject`` (the runner counts them) and is overwritten by the
fresh reply. Without a secret the checksum only catches accidents and naive edits: whoever
can write the directory can recompute it. Signing is what stops a deliberate forgery.

Before a reply is stored, every configured secret (API keys, the cache secret; see
``add_secret``) is replaced with ``***`` in its text and model, so a provider that echoes
a key doesn't put it on disk. The stored (redacted) reply is what the run then uses, so a
fresh and a cached run judge the same text.

**A cache location that can't be used** (a read-only or full file system, a file where the
directory should be, a directory that can't be created): the run goes on, and nothing paid
for is lost. The first ``OSError`` of a write (or of taking a lease, which creates the
directory) stops the writes for the rest of the run; replies are then kept in memory
(:meth:`JudgeCache.keep`), so a reply paid for is used and never asked for twice in the
run, and reads of what the store already holds go on (a read-only cache still serves its
entries). The first ``OSError`` of a read stops the reads. :attr:`JudgeCache.failure` says
what failed, where and why (``not a directory``, ``read-only file system``, ``no space left
on device``), once, for the run's headline.

Degenerate cases: ``mode="off"`` neither reads nor writes; ``mode="refresh"`` writes
without reading; no root means off. Entries written before checksums existed are rejected
once and re-asked.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import itertools
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.stores.base import CacheStore
from pytest_llmjudge.execution.stores.namespace import NamespacedStore, key_id
from pytest_llmjudge.judges.base import ProviderReply, ProviderRequest, Usage, canonical_json
from pytest_llmjudge.util.redaction import secret_forms

CacheMode = Literal["use", "refresh", "off"]
SECRET_ENV = "LLMJUDGE_CACHE_SECRET"
_LAYOUT_VERSION = "v1"
_REQUEST_MEMBER = b',"request":'
_MIN_REDACTED = 4


def cache_key(payload: Mapping[str, Any]) -> str:
    """Hex sha256 of the canonical JSON of ``payload`` (for a request: ``ProviderRequest.cache_key``)."""
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def secret_from_environment(environ: Mapping[str, str] = os.environ) -> str | None:
    """The cache signing secret (``LLMJUDGE_CACHE_SECRET``), or None when unset or empty."""
    return environ.get(SECRET_ENV) or None


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (length >= 4) replaced by ``***`` in each of its spellings, longest first.

    The spellings are :func:`pytest_llmjudge.util.redaction.secret_forms`' (stripped, escaped,
    URL-encoded), so a key read with its file's newline is hidden where it appears stripped.
    """
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) >= _MIN_REDACTED:
            forms.add(secret)
            forms |= secret_forms(secret)
    # Longest first, so a secret that extends another is hidden whole.
    for form in sorted(forms, key=lambda form: (-len(form), form)):
        if form in text:
            text = text.replace(form, "***")
    return text


def _digit_tokens(value: Any) -> tuple[tuple[int, str, tuple[tuple[str, float], ...]], ...] | None:
    """A stored reply's integer tokens (``ProviderReply.digit_tokens``); ``TypeError`` when malformed."""
    if value is None:
        return None
    return tuple(
        (int(offset), str(token), tuple((str(alt), float(logprob)) for alt, logprob in alternatives))
        for offset, token, alternatives in value
    )


_CAUSES = {
    errno.ENOTDIR: "not a directory",
    errno.EEXIST: "not a directory",
    errno.EISDIR: "a directory where a file should be",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (a full disk or a file size limit)",
}


def os_error_cause(exc: OSError) -> str:
    """``exc`` in plain words with the path it names: ``read-only file system: /x/.llmjudge_cache/v1/packs``."""
    cause = _CAUSES.get(exc.errno or 0) or (os.strerror(exc.errno).lower() if exc.errno else str(exc))
    return f"{cause}: {exc.filename}" if exc.filename else cause


class Lease:
    """A claim on paying for one key; ``release`` (idempotent) ends it."""

    def __init__(self, store: CacheStore | None, key: str, owner: str) -> None:
        self._store, self.key, self.owner = store, key, owner

    def release(self) -> None:
        if self._store is not None:
            self._store.release(self.key, self.owner)
            self._store = None


@dataclass(frozen=True)
class CachedReply:
    key: str
    reply: ProviderReply
    created: float | None = None
    """When the reply was stored (Unix time), if the entry says."""


class JudgeCache:
    """Reads (verifying) and writes (redacting, signing) judge replies in a store."""

    def __init__(
        self,
        root: Path | None,
        mode: CacheMode = "use",
        *,
        secret: str | None = None,
        store: CacheStore | None = None,
    ) -> None:
        self.mode: CacheMode = mode if root is not None or store is not None else "off"
        self.root = root / _LAYOUT_VERSION if root is not None else None
        """The directory for run-scoped files beside the entries (xdist sharing, batch records)."""
        self.store: CacheStore | None = store or (DirectoryStore(self.root) if self.root is not None else None)
        if secret and self.store is not None:
            # Signed entries live under their secret's key id: jobs with different secrets
            # neither overwrite nor reject each other's entries (stores/namespace.py).
            self.store = NamespacedStore(self.store, key_id(secret))
        self._secret = secret.encode("utf-8") if secret else None
        self.secrets: tuple[str, ...] = (secret,) if secret else ()
        self.on_reject: Callable[[str, str], None] | None = None
        """Called with (key, reason) for every entry a read rejects."""
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._claims = itertools.count()
        self.failure: str | None = None
        """Why the store stopped being written or read this run (the first ``OSError``), or None."""
        self._no_writes = False
        self._no_reads = False
        self._memory: dict[str, CachedReply] = {}
        """Replies of this run that could not be stored: used for the rest of the run."""
        self._failure_lock = threading.Lock()

    def add_secret(self, secret: str | None) -> None:
        """Redact ``secret`` from every reply stored from now on."""
        if secret and secret not in self.secrets:
            self.secrets = (*self.secrets, secret)

    # -- reading -----------------------------------------------------------------------

    def get(self, key: str) -> CachedReply | None:
        """The verified entry under ``key``; None for a miss or a rejected entry."""
        if self._memory:
            kept = self._memory.get(key)
            if kept is not None:
                return kept
        if self.mode != "use" or self.store is None or self._no_reads:
            return None
        try:
            data = self.store.get(key)
        except OSError as exc:
            self.failed("read", exc)
            return None
        if data is None:
            return None
        checked = self._checked(key, data)
        if isinstance(checked, str):
            if self.on_reject is not None:
                self.on_reject(key, checked)
            return None
        return checked

    def _checked(self, key: str, data: bytes) -> CachedReply | str:
        """The entry in ``data`` if it verifies as the answer under ``key``, else why not.

        An entry is canonical JSON whose last member is ``request`` (:meth:`put`), so the
        request's exact bytes are hashed against the key without being parsed or
        re-serialised: one sha256 over the request and one over the (small) reply.
        """
        head, mark, tail = data.partition(_REQUEST_MEMBER)
        if not mark or not tail.endswith(b"}"):
            return "not a cache entry"
        request = tail[:-1]
        try:
            record = json.loads(head + b"}")
            reply = record["reply"]
            text, model, usage = reply["text"], reply["model"], reply["usage"]
            tokens_in, tokens_out = usage["input_tokens"], usage["output_tokens"]
            checksum, created = record["reply_sha256"], record.get("created_unix")
            fingerprint = reply.get("system_fingerprint")
            tokens = _digit_tokens(reply.get("digit_tokens"))
        except (ValueError, KeyError, TypeError, AttributeError):
            return "not a cache entry"
        if not (
            isinstance(text, str) and isinstance(model, str) and type(tokens_in) is int and type(tokens_out) is int
        ) or not (fingerprint is None or isinstance(fingerprint, str)):
            return "wrongly shaped entry"
        if hashlib.sha256(request).hexdigest() != key:
            return "its request does not hash to its key (a copied or misplaced entry)"
        canonical_reply = canonical_json(reply)
        if hashlib.sha256(canonical_reply).hexdigest() != checksum:
            return "its reply does not match its checksum (edited or damaged)"
        if self._secret is not None:
            signature = record.get("hmac_sha256")
            if not isinstance(signature, str):
                return "unsigned, and a cache secret is set"
            if not hmac.compare_digest(signature, self._sign(key, request, canonical_reply)):
                return "its signature does not verify with this cache secret"
        return CachedReply(
            key=key,
            reply=ProviderReply(
                text=text, model=model, usage=Usage(tokens_in, tokens_out), fingerprint=fingerprint, digit_tokens=tokens
            ),
            created=float(created) if isinstance(created, (int, float)) else None,
        )

    def _sign(self, key: str, canonical_request: bytes, canonical_reply: bytes) -> str:
        assert self._secret is not None
        message = key.encode("ascii") + b"\n" + canonical_request + b"\n" + canonical_reply
        return hmac.digest(self._secret, message, "sha256").hex()  # one-shot: the C fast path

    # -- writing -----------------------------------------------------------------------

    def put(self, key: str, payload: Mapping[str, Any] | ProviderRequest, reply: ProviderReply) -> ProviderReply:
        """Store ``reply`` (redacted) as the answer to ``payload``; return the reply as stored.

        ``key`` must be ``cache_key(payload)``: an entry that couldn't be verified on read
        would only cost a re-ask later, so a mismatch is refused here, as the bug it is.
        """
        data, stored = self.encode(key, payload, reply)
        if data is not None and self.store is not None:
            if self._no_writes:
                self.keep(key, stored)
                return stored
            try:
                self.store.put(key, data)
            except OSError as exc:
                self.failed("write", exc)
                self.keep(key, stored)
        return stored

    # -- a location that can't be used -------------------------------------------------

    @property
    def writable(self) -> bool:
        """Whether replies still go to the store (False once a write failed: they are kept in memory)."""
        return self.mode != "off" and self.store is not None and not self._no_writes

    def check_location(self) -> None:
        """Look (without writing) whether the store's location can take writes; stop them now if not.

        Called when judge calls are about to be made (the runner's start, an xdist worker's):
        a file where the directory belongs, a read-only or full file system is found before
        anything is paid for, and xdist workers don't wait for replies no one can store.
        """
        probe = getattr(self.store, "location_problem", None)
        if self.mode == "off" or self._no_writes or probe is None:
            return
        problem = probe()
        if problem is not None:
            self.failed("start", problem)

    def failed(self, operation: str, exc: OSError) -> None:
        """Note that ``operation`` (``start``, ``write``, ``lease``, ``read``) failed: stop it for the rest of the run."""
        with self._failure_lock:
            if operation == "read":
                self._no_reads = True
            else:
                self._no_writes = True
            if self.failure is None:
                where = "at start" if operation == "start" else f"on {operation}"
                self.failure = f"{os_error_cause(exc)}, found {where}"

    def keep(self, key: str, reply: ProviderReply) -> None:
        """Hold a reply that could not be stored, for the rest of the run (a later read finds it)."""
        with self._failure_lock:
            self._memory[key] = CachedReply(key=key, reply=reply, created=time.time())

    @property
    def kept(self) -> int:
        """Replies held in memory because the store could not take them."""
        return len(self._memory)

    @property
    def warnings(self) -> list[str]:
        """What the store ignored in its location (foreign entries in the pack folder), if it says."""
        return list(getattr(self.store, "warnings", ()) or ())

    def encode(
        self, key: str, payload: Mapping[str, Any] | ProviderRequest, reply: ProviderReply
    ) -> tuple[bytes | None, ProviderReply]:
        """The entry bytes :meth:`put` would store under ``key`` (None when the cache is off), and the reply as stored.

        For callers that write entries in batches (``store.put_many``: the runner). A
        :class:`ProviderRequest` brings its canonical bytes and key, computed once per request,
        so the check that ``key`` is its hash is a comparison, not a second hashing.
        """
        if self.secrets:
            reply = ProviderReply(
                text=redact(reply.text, self.secrets),
                model=redact(reply.model, self.secrets),
                usage=reply.usage,
                fingerprint=reply.fingerprint,
                digit_tokens=reply.digit_tokens,
            )
        if self.mode == "off" or self.store is None:
            return None, reply
        if isinstance(payload, ProviderRequest):
            canonical_request, actual = payload.canonical_payload, payload.cache_key
        else:
            canonical_request = canonical_json(payload)
            actual = hashlib.sha256(canonical_request).hexdigest()
        if actual != key:
            raise ValueError(f"cache key {key[:12]}... is not the hash of the request it is stored with")
        stored: dict[str, Any] = {
            "text": reply.text,
            "model": reply.model,
            "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
        }
        if reply.fingerprint is not None:  # only when given: entries without one keep their checksum
            stored["system_fingerprint"] = reply.fingerprint
        if reply.digit_tokens is not None:  # scoring: expected reads them from cached replies too
            stored["digit_tokens"] = [[o, t, [list(a) for a in alts]] for o, t, alts in reply.digit_tokens]
        canonical_reply = canonical_json(stored)
        record: dict[str, Any] = {
            "key": key,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "created_unix": time.time(),
            "reply": stored,
            "reply_sha256": hashlib.sha256(canonical_reply).hexdigest(),
        }
        if self._secret is not None:
            record["hmac_sha256"] = self._sign(key, canonical_request, canonical_reply)
        # Canonical JSON with the request as its last member ("request" sorts after every
        # other member), spliced in as the very bytes its key was hashed from.
        return canonical_json(record)[:-1] + _REQUEST_MEMBER + canonical_request + b"}", reply

    # -- coordination ------------------------------------------------------------------

    def lease(self, key: str, ttl_seconds: float) -> Lease | None:
        """An exclusive claim on paying for ``key``, or None while someone else holds one.

        Every claim has its own owner id, so two claims never share a lease. A lease not
        released within ``ttl_seconds`` expires (its holder is taken as hung). Without a
        store (cache off) there is no one to coordinate with: the claim is granted.
        """
        if self.mode == "off" or self.store is None or self._no_writes:
            return Lease(None, key, "")  # nothing to coordinate through (writes stopped: see failed)
        owner = f"{self._owner}:{next(self._claims)}"
        try:
            taken = self.store.try_lease(key, owner, ttl_seconds)
        except OSError as exc:  # the lock file's directory can't be made: nor can any entry
            self.failed("lease", exc)
            return Lease(None, key, "")
        return Lease(self.store, key, owner) if taken else None

    def cleanup(self) -> None:
        """Remove what killed processes left in the store (temporary files, free leases)."""
        if self.mode != "off" and self.store is not None:
            self.store.cleanup()

    def close(self) -> None:
        """Release the leases still held and the store's resources."""
        if self.store is not None:
            self.store.close()
