"""A cache store in one SQLite file, with group commit (``sqlite:///path/cache.db``).

One file instead of one file per reply: tables ``entries(key TEXT PRIMARY KEY, data BLOB,
created REAL)`` and ``leases(key TEXT PRIMARY KEY, owner TEXT, expires REAL)``, in WAL
mode (readers never wait for the writer) with ``synchronous=FULL`` (a commit has reached
the disk, WAL and fsync, when it returns).

Group commit: ``put`` hands its entry to the store's writer thread and waits. The writer
takes everything queued, writes it in one transaction and wakes each waiting ``put`` only
after that transaction COMMITTED, so a reply is durable before its item uses it, yet N
concurrent puts cost about one fsync instead of N. The batching window is the previous
commit itself (puts that arrive while it runs form the next batch), plus ``window_seconds``
(1 ms) of waiting for more when the previous batch held more than one put: the puts woken
by a commit need a moment to queue again, and without it concurrent puts split over twice as
many transactions (``benchmarks/cache_stores.py``, docs/scale.md). A lone put never waits. A batch
holds at most ``max_batch`` puts. ``commits`` counts the transactions, ``uncommitted`` the
puts accepted and not yet committed.

Several processes may share the file: each has its own writer, SQLite's write lock lets
one transaction in at a time, and the others wait up to ``busy_timeout_seconds``. Leases
are one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` statement (atomic under that lock):
it takes a free or expired lease or renews the caller's own, and changes no row otherwise.

Degenerate cases: a failed transaction raises its error in every ``put`` of the batch (none
of them stored); the same key twice in one batch keeps the later bytes; ``put`` after
``close`` raises ``RuntimeError``. Lease expiry uses ``clock`` (injectable; wall time,
shared by all processes on the machine).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_llmjudge.execution.stores.base import check_ttl

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, data BLOB NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL);
"""

_TAKE_LEASE = """
INSERT INTO leases (key, owner, expires) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
WHERE leases.owner = excluded.owner OR leases.expires <= ?
"""


@dataclass
class _Put:
    key: str
    data: bytes
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class SQLiteStore:
    """Cache entries and leases in one SQLite database file."""

    def __init__(
        self,
        path: Path | str,
        *,
        window_seconds: float = 0.001,
        max_batch: int = 512,
        busy_timeout_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._window = window_seconds
        self._max_batch = max_batch
        self._timeout = busy_timeout_seconds
        self._clock = clock
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.commits = 0
        self.uncommitted = 0
        setup = self._connect()
        setup.execute("PRAGMA journal_mode=WAL")  # stored in the file: every later connection is WAL too
        setup.executescript(_SCHEMA)
        self._queue: queue.SimpleQueue[_Put | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, args=(setup,), name="llmjudge-sqlite-writer")
        self._writer.daemon = True  # a put waits for it anyway; close() joins it
        self._writer.start()

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; the writer says BEGIN/COMMIT itself.
        connection = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA synchronous=FULL")
        with self._lock:
            self._connections.append(connection)
        return connection

    def _reader(self) -> sqlite3.Connection:
        """This thread's connection (a sqlite3 connection must not serve two threads at once)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._connect()
        return connection

    def get(self, key: str) -> bytes | None:
        row = self._reader().execute("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def put(self, key: str, data: bytes) -> None:
        self.put_many(((key, data),))

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        """Queue every entry for the writer at once (so they share a transaction) and wait for all."""
        if self._closed:
            raise RuntimeError(f"SQLite cache store {self.path} is closed")
        items = [_Put(key, bytes(data)) for key, data in entries]
        with self._lock:
            self.uncommitted += len(items)
        for item in items:
            self._queue.put(item)
        for item in items:
            item.done.wait()
        for item in items:
            if item.error is not None:
                raise item.error

    def _write_loop(self, connection: sqlite3.Connection) -> None:
        stopping = False
        previous = 0
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            # Wait for company only when the last batch had some: a lone put commits at once,
            # while puts woken by the last commit get the moment they need to queue again.
            deadline = time.monotonic() + (self._window if previous > 1 else 0.0)
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            self._commit(connection, batch)
            previous = len(batch)

    def _commit(self, connection: sqlite3.Connection, batch: list[_Put]) -> None:
        now = self._clock()
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany(
                "INSERT OR REPLACE INTO entries (key, data, created) VALUES (?, ?, ?)",
                [(item.key, item.data, now) for item in batch],
            )
            connection.execute("COMMIT")
            self.commits += 1
        except BaseException as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            for item in batch:
                item.error = error
        finally:
            with self._lock:
                self.uncommitted -= len(batch)
            for item in batch:
                item.done.set()

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        check_ttl(ttl_seconds)
        now = self._clock()
        cursor = self._reader().execute(_TAKE_LEASE, (key, owner, now + ttl_seconds, now))
        return cursor.rowcount == 1

    def release(self, key: str, owner: str) -> None:
        self._reader().execute("DELETE FROM leases WHERE key = ? AND owner = ?", (key, owner))

    def lease_holder(self, key: str) -> tuple[str, float] | None:
        """(owner, seconds left) of the unexpired lease on ``key``, or None."""
        now = self._clock()
        row = self._reader().execute("SELECT owner, expires FROM leases WHERE key = ?", (key,)).fetchone()
        if row is None or float(row[1]) <= now:
            return None
        return str(row[0]), float(row[1]) - now

    def cleanup(self) -> None:
        """Delete expired leases."""
        self._reader().execute("DELETE FROM leases WHERE expires <= ?", (self._clock(),))

    def close(self) -> None:
        """Finish queued puts, stop the writer, close every connection (the last one merges the WAL)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join()
        while True:  # a put that raced close() onto the queue behind the stop marker
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item.error = RuntimeError(f"SQLite cache store {self.path} is closed")
                item.done.set()
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
