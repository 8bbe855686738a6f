"""Run history: each run's per-suite x metric x language summary, appended to one file.

``--llmjudge-history=DIR`` (ini ``llmjudge_history``) appends one JSON line per run to
``DIR/history.jsonl``: when, which commit and branch, the judges, the baseline compared
with, the exit status, and one row per summary row of the report (suite, metric,
language, n, unscored, mean and its interval, pass rate, status). It also keeps the run's
per-case scores as ``DIR/baselines/<branch>.json`` (a baseline file, ``regression/
baseline.py``'s format), so a suite can gate against "the last run on main" with
``regression: {baseline: "history:main"}`` or ``--llmjudge-baseline=history:main``.

Size: a line holds summary rows only, no cases: about 150 bytes per row (80 rows, 12 KB
a run; a year of nightly runs of 8 languages x 3 metrics is about 9 MB). The per-branch
baseline is overwritten by each run of that branch.

Concurrency: CI jobs may append at the same time. A line is written with one ``write`` on
a file opened ``O_APPEND`` under an exclusive ``flock``, so lines never interleave; a
reader skips a line that does not parse (a crash mid-write on a filesystem without
``flock``), never stops at it.

Branch and commit come from the CI's variables (GitHub ``GITHUB_HEAD_REF``/
``GITHUB_REF_NAME``, ``GITHUB_SHA``; GitLab ``CI_COMMIT_REF_NAME``, ``CI_COMMIT_SHA``),
else from ``git`` in the rootdir; a run outside git has neither (branch ``unknown``).

Degenerate cases: a missing history file is an empty history; a run with no summary rows
appends nothing; a branch name is made a file name by replacing what is not a letter,
digit, ``.``, ``_`` or ``-`` (``feature/x`` -> ``feature-x``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "pytest-llmjudge-history"
VERSION = 1
FILE_NAME = "history.jsonl"
BASELINES = "baselines"
PREFIX = "history:"
"""Baseline names ``history:BRANCH`` mean the last run of BRANCH kept in the history directory."""
MAX_LINE = 4 * 1024 * 1024
"""Longest history line read (a run of 25,000 summary rows)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class HistoryRow:
    suite: str
    metric: str
    language: str
    n: int
    n_unscored: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    pass_rate: float | None
    status: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.suite, self.metric, self.language


@dataclass(frozen=True)
class HistoryRun:
    timestamp: str
    commit: str | None
    branch: str
    exit_status: int | None
    judges: tuple[str, ...] = ()
    baseline: str | None = None
    rows: tuple[HistoryRow, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "timestamp": self.timestamp,
            "commit": self.commit,
            "branch": self.branch,
            "exit_status": self.exit_status,
            "judges": list(self.judges),
            "baseline": self.baseline,
            "rows": [
                [r.suite, r.metric, r.language, r.n, r.n_unscored, r.mean, r.ci_low, r.ci_high, r.pass_rate, r.status]
                for r in self.rows
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HistoryRun:
        rows = tuple(HistoryRow(*row) for row in data["rows"])
        return cls(
            timestamp=str(data["timestamp"]),
            commit=data.get("commit"),
            branch=str(data.get("branch") or "unknown"),
            exit_status=data.get("exit_status"),
            judges=tuple(data.get("judges") or ()),
            baseline=data.get("baseline"),
            rows=rows,
        )


def branch_file_name(branch: str) -> str:
    return _UNSAFE.sub("-", branch).strip("-.") or "unknown"


def baseline_path(directory: Path, branch: str) -> Path:
    """Where the last run of ``branch`` keeps its per-case scores."""
    return directory / BASELINES / f"{branch_file_name(branch)}.json"


def _git(rootdir: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(["git", *args], cwd=rootdir, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    text = completed.stdout.strip()
    return text if completed.returncode == 0 and text else None


def current_revision(rootdir: Path, environ: Mapping[str, str] = os.environ) -> tuple[str | None, str]:
    """``(commit, branch)`` of this run: the CI's variables first, else git, else (None, "unknown")."""
    commit = environ.get("GITHUB_SHA") or environ.get("CI_COMMIT_SHA") or _git(rootdir, "rev-parse", "HEAD")
    branch = (
        environ.get("GITHUB_HEAD_REF")  # a pull request's source branch (GITHUB_REF_NAME is "123/merge")
        or environ.get("GITHUB_REF_NAME")
        or environ.get("CI_COMMIT_REF_NAME")
        or _git(rootdir, "rev-parse", "--abbrev-ref", "HEAD")
        or "unknown"
    )
    return commit, branch


def append_run(directory: Path, run: HistoryRun) -> Path:
    """Append ``run`` as one line of ``DIR/history.jsonl`` (created with its directory)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILE_NAME
    line = (json.dumps(run.to_json(), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8", "surrogatepass")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _lock(descriptor)
        view = memoryview(line)
        while view:  # one write almost always; a short write continues under the same lock
            written = os.write(descriptor, view)
            view = view[written:]
    finally:
        os.close(descriptor)  # closing releases the lock
    return path


def _lock(descriptor: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: O_APPEND alone (a line is one write)
        return
    fcntl.flock(descriptor, fcntl.LOCK_EX)


def read_runs(directory: Path) -> Iterator[HistoryRun]:
    """The runs of ``DIR/history.jsonl`` in the order they were appended (bad lines skipped)."""
    path = directory / FILE_NAME
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        while raw := handle.readline(MAX_LINE + 1):
            if len(raw) > MAX_LINE or not raw.endswith(b"\n"):
                continue  # too long, or the last line of a write that did not finish
            try:
                data = json.loads(raw)
                if data.get("format") != FORMAT:
                    continue
                yield HistoryRun.from_json(data)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue


def trends(
    runs: Iterable[HistoryRun], keys: Iterable[tuple[str, str, str]], last: int = 10
) -> dict[tuple[str, str, str], list[tuple[HistoryRun, HistoryRow]]]:
    """For each (suite, metric, language) key, its rows in the ``last`` runs that have it, oldest first."""
    wanted = set(keys)
    found: dict[tuple[str, str, str], list[tuple[HistoryRun, HistoryRow]]] = {key: [] for key in wanted}
    for run in runs:
        for row in run.rows:
            if row.key in wanted:
                found[row.key].append((run, row))
    return {key: points[-last:] for key, points in found.items()}
