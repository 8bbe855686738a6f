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
``<root>/v1/<key[:2]>/<key>.json``); this layer is store-agnostic.

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

Degenerate cases: ``mode="off"`` neither reads nor writes; ``mode="refresh"`` writes
without reading; no root means off. Entries written before checksums existed are rejected
once and re-asked.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.stores.base import CacheStore
from pytest_llmjudge.judges.base import ProviderReply, ProviderRequest, Usage, canonical_json

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
    """``text`` with every secret (length >= 4) replaced by ``***``, longest first."""
    # Longest first, so a secret that extends another is hidden whole.
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _MIN_REDACTED:
            text = text.replace(secret, "***")
    return text


def _digit_tokens(value: Any) -> tuple[tuple[int, str, tuple[tuple[str, float], ...]], ...] | None:
    """A stored reply's integer tokens (``ProviderReply.digit_tokens``); ``TypeError`` when malformed."""
    if value is None:
        return None
    return tuple(
        (int(offset), str(token), tuple((str(alt), float(logprob)) for alt, logprob in alternatives))
        for offset, token, alternatives in value
    )


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
        self._secret = secret.encode("utf-8") if secret else None
        self.secrets: tuple[str, ...] = (secret,) if secret else ()
        self.on_reject: Callable[[str, str], None] | None = None
        """Called with (key, reason) for every entry a read rejects."""
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._claims = itertools.count()

    def add_secret(self, secret: str | None) -> None:
        """Redact ``secret`` from every reply stored from now on."""
        if secret and secret not in self.secrets:
            self.secrets = (*self.secrets, secret)

    # -- reading -----------------------------------------------------------------------

    def get(self, key: str) -> CachedReply | None:
        """The verified entry under ``key``; None for a miss or a rejected entry."""
        if self.mode != "use" or self.store is None:
            return None
        data = self.store.get(key)
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
            self.store.put(key, data)
        return stored

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
        if self.mode == "off" or self.store is None:
            return Lease(None, key, "")
        owner = f"{self._owner}:{next(self._claims)}"
        return Lease(self.store, key, owner) if self.store.try_lease(key, owner, ttl_seconds) else None

    def cleanup(self) -> None:
        """Remove what killed processes left in the store (temporary files, free leases)."""
        if self.mode != "off" and self.store is not None:
            self.store.cleanup()

    def close(self) -> None:
        """Release the leases still held and the store's resources."""
        if self.store is not None:
            self.store.close()
