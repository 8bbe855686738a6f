"""Suite aggregates and regression items per group of case fields (``group_by: [language, task]``)."""

from __future__ import annotations

import json
import re

import builders
import pytest

from pytest_llmjudge.testing import JudgeQuery, MockProvider, ScriptedJudge

# (language, task) -> recorded task_quality scores; task None: a case without the field.
Scores = dict[tuple[str, str | None], list[int]]
SCORES: Scores = {
    ("hi", "qa"): [2, 2, 2, 1],  # mean 1.75: passes the default >= 1.5, fails its per_group >= 1.9
    ("hi", "summary"): [2, 2, 2, 2],
    ("bn", "qa"): [1, 1, 1, 1],  # mean 1.0: fails the default, passes per_language bn >= 1.0
    ("bn", "summary"): [2, 1, 1, 1],  # mean 1.25: per_language bn applies to every bn group
    ("hi", None): [2],
}


def suite_text(scores: Scores = SCORES, *, head: str = "", aggregate: str = "") -> str:
    cases = [
        {"id": f"{language}-{task or 'x'}-{index}", "language": language, "output": "x"}
        | ({"metadata": {"task": task}} if task else {})
        | {"recorded": {"task_quality": value}}
        for (language, task), values in scores.items()
        for index, value in enumerate(values)
    ]
    return builders.suite_text(
        "grouped", cases, head=head, asserts=["task_quality >= 0"], aggregate=aggregate or ["mean(task_quality) >= 1.5"]
    )


OVERRIDES = """  - expr: mean(task_quality) >= 1.5
    per_language: {bn: ">= 1.0"}
    per_group: {hi-task=qa: ">= 1.9"}"""


def test_aggregate_items_are_one_per_group_with_per_group_and_per_language_overrides(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", suite=suite_text(head="group_by: [language, task]", aggregate=OVERRIDES))
    result = pytester.runpytest("--llmjudge", "-k", "aggregate", "-rA")
    result.assert_outcomes(passed=5, failed=1, deselected=17)
    result.stdout.fnmatch_lines(
        [
            "PASSED suite.yaml::mean(task_quality)[[]bn-task=qa[]]",
            "PASSED suite.yaml::mean(task_quality)[[]bn-task=summary[]]",
            "PASSED suite.yaml::mean(task_quality)[[]hi-task=(none)[]]",
            "PASSED suite.yaml::mean(task_quality)[[]hi-task=summary[]]",
            "PASSED suite.yaml::mean(task_quality)[[]all[]]",
            "FAILED suite.yaml::mean(task_quality)[[]hi-task=qa[]]*",
        ],
        consecutive=False,
    )
    # The failure names the group and prints every group's row with its own threshold.
    result.stdout.fnmatch_lines(
        [
            "FAILED: mean(task_quality) for hi-task=qa = 1.75, expected >= 1.9",
            "*bn-task=qa * 4 * 0 * 1.000 *>= 1  pass",
            "*hi-task=(none) * 1 * 0 * 2.000 *>= 1.5  pass",
            "> hi-task=qa * 4 * 0 * 1.750 *>= 1.9  FAIL",
        ],
        consecutive=False,
    )


def test_default_grouping_keeps_per_language_names(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text(aggregate=OVERRIDES.split("\n    per_group")[0]))
    result = pytester.runpytest("--llmjudge", "-k", "aggregate", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "suite.yaml::mean(task_quality)[[]bn[]]",
            "suite.yaml::mean(task_quality)[[]hi[]]",
            "suite.yaml::mean(task_quality)[[]all[]]",
        ]
    )
    assert "task=" not in result.stdout.str()


def test_an_aggregate_groups_by_its_own_fields(pytester: pytest.Pytester) -> None:
    aggregate = "  - {expr: mean(task_quality) >= 1.0, group_by: [language, task]}\n  - mean(task_quality) >= 1.0"
    pytester.makefile(".yaml", suite=suite_text(aggregate=aggregate))
    result = pytester.runpytest("--llmjudge", "-k", "aggregate", "--collect-only", "-q")
    names = [line for line in result.stdout.lines if "mean(" in line]
    assert names == [
        "suite.yaml::mean(task_quality)[bn-task=qa]",
        "suite.yaml::mean(task_quality)[bn-task=summary]",
        "suite.yaml::mean(task_quality)[hi-task=(none)]",
        "suite.yaml::mean(task_quality)[hi-task=qa]",
        "suite.yaml::mean(task_quality)[hi-task=summary]",
        "suite.yaml::mean(task_quality)[all]",
        "suite.yaml::mean(task_quality)[bn]",
        "suite.yaml::mean(task_quality)[hi]",
        "suite.yaml::mean(task_quality)[all]",
    ]


def test_a_per_group_name_that_matches_no_group_is_a_located_error(pytester: pytest.Pytester) -> None:
    aggregate = "  - expr: mean(task_quality) >= 1.5\n    per_group: {hi-task=qq: '>= 1'}"
    pytester.makefile(".yaml", suite=suite_text(head="group_by: [language, task]", aggregate=aggregate))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*suite.yaml:25: aggregate[[]0[]].per_group.hi-task=qq: no case is in group 'hi-task=qq'*",
            "  hint: did you mean 'hi-task=qa'?",
        ]
    )


def test_group_by_must_start_with_language(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text(head="group_by: [task]"))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*group_by must start with 'language'*"])


def _baseline(pytester: pytest.Pytester, scores: Scores) -> None:
    # Saved by a suite without group_by: the baseline is keyed per language, as before grouping existed.
    pytester.makefile(".yaml", suite=suite_text(scores))
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod", "-k", "not aggregate").assert_outcomes(
        passed=sum(len(values) for values in scores.values()), deselected=len({lang for lang, _ in scores}) + 1
    )
    stored = json.loads((pytester.path / "llmjudge_baselines" / "prod.json").read_text(encoding="utf-8"))
    assert sorted(stored["suites"]["grouped"]["metrics"]["task_quality"]["scores"]) == sorted(
        {lang for lang, _ in scores}
    )


def test_regression_per_group_detects_a_drop_in_one_group_only(pytester: pytest.Pytester) -> None:
    base: Scores = {("hi", "qa"): [2] * 10, ("hi", "summary"): [2] * 10, ("bn", "qa"): [2] * 10, ("hi", None): [1]}
    _baseline(pytester, base)
    # hi QA drops by 1 on 8 of 10 cases; hi summary drops by 0.3 on average, within its per_group
    # margin of 0.5 (without it, a significant drop beyond the default margin 0); bn is unchanged.
    candidate = {**base, ("hi", "qa"): [1] * 8 + [2] * 2, ("hi", "summary"): [1] * 3 + [2] * 7}
    head = "group_by: [language, task]\nregression: {per_group: {hi-task=summary: 0.5}}"
    pytester.makefile(".yaml", suite=suite_text(candidate, head=head))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression", "-rA")
    # The (none) group's single case can decide nothing: it is undecided, not passed. The summary
    # group's drop (0.3) is within its margin, but 10 cases can't rule out a drop beyond 0.5: it warns.
    result.assert_outcomes(passed=2, failed=1, deselected=36, warnings=2)
    assert result.parseoutcomes()["undecided"] == 1
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: grouped task_quality [[]hi-task=qa[]] vs baseline prod: candidate - baseline = -0.800*",
            "*over 10 paired cases*",
            "PASSED suite.yaml::regression[[]task_quality-bn-task=qa[]]",
            "PASSED suite.yaml::regression[[]task_quality-hi-task=summary[]]",
        ],
        consecutive=False,
    )


def test_baseline_cases_gone_from_the_suite_are_reported_in_every_group_of_their_language(
    pytester: pytest.Pytester,
) -> None:
    base: Scores = {("hi", "qa"): [2] * 6, ("hi", "summary"): [2] * 6}
    _baseline(pytester, {**base, ("hi", "gone"): [2]})
    pytester.makefile(".yaml", suite=suite_text(base, head="group_by: [language, task]"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression")
    result.assert_outcomes(passed=2, deselected=15, warnings=2)
    result.stdout.fnmatch_lines(["*[[]hi-task=qa[]]: cases missing: 1 no longer in the suite (hi-gone-0)*"])
    result.stdout.fnmatch_lines(["*[[]hi-task=summary[]]: cases missing: 1 no longer in the suite (hi-gone-0)*"])


def test_control_characters_in_a_group_value_show_as_text_in_node_ids(pytester: pytest.Pytester) -> None:
    text = (
        "suite: odd\ngroup_by: [language, task]\ncases:\n"
        '  - {id: a, language: hi, output: x, metadata: {task: "p\\u0007q\\nr"}, recorded: {task_quality: 2}}\n'
        "aggregate:\n  - mean(task_quality) >= 1\n"
    )
    pytester.makefile(".yaml", suite=text)
    result = pytester.runpytest("--llmjudge", "-k", "aggregate", "-rA")
    result.assert_outcomes(passed=2, deselected=0)
    result.stdout.fnmatch_lines(["PASSED suite.yaml::mean(task_quality)[[]hi-task=p\\x07q\\x0ar[]]"])


def _quality_or_two(query: JudgeQuery) -> int:
    """The scripted judge: right in French (the quality written in the output), always 2 in Bengali."""
    match = re.search(r"quality (\d)", query.output)
    return int(match[1]) if match and query.language == "fr" else 2


def test_grouped_aggregates_are_stopped_where_the_judge_is_not_calibrated(
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = _quality_or_two
    items = [
        {
            "id": f"{language}-{i}",
            "language": language,
            "output": f"{language} answer {i} has quality {i % 3}",
            "human": {"linguistic_acceptability": {"a1": i % 3, "a2": i % 3, "a3": i % 3}},
        }
        for language in ("bn", "fr")
        for i in range(24)
    ]
    (pytester.path / "items.jsonl").write_text("\n".join(json.dumps(item) for item in items) + "\n")
    judge = "{provider: mock, model: loopback-judge"
    pytester.makefile(
        ".yaml",
        cal=f"calibration: tiny\nitems_file: items.jsonl\njudge: {judge}}}\nscores: judge\n"
        "gate: {threshold: 0.7, min_items: 20}\n",
    )
    cases = "".join(
        f"  - {{id: {case_id}, language: {case_id[:2]}, output: {case_id} has quality 2, metadata: {{task: {task}}}}}\n"
        for case_id, task in (("fr-1", "qa"), ("bn-1", "qa"), ("bn-2", "summary"))
    )
    pytester.makefile(
        ".yaml",
        suite=f"suite: s\ngroup_by: [language, task]\njudge: {judge}, calibration: cal.yaml, uncalibrated: xfail}}\n"
        f"cases:\n{cases}aggregate:\n  - mean(linguistic_acceptability) >= 1\n",
    )
    result = pytester.runpytest("--llmjudge", "-k", "aggregate", "-rA")
    # Every group of Bengali, and "all" (it includes Bengali cases), is stopped as uncalibrated.
    result.assert_outcomes(passed=1, xfailed=3, deselected=2)
    result.stdout.fnmatch_lines(
        [
            "PASSED suite.yaml::mean(linguistic_acceptability)[[]fr-task=qa[]]",
            "XFAIL suite.yaml::mean(linguistic_acceptability)[[]bn-task=qa[]]*not calibrated for bn*",
            "XFAIL suite.yaml::mean(linguistic_acceptability)[[]bn-task=summary[]]*not calibrated for bn*",
            "XFAIL suite.yaml::mean(linguistic_acceptability)[[]all[]]*",
        ],
        consecutive=False,
    )


def test_an_aggregates_rows_are_computed_once_for_all_its_row_items(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row item shows every row (its failure prints the table); they used to compute them
    each, a pass over every case and a bootstrap per group for each group: 10,000 cases in 10
    languages with 2 aggregates took 9.7 s against 5.3 s without the aggregates."""
    import pytest_llmjudge.suite.items as suite_items

    calls: list[str] = []
    real = suite_items.compute_rows

    def counting(overrides: object, spec: object, *args: object, **kwargs: object) -> object:
        calls.append(spec.label)  # type: ignore[attr-defined]
        return real(overrides, spec, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(suite_items, "compute_rows", counting)
    pytester.makefile(
        ".yaml", grouped=suite_text(aggregate="  - mean(task_quality) >= 1.5\n  - pass_rate(task_quality >= 2) >= 0.1")
    )
    result = pytester.runpytest_inprocess("--llmjudge", "-p", "no:cacheprovider", "-q", "-k", "aggregate")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2 * 3  # hi, bn and all, per aggregate
    assert sorted(calls) == ["mean(task_quality)", "pass_rate(task_quality >= 2)"]
