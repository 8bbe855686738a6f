"""Run history on the remote stores (history.py): a real redis-server and moto's S3 server.

Each kind appends runs and reads them back in order, keeps one baseline per branch, and
serves ``history:BRANCH`` to a pytest run; concurrent appends on S3 never overwrite each
other (one object per run)."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest

from pytest_llmjudge.history import History, HistoryRow, HistoryRun, open_history, trends

BUCKET = "llmjudge-test"  # the bucket tests/stores/conftest.py creates


def run(timestamp: str, mean: float) -> HistoryRun:
    row = HistoryRow("s", "task_quality", "hi", 2, 0, mean, None, None, None, "pass")
    return HistoryRun(timestamp=timestamp, commit="c0ffee", branch="main", exit_status=0, rows=(row,))


@pytest.fixture(params=["dir", "redis", "s3"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    prefix = f"h-{uuid.uuid4().hex[:10]}"
    if request.param == "redis":
        return f"{request.getfixturevalue('redis_url')}/0?prefix={prefix}:"
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        return f"s3://{BUCKET}/{prefix}?endpoint_url={server.endpoint}"
    return str(tmp_path / "history")


def test_runs_and_branch_baselines_round_trip(history_url: str, tmp_path: Path) -> None:
    store: History = open_history(history_url, tmp_path)
    for index, mean in enumerate((2.0, 1.5, 1.0)):
        store.append(run(f"2026-11-2{index}T10:00:00+00:00", mean))
    runs = list(open_history(history_url, tmp_path).runs())
    assert [r.rows[0].mean for r in runs] == [2.0, 1.5, 1.0]
    points = trends(runs, [("s", "task_quality", "hi")], last=2)[("s", "task_quality", "hi")]
    assert [row.mean for _, row in points] == [1.5, 1.0]
    store.save_baseline("feature/x", '{"format": "pytest-llmjudge-baseline"}\n')
    kept = store.baseline_file("feature/x")
    assert json.loads(kept.read_text(encoding="utf-8")) == {"format": "pytest-llmjudge-baseline"}
    assert not store.baseline_file("never-run").exists()


def test_concurrent_jobs_keep_every_run(history_url: str, tmp_path: Path) -> None:
    stores = [open_history(history_url, tmp_path) for _ in range(4)]
    threads = [
        threading.Thread(
            target=lambda s=s, n=n: [s.append(run(f"2026-11-27T10:00:0{n}+00:00", float(i))) for i in range(5)]
        )
        for n, s in enumerate(stores)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(list(open_history(history_url, tmp_path).runs())) == 20


SUITE = """\
suite: s
cases:
  - {{id: hi-1, language: hi, output: a, recorded: {{task_quality: {a}}}}}
  - {{id: hi-2, language: hi, output: b, recorded: {{task_quality: 2}}}}
aggregate:
  - mean(task_quality) >= 1
{extra}"""


@pytest.mark.parametrize("kind", ["redis", "s3"])
def test_a_remote_history_serves_trends_and_the_last_run_of_main(
    kind: str, request: pytest.FixtureRequest, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"h-{uuid.uuid4().hex[:10]}"
    if kind == "redis":
        url = f"{request.getfixturevalue('redis_url')}/0?prefix={prefix}:"
    else:
        url = f"s3://{BUCKET}/{prefix}?endpoint_url={request.getfixturevalue('s3_server').endpoint}"
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    for a in (2, 1):
        pytester.makefile(".yaml", s=SUITE.format(a=a, extra=""))
        pytester.runpytest("--llmjudge", f"--llmjudge-history={url}", "--llmjudge-report=html:r.html").assert_outcomes(
            passed=2
        )
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert page.split('<section id="history">', 1)[1].count("<circle") == 4  # hi and all: one earlier run, this one
    pytester.makefile(".yaml", s=SUITE.format(a=1, extra="regression: {baseline: 'history:main'}\n"))
    result = pytester.runpytest("--llmjudge", f"--llmjudge-history={url}", "-k", "regression", "-v")
    result.stdout.fnmatch_lines(["*s.yaml::regression[[]task_quality-hi[]]*"])
    assert "baseline file not found" not in result.stdout.str()
