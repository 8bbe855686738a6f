"""Aggregate bound checks that join the release family (family: release, --llmjudge-family-include)."""

from __future__ import annotations

import json

import builders
import pytest
from statsmodels.stats.multitest import multipletests

from pytest_llmjudge.stats.betting import betting_pvalue
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

ROWS = {"de": [2] * 6 + [1] * 6, "fr": [2] * 9 + [1] * 3, "hi": [2] * 10 + [1] * 2}


def suite_text(aggregate: str) -> str:
    cases = builders.recorded_rows(ROWS, "task_quality")
    return builders.suite_text("release", cases, asserts=["task_quality >= 0"], aggregate=[aggregate])


def rows_of(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    return {a["language"]: a for a in report["aggregates"]}


def test_aggregate_rows_join_the_family_and_their_adjusted_p_decides_them(pytester: pytest.Pytester) -> None:
    # Alone, hi's 97.5% lower bound clears 1.2 (raw p 0.023 < 0.025) and the row passes.
    pytester.makefile(".yaml", suite=suite_text('"lower(mean(task_quality)) >= 1.2"'))
    alone = pytester.runpytest("--llmjudge", "-k", "aggregate", "--llmjudge-report=json:r.json")
    alone.assert_outcomes(passed=2, failed=2)
    assert rows_of(pytester)["hi"]["passed"] is True and rows_of(pytester)["hi"]["release"] is None

    pytester.makefile(".yaml", suite=suite_text('{expr: "lower(mean(task_quality)) >= 1.2", family: release}'))
    result = pytester.runpytest(
        "--llmjudge",
        "-k",
        "aggregate",
        "--llmjudge-report=json:r.json",
        "--junitxml=j.xml",
        "--llmjudge-junit-properties",
    )
    result.assert_outcomes(passed=1, failed=3)
    junit = (pytester.path / "j.xml").read_text(encoding="utf-8")
    assert 'name="p_adjusted"' in junit and 'name="llmjudge_release_verdict"' in junit
    rows = rows_of(pytester)
    order = ["all", "de", "fr", "hi"]
    everything = [v for values in ROWS.values() for v in values]
    scores = {"all": everything, **ROWS}
    # Four rows in the family: the bets are tuned to Holm's first step, 0.05 / 4.
    raw = [betting_pvalue(scores[g], 0, 2, 1.2, design_level=0.05 / 4) for g in order]
    expected = multipletests(raw, alpha=0.05, method="holm")[1]
    for group, p, adjusted in zip(order, raw, expected, strict=True):
        release = rows[group]["release"]
        assert isinstance(release, dict)
        assert release["p_value"] == pytest.approx(p, rel=1e-12)
        assert release["p_adjusted"] == pytest.approx(adjusted, rel=1e-12)
        assert release["size"] == 4 and release["correction"] == "holm" and release["family"] == "run"
        assert rows[group]["passed"] is bool(adjusted <= 0.05)
    assert raw[3] < 0.025 < 0.05 < expected[3], "hi clears its bound alone but not after Holm"
    result.stdout.fnmatch_lines(
        [
            "*FAILED: lower(mean(task_quality)) for hi = *, expected >= 1.2 (release family: p = 0.0227, "
            "adjusted 0.0680 > alpha 0.05, Holm over 4 comparison(s) (run))*",
            "release verdict: FAIL: 4 comparison(s), 4 of them aggregate row(s) in 1 family (run)*",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    assert report["release"]["text"].startswith(
        "release verdict: FAIL: 4 comparison(s), 4 of them aggregate row(s) in 1 family (run), Holm at alpha "
        "0.05; 3 failed: release lower(mean(task_quality)) [de]"
    )
    # Every item's table shows the rows as the family decided them (hi FAILs in fr's table too).
    result.stdout.fnmatch_lines(["*for fr = *", "*", "*", "*", "*", "  hi * lower >= 1.2  FAIL"])


def test_command_line_includes_aggregates_with_the_regression_items(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text('"lower(mean(task_quality)) >= 0.8"'))
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod").assert_outcomes(passed=36 + 4)
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-baseline=prod",
        "--llmjudge-family-include=aggregates",
        "-k",
        "aggregate or regression",
        "--llmjudge-report=json:r.json",
    )
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    # 3 regression items (no change) + 4 rows.
    assert {a["release"]["size"] for a in report["aggregates"]} == {7}
    assert {r["family_size"] for r in report["regressions"]} == {7}
    assert report["release"]["comparisons"] == 7
    assert report["release"]["text"].startswith("release verdict: ")
    assert "4 of them aggregate row(s)" in report["release"]["text"]
    result.assert_outcomes(passed=3 + 4)
    # Tarone: the unchanged comparisons can never be significant, so Holm counts the 4 rows only.
    joined = [a["release"] for a in report["aggregates"]]
    expected = multipletests([r["p_value"] for r in joined], alpha=0.05, method="holm")[1]
    assert [r["p_adjusted"] for r in joined] == pytest.approx(list(expected), rel=1e-12)
    assert [r["design_level"] for r in joined] == pytest.approx([0.05 / 7] * 4)


def test_family_release_on_a_check_without_a_p_value_is_a_suite_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text('{expr: "mean(task_quality) >= 1.2", family: release}'))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*suite.yaml:42: aggregate[[]0[]].family: family: release needs a bound check on a mean*"]
    )


@pytest.fixture
def scripted_judge() -> ScriptedJudge:
    return ScriptedJudge(lambda query: 2)


def test_a_sequentially_judged_row_does_not_join(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    """Sequential judging stops a row early; a fixed-n p-value of what it judged would not be valid."""
    cases = "\n".join(
        f"  - {{id: {lang}-{i}, language: {lang}, input: 'q {i}', output: 'a {lang} {i}'}}"
        for lang in ("de", "hi")
        for i in range(20)
    )

    def text(aggregate: str) -> str:
        return (
            f"suite: seq\njudge: {{provider: openai, model: loopback-judge, base_url: '{loopback.openai_base_url}'}}\n"
            f"sequential: {{round: 10}}\naggregate:\n  - {aggregate}\ncases:\n{cases}\n"
        )

    pytester.makefile(".yaml", suite=text('{expr: "lower(mean(task_quality)) >= 1.0", family: release}'))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*family: release needs the row judged in full, but it is judged sequentially*"])
    pytester.makefile(".yaml", suite=text('"lower(mean(task_quality)) >= 1.0"'))
    result = pytester.runpytest("--llmjudge", "--llmjudge-family-include=aggregates", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=3)
    assert all(row["release"] is None for row in rows_of(pytester).values())
