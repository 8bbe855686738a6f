"""Regression items with human labels on both sides: the PPI++ human-scale change, end to end."""

from __future__ import annotations

import json

import builders
import pytest

from pytest_llmjudge.regression.human import human_change


def suite_text(judge: list[int], human: dict[int, list[int]]) -> str:
    cases = [
        {"id": f"c{index}", "language": "hi", "output": "x", "recorded": {"task_quality": score}}
        | ({"human": {"task_quality": human[index]}} if index in human else {})
        for index, score in enumerate(judge)
    ]
    return builders.suite_text("release", cases, asserts=["task_quality >= 0"])


# Baseline: the judge says 2 throughout; 8 cases labelled (c0-c7), c9 labelled in the baseline only.
BASE_JUDGE = [2] * 12
BASE_HUMAN = {i: [2] for i in range(8)} | {9: [1]}
# Candidate: 9 of 12 drop (a regression on the judge's scale); the native speakers see a
# drop too, mostly where the judge does. c10 is labelled in the candidate only: it is not a doubly-labelled pair.
CAND_JUDGE = [0, 1, 0, 1, 2, 0, 2, 0, 1, 2, 1, 0]
CAND_HUMAN = {0: [0], 1: [1, 1], 2: [0], 3: [1], 4: [2], 5: [1], 6: [2, 2, 1], 7: [0], 10: [2]}


def test_the_item_reports_the_human_scale_change(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text(BASE_JUDGE, BASE_HUMAN))
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod").assert_outcomes(passed=12)
    saved = json.loads((pytester.path / "llmjudge_baselines" / "prod.json").read_text(encoding="utf-8"))
    human = saved["suites"]["release"]["metrics"]["task_quality"]["human"]["hi"]
    assert human == {f"c{i}": 2.0 for i in range(8)} | {"c9": 1.0}

    pytester.makefile(".yaml", suite=suite_text(CAND_JUDGE, CAND_HUMAN))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=12, failed=1)  # the judge-scale test decides: a regression
    # The aggregated labels ([2, 2, 1] -> 2 by majority) and the expected estimate.
    expected = human_change(
        {f"c{i}": float(v) for i, v in enumerate(CAND_JUDGE)},
        {f"c{i}": float(v) for i, v in enumerate(BASE_JUDGE)},
        {f"c{i}": float(max(set(v), key=v.count)) for i, v in CAND_HUMAN.items()},
        {f"c{i}": float(v[0]) for i, v in BASE_HUMAN.items()},
        scale=(0.0, 2.0),  # the built-in task_quality rubric's scale
    )
    assert expected is not None and expected.value is not None and expected.low is not None
    assert expected.n == 8 and expected.N == 12
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: release task_quality [[]hi[]] vs baseline prod: candidate - baseline = -1.167*regressed",
            f"  human scale:  human-scale change (PPI++) {expected.value:+.3f} (95% CI [[]{expected.low:.3f}, "
            f"{expected.high:.3f}[]]): the mean human-score change over the 12 paired cases, from the judge's change "
            "on all 12 and human labels on both sides of 8 (judge change -1.167, *",
        ]
    )
    # The judge's change tracks the humans' on the labelled pairs: lambda is tuned above 0 and the
    # interval is narrower than the human-only one.
    assert expected.lam is not None and expected.lam > 0.5
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    (record,) = [r for r in report["regressions"] if r["language"] == "hi"]
    assert record["human_delta"] == pytest.approx(expected.value)
    assert (record["human_delta_low"], record["human_delta_high"]) == (
        pytest.approx(expected.low),
        pytest.approx(expected.high),
    )
    assert record["human_n"] == 8 and record["gate"] == "fail"


def test_an_old_baseline_without_labels_compares_as_before(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text(BASE_JUDGE, BASE_HUMAN))
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod").assert_outcomes(passed=12)
    path = pytester.path / "llmjudge_baselines" / "prod.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["suites"]["release"]["metrics"]["task_quality"]["human"]
    path.write_text(json.dumps(data), encoding="utf-8")
    pytester.makefile(".yaml", suite=suite_text(CAND_JUDGE, CAND_HUMAN))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=12, failed=1)
    assert "human scale" not in result.stdout.str()
    (record,) = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["regressions"]
    assert record["human_delta"] is None and record["human_n"] is None
