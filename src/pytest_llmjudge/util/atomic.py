"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

The one way the plugin replaces a file (cache entries, batch records, worker-shared
outputs, baselines, reports): write a temporary file in the target's own directory (so
the rename never crosses a file system), optionally ``fsync`` it, then ``os.replace`` it
over the target, which POSIX and Windows make atomic.

The choices that differ between callers are parameters, never implicit:

* ``fsync``: whether the bytes reach the disk before the rename. Without it a crash of
  the machine (not of the process) can leave an empty or partial file under the new
  name; with it each write waits for the disk (milliseconds). Cache entries and batch
  records are what a paid-for reply survives in, so they fsync; reports, baselines and
  worker hand-offs are rewritten by the next run and do not.
* ``private``: ``mkstemp`` creates the file readable by its owner only (0600). A report or
  a baseline is meant to be read by others and gets the usual mode (0666 minus the
  umask); cache entries and batch records stay private.
* ``prefix``/``suffix``: the temporary file's name, for stores that recognise their own
  leftovers (the cache directory cleans up ``.tmp-<host>-<pid>-*`` files of dead writers).

Degenerate cases: a missing parent directory is created on the first failure to create
the temporary file (no extra system call per write when it exists); any failure removes
the temporary file and re-raises, leaving the target as it was. A target that exists and is
not a regular file (a device such as ``/dev/full``, a FIFO, a socket, a directory; through a
symlink too) is never replaced: ``os.replace`` would swap a device node for a plain file, so
the write fails with an ``OSError`` (EEXIST) instead. The plugin's options refuse such paths
before the run (``write_targets.py``); this is the last line of defence for every caller.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(
    path: Path,
    data: bytes | str,
    *,
    fsync: bool,
    private: bool,
    prefix: str | None = None,
    suffix: str = ".tmp",
) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8, newlines as given)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    name_prefix = f".{path.name}." if prefix is None else prefix
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=name_prefix, suffix=suffix)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=name_prefix, suffix=suffix)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            if fsync:
                stream.flush()
                os.fsync(stream.fileno())
        if not private:
            os.chmod(temporary, 0o666 & ~_umask())
        _refuse_special(path)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _refuse_special(path: Path) -> None:
    """Raise ``OSError`` when ``path`` exists and is not a regular file (see the module docstring)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there (or unreadable): the rename itself says what is wrong
    if not stat.S_ISREG(mode):
        from pytest_llmjudge.write_targets import file_kind

        raise OSError(errno.EEXIST, f"it is {file_kind(mode)}, not a regular file; not replaced", str(path))
