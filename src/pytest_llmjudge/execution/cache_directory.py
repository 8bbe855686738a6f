"""The directory store: judge-cache entries in append-only pack files, the default behind the store seam.

Implements :class:`~pytest_llmjudge.execution.stores.base.CacheStore` (get / put / leases /
cleanup / close); entries are opaque bytes here, checked, signed and redacted by
:class:`~pytest_llmjudge.execution.cache.JudgeCache` above any store.

- **Packs.** Each store that writes appends to a pack file of its own,
  ``<root>/packs/<host>-<pid>-<random>.pack`` (private, created on the first put), so
  writers never share a file. A record is a 22-byte header (magic ``LJP1``, key length,
  data length, write time in ns, CRC-32 of key and data), the key, the data. A put appends
  its record with one ``write`` and returns after an ``fdatasync`` that covers it.
- **Group commit.** Concurrent puts share fsyncs: the first to reach the sync lock syncs
  everything written so far, and a put whose record a finished sync already covered
  returns without one (no writer thread, no queue); :meth:`put_many` writes a batch as one
  ``write`` and one sync. So a reply is durable before ``put`` returns, and N replies
  completing together cost about one fsync and one file, not N of each.
- **Reads** go through an in-memory index, key -> (pack, offset, length), built by scanning
  the packs; a key the index misses first rescans (the names in ``packs/``, then the new
  tail of every pack not known to be finished), so an entry another process stored before
  this read began is found. A scan stops at the first record that is incomplete or fails
  its CRC (a write in progress, retried at the next scan; or a killed writer's torn tail,
  which stays unread). When several records hold one key, the latest write wins. A store
  seals its pack at ``close`` (a trailer record): a sealed pack, or one whose writer is dead
  on this host, is never rescanned, and keeps no open descriptor (a read of it opens the file:
a cache of hundreds of packs must not hold hundreds of descriptors per process).
- **The old layout** (one file per entry, ``<root>/<key[:2]>/<key>.json``, written by
  earlier versions) is still read: its keys are listed once, at the first miss, and a pack
  record wins over a file. Nothing is rewritten: new replies go to packs.
  ``migrate_directory`` reads both.
- Leases are open-file-description byte-range locks (``F_OFD_SETLK``) on one lock file,
  ``<root>/leases``: a key's lease is the byte at offset ``int(key[:15], 16)``. Taking or
  giving one back is a single ``fcntl`` call, with no file created, written or removed
  per key. The kernel drops the locks when their holder's process ends, even by SIGKILL,
  so a dead holder's lease is free at once. Different processes, and different stores in
  one process, exclude each other; within one store, ``_held`` keeps one owner per key.
- Expiry: within a store, a lease past its ttl is taken over. Across processes a lock
  can't expire (the file says nothing about its age); a process that stays alive but
  hangs holding a lease is outwaited by the waiter's own deadline in the runner, which then
  pays without a lease.
- ``cleanup`` removes temporary files of writers that are dead on this host, or an hour
  old (a writer on another host, whose pid can't be checked): the old layout's and the
  batch records' (``execution/batch.py``).

Foreign entries in ``packs/`` are ignored, each named once in :attr:`DirectoryStore.warnings`
(the run's headline): a name without ``.pack``, a ``.pack`` that is not a regular file (a
directory, a FIFO: never opened, so never waited on) and a ``.pack`` file that does not
start with a record (junk). A write or lease that fails (read-only, full, not a directory)
raises ``OSError`` for :class:`~pytest_llmjudge.execution.cache.JudgeCache` to handle.

Degenerate cases: the root and ``packs/`` are made on the first put. Where OFD locks don't
exist (not Linux) or fail (``ENOLCK``/``EOPNOTSUPP`` on some network mounts), or the lock
file can't be created (a read-only cache), every lease is granted: processes may then pay
twice, but never wait. Two keys whose first 15 hex digits agree (one pair in about 10^18)
share a lease. A put whose write fails (a full disk) may leave part of its batch in the pack, and
raises; the store then starts a new pack, so the part hides nothing written after it. An old-layout file written by an older version *after* this store listed
them is not seen (run one version at a time on a cache). Packs are never compacted: a
re-asked entry leaves its old record behind, and every process that stored something
leaves one pack (``migrate_directory`` into a fresh directory compacts).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_llmjudge.execution.stores.base import check_ttl
from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls

_TMP_PREFIX = ".tmp-"
_LOCK_FILE = "leases"
_PACKS = "packs"
_PACK_SUFFIX = ".pack"
_MAGIC = b"LJP1"
_SEAL = b"LJPE"
_RECORD = struct.Struct("<4sHIQI")
"""A pack record's header: magic, key length, data length, write time (ns), CRC-32 of key + data."""
_MTIME_MARGIN_NS = 5_000_000_000
"""How close (ns) a directory's mtime may be to a listing before the listing can't be trusted to
be newer: more than a coarse file-system timestamp's step, and some clock skew of a network mount."""
_FOREIGN_TMP_AGE = 3600.0
"""Seconds after which a temporary file of another host's writer is taken as abandoned."""
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_FLOCK = struct.Struct("hhqqi4x")
"""``struct flock`` (Linux, 64-bit ``off_t``): type, whence, start, length, pid (0 for OFD locks)."""
_CONTENDED = (errno.EAGAIN, errno.EACCES)
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL)
_READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)


def _host() -> str:
    # Part of temporary and pack file names: without "-", so the name parses back.
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _record(key: str, data: bytes, written_ns: int) -> bytes:
    encoded = key.encode("utf-8")
    return (
        _RECORD.pack(_MAGIC, len(encoded), len(data), written_ns, zlib.crc32(data, zlib.crc32(encoded)))
        + encoded
        + data
    )


@dataclass(eq=False)
class _Pack:
    """One pack file as this store reads it."""

    name: str
    fd: int | None
    """Open for reading (``pread``) while the pack may grow, or is this store's own; None once it is
    finished (a read then opens it), so a cache of many packs holds few descriptors."""
    scanned: int = 0
    """Bytes of whole, valid records indexed so far."""
    finished: bool = False
    """Sealed, or its writer is dead on this host: nothing more will be appended."""


class DirectoryStore:
    """Entries in pack files under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.root = root
        self._packs_dir = os.path.join(root, _PACKS)
        self._host = _host()
        self._clock = clock
        self._held: dict[str, tuple[str, float]] = {}
        """Leases this store holds: key -> (owner, expiry on ``clock``)."""
        self._lock = threading.Lock()
        self._lock_fd: int | None = None
        self._locks_work = _OFD_SETLK is not None
        self._read_lock = threading.Lock()
        self._index: dict[str, tuple[_Pack, int, int, int]] = {}
        """key -> (pack, offset of the data, its length, write time in ns): the latest record of each key."""
        self._packs: dict[str, _Pack] = {}
        self._live: list[_Pack] = []
        """Other writers' packs that may still grow."""
        self._listed_at = 0
        self._listed_mtime = -1
        """When ``packs/`` was last listed (wall ns), and its mtime then."""
        self._legacy: set[str] | None = None
        """Keys of the old one-file-per-entry layout, listed at the first miss."""
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._own: _Pack | None = None
        self._write_fd: int | None = None
        self._size = 0
        self._appended = 0
        """Appends made to the own pack (each a ticket); ``_synced`` of them are on disk."""
        self._synced = 0
        self.syncs = 0
        """``fdatasync`` calls made: fewer than puts when puts share them."""
        self.warnings: list[str] = []
        """Foreign entries of ``packs/`` this store ignored, one line each (see the module docstring)."""
        self._foreign: set[str] = set()

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    # -- entries -------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        with self._read_lock:
            self._rescan()
            found = self._index.get(key)
            if found is not None:  # read under the lock: a scan may close the pack's descriptor
                pack, offset, length, _ = found
                return self._read(pack, offset, length)
            if self._legacy is None:
                self._legacy = self._list_legacy()
            legacy = key in self._legacy
        if legacy:
            try:
                return self._entry(key).read_bytes()
            except OSError:
                return None
        return None

    def _read(self, pack: _Pack, offset: int, length: int) -> bytes | None:
        try:
            if pack.fd is not None:
                data = os.pread(pack.fd, length, offset)
            else:
                fd = os.open(os.path.join(self._packs_dir, pack.name), os.O_RDONLY)
                try:
                    data = os.pread(fd, length, offset)
                finally:
                    os.close(fd)
        except OSError:
            return None
        return data if len(data) == length else None

    def put(self, key: str, data: bytes) -> None:
        self.put_many(((key, data),))

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        """Store several entries with one write and (at most) one fsync; durable when it returns."""
        if not entries:
            return
        now = time.time_ns()
        pending = [(key, bytes(data)) for key, data in entries]
        records = [_record(key, data, now) for key, data in pending]
        with self._write_lock:
            fd, pack = self._writer()
            start = self._size
            try:
                _write_all(fd, b"".join(records))
            except BaseException as exc:
                # Part of the batch may be in the pack, where it would hide every later record
                # from readers: the next put starts a pack of its own.
                os.close(fd)
                self._write_fd, self._own = None, None
                if isinstance(exc, OSError) and exc.filename is None:
                    exc.filename = os.path.join(self._packs_dir, pack.name)  # a full disk says where
                raise
            self._size += sum(map(len, records))
            self._appended += 1
            ticket = self._appended
        try:
            self._sync(fd, ticket)
        except OSError as exc:  # fdatasync on a full disk (a delayed allocation): say where
            if exc.filename is None:
                exc.filename = os.path.join(self._packs_dir, pack.name)
            raise
        with self._read_lock:
            position = start
            for (key, data), record in zip(pending, records, strict=True):
                self._note(key, pack, position + len(record) - len(data), len(data), now)
                position += len(record)

    def _writer(self) -> tuple[int, _Pack]:
        """This store's pack, open for appending (made on first use; called under ``_write_lock``)."""
        if self._write_fd is not None and self._own is not None:
            return self._write_fd, self._own
        packs = self.root / _PACKS
        packs.mkdir(parents=True, exist_ok=True)
        name = f"{self._host}-{os.getpid()}-{uuid.uuid4().hex[:8]}{_PACK_SUFFIX}"
        fd = os.open(packs / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        directory = os.open(packs, os.O_RDONLY)
        try:
            os.fsync(directory)  # the new file's name survives a crash, not just its bytes
        finally:
            os.close(directory)
        own = _Pack(name, os.open(packs / name, os.O_RDONLY))
        with self._read_lock:
            self._packs[name] = own  # indexed as it is written, never scanned
        self._own, self._write_fd, self._size = own, fd, 0
        return fd, own

    def _sync(self, fd: int, ticket: int) -> None:
        """Return once the append numbered ``ticket`` is on disk: a sync another put started after it counts."""
        with self._sync_lock:
            if self._synced >= ticket:
                return
            with self._write_lock:
                target = self._appended
            os.fdatasync(fd)
            self._synced = target
            self.syncs += 1

    def _note(self, key: str, pack: _Pack, offset: int, length: int, written_ns: int) -> None:
        known = self._index.get(key)
        if known is None or known[3] <= written_ns:
            self._index[key] = (pack, offset, length, written_ns)

    def _rescan(self) -> None:
        """Index what other writers appended since the last look (called under ``_read_lock``).

        The names in ``packs/`` are listed again only when the directory changed since the last
        listing: its mtime moved, or is too close to that listing to tell (file-system
        timestamps are coarse). Otherwise a look costs one ``stat`` and one ``fstat`` per pack
        still being written by someone else.
        """
        packs = self._packs_dir  # a str: a Path built per look costs more than the stat
        try:
            changed = os.stat(packs).st_mtime_ns
        except OSError:
            return
        if changed != self._listed_mtime or changed >= self._listed_at - _MTIME_MARGIN_NS:
            self._listed_at, self._listed_mtime = time.time_ns(), changed
            try:
                names = os.listdir(packs)
            except OSError:
                return
            for name in names:
                if name in self._packs or name in self._foreign:
                    continue
                if not name.endswith(_PACK_SUFFIX):
                    self._ignore(name, "not a pack file")
                    continue
                path = os.path.join(packs, name)
                try:
                    if not stat.S_ISREG(os.stat(path).st_mode):  # a directory, a FIFO: never opened
                        self._ignore(name, "not a regular file")
                        continue
                    pack = _Pack(name, os.open(path, os.O_RDONLY))
                except OSError:
                    continue
                self._packs[name] = pack
                self._live.append(pack)
        if not self._live:
            return
        for pack in self._live:
            assert pack.fd is not None  # a pack that may grow keeps its descriptor
            dead = self._writer_dead(pack.name)  # before the scan: a writer that dies after it may have appended
            size = os.fstat(pack.fd).st_size
            if size > pack.scanned:
                self._scan(pack, size)
            if dead:
                pack.finished = True  # all it will ever hold is indexed, a torn tail left unread
            if pack.finished and pack.fd is not None and pack is not self._own:
                os.close(pack.fd)
                pack.fd = None
        self._live = [pack for pack in self._live if not pack.finished and pack is not self._own]

    def location_problem(self) -> OSError | None:
        """Why the root can't take entries, found without writing, or None: the deepest existing part
        of its path (or ``packs/``) is not a directory, or its file system is read-only or full, or
        this process may not write there."""
        path = os.path.abspath(self.root)
        while True:
            try:
                found = os.stat(path)
                break
            except FileNotFoundError:
                parent = os.path.dirname(path)
                if parent == path:
                    return None
                path = parent
            except OSError as exc:  # ENOTDIR: a file higher up the path
                return exc
        if not stat.S_ISDIR(found.st_mode):
            return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
        try:
            packs = os.stat(self._packs_dir)
        except OSError:
            packs = None
        if packs is not None and not stat.S_ISDIR(packs.st_mode):
            return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), self._packs_dir)
        try:
            system = os.statvfs(path)
        except OSError as exc:
            return exc
        if system.f_flag & os.ST_RDONLY:
            return OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        free = system.f_bfree if os.geteuid() == 0 else system.f_bavail  # root may use the reserved blocks
        if free == 0 and system.f_blocks > 0:
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        if not os.access(path, os.W_OK | os.X_OK):
            return PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return None

    def _ignore(self, name: str, why: str) -> None:
        """Leave a foreign entry of ``packs/`` alone from now on, and say so once."""
        self._foreign.add(name)
        self.warnings.append(f"ignored '{escape_controls(name, ONE_LINE)}' in {self._packs_dir}: {why}")

    def _scan(self, pack: _Pack, size: int) -> None:
        assert pack.fd is not None  # only growing packs are scanned
        try:
            data = os.pread(pack.fd, size - pack.scanned, pack.scanned)
        except OSError as exc:  # unreadable (an I/O error): its records stay unread
            pack.finished = True
            self._ignore(pack.name, f"unreadable ({os.strerror(exc.errno or 0).lower()})")
            return
        if pack.scanned == 0 and len(data) >= len(_MAGIC) and data[: len(_MAGIC)] not in (_MAGIC, _SEAL):
            pack.finished = True  # junk: the first bytes of a pack are always a record's magic
            self._ignore(pack.name, "not a pack file (no record at its start)")
            return
        view = memoryview(data)
        position = 0
        while position + _RECORD.size <= len(data):
            magic, key_length, length, written_ns, crc = _RECORD.unpack_from(data, position)
            if magic == _SEAL:
                pack.finished = True
                position += _RECORD.size
                break
            body = position + _RECORD.size
            end = body + key_length + length
            if magic != _MAGIC or end > len(data) or zlib.crc32(view[body:end]) != crc:
                break  # being written (read again at the next scan), or a killed writer's torn tail
            key = bytes(view[body : body + key_length]).decode("utf-8", "replace")
            self._note(key, pack, pack.scanned + body + key_length, length, written_ns)
            position = end
        pack.scanned += position

    def _writer_dead(self, name: str) -> bool:
        parts = name.removesuffix(_PACK_SUFFIX).split("-")
        return len(parts) == 3 and parts[0] == self._host and parts[1].isdigit() and not _pid_alive(int(parts[1]))

    def _list_legacy(self) -> set[str]:
        keys: set[str] = set()
        try:
            shards = [entry.path for entry in os.scandir(self.root) if len(entry.name) == 2 and entry.is_dir()]
        except OSError:
            return keys
        for shard in shards:
            try:
                names = os.listdir(shard)
            except OSError:
                continue
            keys.update(name[:-5] for name in names if name.endswith(".json") and not name.startswith("."))
        return keys

    def keys(self) -> Sequence[str]:
        """Every key with an entry, in packs or in the old layout, sorted."""
        with self._read_lock:
            self._rescan()
            self._legacy = self._list_legacy()
            return sorted(self._index.keys() | self._legacy)

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
        """Let go of the leases, seal this store's pack, close every file (a later use starts afresh)."""
        with self._lock:
            self._held.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # drops every lock it held
                self._lock_fd = None
        with self._write_lock:
            if self._write_fd is not None:
                try:
                    _write_all(self._write_fd, _RECORD.pack(_SEAL, 0, 0, time.time_ns(), 0))
                except OSError:
                    pass  # a full disk: the pack stays unsealed, read as a dead writer's once this process ends
                finally:
                    os.close(self._write_fd)
                    self._write_fd, self._own = None, None
        with self._read_lock:
            for pack in self._packs.values():
                if pack.fd is not None:
                    os.close(pack.fd)
            self._packs.clear()
            self._live.clear()
            self._listed_mtime = -1
            self._index.clear()
            self._legacy = None

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
