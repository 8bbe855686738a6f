"""Run history (history.py, ``--llmjudge-history``): appended lines, trends in the HTML report,
and the last run of a branch as a baseline (``history:main``)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from pytest_llmjudge import history
from pytest_llmjudge.history import HistoryRow, HistoryRun, append_run, current_revision, read_runs, trends


def run(timestamp: str, mean: float, branch: str = "main") -> HistoryRun:
    row = HistoryRow("s", "task_quality", "hi", 20, 0, mean, mean - 0.1, mean + 0.1, None, "pass")
    return HistoryRun(timestamp=timestamp, commit="abc", branch=branch, exit_status=0, rows=(row,))


def test_runs_are_appended_and_read_back_in_order(tmp_path: Path) -> None:
    for index in range(3):
        append_run(tmp_path, run(f"t{index}", 1.0 + index / 10))
    runs = list(read_runs(tmp_path))
    assert [r.timestamp for r in runs] == ["t0", "t1", "t2"]
    assert runs[2] == run("t2", 1.2)
    points = trends(runs, [("s", "task_quality", "hi"), ("s", "task_quality", "sw")], last=2)
    assert [p[1].mean for p in points[("s", "task_quality", "hi")]] == [1.1, 1.2]
    assert points[("s", "task_quality", "sw")] == []


def test_a_damaged_line_or_an_unfinished_last_line_is_skipped(tmp_path: Path) -> None:
    append_run(tmp_path, run("t0", 1.0))
    with (tmp_path / history.FILE_NAME).open("ab") as handle:
        handle.write(b'{"format": "something else"}\n{not json}\n')
    append_run(tmp_path, run("t1", 1.1))
    with (tmp_path / history.FILE_NAME).open("ab") as handle:
        handle.write(json.dumps(run("t2", 1.2).to_json()).encode()[:40])  # a crash mid-write
    assert [r.timestamp for r in read_runs(tmp_path)] == ["t0", "t1"]
    assert list(read_runs(tmp_path / "missing")) == []


def _append_many(directory: str, worker: int) -> None:
    rows = tuple(HistoryRow("s", f"m{i}", "hi", 1, 0, 1.0, None, None, None, "pass") for i in range(400))
    for index in range(25):
        append_run(Path(directory), HistoryRun(f"w{worker}-{index}", None, "main", 0, rows=rows))


def test_concurrent_jobs_never_interleave_lines(tmp_path: Path) -> None:
    # Four processes append 25 runs of 400 rows (about 20 KB a line) each at the same time.
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), n)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert all(worker.exitcode == 0 for worker in workers)
    lines = (tmp_path / history.FILE_NAME).read_bytes().splitlines()
    assert len(lines) == 100 and all(json.loads(line)["format"] == history.FORMAT for line in lines)
    assert len({r.timestamp for r in read_runs(tmp_path)}) == 100


def test_branch_and_commit_come_from_the_ci_else_git_else_unknown(tmp_path: Path) -> None:
    assert current_revision(
        tmp_path, {"GITHUB_SHA": "f00", "GITHUB_REF_NAME": "12/merge", "GITHUB_HEAD_REF": "fix"}
    ) == (
        "f00",
        "fix",
    )
    assert current_revision(tmp_path, {"CI_COMMIT_SHA": "b4r", "CI_COMMIT_REF_NAME": "main"}) == ("b4r", "main")
    assert current_revision(tmp_path, {}) == (None, "unknown")  # no git repository there
    assert history.baseline_path(tmp_path, "feature/x y").name == "feature-x-y.json"


SUITE = """\
suite: s
cases:
  - {{id: hi-1, language: hi, output: a, recorded: {{task_quality: {a}}}}}
  - {{id: hi-2, language: hi, output: b, recorded: {{task_quality: {b}}}}}
  - {{id: sw-1, language: sw, output: c, recorded: {{task_quality: 2}}}}
  - {{id: sw-2, language: sw, output: d, recorded: {{task_quality: 2}}}}
aggregate:
  - mean(task_quality) >= 1
{extra}"""


def test_a_history_directory_gives_trends_and_the_last_run_of_a_branch_as_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    monkeypatch.setenv("GITHUB_SHA", "0123456789abcdef")
    for a, b in ((2, 2), (2, 1), (1, 1)):
        pytester.makefile(".yaml", s=SUITE.format(a=a, b=b, extra=""))
        pytester.runpytest("--llmjudge", "--llmjudge-history=hist", "--llmjudge-report=html:r.html")
    runs = list(read_runs(pytester.path / "hist"))
    assert [r.branch for r in runs] == ["main"] * 3 and runs[0].commit == "0123456789abcdef"
    hindi = [row.mean for r in runs for row in r.rows if row.language == "hi"]
    assert hindi == [2.0, 1.5, 1.0]
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert '<section id="history">' in page
    history_section = page.split('<section id="history">', 1)[1].split("</section>", 1)[0]
    assert history_section.count('<svg class="spark"') == 3  # hi, sw, all
    assert history_section.count("<circle") == 9  # two earlier runs and this one, per row
    # The third run's scores are the branch's baseline: a drop from it is a regression.
    kept = pytester.path / "hist" / "baselines" / "main.json"
    assert json.loads(kept.read_text(encoding="utf-8"))["suites"]["s"]["metrics"]["task_quality"]["scores"]["hi"] == {
        "hi-1": 1.0,
        "hi-2": 1.0,
    }
    pytester.makefile(".yaml", s=SUITE.format(a=1, b=1, extra="regression: {baseline: 'history:main'}\n"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-history=hist", "-k", "regression", "-v")
    # Two cases per language: too few to decide, but compared with the kept baseline (not "not found").
    result.stdout.fnmatch_lines(["*s.yaml::regression[[]task_quality-hi[]] UNDECIDED*"])


def test_a_history_baseline_needs_a_history_directory(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", s=SUITE.format(a=2, b=2, extra=""))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=history:main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*baseline 'history:main' needs a history directory: --llmjudge-history=DIR*"])
