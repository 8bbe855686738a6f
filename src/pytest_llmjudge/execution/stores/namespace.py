"""Signed entries live under their secret's key id, and a shared store records which key ids wrote to it.

With ``LLMJUDGE_CACHE_SECRET`` set, the cache layer signs every entry and trusts no other
(``execution/cache.py``). Jobs with different secrets on one store used to write the same
keys: each overwrote the other's entries and re-paid them, run after run, with only "N cache
entries rejected" to show for it. Now:

* :class:`NamespacedStore` stores a signed entry (and its lease) under ``<key id><key>``,
  where the key id is the first 8 hex digits of ``sha256("llmjudge cache key id" NL secret)``
  (:func:`key_id`: it names the secret without revealing it). Jobs with different secrets
  never touch each other's entries; unsigned entries (no secret) keep their plain keys.
  Keys stay hex, so the directory store's layout and lock offsets work unchanged.
* :func:`check_signing` keeps, in the shared store's entry ``llmjudge-signed-keys``, the key
  ids that have written to it. A run with a secret adds its own and is told of the others
  (it can't verify their entries and pays for its own: said at start, not silent). A run
  *without* a secret on a store that holds signed entries is refused (``StoreUnavailableError``):
  it could only trust unsigned entries, which whoever can write the store can forge.

Degenerate cases: the list is read-modify-written, so two jobs adding their ids at the same
moment may lose one; the next run of that job adds it again. An unreadable list counts as
empty. Attributes the wrapped store has beyond the protocol (``failure``, ``written_back``)
are read through.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from pytest_llmjudge.errors import StoreUnavailableError
from pytest_llmjudge.execution.stores.base import CacheStore, lease_holder

SIGNED_KEYS = "llmjudge-signed-keys"


def key_id(secret: str) -> str:
    """The public name of a cache secret: 8 hex digits of a hash of it."""
    return hashlib.sha256(b"llmjudge cache key id\n" + secret.encode("utf-8")).hexdigest()[:8]


class NamespacedStore:
    """``store`` with every key prefixed by ``namespace``."""

    def __init__(self, store: CacheStore, namespace: str) -> None:
        self.inner = store
        self.namespace = namespace

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, key: str) -> bytes | None:
        return self.inner.get(self.namespace + key)

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(self.namespace + key, data)

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        self.inner.put_many([(self.namespace + key, data) for key, data in entries])

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        return self.inner.try_lease(self.namespace + key, owner, ttl_seconds)

    def release(self, key: str, owner: str) -> None:
        self.inner.release(self.namespace + key, owner)

    def lease_holder(self, key: str) -> tuple[str, float] | None:
        return lease_holder(self.inner, self.namespace + key)

    def cleanup(self) -> None:
        self.inner.cleanup()

    def close(self) -> None:
        self.inner.close()


def check_signing(store: CacheStore, secret: str | None, where: str) -> tuple[str, ...]:
    """Record this run's key id in ``store``; the other key ids that wrote to it (module docstring).

    Raises :class:`StoreUnavailableError` for a run without a secret on a store with signed entries.
    """
    raw = store.get(SIGNED_KEYS)
    try:
        known = [line for line in (raw or b"").decode("ascii").split() if line]
    except UnicodeDecodeError:
        known = []
    if secret is None:
        if known:
            raise StoreUnavailableError(
                f"cache store {where} holds signed entries (key id(s) {', '.join(known)}) and LLMJUDGE_CACHE_SECRET "
                "is not set: a run without the secret could only trust unsigned entries, which anyone who can write "
                "the store can forge. Set the secret, or use another store or prefix"
            )
        return ()
    mine = key_id(secret)
    if mine not in known:
        store.put(SIGNED_KEYS, "\n".join([*known, mine]).encode("ascii"))
    return tuple(kid for kid in known if kid != mine)
