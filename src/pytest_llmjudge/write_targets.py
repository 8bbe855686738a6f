"""Which paths the plugin may write its reports and baselines to, checked before any judge call.

A report (``--llmjudge-report=KIND:PATH``) or a saved baseline (``--llmjudge-save-baseline``)
replaces its target at the end of the run (``util/atomic.py``). The target is refused, and the
run stopped with a usage error before anything is paid for, when it

* exists and is not a regular file (a directory, a FIFO, a socket, a character or block
  device such as ``/dev/full``; a symlink is judged by what it points to): replacing it would
  turn a device node into a file, or block on a FIFO;
* is one of the run's inputs (a collected suite, calibration set, ranking or test file, a
  suite's cases or outputs file), compared by device and inode so another spelling of the
  path, a symlink or a hard link is the same file; or a YAML file that is a suite,
  calibration set or ranking (``suite/sniff.py``), collected in this run or not;
* is the target of another of the run's writes (two reports to one path).

Degenerate cases: a target that does not exist yet is fine (its directory is created when it
is written); one whose status can't be read (a symlink loop, a file in place of a parent
directory) is refused with the reason.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a ``stat`` mode that is not a regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _status(path: Path) -> os.stat_result | None | str:
    """``path``'s status, None when nothing is there, or why it can't be read."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)


def target_problem(path: Path, *, yaml_kinds: bool = True) -> str | None:
    """Why ``path`` must not be replaced by a write, judged alone (no inputs), or None.

    ``yaml_kinds``: also refuse a suite, calibration or ranking file (False for a tool whose
    own output is such a file, the calibration converter)."""
    status = _status(path)
    if status is None:
        return None
    if isinstance(status, str):
        return f"its status can't be read ({status})"
    if not stat.S_ISREG(status.st_mode):
        return f"it is {file_kind(status.st_mode)}, not a regular file"
    if yaml_kinds and path.suffix in (".yaml", ".yml"):
        from pytest_llmjudge.suite.sniff import sniff_kind

        kind = sniff_kind(path)
        if kind is not None:
            return f"it is a {'suite' if kind == 'suite-like' else kind} file"
    return None


def _key(path: Path) -> tuple[int, int] | None:
    status = _status(path)
    return (status.st_dev, status.st_ino) if isinstance(status, os.stat_result) else None


def check_targets(
    targets: Sequence[tuple[str, Path]], inputs: Iterable[Path] = (), *, yaml_kinds: bool = True
) -> list[str]:
    """One line per refused ``(what, path)`` target: alone, against ``inputs``, and against each other."""
    problems = []
    for what, path in targets:
        problem = target_problem(path, yaml_kinds=yaml_kinds)
        if problem is not None:
            problems.append(f"{what} {path}: {problem}; refusing to replace it")
    input_keys: dict[tuple[int, int], Path] = {}
    for path in inputs:
        key = _key(path)
        if key is not None:
            input_keys.setdefault(key, path)
    written: dict[object, tuple[str, Path]] = {}
    for what, path in targets:
        key = _key(path)
        if key is not None and key in input_keys:
            problems.append(f"{what} {path}: it is {input_keys[key]}, an input of this run; refusing to replace it")
        same: object = key if key is not None else os.path.normpath(os.path.abspath(path))
        if same in written:
            first_what, first_path = written[same]
            problems.append(f"{what} {path}: also the path of {first_what} {first_path}; each needs its own file")
        written.setdefault(same, (what, path))
    return list(dict.fromkeys(problems))
