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

Remote histories (``--llmjudge-history=redis://host:6379/0?prefix=team:`` or
``s3://bucket/prefix?endpoint_url=...``, the remote cache's URL forms, ``docs/remote-cache.md``)
keep the same lines for jobs on different machines: a Redis list ``<prefix>history:runs``
(``RPUSH``, atomic) and a key ``<prefix>history:baseline:<branch>``; on S3 one object per
run, ``<prefix>history/runs/<timestamp>-<random>.json`` (objects never overwritten, so
concurrent jobs can't lose each other's runs; read back in key order), and
``<prefix>history/baselines/<branch>.json``. A ``history:`` baseline of a remote history is
downloaded to a temporary file when the run starts.

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


# --------------------------------------------------------------------------- where a history lives


class History:
    """A history's storage: runs appended and read back, one baseline per branch."""

    description: str

    def append(self, run: HistoryRun) -> None:
        raise NotImplementedError

    def runs(self) -> Iterator[HistoryRun]:
        raise NotImplementedError

    def save_baseline(self, branch: str, text: str) -> None:
        raise NotImplementedError

    def baseline_file(self, branch: str) -> Path:
        """A local file holding the branch's baseline (downloaded from a remote history)."""
        raise NotImplementedError


class LocalHistory(History):
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.description = str(directory)

    def append(self, run: HistoryRun) -> None:
        append_run(self.directory, run)

    def runs(self) -> Iterator[HistoryRun]:
        return read_runs(self.directory)

    def save_baseline(self, branch: str, text: str) -> None:
        from pytest_llmjudge.util.atomic import write_atomic

        path = baseline_path(self.directory, branch)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text, fsync=False, private=False)

    def baseline_file(self, branch: str) -> Path:
        return baseline_path(self.directory, branch)


def _run_line(run: HistoryRun) -> bytes:
    return (json.dumps(run.to_json(), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8", "surrogatepass")


def _parse_line(raw: bytes) -> HistoryRun | None:
    try:
        data = json.loads(raw)
        return HistoryRun.from_json(data) if data.get("format") == FORMAT else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _download(branch: str, data: bytes | None, source: str) -> Path:
    import tempfile

    if data is None:
        return Path(tempfile.gettempdir()) / f"llmjudge-history-missing-{branch_file_name(branch)}.json"
    handle = tempfile.NamedTemporaryFile(
        prefix=f"llmjudge-history-{branch_file_name(branch)}-", suffix=".json", delete=False
    )
    with handle:
        handle.write(data)
    return Path(handle.name)


class RedisHistory(History):
    def __init__(self, url: str) -> None:
        from pytest_llmjudge.execution.stores.redis_store import RedisStore

        store = RedisStore.from_url(url)
        self._client, self._prefix = store.client, store.prefix
        self.description = _without_credentials(url)

    def append(self, run: HistoryRun) -> None:
        self._client.rpush(f"{self._prefix}history:runs", _run_line(run))

    def runs(self) -> Iterator[HistoryRun]:
        for raw in self._client.lrange(f"{self._prefix}history:runs", -MAX_REMOTE_RUNS, -1):
            run = _parse_line(bytes(raw))
            if run is not None:
                yield run

    def save_baseline(self, branch: str, text: str) -> None:
        self._client.set(f"{self._prefix}history:baseline:{branch_file_name(branch)}", text.encode("utf-8"))

    def baseline_file(self, branch: str) -> Path:
        data = self._client.get(f"{self._prefix}history:baseline:{branch_file_name(branch)}")
        return _download(branch, None if data is None else bytes(data), self.description)


class S3History(History):
    def __init__(self, url: str) -> None:
        from pytest_llmjudge.execution.stores.s3_store import S3Store

        store = S3Store.from_url(url)
        self._client, self._bucket, self._prefix = store.client, store.bucket, store.prefix
        self.description = _without_credentials(url)

    def append(self, run: HistoryRun) -> None:
        import uuid

        stamp = "".join(ch for ch in run.timestamp if ch.isalnum()) or "unknown"
        key = f"{self._prefix}history/runs/{stamp}-{uuid.uuid4().hex[:12]}.json"
        self._client.put_object(Bucket=self._bucket, Key=key, Body=_run_line(run))

    def runs(self) -> Iterator[HistoryRun]:
        keys: list[str] = []
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=f"{self._prefix}history/runs/"):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        for key in sorted(keys)[-MAX_REMOTE_RUNS:]:
            body = self._client.get_object(Bucket=self._bucket, Key=key)["Body"].read()
            run = _parse_line(bytes(body))
            if run is not None:
                yield run

    def save_baseline(self, branch: str, text: str) -> None:
        key = f"{self._prefix}history/baselines/{branch_file_name(branch)}.json"
        self._client.put_object(Bucket=self._bucket, Key=key, Body=text.encode("utf-8"))

    def baseline_file(self, branch: str) -> Path:
        key = f"{self._prefix}history/baselines/{branch_file_name(branch)}.json"
        try:
            data = self._client.get_object(Bucket=self._bucket, Key=key)["Body"].read()
        except self._client.exceptions.NoSuchKey:
            data = None
        return _download(branch, None if data is None else bytes(data), self.description)


def _without_credentials(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=host, query=""))


MAX_REMOTE_RUNS = 200
"""The newest runs read from a remote history (the HTML report shows at most llmjudge_history_runs)."""


def open_history(spec: str, base: Path) -> History:
    """The history ``spec`` names: ``redis://``/``rediss://`` or ``s3://`` URLs, else a directory
    (relative to ``base``)."""
    if spec.startswith(("redis://", "rediss://")):
        return RedisHistory(spec)
    if spec.startswith("s3://"):
        return S3History(spec)
    path = Path(spec).expanduser()
    return LocalHistory(path if path.is_absolute() else base / path)
