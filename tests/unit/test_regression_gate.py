"""Baseline files (format, round trip, validation) and the candidate-vs-baseline comparison."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.records import (
    AggregateRecord,
    CaseRecord,
    CaseScore,
    ItemRecord,
    RegressionRecord,
    Threshold,
)
from pytest_llmjudge.regression.baseline import (
    Baseline,
    BaselineError,
    MetricScores,
    SuiteScores,
    build_baseline,
    load_baseline,
    resolve_path,
    save_baseline,
)
from pytest_llmjudge.regression.compare import RegressionSettings, compare
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


def test_significant_drop_fails_and_matches_the_paired_bootstrap() -> None:
    base = {f"c{i}": 2.0 for i in range(12)}
    cand = {f"c{i}": (0.0 if i < 8 else 2.0) for i in range(12)}
    result = compare(cand, base)
    assert result.gate == "fail" and result.verdict == "regressed" and result.n == 12
    reference = paired_bootstrap(list(cand.values()), list(base.values()), resamples=2000, seed=0)
    assert result.mean_difference == pytest.approx(reference.mean_difference)
    assert (result.ci_low, result.ci_high) == pytest.approx((reference.ci_low, reference.ci_high))
    assert result.p_value == pytest.approx(reference.p_value)


def test_small_drop_warns_improvement_passes_and_margin_tolerates() -> None:
    base = {f"c{i}": 2.0 for i in range(12)}
    one_worse = {**base, "c0": 1.0}
    assert compare(one_worse, base).gate == "warn"
    assert compare(one_worse, base, settings=RegressionSettings(margin=0.1)).verdict == "drop within margin"
    better = compare({k: 2.0 for k in base}, {k: 1.0 for k in base})
    assert better.gate == "pass" and better.verdict == "improved"
    same = compare(base, base)
    assert same.gate == "pass" and same.verdict == "no significant change" and same.p_value == 1.0


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
    assert tolerated.gate == "pass" and tolerated.n == 2
    nothing = compare({"a": 1.0}, {"b": 1.0})
    assert nothing.gate == "error" and nothing.problem == "no case is scored on both sides"
    single = compare({"a": 0.0}, {"a": 2.0})
    assert single.gate == "warn" and math.isinf(single.ci_high or 0.0), "one pair carries no variability estimate"


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
