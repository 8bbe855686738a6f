"""Suite-level aggregates (``aggregate``): per-language rows, CIs, unscored cases, the table."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from pytest_llmjudge.suite.aggregate import (
    ALL_LANGUAGES,
    BOOTSTRAP_RESAMPLES,
    AggregateRow,
    ScoredValue,
    _bootstrap_mean,
    compute_row,
    compute_rows,
    mean_ci,
    render_table,
)
from pytest_llmjudge.suite.expressions import parse_aggregate


def scored(language: str, *values: float | str) -> list[ScoredValue]:
    return [ScoredValue(language, value, True) for value in values]


def unscored(language: str, count: int = 1) -> list[ScoredValue]:
    return [ScoredValue(language, None, False) for _ in range(count)]


# --------------------------------------------------------------------------- hand-computed rows

# Scores 1, 2, 2, 0 (linguistic acceptability of four Hindi cases):
#   mean 5/4 = 1.25, median (1 + 2)/2 = 1.5, min 0, max 2
FOUR = scored("hi", 1, 2, 2, 0)


@pytest.mark.parametrize(("stat", "value"), [("mean", 1.25), ("median", 1.5), ("min", 0.0), ("max", 2.0)])
def test_hand_computed_statistics(stat: str, value: float) -> None:
    row = compute_row("hi", parse_aggregate(f"{stat}(la) >= 0"), FOUR)

    assert row.value == pytest.approx(value)
    assert (row.language, row.n_scored, row.n_unscored, row.n) == ("hi", 4, 0, 4)
    assert row.passed
    assert row.problem is None


# --------------------------------------------------------------------------- the mean's interval


def exact_bootstrap_quantiles(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval over all n^n equally likely resamples (what B -> infinity gives)."""
    means = sorted(statistics.fmean(resample) for resample in itertools.product(values, repeat=len(values)))
    alpha = 1 - confidence
    low, high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def test_the_mean_comes_with_a_bootstrap_interval_near_the_exact_one() -> None:
    # All 4^4 = 256 resamples of 1, 2, 2, 0 enumerated: the exact percentile interval is
    # [0.5, 2.0]; 2000 drawn resamples land within one step of the resampled means (0.25).
    exact = exact_bootstrap_quantiles([1.0, 2.0, 2.0, 0.0])
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), FOUR)

    assert exact == pytest.approx((0.5, 2.0))
    assert row.ci_low == pytest.approx(exact[0], abs=0.25)
    assert row.ci_high == pytest.approx(exact[1], abs=0.25)


@pytest.mark.parametrize("stat", ["median", "min", "max"])
def test_only_the_mean_and_pass_rate_have_an_interval(stat: str) -> None:
    row = compute_row("hi", parse_aggregate(f"{stat}(la) >= 0"), FOUR)
    assert (row.ci_low, row.ci_high) == (None, None)


@pytest.mark.parametrize(
    "values",
    [[1.0, 2.0, 2.0, 0.0], [45.2, 51.0, 38.7], [0.1, 0.9], list(range(30)), [3.5, -1.25, 7.0, 7.0, 2.0, 9.75]],
)
@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_mean_ci_equals_scipy_percentile_bootstrap(values: list[float], confidence: float) -> None:
    reference = stats.bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    assert mean_ci(values, confidence) == pytest.approx((reference.low, reference.high), rel=1e-12, abs=1e-12)


def test_the_interval_is_the_same_on_every_run() -> None:
    values = [0.0, 1.0, 2.0, 2.0, 1.0, 0.0, 2.0]
    first = mean_ci(values)
    _bootstrap_mean.cache_clear()
    assert mean_ci(values) == first


@pytest.mark.parametrize(
    "values",
    [[2.0, 1.0], [0.0, 2.0, 2.0], [2.0, 2.0, 2.0, 0.0], [1.0, 2.0, 2.0, 1.0, 2.0, 0.0, 2.0, 2.0]],
)
def test_the_interval_stays_on_the_scale_where_student_t_leaves_it(values: list[float]) -> None:
    # On LA's 0-2 scale, Student's t (the old interval) runs past 0 or 2 for these samples;
    # the bootstrap's bounds are means of resamples, so they stay within the scores.
    n = len(values)
    t_low, t_high = stats.t.interval(
        0.95, n - 1, loc=statistics.fmean(values), scale=statistics.stdev(values) / math.sqrt(n)
    )
    assert t_low < 0 or t_high > 2

    interval = mean_ci(values)
    assert interval is not None
    assert min(values) <= interval[0] <= statistics.fmean(values) <= interval[1] <= max(values)


def test_the_issue_example_stays_within_0_to_2() -> None:
    # Issue 13: "1.50 [-0.09, 3.09] on 0-2": four cases 2, 1, 2, 1 (t_{0.975,3} * 0.577 / 2 = 0.92)
    # is [0.58, 2.42] with t; any two-point sample of n = 2 such as 1, 2 is 1.5 +- 6.35.
    assert mean_ci([1.0, 2.0]) == (1.0, 2.0)
    low, high = mean_ci([2.0, 1.0, 2.0, 1.0]) or (math.nan, math.nan)
    assert 1.0 <= low < 1.5 < high <= 2.0


def test_no_interval_for_zero_or_one_value() -> None:
    assert mean_ci([]) is None
    assert mean_ci([1.5]) is None
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), scored("hi", 2))
    assert (row.value, row.ci_low, row.ci_high, row.passed) == (2.0, None, None, True)


def test_identical_values_have_the_point_as_their_interval() -> None:
    assert mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_the_interval_narrows_with_more_data() -> None:
    low_small, high_small = mean_ci([0.0, 1.0] * 5) or (math.nan, math.nan)
    low_big, high_big = mean_ci([0.0, 1.0] * 50) or (math.nan, math.nan)
    assert high_big - low_big < high_small - low_small


def test_ten_thousand_continuous_scores_match_scipy_with_resamples_drawn_in_blocks() -> None:
    # 2000 x 10,000 indices are drawn in blocks (memory); the stream, hence the interval, is scipy's.
    values = np.random.default_rng(7).uniform(0, 100, 10_000)
    reference = stats.bootstrap(
        (values,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert mean_ci(list(values)) == pytest.approx((reference.low, reference.high), rel=1e-12)


# --------------------------------------------------------------------------- pass_rate's interval


# Clopper-Pearson exact interval, by hand where the beta quantile has a closed form:
#   5 of 5: lower = 0.025^(1/5) = 0.478176 (P(5 of 5) = p^5 = 0.025), upper 1
#   0 of 5: [0, 1 - 0.025^(1/5)] = [0, 0.521824]
#   1 of 1: [0.025, 1]
#   2 of 5: statsmodels' proportion_confint(method="beta"): [0.052745, 0.853367]
@pytest.mark.parametrize(
    ("passing", "n", "expected"),
    [(2, 5, (0.052745, 0.853367)), (5, 5, (0.478176, 1.0)), (0, 5, (0.0, 0.521824)), (1, 1, (0.025, 1.0))],
)
def test_pass_rate_has_a_clopper_pearson_interval(passing: int, n: int, expected: tuple[float, float]) -> None:
    values = scored("hi", *([50.0] * passing + [40.0] * (n - passing)))
    row = compute_row("hi", parse_aggregate("pass_rate(chrf >= 45) >= 0"), values)

    assert row.value == pytest.approx(passing / n)
    assert (row.ci_low, row.ci_high) == pytest.approx(expected, abs=1e-6)
    reference = proportion_confint(passing, n, alpha=0.05, method="beta")
    assert (row.ci_low, row.ci_high) == pytest.approx(reference, abs=1e-12)
    exact = stats.binomtest(passing, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (row.ci_low, row.ci_high) == pytest.approx((exact.low, exact.high), abs=1e-12)


def test_pass_rates_bounds_hold_their_one_sided_level_at_every_rate_where_wilsons_do_not() -> None:
    # Exact error rates from the binomial pmf, over a grid of true rates: P(lower end > p)
    # and P(upper end < p) must not exceed 2.5% for the interval lower()/upper() act on.
    from pytest_llmjudge.stats.proportion import clopper_pearson_interval, wilson_interval

    for n in (5, 10, 30):
        k = np.arange(n + 1)
        exact = np.array([clopper_pearson_interval(int(i), n) for i in k])
        wilson = np.array([wilson_interval(int(i), n) for i in k])
        worst_exact = worst_wilson = 0.0
        for p in np.linspace(0.005, 0.995, 199):
            pmf = stats.binom.pmf(k, n, p)
            worst_exact = max(worst_exact, pmf[exact[:, 0] > p].sum(), pmf[exact[:, 1] < p].sum())
            worst_wilson = max(worst_wilson, pmf[wilson[:, 0] > p].sum())
        assert worst_exact <= 0.025 + 1e-12
        assert worst_wilson > 0.09


def test_pass_rate_of_no_cases_has_no_value_and_no_interval() -> None:
    row = compute_row("hi", parse_aggregate("pass_rate(chrf >= 45) >= 0"), [], min_cases=0)
    assert (row.value, row.ci_low, row.ci_high, row.passed) == (None, None, None, False)


# --------------------------------------------------------------------------- lower() and upper()


def test_lower_asserts_on_the_lower_bound_not_the_mean() -> None:
    values = scored("hi", 2, 2, 1, 2, 2, 2, 1, 2)  # mean 1.75
    interval = mean_ci([2.0, 2.0, 1.0, 2.0, 2.0, 2.0, 1.0, 2.0])
    assert interval is not None and interval[0] < 1.6

    point = compute_row("hi", parse_aggregate("mean(la) >= 1.6"), values)
    bounded = compute_row("hi", parse_aggregate("lower(mean(la)) >= 1.6"), values)
    loose = compute_row("hi", parse_aggregate(f"lower(mean(la)) >= {interval[0]}"), values)

    assert point.passed and not bounded.passed and loose.passed
    assert (bounded.value, bounded.asserted, bounded.problem) == (1.75, interval[0], None)


def test_upper_asserts_on_the_upper_bound() -> None:
    values = scored("hi", 50, 40, 46, 40, 40)  # 2 of 5 pass: Clopper-Pearson [0.0527, 0.8534]
    assert compute_row("hi", parse_aggregate("upper(pass_rate(chrf >= 45)) >= 0.85"), values).passed
    row = compute_row("hi", parse_aggregate("upper(pass_rate(chrf >= 45)) >= 0.86"), values)
    assert not row.passed
    assert row.asserted == pytest.approx(0.853367, abs=1e-6)


def test_a_bound_without_an_interval_is_an_error_not_a_pass() -> None:
    row = compute_row("hi", parse_aggregate("lower(mean(la)) >= 0"), scored("hi", 2))
    assert not row.passed
    assert (
        row.problem == "lower(mean(la)) needs an interval, hence at least 2 scored cases (or a known scale); hi has 1"
    )


def test_the_table_names_the_bound_it_tested() -> None:
    row = compute_row("hi", parse_aggregate("lower(mean(la)) >= 1.5"), FOUR)
    assert "lower >= 1.5" in render_table([row])


# --------------------------------------------------------------------------- passing and failing


def test_a_row_fails_when_the_value_misses_the_threshold() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 1.3"), FOUR)
    assert row.value == 1.25
    assert not row.passed
    assert row.problem is None  # a plain failure, not an error


@pytest.mark.parametrize(("op", "passed"), [("<", True), ("<=", True), (">", False), ("==", False), ("!=", True)])
def test_the_operator_decides(op: str, passed: bool) -> None:
    assert compute_row("hi", parse_aggregate(f"max(la) {op} 3"), FOUR).passed is passed


def test_unscored_cases_are_left_out_of_the_statistic_but_counted() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), FOUR + unscored("hi", 1), max_unscored_rate=0.5)
    assert row.value == 1.25
    assert (row.n_scored, row.n_unscored, row.n) == (4, 1, 5)
    assert row.passed


def test_any_unscored_case_fails_the_row_by_default() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), FOUR + unscored("hi", 1))

    assert not row.passed
    assert row.value == 1.25  # still reported
    assert row.problem == "1 of 5 case(s) unscored in hi (allowed: 0%)"


def test_max_unscored_rate_is_an_upper_bound() -> None:
    values = scored("hi", 2, 2, 2) + unscored("hi", 1)  # 25% unscored
    assert compute_row("hi", parse_aggregate("mean(la) >= 1"), values, max_unscored_rate=0.25).passed
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), values, max_unscored_rate=0.2)
    assert not row.passed
    assert row.problem == "1 of 4 case(s) unscored in hi (allowed: 20%)"


def test_min_cases() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), scored("hi", 2), min_cases=2)

    assert row.value == 2.0
    assert not row.passed
    assert row.problem == "only 1 scored case(s) in hi; the aggregate needs at least 2"


def test_min_cases_counts_scored_cases_only() -> None:
    values = scored("hi", 2, 2) + unscored("hi", 3)
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), values, min_cases=3, max_unscored_rate=1.0)
    assert row.problem is not None and row.problem.startswith("only 2 scored case(s)")


def test_no_cases_at_all() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), [])
    assert (row.value, row.passed, row.n) == (None, False, 0)
    assert row.problem == "only 0 scored case(s) in hi; the aggregate needs at least 1"


def test_all_unscored() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 1"), unscored("hi", 3), max_unscored_rate=1.0)
    assert row.value is None
    assert not row.passed
    assert row.problem is not None and "only 0 scored" in row.problem


def test_categorical_scores_have_no_mean() -> None:
    row = compute_row("hi", parse_aggregate("mean(language) >= 1"), scored("hi", "hi", "en"))
    assert not row.passed
    assert row.problem == "mean() needs numeric scores; language is categorical"


# --------------------------------------------------------------------------- pass_rate


def test_pass_rate_counts_unscored_cases_as_not_passing() -> None:
    # chrF 50, 40, 46 and two unscored: 2 of 5 cases reach 45.
    values = scored("hi", 50, 40, 46) + unscored("hi", 2)
    row = compute_row("hi", parse_aggregate("pass_rate(chrf >= 45) >= 0.4"), values, max_unscored_rate=0.4)

    assert row.value == pytest.approx(2 / 5)
    assert row.passed
    assert (row.ci_low, row.ci_high) == pytest.approx((0.052745, 0.853367), abs=1e-6)


def test_pass_rate_over_categorical_values() -> None:
    values = [
        ScoredValue("hi", "hi", True),
        ScoredValue("hi", "mr", True),
        ScoredValue("hi", "hi", True),
        ScoredValue("hi", "hi", True),
    ]
    row = compute_row("hi", parse_aggregate("pass_rate(language == case.language) >= 0.75"), values)
    assert row.value == 0.75
    assert row.passed


def test_pass_rate_with_nan_scores() -> None:
    values = scored("hi", 50, math.nan)
    row = compute_row("hi", parse_aggregate("pass_rate(chrf >= 45) >= 0.5"), values)
    assert row.value == 0.5


def test_pass_rate_still_fails_on_unscored_cases_by_default() -> None:
    row = compute_row("hi", parse_aggregate("pass_rate(chrf >= 45) >= 0.1"), scored("hi", 50) + unscored("hi"))
    assert row.value == 0.5
    assert not row.passed
    assert row.problem is not None and "unscored" in row.problem


# --------------------------------------------------------------------------- compute_rows

MIXED = scored("hi", 1, 2) + scored("en", 2, 0) + unscored("en") + scored("bn", 2)


def test_one_row_per_language_sorted_then_all() -> None:
    rows = compute_rows({}, parse_aggregate("mean(la) >= 1"), MIXED, max_unscored_rate=0.5)

    assert [row.language for row in rows] == ["bn", "en", "hi", ALL_LANGUAGES]
    by_language = {row.language: row for row in rows}
    assert by_language["bn"].value == 2.0
    assert (by_language["en"].value, by_language["en"].n_unscored) == (1.0, 1)
    assert by_language["hi"].value == 1.5
    assert by_language["all"].value == pytest.approx(7 / 5)
    assert by_language["all"].n == 6


def test_per_language_overrides() -> None:
    default = parse_aggregate("mean(la) >= 1.6")
    spec_for = {"hi": default.with_threshold(">=", 1.4), "en": default.with_threshold("<", 2)}
    rows = {row.language: row for row in compute_rows(spec_for, default, MIXED, max_unscored_rate=0.5)}

    assert rows["hi"].spec.render() == "mean(la) >= 1.4"
    assert rows["hi"].passed  # 1.5 >= 1.4
    assert rows["en"].spec.render() == "mean(la) < 2"
    assert rows["en"].passed  # 1.0 < 2
    assert rows["bn"].spec is default
    assert rows["bn"].passed  # 2.0 >= 1.6
    assert rows["all"].spec is default  # overrides never apply to the overall row
    assert not rows["all"].passed  # 1.4 < 1.6


def test_min_cases_and_max_unscored_rate_apply_to_every_row() -> None:
    rows = {
        row.language: row
        for row in compute_rows({}, parse_aggregate("mean(la) >= 0"), MIXED, min_cases=2, max_unscored_rate=0.25)
    }
    assert rows["bn"].problem == "only 1 scored case(s) in bn; the aggregate needs at least 2"
    assert rows["en"].problem == "1 of 3 case(s) unscored in en (allowed: 25%)"
    assert rows["hi"].problem is None and rows["hi"].passed
    assert rows["all"].problem is None and rows["all"].passed  # 1 of 6 unscored is under 25%


def test_compute_rows_without_values() -> None:
    rows = compute_rows({}, parse_aggregate("mean(la) >= 0"), [])
    assert [row.language for row in rows] == [ALL_LANGUAGES]
    assert not rows[0].passed


# --------------------------------------------------------------------------- render_table


def test_render_table_marks_the_highlighted_row() -> None:
    default = parse_aggregate("mean(la) >= 1")
    rows = compute_rows({"hi": default.with_threshold(">=", 1.6)}, default, MIXED, max_unscored_rate=0.5)
    table = render_table(rows, highlight="hi").splitlines()

    assert table[0].split() == ["language", "n", "unscored", "value", "95%", "CI", "threshold", "result"]
    assert len(table) == 1 + len(rows)
    marked = [line for line in table[1:] if line.startswith(">")]
    assert len(marked) == 1
    assert marked[0].split()[1] == "hi"
    assert all(line.startswith("  ") for line in table[1:] if line is not marked[0])
    hi = marked[0]
    assert hi.split()[2:5] == ["2", "0", "1.500"]
    assert ">= 1.6" in hi and hi.endswith("FAIL")


def test_render_table_cells() -> None:
    spec = parse_aggregate("mean(la) >= 1")
    rows = [
        AggregateRow("hi", spec, 4, 0, 1.25, -0.2734801808, 2.7734801808, True, None),
        AggregateRow("en", spec, 0, 2, None, None, None, False, "only 0 scored case(s)"),
        AggregateRow("all", spec, 4, 2, 1.25, None, None, False, None),
    ]
    hi, en, overall = render_table(rows).splitlines()[1:]

    assert hi.split() == ["hi", "4", "0", "1.250", "[-0.273,", "2.773]", ">=", "1", "pass"]
    assert en.split() == ["en", "2", "2", "-", ">=", "1", "ERROR"]  # a problem is an error, not a fail
    assert overall.split() == ["all", "6", "2", "1.250", ">=", "1", "FAIL"]


def test_render_table_without_highlight_marks_nothing() -> None:
    rows = compute_rows({}, parse_aggregate("mean(la) >= 1"), FOUR)
    assert not any(line.startswith(">") for line in render_table(rows).splitlines())
    assert not any(line.startswith(">") for line in render_table(rows, highlight="xx").splitlines())


def test_render_table_columns_line_up() -> None:
    rows = compute_rows({}, parse_aggregate("mean(la) >= 1"), MIXED, max_unscored_rate=0.5)
    lines = render_table(rows, highlight="all").splitlines()
    assert len({len(line.rstrip()) - len(line.rstrip().split()[-1]) for line in lines[1:]}) == 1


# --------------------------------------------------------------------------- non-finite scores


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("stat", ["mean", "median", "min", "max"])
def test_a_non_finite_score_is_a_row_error_not_a_crash_or_a_pass(stat: str, bad: float) -> None:
    row = compute_row("hi", parse_aggregate(f"{stat}(chrf) <= 1000"), scored("hi", 1.0, bad))
    assert row.passed is False
    assert row.problem == "1 score(s) of chrf in hi are not finite numbers (NaN or infinite)"


def test_mean_ci_of_a_non_finite_value_gives_no_finite_interval() -> None:
    interval = mean_ci([1.0, math.inf, 2.0])
    assert interval is None or all(math.isnan(bound) for bound in interval)


# --------------------------------------------------------------------------- betting interval on a known scale


def test_a_known_scale_gives_the_betting_interval_that_keeps_a_width() -> None:
    from pytest_llmjudge.stats.betting import betting_interval

    spec = parse_aggregate("lower(mean(la)) >= 1.5")
    row = compute_row("hi", spec, scored("hi", *[2] * 10), scale=(0.0, 2.0))
    # Ten 2s: the bootstrap's interval was the point [2, 2], so lower() >= 1.5 passed on ten cases.
    assert (row.ci_low, row.ci_high) == tuple(betting_interval([2] * 10, 0, 2))
    assert row.ci_low == pytest.approx(1.2540, abs=1e-4) and row.ci_high == 2.0
    assert not row.passed and row.problem is None
    # The report's summary rows use the same function, hence the same interval.
    assert mean_ci([2.0] * 10, scale=(0.0, 2.0)) == (row.ci_low, row.ci_high)


def test_one_case_on_a_known_scale_has_the_whole_scale_as_its_interval() -> None:
    row = compute_row("hi", parse_aggregate("lower(mean(la)) >= 0.5"), scored("hi", 2), scale=(0.0, 2.0))
    assert (row.ci_low, row.ci_high) == (0.0, 2.0)
    assert not row.passed and row.problem is None


def test_a_score_off_the_known_scale_is_a_row_error() -> None:
    row = compute_row("hi", parse_aggregate("mean(la) >= 0"), scored("hi", 1, 3), scale=(0.0, 2.0))
    assert not row.passed
    assert row.problem == "1 score(s) of la in hi lie off its scale [0, 2]"
    assert mean_ci([1.0, 3.0], scale=(0.0, 2.0)) is None


def test_compute_rows_passes_the_scale_to_every_row() -> None:
    values = scored("hi", 2, 2, 1) + scored("ta", 0, 1, 2, 2)
    rows = compute_rows({}, parse_aggregate("mean(la) >= 1"), values, scale=(0.0, 2.0))
    for row, scores in zip(rows, ([2.0, 2.0, 1.0], [0.0, 1.0, 2.0, 2.0], [2.0, 2.0, 1.0, 0.0, 1.0, 2.0, 2.0])):
        assert (row.ci_low, row.ci_high) == mean_ci(scores, scale=(0.0, 2.0))
