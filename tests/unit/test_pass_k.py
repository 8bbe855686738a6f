"""pass@k and pass^k over repeats: the estimators (``stats/pass_k.py``), their parsing
(``suite/expressions.py``), the rows (``suite/aggregate.py``) and recorded samples (``suite/build.py``)."""

from __future__ import annotations

import itertools
import math
import statistics
from fractions import Fraction
from pathlib import Path

import pytest

from pytest_llmjudge.errors import ExpressionError, SuiteError
from pytest_llmjudge.execution.scorer import combine_samples
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.stats.betting import betting_interval
from pytest_llmjudge.stats.pass_k import pass_at_k, pass_hat_k
from pytest_llmjudge.suite.aggregate import ScoredValue, compute_row, compute_rows, pass_k_cases
from pytest_llmjudge.suite.build import _combined, build_suite
from pytest_llmjudge.suite.expressions import parse_aggregate
from pytest_llmjudge.suite.model import Suite

# --------------------------------------------------------------------------- the estimators


def test_hand_computed_n5_c3_k2() -> None:
    # pass@2 = 1 - C(2, 2) / C(5, 2) = 1 - 1/10; pass^2 = C(3, 2) / C(5, 2) = 3/10.
    assert pass_at_k(5, 3, 2) == pytest.approx(0.9, abs=1e-15)
    assert pass_hat_k(5, 3, 2) == pytest.approx(0.3, abs=1e-15)


def test_more_hand_computed_values() -> None:
    # n=10, c=6, k=3: C(6,3)/C(10,3) = 20/120; n=10, c=3, k=5: 1 - C(7,5)/C(10,5) = 1 - 21/252.
    assert pass_hat_k(10, 6, 3) == pytest.approx(20 / 120, abs=1e-15)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252, abs=1e-15)
    # k = n: the indicators "all passed" and "some passed"; k = 1: c / n for both.
    assert (pass_hat_k(3, 3, 3), pass_hat_k(3, 2, 3)) == (1.0, 0.0)
    assert (pass_at_k(3, 1, 3), pass_at_k(3, 0, 3)) == (1.0, 0.0)
    assert pass_at_k(7, 3, 1) == pytest.approx(3 / 7) and pass_hat_k(7, 3, 1) == pytest.approx(3 / 7)


def _subsets(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Share of the k-subsets of n samples (the first c passing) with a pass, and with only passes."""
    outcomes = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(outcomes, k))
    some = Fraction(sum(1 for draw in draws if any(draw)), len(draws))
    every = Fraction(sum(1 for draw in draws if all(draw)), len(draws))
    return some, every


@pytest.mark.parametrize("n", range(1, 8))
def test_equal_to_brute_force_over_every_k_subset(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            some, every = _subsets(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(float(some), abs=1e-12), (n, c, k)
            assert pass_hat_k(n, c, k) == pytest.approx(float(every), abs=1e-12), (n, c, k)


def test_the_products_match_the_binomial_coefficients_at_large_n() -> None:
    # Where C(n, k) itself overflows a float (C(400, 200) ~ 1e119 is fine, C(2000, 1000) is not).
    for n, c, k in [(400, 300, 200), (2000, 1500, 40), (2000, 1990, 1000), (50, 1, 49)]:
        exact_at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        exact_hat = Fraction(math.comb(c, k), math.comb(n, k))
        assert pass_at_k(n, c, k) == pytest.approx(float(exact_at), rel=1e-9, abs=1e-300)
        assert pass_hat_k(n, c, k) == pytest.approx(float(exact_hat), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("n", "k", "p"), [(5, 2, 0.3), (5, 5, 0.8), (8, 3, 0.55), (3, 1, 0.1)])
def test_unbiased_the_expectation_over_the_binomial_law_is_the_target(n: int, k: int, p: float) -> None:
    # E[estimate] = sum_c Binom(c; n, p) * estimate(n, c, k): exactly p^k and 1 - (1 - p)^k.
    pmf = [math.comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
    assert sum(w * pass_hat_k(n, c, k) for c, w in enumerate(pmf)) == pytest.approx(p**k, abs=1e-12)
    assert sum(w * pass_at_k(n, c, k) for c, w in enumerate(pmf)) == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
    # The plug-in (c/n)^k is not (Jensen): it overshoots p^k for 1 < k.
    if k > 1:
        assert sum(w * (c / n) ** k for c, w in enumerate(pmf)) > p**k + 1e-6


@pytest.mark.parametrize(
    ("n", "c", "k", "match"), [(3, 2, 4, "exceeds"), (3, 1, 0, "at least 1"), (3, 4, 2, r"\[0, n\]")]
)
def test_impossible_arguments_raise(n: int, c: int, k: int, match: str) -> None:
    for estimator in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match=match):
            estimator(n, c, k)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "stat", "k", "label"),
    [
        ("pass_hat_k(task_quality >= 2) >= 0.5", "pass_hat_k", None, "pass_hat_k(task_quality >= 2)"),
        ("pass_at_k(task_quality >= 2, k=3) >= 0.9", "pass_at_k", 3, "pass_at_k(task_quality >= 2, k=3)"),
        ("pass_at_k( tq>=2 ,k = 3 )>=0.9", "pass_at_k", 3, "pass_at_k(tq >= 2, k=3)"),
        ("pass^k(tq >= 1) >= 0.5", "pass_hat_k", None, "pass_hat_k(tq >= 1)"),
        ("pass@k(tq >= 1, k=2) >= 0.5", "pass_at_k", 2, "pass_at_k(tq >= 1, k=2)"),
        ("lower(pass_hat_k(tq >= 2, k=2)) >= 0.3", "pass_hat_k", 2, "lower(pass_hat_k(tq >= 2, k=2))"),
    ],
)
def test_pass_k_expressions_parse(text: str, stat: str, k: int | None, label: str) -> None:
    spec = parse_aggregate(text)
    assert (spec.stat, spec.k, spec.label) == (stat, k, label)
    assert spec.inner is not None and spec.inner.metric == spec.metric
    # The label round-trips, and an override keeps k.
    assert parse_aggregate(spec.render()) == spec
    assert spec.with_threshold("<=", 0.1).k == k


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("pass_hatk(tq >= 2) >= 0.5", r"did you mean 'pass_hat_k'\?"),
        ("pass_at(tq >= 2) >= 0.5", r"did you mean 'pass_at_k' or 'pass_rate'\?"),
        ("passk(tq >= 2) >= 0.5", "did you mean 'pass_at_k' or 'pass_hat_k'"),
        ("means(tq) >= 1", r"did you mean 'mean'\?"),
        ("lower(pass_hat(tq >= 2)) >= 0.5", "did you mean 'pass_hat_k'"),
        ("pass_hat_k(tq >= 2, n=3) >= 0.9", r"got 'n'; did you mean 'pass_hat_k\(tq >= 2, k=3\)'"),
        ("pass_hat_k(tq => 2) >= 0.9", "did you mean 'tq >= 2'"),
        ("pass_hat_k(tq >= 2, k=0) >= 0.9", "whole number >= 1, got '0'"),
        ("pass_hat_k(tq >= 2, k=2.5) >= 0.9", "whole number >= 1, got '2.5'"),
        ("pass_hat_k(tq) >= 0.9", r"needs a case assertion inside, e\.g\. pass_hat_k\(task_quality >= 2\)"),
        ("pass_rate(tq >= 2, k=3) >= 0.9", r"pass_rate\(\.\.\.\) takes no k"),
        ("pass_at_k(tq >= 2) >= high", "expected a number"),
    ],
)
def test_pass_k_parse_errors_say_what_was_meant(text: str, match: str) -> None:
    with pytest.raises(ExpressionError, match=match):
        parse_aggregate(text)


# --------------------------------------------------------------------------- rows


def case(name: str, *samples: float | None, language: str = "hi") -> ScoredValue:
    """A case judged ``len(samples)`` times; a None sample makes it unscored, as the scorer does."""
    if any(sample is None for sample in samples):
        return ScoredValue(language, None, False, case=name)
    numbers = tuple(float(sample) for sample in samples if sample is not None)
    return ScoredValue(
        language, statistics.fmean(numbers), True, samples=numbers if len(numbers) > 1 else (), case=name
    )


def test_a_row_is_the_mean_of_the_case_estimates_with_the_betting_interval() -> None:
    values = [case("a", 2, 2, 1, 2, 0), case("b", 2, 2, 2, 2, 2), case("c", 1, 0, 2, 1, 1), case("d", 2, 1, 2, 2, 2)]
    # passes of task_quality >= 2: a 3/5, b 5/5, c 1/5, d 4/5; k = 2:
    hats = [3 / 10, 1.0, 0.0, 6 / 10]
    ats = [9 / 10, 1.0, 4 / 10, 1.0]
    for text, expected in [("pass_hat_k(tq >= 2, k=2) >= 0.4", hats), ("pass_at_k(tq >= 2, k=2) >= 0.4", ats)]:
        row = compute_row("hi", parse_aggregate(text), values)
        assert row.value == pytest.approx(statistics.fmean(expected))
        reference = betting_interval(expected, 0.0, 1.0)
        assert (row.ci_low, row.ci_high) == pytest.approx((reference.low, reference.high))
        assert row.problem is None and (row.n_scored, row.n_unscored) == (4, 0)
        assert row.value is not None and row.passed == (row.value >= 0.4)
    # k unset is each case's n (5): the indicators.
    row = compute_row("hi", parse_aggregate("pass_hat_k(tq >= 2) >= 0.25"), values)
    assert row.value == pytest.approx(1 / 4) and row.passed
    row = compute_row("hi", parse_aggregate("pass_at_k(tq >= 2) >= 1"), values)
    assert row.value == 1.0 and row.passed


def test_a_bound_asserts_on_the_interval() -> None:
    values = [case(str(i), 2, 2, 2) for i in range(10)]
    row = compute_row("hi", parse_aggregate("lower(pass_hat_k(tq >= 2)) >= 0.7"), values)
    assert row.value == 1.0 and row.asserted == row.ci_low
    assert row.ci_low == pytest.approx(betting_interval([1.0] * 10, 0.0, 1.0).low)
    assert row.passed == (row.ci_low is not None and row.ci_low >= 0.7)
    assert not compute_row("hi", parse_aggregate("lower(pass_hat_k(tq >= 2)) >= 0.99"), values).passed


def test_an_unscored_case_counts_as_not_passing_and_fails_the_row_by_default() -> None:
    values = [case("a", 2, 2, 2), case("b", 2, None, 2), case("c", 2, 2, 2)]
    row = compute_row("hi", parse_aggregate("pass_at_k(tq >= 2) >= 0.5"), values)
    assert row.value == pytest.approx(2 / 3)  # b counts 0, never as a pass
    assert (row.n_scored, row.n_unscored) == (2, 1)
    assert not row.passed and row.problem is not None and "1 of 3 case(s) unscored" in row.problem
    tolerated = compute_row("hi", parse_aggregate("pass_at_k(tq >= 2) >= 0.5"), values, max_unscored_rate=0.5)
    assert tolerated.passed and tolerated.value == pytest.approx(2 / 3)
    assert [c.scored for c in pass_k_cases(parse_aggregate("pass_at_k(tq >= 2) >= 0"), values)] == [True, False, True]


def test_k_above_a_case_s_samples_is_an_error_naming_the_case() -> None:
    values = [case("long", 2, 2, 2), case("short-one", 2, 2)]
    row = compute_row("hi", parse_aggregate("pass_hat_k(tq >= 2, k=3) >= 0"), values)
    assert not row.passed and row.value is None
    assert row.problem is not None and "'short-one'" in row.problem and "2 sample(s), fewer than k = 3" in row.problem


def test_a_case_without_samples_has_one() -> None:
    values = [case("one", 2), case("other", 1)]
    row = compute_row("hi", parse_aggregate("pass_hat_k(tq >= 2) >= 0.5"), values)
    assert row.value == 0.5 and row.passed
    assert "1 sample(s)" in (compute_row("hi", parse_aggregate("pass_hat_k(tq >= 2, k=2) >= 0"), values).problem or "")


def test_rows_per_language_and_all() -> None:
    values = [case("h1", 2, 2, language="hi"), case("h2", 2, 1, language="hi"), case("s1", 1, 1, language="sw")]
    rows = compute_rows({}, parse_aggregate("pass_hat_k(tq >= 2) >= 0.5"), values)
    assert [(r.language, r.value) for r in rows] == [("hi", 0.5), ("sw", 0.0), ("all", pytest.approx(1 / 3))]


def test_categorical_samples_compare_like_case_assertions() -> None:
    values = [ScoredValue("hi", "hi", True, samples=(), case="a"), ScoredValue("hi", "en", True, case="b")]
    row = compute_row("hi", parse_aggregate("pass_hat_k(language == case.language) >= 0.5"), values)
    assert row.value == 0.5


# --------------------------------------------------------------------------- recorded samples


def _suite(tmp_path: Path, registry: Registry, recorded: str, extra: str = "") -> Suite:
    text = f"""\
suite: demo
{extra}cases:
  - id: a
    language: hi
    output: x
    recorded:
      task_quality: {recorded}
aggregate:
  - pass_hat_k(task_quality >= 2) >= 0.5
"""
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return build_suite(path, registry)


def test_recorded_samples_are_kept_and_scored_by_mean_or_majority(tmp_path: Path, registry: Registry) -> None:
    suite = _suite(tmp_path, registry, "{samples: [2, 1, 1], judge: gpt-4o}")
    recorded = suite.cases[0].recorded["task_quality"]
    assert recorded.samples == (2.0, 1.0, 1.0) and recorded.score == pytest.approx(4 / 3)
    majority = _suite(tmp_path, registry, "{samples: [2, 1, 1]}", extra="judge: {repeat_aggregate: majority}\n")
    assert majority.cases[0].recorded["task_quality"].score == 1.0
    assert _suite(tmp_path, registry, "{samples: [2, null, 1]}").cases[0].recorded["task_quality"].score is None


@pytest.mark.parametrize("samples", [(2.0, 1.0, 1.0), (0.0, 2.0), (1.0, 2.0, 2.0, 1.0), (2.0,)])
def test_recorded_samples_combine_like_judged_repeats(samples: tuple[float, ...]) -> None:
    for how in ("mean", "majority"):
        assert _combined(samples, how) == combine_samples(samples, how)


@pytest.mark.parametrize(
    ("recorded", "message", "line", "field"),
    [
        ("{score: 2, samples: [2, 2]}", "give score or samples, not both", 7, "cases[0].recorded.task_quality"),
        ("{samples: []}", "at least 1 item", 7, "cases[0].recorded.task_quality.samples"),
        ("{judge: x}", "missing required field 'score' (a number or null), or 'samples'", 7, None),
        # Checked against the rubric once the suite is built: located at the case, like a recorded score.
        ("{samples: [2, 3]}", "task_quality sample 3 of case 'a' is not on the scale [0, 1, 2]", 3, None),
    ],
)
def test_bad_recorded_samples_are_located_errors(
    tmp_path: Path, registry: Registry, recorded: str, message: str, line: int, field: str | None
) -> None:
    with pytest.raises(SuiteError) as excinfo:
        _suite(tmp_path, registry, recorded)
    error = excinfo.value
    assert message in error.message and error.line == line and error.path == tmp_path / "suite.yaml"
    if field is not None:
        assert error.field == field


def test_the_module_docstring_formulas_hold() -> None:
    # Guards the docs' worked example (docs/suite-format.md): n = 5, c = 3.
    assert [round(pass_hat_k(5, 3, k), 4) for k in range(1, 6)] == [0.6, 0.3, 0.1, 0.0, 0.0]
    assert [round(pass_at_k(5, 3, k), 4) for k in range(1, 6)] == [0.6, 0.9, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("judge", "recorded", "aggregate", "message"),
    [
        (
            "judge: {repeats: 3}\n",
            "",
            "pass_at_k(task_quality >= 2, k=5) >= 0.9",
            "needs k = 5 samples per case; case 'a' has 3 (judge.repeats)",
        ),
        (
            "",
            "    recorded: {task_quality: {samples: [2, 2]}}\n",
            "pass_hat_k(task_quality >= 2, k=3) >= 0.9",
            "case 'a' has 2 (its recorded samples)",
        ),
        ("", "    reference: x\n", "pass_hat_k(chrf >= 40, k=2) >= 0.9", "case 'a' has 1 (one score)"),
    ],
)
def test_k_above_what_the_cases_will_have_is_an_error_when_the_suite_loads(
    tmp_path: Path, registry: Registry, judge: str, recorded: str, aggregate: str, message: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        f"suite: demo\n{judge}cases:\n  - id: a\n    language: hi\n    output: x\n{recorded}aggregate:\n  - {aggregate}\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteError) as excinfo:
        build_suite(path, registry)
    assert message in excinfo.value.message and excinfo.value.line == path.read_text().count("\n")
    # Enough repeats: it loads.
    if judge:
        path.write_text(path.read_text().replace("repeats: 3", "repeats: 5"), encoding="utf-8")
        assert build_suite(path, registry).aggregates[0].spec.k == 5


def test_a_csv_column_of_repeats_is_recorded_samples(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "cases.csv").write_text(
        'id,language,output,recorded.task_quality\nhi-1,hi,"नमस्ते, जी",2|1|2\nhi-2,hi,x,2\n', encoding="utf-8"
    )
    path = tmp_path / "suite.yaml"
    path.write_text("suite: csv\ncases_file: cases.csv\naggregate:\n  - pass_hat_k(task_quality >= 2) >= 0\n")
    cases = build_suite(path, registry).cases
    first, second = (case.recorded["task_quality"] for case in cases)
    assert (first.samples, first.score) == ((2.0, 1.0, 2.0), pytest.approx(5 / 3))
    assert (second.samples, second.score) == ((), 2.0)
    (tmp_path / "cases.csv").write_text("id,language,output,recorded.task_quality\nhi-1,hi,x,2|high\n")
    with pytest.raises(SuiteError, match="high") as excinfo:
        build_suite(path, registry)
    assert excinfo.value.line == 2
