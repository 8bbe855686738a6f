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
the temporary file and re-raises, leaving the target as it was.
"""

from __future__ import annotations

import os
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
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
