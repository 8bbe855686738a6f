"""The directory store: judge-cache entries as files, the default behind the store seam.

Implements :class:`~pytest_llmjudge.execution.stores.base.CacheStore` (get / put / leases /
cleanup / close); entries are opaque bytes here, checked, signed and redacted by
:class:`~pytest_llmjudge.execution.cache.JudgeCache` above any store. Layout:
``<root>/<key[:2]>/<key>.json``.

- ``put`` writes ``.tmp-<host>-<pid>-*.json`` in the entry's directory, fsyncs it, and
  ``os.replace``-s it over the entry: a reader sees the old or the new bytes, never a mix.
- Leases are open-file-description byte-range locks (``F_OFD_SETLK``) on one lock file,
  ``<root>/leases``: a key's lease is the byte at offset ``int(key[:15], 16)``. Taking or
  giving one back is a single ``fcntl`` call, with no file created, written or removed
  per key (creating and unlinking a lease file per call cost 2-6 ms each on this
  machine's disk under load). The kernel drops the locks when their holder's process
  ends, even by SIGKILL, so a dead holder's lease is free at once and nothing is left
  behind. Different processes, and different stores in one process, exclude each other;
  within one store, ``_held`` keeps one owner per key.
- Expiry: within a store, a lease past its ttl is taken over. Across processes a lock
  can't expire (the file says nothing about its age); a process that stays alive but
  hangs holding a lease is outwaited by the waiter's own deadline in the runner, which then
  pays without a lease.
- ``cleanup`` removes temporary files of writers that are dead on this host, or an hour
  old (a writer on another host, whose pid can't be checked).

Degenerate cases: the root and shard directories are made on first use. Where OFD locks
don't exist (not Linux) or fail (``ENOLCK``/``EOPNOTSUPP`` on some network mounts), or the
lock file can't be created (a read-only cache), every lease is granted: processes may
then pay twice, as before leases existed, but never wait. Two keys whose first 15 hex
digits agree (one pair in about 10^18) share a lease: one of them waits for the other.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pytest_llmjudge.atomic import write_atomic
from pytest_llmjudge.execution.stores.base import check_ttl

_TMP_PREFIX = ".tmp-"
_LOCK_FILE = "leases"
_FOREIGN_TMP_AGE = 3600.0
"""Seconds after which a temporary file of another host's writer is taken as abandoned."""
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_FLOCK = struct.Struct("hhqqi4x")
"""``struct flock`` (Linux, 64-bit ``off_t``): type, whence, start, length, pid (0 for OFD locks)."""
_CONTENDED = (errno.EAGAIN, errno.EACCES)
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL)
_READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def _host() -> str:
    # Part of a temporary file's name: without "-", so the name parses back.
    return socket.gethostname().replace("-", "_").replace(os.sep, "_") or "host"


def writer_prefix() -> str:
    """The temporary-file prefix naming this process, for every file written under the cache root.

    :meth:`DirectoryStore.cleanup` removes a file with this prefix once its writer is gone, so a
    kill between the temporary file and the rename leaves nothing behind for good.
    """
    return f"{_TMP_PREFIX}{_host()}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _offset(key: str) -> int:
    return int(key[:15], 16)


class DirectoryStore:
    """Entries as files under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.root = root
        self._host = _host()
        self._clock = clock
        self._held: dict[str, tuple[str, float]] = {}
        """Leases this store holds: key -> (owner, expiry on ``clock``)."""
        self._lock = threading.Lock()
        self._lock_fd: int | None = None
        self._locks_work = _OFD_SETLK is not None

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    # -- entries -------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        try:
            return self._entry(key).read_bytes()
        except OSError:
            return None

    def put(self, key: str, data: bytes) -> None:
        target = self._entry(key)
        # fsynced and private: a paid-for reply lives here. The prefix names the writer, so the
        # leftovers of a dead one can be cleaned up (the shard directory is made on first use).
        write_atomic(target, data, fsync=True, private=True, prefix=writer_prefix(), suffix=".json")

    # -- leases --------------------------------------------------------------------------

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        check_ttl(ttl_seconds)
        with self._lock:
            now = self._clock()
            held = self._held.get(key)
            if held is not None and held[0] != owner and held[1] > now:
                return False
            if held is None and not self._lock_range(_offset(key), fcntl.F_WRLCK):
                return False
            # Free, ours already (the ttl restarts), or expired in this store (taken over).
            self._held[key] = (owner, now + ttl_seconds)
            return True

    def release(self, key: str, owner: str) -> None:
        with self._lock:
            held = self._held.get(key)
            if held is None or held[0] != owner:
                return
            del self._held[key]
            self._lock_range(_offset(key), fcntl.F_UNLCK)

    def close(self) -> None:
        with self._lock:
            self._held.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # drops every lock it held
                self._lock_fd = None

    def _lock_range(self, offset: int, kind: int) -> bool:
        """Lock (or unlock) one byte of the lock file; False if another holder has it."""
        if not self._locks_work:
            return True
        assert _OFD_SETLK is not None
        try:
            if self._lock_fd is None:
                self.root.mkdir(parents=True, exist_ok=True)
                self._lock_fd = os.open(self.root / _LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.fcntl(self._lock_fd, _OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
        except OSError as exc:
            if exc.errno in _CONTENDED and self._lock_fd is not None:
                return False
            if exc.errno in _NO_LOCKS or exc.errno in _READ_ONLY:
                self._locks_work = False  # nothing to coordinate through: grant, as before leases
                return True
            raise
        return True

    # -- cleanup -------------------------------------------------------------------------

    def cleanup(self) -> None:
        try:
            # Entry shards, and the batch records (execution/batch.py) written the same way.
            shards = [
                entry.path
                for entry in os.scandir(self.root)
                if (len(entry.name) == 2 or entry.name == "batches") and entry.is_dir()
            ]
        except OSError:
            return
        now = time.time()
        for shard in shards:
            try:
                names = [name for name in os.listdir(shard) if name.startswith(_TMP_PREFIX)]
            except OSError:
                continue
            for name in names:
                path = os.path.join(shard, name)
                if self._abandoned(name, path, now):
                    try:
                        os.unlink(path)
                    except OSError:
                        pass

    def _abandoned(self, name: str, path: str, now: float) -> bool:
        """Whether a temporary file's writer is gone: dead on this host, or the file is an hour old."""
        parts = name[len(_TMP_PREFIX) :].split("-")
        if len(parts) >= 3 and parts[0] == self._host and parts[1].isdigit():
            return not _pid_alive(int(parts[1]))
        try:
            return now - os.stat(path).st_mtime > _FOREIGN_TMP_AGE
        except OSError:
            return False
