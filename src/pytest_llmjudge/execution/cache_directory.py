"""The directory store: judge-cache entries as files, the default behind the store seam.

Implements :class:`~pytest_llmjudge.execution.stores.base.CacheStore` (get / put / leases /
cleanup / close); entries are opaque bytes here, checked, signed and redacted by
:class:`~pytest_llmjudge.execution.cache.JudgeCache` above any store. Layout:
``<root>/<key[:2]>/<key>.json``.

- ``put`` writes ``.tmp-<host>-<pid>-*.json`` in the entry's directory, fsyncs it, and
  ``os.replace``-s it over the entry: a reader sees the old or the new bytes, never a mix.
- A lease is ``<key>.lease`` held with ``fcntl.flock(LOCK_EX | LOCK_NB)`` on a file
  descriptor the store keeps open, plus the owner and expiry time written into the file
  (no fsync: leases needn't survive a crash). The kernel drops the lock when the holder's
  process ends, even by SIGKILL, so a dead holder's lease is free at once. A live holder's
  lease past its expiry (a hung process) is broken: renamed away, checked to be the very
  file judged expired, and removed. Taking a lease re-checks that the locked file is still
  the one at the path (its inode), because releasing (and ``cleanup``) unlink it: a lock
  on an unlinked file would be a claim on nothing. Release unlinks, then unlocks.
- ``cleanup`` removes lease files nobody holds (locking them first, so never one in use)
  and temporary files of writers that are dead on this host, or an hour old (a writer on
  another host, whose pid can't be checked).

Degenerate cases: a shard directory is made on its first write or lease. On a filesystem
whose ``flock`` fails with ``ENOLCK``/``EOPNOTSUPP`` (some network mounts) every lease is
granted: processes may then pay twice, as before leases existed, but never wait. Two
processes breaking the same expired lease at the same instant can both win it (the race
costs one duplicate call, and needs a holder hung past the expiry).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from pytest_llmjudge.execution.stores.base import check_ttl

_TMP_PREFIX = ".tmp-"
_LEASE_SUFFIX = ".lease"
_FOREIGN_TMP_AGE = 3600.0
"""Seconds after which a temporary file of another host's writer is taken as abandoned."""


def _host() -> str:
    # Part of a temporary file's name: without "-", so the name parses back.
    return socket.gethostname().replace("-", "_").replace(os.sep, "_") or "host"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


class DirectoryStore:
    """Entries as files under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._host = _host()
        self._held: dict[str, tuple[str, int]] = {}
        """Leases this store holds: key -> (owner, locked file descriptor)."""
        self._lock = threading.Lock()

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _lease_path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{_LEASE_SUFFIX}"

    # -- entries -------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        try:
            return self._entry(key).read_bytes()
        except OSError:
            return None

    def put(self, key: str, data: bytes) -> None:
        target = self._entry(key)
        prefix = f"{_TMP_PREFIX}{self._host}-{os.getpid()}-"
        try:
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=".json")
        except FileNotFoundError:  # the shard directory's first entry (no mkdir syscall per write)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=prefix, suffix=".json")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
            raise

    # -- leases --------------------------------------------------------------------------

    def try_lease(self, key: str, owner: str, ttl_seconds: float) -> bool:
        check_ttl(ttl_seconds)
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                if held[0] != owner:
                    return False
                self._stamp(held[1], owner, ttl_seconds)
                return True
            fd = self._lock_file(self._lease_path(key))
            if fd is None:
                return False
            if fd >= 0:
                self._stamp(fd, owner, ttl_seconds)
            self._held[key] = (owner, fd)
            return True

    def release(self, key: str, owner: str) -> None:
        with self._lock:
            held = self._held.get(key)
            if held is None or held[0] != owner:
                return
            del self._held[key]
        self._drop(self._lease_path(key), held[1])

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, {}
        for key, (_, fd) in held.items():
            self._drop(self._lease_path(key), fd)

    def _lock_file(self, path: Path) -> int | None:
        """A descriptor of ``path`` locked by us; None if held by a live lease; -1 without locks."""
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                broken = self._expired(fd) and self._break(path, os.fstat(fd).st_ino)
                os.close(fd)
                if broken:
                    continue
                return None
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP):
                    return -1
                raise
            if _same_file(path, fd):
                return fd
            os.close(fd)  # locked a file its holder had just released and unlinked: try the new one

    @staticmethod
    def _stamp(fd: int, owner: str, ttl_seconds: float) -> None:
        if fd < 0:
            return
        record = json.dumps({"owner": owner, "pid": os.getpid(), "expires": time.time() + ttl_seconds})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode("utf-8"), 0)

    @staticmethod
    def _expired(fd: int) -> bool:
        try:
            expires = json.loads(os.pread(fd, 4096, 0))["expires"]
            return bool(expires < time.time())
        except (OSError, ValueError, KeyError, TypeError):
            return False  # being written right now, or not ours to judge

    @staticmethod
    def _break(path: Path, inode: int) -> bool:
        """Remove the expired lease file ``inode`` at ``path``; False if it was no longer there."""
        aside = path.with_name(f"{path.name}.broken-{os.getpid()}-{threading.get_ident()}")
        try:
            os.rename(path, aside)
        except OSError:
            return False
        if os.stat(aside).st_ino != inode:
            # Moved a fresh lease someone took meanwhile: put it back unless yet another exists.
            try:
                os.link(aside, path)
            except OSError:
                pass
        os.unlink(aside)
        return True

    @staticmethod
    def _drop(path: Path, fd: int) -> None:
        if fd < 0:
            return
        # Unlink while still locked, so nobody can lock this file and believe it current.
        if _same_file(path, fd):
            try:
                os.unlink(path)
            except OSError:
                pass
        os.close(fd)  # closing drops the flock

    # -- cleanup -------------------------------------------------------------------------

    def cleanup(self) -> None:
        try:
            shards = [entry.path for entry in os.scandir(self.root) if len(entry.name) == 2 and entry.is_dir()]
        except OSError:
            return
        now = time.time()
        for shard in shards:
            try:
                names = [n for n in os.listdir(shard) if n.startswith(_TMP_PREFIX) or n.endswith(_LEASE_SUFFIX)]
            except OSError:
                continue
            for name in names:
                path = os.path.join(shard, name)
                if name.endswith(_LEASE_SUFFIX):
                    self._remove_free_lease(Path(path))
                elif self._abandoned(name, path, now):
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

    @staticmethod
    def _remove_free_lease(path: Path) -> None:
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a live process is paying for this key
            os.close(fd)
            return
        DirectoryStore._drop(path, fd)


def _same_file(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except OSError:
        return False
