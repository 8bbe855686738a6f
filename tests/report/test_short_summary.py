"""The summary a first run prints (report/terminal.py::short_summary_lines): a line per suite
with its failing rows, a line per kind of gate, where the tables are; the tables with -v."""

from __future__ import annotations

import pytest

SUITE = """\
suite: short
cases:
  - {id: hi-1, language: hi, output: a, recorded: {task_quality: 2}}
  - {id: hi-2, language: hi, output: b, recorded: {task_quality: 0}}
  - {id: sw-1, language: sw, output: c, recorded: {task_quality: 2}}
  - {id: sw-2, language: sw, output: d, recorded: {task_quality: 2}}
aggregate:
  - mean(task_quality) >= 1.5
"""


@pytest.fixture
def first_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("LLMJUDGE_SUMMARY", raising=False)  # tests/conftest.py sets it for the table tests
    pytester.makefile(".yaml", short=SUITE)
    return pytester


def test_a_first_run_prints_a_line_per_suite_its_failing_rows_and_where_the_tables_are(
    first_run: pytest.Pytester,
) -> None:
    result = first_run.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(
        [
            "*= llmjudge summary =*",
            "suite short: 4 cases, 2 languages, 1 metrics: 2/3 rows pass",
            "  FAIL task_quality [[]hi[]]: mean(task_quality) = 1, needs >= 1.50",
            "tables per language and metric: -v or --llmjudge-summary=full; a page: --llmjudge-report=html:PATH",
        ]
    )
    assert "    lang          n  unsc" not in result.stdout.str()


@pytest.mark.parametrize(
    "how", [["-v"], ["--llmjudge-summary=full"], ["-o", "llmjudge_summary=full"]], ids=["verbose", "option", "ini"]
)
def test_the_tables_come_with_verbose_the_option_or_the_ini(first_run: pytest.Pytester, how: list[str]) -> None:
    result = first_run.runpytest("--llmjudge", *how)
    result.stdout.fnmatch_lines(["suite short: 4 case(s), 2 language(s)*", "    lang          n  unsc*"])
    assert "tables per language and metric" not in result.stdout.str()


def test_short_wins_over_verbose_when_asked(first_run: pytest.Pytester) -> None:
    result = first_run.runpytest("--llmjudge", "-v", "--llmjudge-summary=short")
    result.stdout.fnmatch_lines(["suite short: 4 cases, 2 languages, 1 metrics: 2/3 rows pass"])


def test_a_row_that_fails_as_expected_is_counted_as_known_not_listed(first_run: pytest.Pytester) -> None:
    first_run.makefile(
        ".yaml",
        short=SUITE.replace("mean(task_quality) >= 1.5", "{expr: mean(task_quality) >= 1.5, xfail: {hi: known}}"),
    )
    result = first_run.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["suite short: 4 cases, 2 languages, 1 metrics: 2/3 rows pass, 1 known failures"])
    assert "  FAIL task_quality" not in result.stdout.str()


def test_the_release_verdict_is_in_the_short_summary(first_run: pytest.Pytester) -> None:
    first_run.runpytest("--llmjudge", "--llmjudge-save-baseline=prod")
    result = first_run.runpytest("--llmjudge", "--llmjudge-baseline=prod")
    result.stdout.fnmatch_lines(
        [
            "regression against the baseline: 2 comparison(s), 0 fail, 0 warn, 2 undecided, 0 improved",
            "release verdict: UNDECIDED: 2 comparison(s)*",
        ]
    )
