"""Baseline files (format, round trip, validation) and the candidate-vs-baseline comparison."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_llmjudge.errors import BaselineError
from pytest_llmjudge.records import (
    AggregateRecord,
    CaseRecord,
    CaseScore,
    ItemRecord,
    RegressionRecord,
    Threshold,
)
from pytest_llmjudge.regression.baseline import build_baseline, resolve_path, save_baseline
from pytest_llmjudge.regression.build import load_baseline
from pytest_llmjudge.regression.compare import RegressionSettings, compare, decide, measure
from pytest_llmjudge.regression.schema import Baseline, MetricScores, SuiteScores
from pytest_llmjudge.stats.paired import paired_bootstrap


def _case(case: str, language: str, score: float | str | None, **extra: Any) -> CaseRecord:
    fields: dict[str, Any] = {
        "suite": "s",
        "suite_path": "/repo/suites/s.yaml",
        "metric": "task_quality",
        "case": case,
        "language": language,
        "threshold": Threshold(op=">=", value=0),
        "score": score,
        "source": "recorded",
        "judge": "recorded",
        "higher_is_better": True,
        "passed": score is not None,
        **extra,
    }
    return CaseRecord(**fields)


def test_build_save_load_round_trip(tmp_path: Path) -> None:
    records: list[ItemRecord] = [
        _case("a", "hi", 2.0),
        _case("a", "hi", 2.0),  # the same case under a second threshold
        _case("b", "hi", None, unscored_reason="provider failed"),
        _case("c", "fr", 1.0),
        _case("d", "fr", "fr", metric="language"),  # categorical: not saved
        AggregateRecord(
            suite="s",
            suite_path="/repo/suites/s.yaml",
            aggregate="mean(hallucinations)",
            metric="hallucinations",
            language="all",
            passed=True,
            case_scores=[
                CaseScore(case="a", language="hi", score=0.0, source="judge", judge="openai:m", higher_is_better=False)
            ],
            rows=[],
        ),
        RegressionRecord(
            suite="s",
            suite_path="/repo/suites/s.yaml",
            metric="task_quality",
            language="hi",
            group_by=["language"],
            baseline="old",
            baseline_suite="s",
            gate="fail",
            verdict="regressed",
            n=1,
            higher_is_better=True,
            mean_difference=-1.0,
            method="bootstrap",
            passed=False,
        ),
    ]
    baseline = build_baseline("prod", records, rootdir=Path("/repo"), run={"items": 7})
    path = tmp_path / "b" / "prod.json"
    save_baseline(baseline, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "pytest-llmjudge-baseline" and data["version"] == 1
    suite = data["suites"]["s"]
    assert suite["path"] == "suites/s.yaml"
    assert suite["metrics"]["task_quality"]["scores"] == {"fr": {"c": 1.0}, "hi": {"a": 2.0, "b": None}}
    assert "language" not in suite["metrics"]
    hallucinations = suite["metrics"]["hallucinations"]
    assert hallucinations["higher_is_better"] is False and hallucinations["judges"] == ["openai:m"]
    loaded = load_baseline(path)
    assert loaded.name == "prod" and loaded.n_scores == 4 and loaded.run == {"items": 7}
    metric = loaded.metric("s", "task_quality")
    assert metric is not None and metric.language("hi") == {"a": 2.0, "b": None}
    assert path.stat().st_mode & 0o044, "a baseline is meant to be shared: readable by others"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a readable JSON file"),
        ('{"format": "other"}', "not a pytest-llmjudge baseline"),
        ('{"format": "pytest-llmjudge-baseline", "version": 9, "suites": {}}', "newer than this plugin reads"),
        ('{"format": "pytest-llmjudge-baseline", "version": 1, "suites": []}', "'suites' must be an object"),
        (
            '{"format": "pytest-llmjudge-baseline", "version": 1, "suites": {"s": {"metrics": {"m": '
            '{"scores": {"hi": {"a": "high"}}}}}}}',
            "score 'high' is not a finite number",
        ),
    ],
)
def test_invalid_baselines_are_reported_with_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BaselineError, match=message):
        load_baseline(path)
    with pytest.raises(BaselineError, match="not found"):
        load_baseline(tmp_path / "missing.json")


def test_baseline_names_and_paths(tmp_path: Path) -> None:
    assert resolve_path("prod-2026.11", tmp_path / "dir", tmp_path) == tmp_path / "dir" / "prod-2026.11.json"
    assert (
        resolve_path("gates/p.json", tmp_path / "dir", tmp_path / "suites") == tmp_path / "suites" / "gates" / "p.json"
    )
    assert resolve_path("/abs/p.json", tmp_path, tmp_path) == Path("/abs/p.json")
    with pytest.raises(BaselineError, match="must be letters"):
        resolve_path("prod 1", tmp_path, tmp_path)


def test_empty_baseline_serialises() -> None:
    baseline = Baseline(name="x", created="t", suites={"s": SuiteScores(metrics={"m": MetricScores()})})
    assert baseline.to_json()["suites"]["s"]["metrics"]["m"]["scores"] == {}


# -- compare -----------------------------------------------------------------------------------


def test_significant_drop_fails_with_the_exact_sign_flip_p_and_bootstrap_is_opt_in() -> None:
    base = {f"c{i}": 2.0 for i in range(12)}
    cand = {f"c{i}": (0.0 if i < 8 else 2.0) for i in range(12)}
    result = compare(cand, base)
    # 8 non-tied pairs, all worse: exactly 1 of the 2**8 sign vectors is as extreme.
    assert result.gate == "fail" and result.verdict == "regressed" and result.n == 12
    assert result.p_value == 2**-8 and result.p_adjusted == 2**-8 and result.nonzero == 8
    assert "exact paired sign-flip test (8 non-tied of 12 pairs" in result.method_detail
    reference = paired_bootstrap(list(cand.values()), list(base.values()), resamples=2000, seed=0)
    assert result.mean_difference == pytest.approx(reference.mean_difference)
    assert (result.ci_low, result.ci_high) == pytest.approx((reference.ci_low, reference.ci_high))
    boot = compare(cand, base, settings=RegressionSettings(method="bootstrap"))
    assert boot.p_value == pytest.approx(reference.p_value) and boot.gate == "fail"


def test_small_drops_are_undecided_inconclusive_or_bounded_by_the_margin() -> None:
    base = {f"c{i}": 2.0 for i in range(12)}
    one_worse = {**base, "c0": 1.0}
    # One changed pair: the smallest possible p is 0.5, nothing could be shown.
    undecided = compare(one_worse, base)
    assert undecided.gate == "undecided" and undecided.verdict == "too few cases to decide"
    assert undecided.min_p == 0.5 and not undecided.fails_run
    assert compare(one_worse, base, settings=RegressionSettings(fail_on="warn")).fails_run
    # Margin 0.1: 12 cases can't rule out a drop beyond 0.1 -> inconclusive; 60 cases can.
    assert compare(one_worse, base, settings=RegressionSettings(margin=0.1)).gate == "warn"
    big = {f"c{i}": 2.0 for i in range(60)}
    bounded = compare({**big, "c0": 1.0}, big, settings=RegressionSettings(margin=0.1))
    assert bounded.gate == "pass" and bounded.verdict == "drop within margin"
    assert bounded.drop_upper is not None and bounded.drop_upper < 0.1
    better = compare({k: 2.0 for k in base}, {k: 1.0 for k in base})
    assert better.gate == "pass" and better.verdict == "improved"
    same = compare(base, base)
    assert same.gate == "pass" and same.verdict == "no significant change" and same.p_value == 1.0


def test_the_issue_small_sample_cases_two_of_two_and_four_of_twenty_do_not_fail_ten_of_ten_does() -> None:
    two = compare({"a": 1.0, "b": 1.0}, {"a": 2.0, "b": 2.0})
    assert two.p_value == 0.25 and two.gate == "undecided"
    base = {f"c{i}": 2.0 for i in range(20)}
    four = compare({**base, **{f"c{i}": 1.0 for i in range(4)}}, base)
    assert four.p_value == 0.0625 and four.gate == "undecided"
    ten = {f"c{i}": 2.0 for i in range(10)}
    assert compare({k: 1.0 for k in ten}, ten).gate == "fail"


def test_lower_is_better_is_oriented() -> None:
    base = {f"c{i}": 0.0 for i in range(10)}
    worse = {f"c{i}": (1.0 if i < 6 else 0.0) for i in range(10)}
    result = compare(worse, base, higher_is_better=False)
    assert result.gate == "fail" and result.mean_difference == pytest.approx(0.6)
    assert result.ci_low is not None and result.ci_low > 0, "the interval stays in the metric's own units"
    assert compare(base, worse, higher_is_better=False).verdict == "improved"


def test_permutation_method_is_exact_for_small_suites() -> None:
    base = {f"c{i}": 2.0 for i in range(10)}
    cand = {**base, **{f"c{i}": 1.0 for i in range(6)}}
    result = compare(cand, base, settings=RegressionSettings(method="permutation"))
    # All six non-zero differences are negative: exactly 1 of the 2**6 sign patterns is as extreme.
    assert result.gate == "fail" and result.p_value == pytest.approx(1 / 64)
    assert "exact" in result.method_detail


def test_a_family_is_decided_together_with_holm_over_the_testable_comparisons() -> None:
    base = {f"c{i}": 2.0 for i in range(10)}
    drop6 = {**base, **{f"c{i}": 1.0 for i in range(6)}}  # exact p 1/64
    mixed_base = {f"c{i}": 1.0 for i in range(10)}
    mixed = {f"c{i}": (2.0 if i % 2 else 0.0) for i in range(10)}  # 10 changed pairs, no drop on average
    # Three unchanged comparisons can't be significant (no changed pair): they don't count, K = 1.
    alone = decide([measure(drop6, base)] + [measure(base, base) for _ in range(3)])
    assert [(r.family_size, r.family_testable) for r in alone] == [(4, 1)] * 4
    assert alone[0].gate == "fail" and alone[0].p_adjusted == pytest.approx(1 / 64) and alone[1].p_adjusted == 1.0
    # Three comparisons with 10 changed pairs each can be: Tarone's K = 4 (at 0.05/4 the drop's
    # 6 changed pairs, 2^-6 = 0.0156, can't be significant: it is undecided, the others count).
    measured = [measure(drop6, base)] + [measure(mixed, mixed_base) for _ in range(3)]
    holm = decide(measured)
    assert [(r.family_size, r.family_testable) for r in holm] == [(4, 4)] * 4 and holm[0].level == 0.05 / 4
    assert holm[0].gate == "undecided" and holm[0].p_adjusted == 1.0
    none = decide([replace(r, settings=replace(r.settings, correction="none")) for r in measured])
    assert none[0].gate == "fail" and none[0].p_adjusted == pytest.approx(1 / 64)
    errors = decide([measure({"a": 1.0}, {"b": 1.0}), measure(drop6, base)])
    assert errors[0].gate == "error" and errors[1].family_size == 1, "an error is outside the count"


def test_non_inferiority_passes_only_when_the_drop_is_bounded_below_the_margin() -> None:
    base = {f"c{i}": 2.0 for i in range(30)}
    ni = RegressionSettings(mode="non_inferiority", margin=0.2)
    safe = compare({**base, "c0": 1.0}, base, settings=ni)
    assert safe.gate == "pass" and safe.drop_upper is not None and safe.drop_upper < 0.2
    risky = compare({**base, **{f"c{i}": 1.0 for i in range(5)}}, base, settings=ni)
    assert risky.gate == "fail" and risky.verdict == "non-inferiority not shown"
    few = {"a": 2.0, "b": 2.0, "c": 2.0}
    assert compare(few, few, settings=ni).verdict == "too few cases to show non-inferiority"


def test_warnings_carry_power_and_cases_needed() -> None:
    rng = np.random.default_rng(3)
    base = {f"c{i}": float(v) for i, v in enumerate(rng.integers(0, 3, 40))}
    cand = {k: float(np.clip(v + rng.integers(-1, 2), 0, 2)) for k, v in base.items()}
    result = compare(cand, base, settings=RegressionSettings(margin=0.1))
    assert result.sd is not None and result.mde is not None and result.cases_needed is not None
    z = 1.6448536269514722 + 0.8416212335729143  # z_0.95 + z_0.8
    assert result.mde == pytest.approx(0.1 + z * result.sd / np.sqrt(40))
    assert result.cases_needed == int(np.ceil((z * result.sd / 0.1) ** 2))


def test_missing_and_unscored_cases_are_listed_never_dropped() -> None:
    base = {"a": 2.0, "b": 2.0, "c": None, "gone": 1.0}
    cand = {"a": 2.0, "b": 1.0, "c": 2.0, "new": 2.0}
    result = compare(cand, base)
    assert result.n == 2
    assert result.missing_in_baseline == ("new",)
    assert result.missing_in_candidate == ("gone",)
    assert result.baseline_unscored == ("c",)
    strict = compare(cand, base, settings=RegressionSettings(fail_on_missing=True))
    assert strict.gate == "fail"


def test_unscored_candidate_and_nothing_paired_are_errors() -> None:
    unscored = compare({"a": None, "b": 2.0}, {"a": 2.0, "b": 2.0}, unscored_reasons={"a": "provider failed"})
    assert unscored.gate == "error" and "1 of 2 candidate cases have no score" in (unscored.problem or "")
    assert unscored.candidate_unscored == (("a", "provider failed"),)
    tolerated = compare(
        {"a": None, "b": 2.0, "c": 2.0},
        {"a": 2.0, "b": 2.0, "c": 2.0},
        settings=RegressionSettings(max_unscored_rate=0.5),
    )
    assert tolerated.gate == "undecided" and tolerated.n == 2, "tolerated (no error); two pairs decide nothing"
    nothing = compare({"a": 1.0}, {"b": 1.0})
    assert nothing.gate == "error" and nothing.problem == "no case is scored on both sides"
    single = compare({"a": 0.0}, {"a": 2.0})
    assert single.gate == "undecided" and math.isinf(single.ci_high or 0.0), "one pair carries no variability estimate"


def test_group_scores_are_recomputed_from_the_suite_and_unplaced_cases_kept_in_every_group() -> None:
    """A per-language baseline split by the suite's groups: q1/q2 are QA, s1 summary, gone left the suite."""
    stored = MetricScores(scores={"hi": {"q1": 2.0, "q2": None, "s1": 1.0, "gone": 2.0}, "bn": {"q1": 0.0}})
    in_suite = {"q1", "q2", "s1"}
    qa, unplaced = stored.group("hi", {"q1", "q2"}, in_suite)
    assert qa == {"q1": 2.0, "q2": None, "gone": 2.0} and unplaced == ("gone",)
    summary, _ = stored.group("hi", {"s1"}, in_suite)
    assert summary == {"s1": 1.0, "gone": 2.0}
    # The default grouping (the language alone) keeps the whole language: comparisons are as before.
    assert stored.group("hi", in_suite, in_suite) == (stored.language("hi"), ("gone",))
    assert stored.group("ta", set(), set()) == ({}, ())


def test_a_saved_baseline_keeps_each_case_output_and_an_old_one_loads_without(tmp_path: Path) -> None:
    record = _case("c1", "de", 2, suite_path=str(tmp_path / "s.yaml"), metric="m", output="Guten Tag")
    second = record.model_copy(update={"metric": "n", "output": "other"})
    baseline = build_baseline("b", [record, second], rootdir=tmp_path)
    save_baseline(baseline, tmp_path / "b.json")
    saved = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert saved["suites"]["s"]["outputs"] == {"c1": "Guten Tag"}, "one output per case, the first seen"
    assert load_baseline(tmp_path / "b.json").suites["s"].outputs == {"c1": "Guten Tag"}
    del saved["suites"]["s"]["outputs"]
    (tmp_path / "old.json").write_text(json.dumps(saved), encoding="utf-8")
    old = load_baseline(tmp_path / "old.json")
    assert old.suites["s"].outputs == {} and old.metric("s", "m").scores == {"de": {"c1": 2.0}}  # type: ignore[union-attr]
    saved["suites"]["s"]["outputs"] = {"c1": 3}
    (tmp_path / "bad.json").write_text(json.dumps(saved), encoding="utf-8")
    with pytest.raises(BaselineError, match="'outputs' must map case ids to text"):
        load_baseline(tmp_path / "bad.json")


def test_a_missing_baseline_lists_the_ones_that_exist_and_the_closest(tmp_path: Path) -> None:
    for name in ("prod", "staging", "nightly-2026-11"):
        (tmp_path / f"{name}.json").write_text("{}", encoding="utf-8")
    with pytest.raises(BaselineError) as excinfo:
        load_baseline(tmp_path / "prdo.json")
    message = str(excinfo.value)
    assert "baseline file not found" in message
    assert "nightly-2026-11, prod, staging" in message
    assert message.endswith("did you mean 'prod'?")
    with pytest.raises(BaselineError, match="no baselines in .*--llmjudge-save-baseline=NAME"):
        load_baseline(tmp_path / "empty" / "prod.json")
