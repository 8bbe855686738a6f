"""human_mean / human_pass_rate: the grammar and the rows (aggregate.compute_human_row)."""

from __future__ import annotations

import math

import pytest

from pytest_llmjudge.errors import ExpressionError
from pytest_llmjudge.stats.prediction_powered import ppi_mean
from pytest_llmjudge.suite.aggregate import ScoredValue, compute_rows, render_human_table
from pytest_llmjudge.suite.expressions import parse_aggregate


@pytest.mark.parametrize(
    ("text", "stat", "metric", "bound", "inner"),
    [
        ("human_mean(task_quality) >= 1.5", "human_mean", "task_quality", None, None),
        ("lower(human_mean(task_quality)) >= 1.2", "human_mean", "task_quality", "lower", None),
        ("upper( human_mean( hallucinations ) ) <= 0.3", "human_mean", "hallucinations", "upper", None),
        (
            "human_pass_rate(hallucinations <= 0) >= 0.8",
            "human_pass_rate",
            "hallucinations",
            None,
            "hallucinations <= 0",
        ),
        (
            "lower(human_pass_rate(task_quality >= 2)) >= 0.5",
            "human_pass_rate",
            "task_quality",
            "lower",
            "task_quality >= 2",
        ),
    ],
)
def test_human_statistics_parse(text: str, stat: str, metric: str, bound: str | None, inner: str | None) -> None:
    spec = parse_aggregate(text)
    assert (spec.stat, spec.metric, spec.bound) == (stat, metric, bound)
    assert (spec.inner.render() if spec.inner else None) == inner
    assert parse_aggregate(spec.render()) == spec


def test_human_grammar_errors() -> None:
    with pytest.raises(ExpressionError, match=r"human_pass_rate needs a case assertion inside"):
        parse_aggregate("human_pass_rate(task_quality) >= 0.5")
    with pytest.raises(ExpressionError, match="takes a metric name"):
        parse_aggregate("human_mean(task_quality >= 1) >= 0.5")
    # mean(...) is still mean, not a prefix match of human_mean.
    assert parse_aggregate("mean(human_mean) >= 1").stat == "mean"


def _values(language: str, judge: list[float], human: list[float | None]) -> list[ScoredValue]:
    return [ScoredValue(language, f, True, human=y) for f, y in zip(judge, human, strict=True)]


HI = _values("hi", [2.0] * 20 + [1.0] * 10, [1.0, 2.0, 1.0, 1.0, 2.0, 0.0] * 2 + [None] * 18)
BN = _values("bn", [1.0, 2.0] * 20, [0.0, 1.0, 1.0, 2.0] * 3 + [None] * 28)


def test_group_rows_are_the_ppi_estimate_with_student_intervals() -> None:
    rows = compute_rows({}, parse_aggregate("human_mean(task_quality) >= 1"), [*HI, *BN], scale=(0.0, 2.0))
    hi = next(row for row in rows if row.language == "hi")
    labelled = [(v.human, float(v.value)) for v in HI if v.human is not None]  # type: ignore[arg-type]
    expected = ppi_mean(
        [y for y, _ in labelled], [f for _, f in labelled], [2.0] * 20 + [1.0] * 10, scale=(0.0, 2.0), student=True
    )  # type: ignore[misc]
    assert (hi.value, hi.ci_low, hi.ci_high) == (
        expected.estimate.value,
        expected.estimate.ci_low,
        expected.estimate.ci_high,
    )
    assert hi.human is not None
    assert (hi.human.n_labelled, hi.human.n_total) == (12, 30)
    assert hi.human.judge == pytest.approx(50 / 30)
    assert hi.human.bias == pytest.approx(50 / 30 - expected.estimate.value)
    assert hi.human.lam == expected.lam
    assert hi.passed


def test_the_all_row_is_stratified_by_group_size() -> None:
    rows = compute_rows({}, parse_aggregate("human_mean(task_quality) >= 1"), [*HI, *BN], scale=(0.0, 2.0))
    by = {row.language: row for row in rows}
    hi, bn, all_row = by["hi"], by["bn"], by["all"]
    assert all_row.value == pytest.approx((30 * hi.value + 40 * bn.value) / 70)  # type: ignore[operator]
    se = {name: (row.ci_high - row.ci_low) for name, row in (("hi", hi), ("bn", bn))}  # type: ignore[operator]
    assert all_row.ci_low is not None and all_row.ci_high is not None
    assert all_row.ci_high - all_row.ci_low < max(se.values())
    assert all_row.human is not None and all_row.human.lam is None and all_row.human.n_labelled == 24


def test_a_group_short_of_labels_fails_its_row_and_the_all_row() -> None:
    short = _values("ta", [2.0] * 10, [1.0] * 3 + [None] * 7)
    rows = compute_rows({}, parse_aggregate("human_mean(task_quality) >= 0"), [*HI, *short], scale=(0.0, 2.0))
    by = {row.language: row for row in rows}
    assert by["hi"].passed
    assert not by["ta"].passed and "only 3 human-labelled case(s) in ta" in (by["ta"].problem or "")
    assert not by["all"].passed and "short: ta 3" in (by["all"].problem or "")


def test_human_pass_rate_counts_indicators() -> None:
    # Judge passes everything; the labels pass 4 of 12 (label >= 2).
    rows = compute_rows({}, parse_aggregate("human_pass_rate(task_quality >= 2) >= 0.5"), HI)
    hi = rows[0]
    assert hi.human is not None and hi.human.judge == pytest.approx(20 / 30)
    assert 0.0 <= (hi.ci_low or 0) <= (hi.value or 0) <= (hi.ci_high or 1) <= 1.0
    assert not hi.passed


def test_unscored_and_categorical() -> None:
    unscored = [*HI, ScoredValue("hi", None, False, human=2.0)]
    row = compute_rows({}, parse_aggregate("human_mean(task_quality) >= 0"), unscored)[0]
    assert not row.passed and "1 of 31 case(s) unscored" in (row.problem or "")
    tolerant = compute_rows({}, parse_aggregate("human_mean(task_quality) >= 0"), unscored, max_unscored_rate=0.1)[0]
    assert tolerant.passed and tolerant.human is not None and tolerant.human.n_labelled == 12
    text = [ScoredValue("hi", "hi", True, human=1.0)] * 12
    row = compute_rows({}, parse_aggregate("human_mean(language) >= 0"), text)[0]
    assert row.problem is not None and "categorical" in row.problem


def test_a_bound_without_an_interval_is_an_error() -> None:
    one = _values("hi", [2.0, 2.0], [1.0, None])
    row = compute_rows({}, parse_aggregate("lower(human_mean(task_quality)) >= 0"), one, min_labels=1)[0]
    assert not row.passed and row.problem is not None and "needs an interval" in row.problem
    assert row.value is not None and math.isfinite(row.value)


def test_the_table_shows_judge_human_only_estimate_and_bias() -> None:
    rows = compute_rows({}, parse_aggregate("human_mean(task_quality) >= 1.9"), HI, scale=(0.0, 2.0))
    table = render_human_table(rows, highlight="hi")
    header, first = table.splitlines()[:2]
    assert header.split()[:8] == ["language", "N", "labelled", "judge", "human", "only", "estimate", "bias"]
    assert first.startswith("> hi") and "1.667" in first and first.endswith("FAIL")


def test_label_shapes_and_their_aggregate() -> None:
    from pydantic import ValidationError

    from pytest_llmjudge.suite.build import aggregate_human_labels
    from pytest_llmjudge.suite.schema import CaseConfig

    def human(value: object) -> dict[str, list[int] | dict[str, int]]:
        return CaseConfig.model_validate({"id": "c", "language": "hi", "human": {"m": value}}).human

    assert human(2) == {"m": [2]}
    assert human([2, 1, 2]) == {"m": [2, 1, 2]}
    assert human({"a": 1, "b": 0}) == {"m": {"a": 1, "b": 0}}
    assert human([1.5, 2]) == {"m": [1.5, 2.0]}
    for bad in (True, [], {}, "2", [float("nan")]):
        with pytest.raises(ValidationError):
            human(bad)
    # The calibration gate's rule: majority, else the mean rounded half up.
    labels = aggregate_human_labels(
        [
            ("a", {"m": [2, 1, 2]}),
            ("b", {"m": [0, 1, 2]}),
            ("c", {"m": {"x": 1, "y": 2}}),
            ("d", {"m": [0]}),
            ("e", {"m": [1.5, 2]}),
        ]
    )
    assert {case: value["m"] for case, value in labels.items()} == {"a": 2.0, "b": 1.0, "c": 2.0, "d": 0.0, "e": 1.75}


def test_per_language_thresholds_apply_to_human_rows() -> None:
    spec = parse_aggregate("lower(human_mean(task_quality)) >= 1.9")
    rows = compute_rows({"hi": spec.with_threshold(">=", 0.5)}, spec, [*HI, *BN], scale=(0.0, 2.0))
    by = {row.language: row for row in rows}
    assert by["hi"].spec.value == 0.5 and by["hi"].passed
    assert by["bn"].spec.value == 1.9 and not by["bn"].passed and by["bn"].problem is None
    assert by["hi"].spec.bound == "lower" and by["hi"].asserted == by["hi"].ci_low
