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

Write-back: with a ``journal`` (a file beside the local entries, one per store URL), every
key put locally while degraded is appended to it, and :meth:`FallbackStore.write_back`,
called by the next run once the remote store passed its start-up probe (``stores/probe.py``),
copies those entries to the remote store and removes the journal. Replies paid during an
outage then reach the other shards' machines at the next run instead of being paid again.
The journal is claimed by renaming it, so two runs on one directory don't both copy it; a
copy that fails puts the keys back for the run after.

A store that failed its start-up probe and was opted into the local fallback
(``--llmjudge-cache-fallback=local``) starts degraded: ``failure`` starts with ``at start:``.

Degenerate cases: a ``ValueError`` (a non-positive lease ttl) is the caller's bug and is
raised, not a store failure; a fallback that fails too raises (there is nothing left to
fall back to); ``close`` closes both stores and ignores the remote store's errors.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pytest_llmjudge.execution.stores.base import CacheStore, lease_holder

T = TypeVar("T")


class FallbackStore:
    """``primary`` until it raises, then ``fallback`` for the rest of the run."""

    def __init__(
        self,
        primary: CacheStore,
        fallback: CacheStore,
        *,
        describe: Callable[[str], str] = str,
        journal: Path | None = None,
        failure: str | None = None,
    ) -> None:
        self._primary = primary
        self._fallback = fallback
        self._describe = describe
        """Masks credentials in a failure message (``redaction.redact`` with the URL's secrets)."""
        self._journal = journal
        """Where keys put locally while degraded are listed for :meth:`write_back`, or None."""
        self._lock = threading.Lock()
        self.failure: str | None = failure
        """Why the remote store was given up (``put failed: ConnectionError: ...``), or None."""
        self.written_back = 0
        """Entries an earlier run paid during an outage that :meth:`write_back` copied to the remote store."""

    @property
    def primary(self) -> CacheStore:
        """The remote store (probed at start: ``stores/probe.py``)."""
        return self._primary

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
        self.put_many(((key, data),))

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        self._call("put", lambda store: store.put_many(entries))
        if self.failure is not None and self._journal is not None and entries:
            # Replies only: the store's own records (``llmjudge-signed-keys``) are the store's to keep.
            self._note_local([key for key, _ in entries if not key.startswith("llmjudge-")])

    def _note_local(self, keys: Sequence[str]) -> None:
        assert self._journal is not None
        with self._lock:
            try:
                self._journal.parent.mkdir(parents=True, exist_ok=True)
                with open(self._journal, "a", encoding="ascii") as journal:
                    journal.write("".join(f"{key}\n" for key in keys))
            except OSError:  # the entries are stored; only their write-back is lost
                pass

    def write_back(self) -> int:
        """Copy the entries put locally during an earlier outage to the remote store; how many.

        Raises the remote store's error (the journal is kept for the next run).
        """
        if self._journal is None:
            return 0
        claimed = self._journal.with_name(f"{self._journal.name}.{uuid.uuid4().hex[:8]}")
        try:
            os.rename(self._journal, claimed)
        except OSError:  # no journal, or another run claimed it first
            return 0
        try:
            keys = list(dict.fromkeys(claimed.read_text(encoding="ascii").split()))
            entries = [(key, data) for key in keys if (data := self._fallback.get(key)) is not None]
            if entries:
                self._primary.put_many(entries)
        except BaseException:
            with self._lock, open(self._journal, "a", encoding="ascii") as journal:
                journal.write(claimed.read_text(encoding="ascii"))
            claimed.unlink()
            raise
        claimed.unlink()
        self.written_back = len(entries)
        return len(entries)

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        return self._call("lease", lambda store: store.try_lease(key, owner, ttl_seconds))

    def lease_holder(self, key: str) -> tuple[str, float] | None:
        """The holder of ``key``'s lease as the store in use reports it (None if it can't say)."""
        return self._call("lease", lambda store: lease_holder(store, key))

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
