"""A remote cache store that, once it fails, hands over to the local directory store.

A remote store (Redis, S3) can go away in the middle of a run: the server restarts, the
network drops, credentials expire. Without a fallback every ``get`` and ``put`` after that
raises, and a judge reply that was already paid for could not be cached before use, so
it was dropped and its case came out unscored. :class:`FallbackStore` keeps the run
going and nothing paid for is lost:

* the first exception from the remote store (any operation) switches the store, for the
  rest of the run, to the local directory store under ``--llmjudge-cache-dir``: that
  operation and every later one go there (a ``put`` is written locally, a ``get`` misses
  what only the remote store holds and the call is paid again);
* :attr:`FallbackStore.failure` says which operation failed and why (credentials in the
  message masked); the run reports it once (the summary's headline) so a green run on a
  degraded cache is visible: shards on other machines no longer share these replies.

The remote store is not retried within the run: a store that answers some calls and not
others would leave the two stores each holding part of the run's replies.

Degenerate cases: a ``ValueError`` (a non-positive lease ttl) is the caller's bug and is
raised, not a store failure; a fallback that fails too raises (there is nothing left to
fall back to); ``close`` closes both stores and ignores the remote store's errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from pytest_llmjudge.execution.stores.base import CacheStore

T = TypeVar("T")


class FallbackStore:
    """``primary`` until it raises, then ``fallback`` for the rest of the run."""

    def __init__(self, primary: CacheStore, fallback: CacheStore, *, describe: Callable[[str], str] = str) -> None:
        self._primary = primary
        self._fallback = fallback
        self._describe = describe
        """Masks credentials in a failure message (``redaction.redact`` with the URL's secrets)."""
        self._lock = threading.Lock()
        self.failure: str | None = None
        """Why the remote store was given up (``put failed: ConnectionError: ...``), or None."""

    @property
    def degraded(self) -> bool:
        return self.failure is not None

    def _call(self, operation: str, remote: Callable[[CacheStore], T]) -> T:
        if self.failure is None:
            try:
                return remote(self._primary)
            except ValueError:
                raise
            except Exception as exc:  # any failure of the remote store: see the module docstring
                with self._lock:
                    if self.failure is None:
                        detail = self._describe(f"{exc.__class__.__name__}: {exc}")
                        self.failure = f"{operation} failed: {detail}"
        return remote(self._fallback)

    def get(self, key: str) -> bytes | None:
        return self._call("get", lambda store: store.get(key))

    def put(self, key: str, data: bytes) -> None:
        self._call("put", lambda store: store.put(key, data))

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        self._call("put", lambda store: store.put_many(entries))

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        return self._call("lease", lambda store: store.try_lease(key, owner, ttl_seconds))

    def release(self, key: str, owner: str) -> None:
        self._call("release", lambda store: store.release(key, owner))

    def cleanup(self) -> None:
        self._fallback.cleanup()
        if self.failure is None:
            self._call("cleanup", lambda store: store.cleanup())

    def close(self) -> None:
        try:
            self._primary.close()
        except Exception:  # closing a store that is gone: nothing left to release
            pass
        self._fallback.close()
