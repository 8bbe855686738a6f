"""Atomic writes (``util/atomic.py``): whole-file replacement, modes, parents, and no leftovers on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_llmjudge.util.atomic import write_atomic


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("fsync", [True, False])
def test_replaces_the_file_and_leaves_no_temporary(tmp_path: Path, fsync: bool) -> None:
    target = tmp_path / "report.json"
    target.write_text("old", encoding="utf-8")
    write_atomic(target, "néw\n", fsync=fsync, private=True)
    assert target.read_bytes() == "néw\n".encode() and os.listdir(tmp_path) == ["report.json"]


def test_private_files_are_owner_only_shared_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "private", b"x", fsync=False, private=True)
        write_atomic(tmp_path / "shared", b"x", fsync=False, private=False)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "private") == 0o600
    assert _mode(tmp_path / "shared") == 0o644


def test_creates_missing_parents_and_names_the_temporary_with_the_prefix(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "entry.json"
    write_atomic(target, b"{}", fsync=True, private=True, prefix=".tmp-host-1-", suffix=".json")
    assert target.read_bytes() == b"{}"


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "baseline.json"
    target.write_text("old", encoding="utf-8")
    (tmp_path / "blocker").mkdir()
    with pytest.raises(OSError):
        # os.replace of a file over a directory fails after the temporary file was written.
        write_atomic(tmp_path / "blocker", b"new", fsync=False, private=True)
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(os.listdir(tmp_path)) == ["baseline.json", "blocker"]
