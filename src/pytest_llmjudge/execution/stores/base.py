"""The store seam of the judge reply cache: a key -> bytes map with per-key leases.

A store keeps opaque entry bytes; verification, signing and redaction happen in the cache
layer above it, so every store is interchangeable under it. A *lease* is a short,
expiring claim on a key ("I am asking the judge for this one"): concurrent processes that
miss the same key let one owner pay for the call while the others wait for its ``put``.

Contract every store keeps (tests/stores/test_store_contract.py checks it on each one):

- ``get`` returns exactly the bytes of the last completed ``put`` of that key, or ``None``;
  a reader never sees part of an entry.
- ``put`` is atomic, and has reached the store's durable medium when it returns (for a
  remote store: the server acknowledged it; how durable the server is, is its config).
  ``put_many`` is that for each of its entries, in order (a later entry of the same key
  wins), at the cost the store can make it: the directory store and SQLite write a batch
  with one fsync, Redis sends it in one pipeline, S3 puts one object after another. If it
  raises, any of its entries may or may not be stored.
- ``try_lease(key, owner, ttl)`` is True when ``owner`` holds the lease afterwards: it
  took a free or expired lease, or already held it (then the ttl restarts). Exactly one of
  several concurrent owners wins a free lease.
- ``release(key, owner)`` frees the lease only if ``owner`` still holds it; otherwise (it
  expired and someone else took it, or it was never taken) it does nothing.
- ``lease_holder(key)`` (optional: :func:`lease_holder` asks for it): ``(owner, seconds
  left)`` of a live lease, or None; for the messages of those who wait on it.
- ``cleanup`` removes stale local leftovers (expired leases, temp files); remote stores
  expire leases themselves and do nothing. ``close`` releases connections and threads.

Degenerate cases: an empty ``data`` is a valid entry (``b""``, not ``None``); a ``ttl``
of zero or less is rejected with ``ValueError`` (a lease that is expired when taken
protects nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class CacheStore(Protocol):
    """Where cache entries live: a directory, SQLite, Redis or S3."""

    def get(self, key: str) -> bytes | None:
        """The stored entry bytes, or None."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``: atomic, durable when it returns."""
        ...

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        """Store every ``(key, data)`` of ``entries`` as ``put`` would; all durable when it returns."""
        ...

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        """True if ``owner`` now holds the lease on ``key``."""
        ...

    def release(self, key: str, owner: str) -> None:
        """Free the lease on ``key`` if ``owner`` still holds it."""
        ...

    def cleanup(self) -> None:
        """Remove stale temp files and expired leases (no-op for remote stores)."""
        ...

    def close(self) -> None:
        """Release connections and threads; the store is unusable afterwards."""
        ...


def check_ttl(ttl_seconds: float) -> None:
    """Reject a lease that would be expired the moment it is taken."""
    if not ttl_seconds > 0:
        raise ValueError(f"lease ttl must be positive, got {ttl_seconds!r}")


def lease_holder(store: CacheStore, key: str) -> tuple[str, float] | None:
    """``(owner, seconds left)`` of the live lease on ``key``, or None when it is free or the store can't say."""
    method = getattr(store, "lease_holder", None)
    if method is None:
        return None
    found: tuple[str, float] | None = method(key)
    return found
