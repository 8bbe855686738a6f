"""Write targets (``write_targets.py``) and ``atomic.write_atomic``'s refusal to replace a non-regular file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_llmjudge.util.atomic import write_atomic
from pytest_llmjudge.write_targets import check_targets, target_problem


def test_a_missing_or_regular_target_is_fine(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text("{}")
    assert target_problem(tmp_path / "new" / "r.json") is None
    assert target_problem(tmp_path / "old.json") is None
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    assert target_problem(tmp_path / "dangling") is None


def test_non_regular_targets_say_what_they_are(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "fifo", tmp_path / "link")
    (tmp_path / "file").write_text("x")
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    assert target_problem(tmp_path / "fifo") == "it is a FIFO, not a regular file"
    assert target_problem(tmp_path / "link") == "it is a FIFO, not a regular file"
    assert target_problem(tmp_path / "dir") == "it is a directory, not a regular file"
    assert target_problem(Path("/dev/null")) == "it is a character device, not a regular file"
    assert "can't be read (Not a directory)" in str(target_problem(tmp_path / "file" / "r.json"))
    assert "can't be read" in str(target_problem(tmp_path / "loop1"))


def test_yaml_inputs_are_refused_by_kind_and_other_yaml_is_not(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("suite: s\ncases: []\n")
    (tmp_path / "c.yml").write_text("calibration: c\n")
    (tmp_path / "plain.yaml").write_text("key: value\n")
    assert target_problem(tmp_path / "s.yaml") == "it is a suite file"
    assert target_problem(tmp_path / "c.yml") == "it is a calibration file"
    assert target_problem(tmp_path / "plain.yaml") is None


def test_inputs_are_matched_by_inode_and_targets_by_each_other(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("{}\n")
    os.link(cases, tmp_path / "hard.json")
    os.symlink(cases, tmp_path / "soft.json")
    targets = [("json", tmp_path / "hard.json"), ("html", tmp_path / "soft.json"), ("other", tmp_path / "new.json")]
    problems = check_targets(targets, [cases])
    assert len(problems) == 3, problems  # two inputs, and soft.json is the same file as hard.json
    assert all(str(cases) in problem for problem in problems[:2])
    assert "also the path of json" in problems[2]
    same = check_targets([("a", tmp_path / "x.json"), ("b", tmp_path / "sub" / ".." / "x.json")])
    assert same and "also the path of a" in same[0]
    assert check_targets([("a", tmp_path / "x.json"), ("b", tmp_path / "y.json")], [cases]) == []


def test_write_atomic_never_replaces_a_non_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.symlink(fifo, tmp_path / "link")
    for target in (fifo, tmp_path / "link"):
        with pytest.raises(OSError, match="it is a FIFO, not a regular file; not replaced"):
            write_atomic(target, "x", fsync=False, private=False)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and (tmp_path / "link").is_symlink()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fifo", "link"]  # no temporary file left
    (tmp_path / "plain").write_text("old")
    write_atomic(tmp_path / "plain", "new", fsync=False, private=False)
    assert (tmp_path / "plain").read_text() == "new"
