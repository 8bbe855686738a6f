"""Paired bootstrap, sign-flip permutation test and the regression verdict."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats import paired
from pytest_llmjudge.stats.paired import (
    Alternative,
    paired_bootstrap,
    paired_permutation_test,
    regression_verdict,
)


def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    diff: np.ndarray = np.mean(x, axis=axis) - np.mean(y, axis=axis)
    return diff


def correlated_scores(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    difficulty = rng.random(n)
    baseline = difficulty + rng.normal(0.0, 0.1, n)
    candidate = difficulty + shift + rng.normal(0.0, 0.1, n)
    return candidate, baseline


# --- hand-computed cases ------------------------------------------------------------


def test_permutation_exact_n3_by_hand() -> None:
    # d = cand - base = [-0.1, -0.2, +0.1], observed mean -0.2/3.
    # The 8 sign patterns give sums  +-0.1 +-0.2 +-0.1:
    #   0.4, 0.2, 0.0, -0.2, 0.2, 0.0, -0.2, -0.4
    # "less"     : sums <= -0.2 -> {-0.2, -0.2, -0.4}            -> 3/8
    # "greater"  : sums >= -0.2 -> all but -0.4                  -> 7/8
    # "two-sided": |sum| >= 0.2 -> {0.4, 0.2, -0.2, 0.2, -0.2, -0.4} -> 6/8
    cand = [0.5, 0.7, 0.2]
    base = [0.6, 0.9, 0.1]
    expected: dict[Alternative, float] = {
        "less": 3 / 8,
        "greater": 7 / 8,
        "two-sided": 6 / 8,
    }
    for alternative, p in expected.items():
        res = paired_permutation_test(cand, base, alternative=alternative)
        assert res.exact
        assert res.resamples == 8
        assert res.p_value == pytest.approx(p, abs=1e-12)
        assert res.mean_difference == pytest.approx(-0.2 / 3)


def test_bootstrap_n2_by_hand() -> None:
    # d = [0, -1]: a resample mean is 0 (prob 1/4), -0.5 (1/2) or -1 (1/4).
    # 95% percentile CI -> [-1, 0].
    # Shift p-value: D* - D <= D  <=>  D* + 0.5 <= -0.5  <=>  D* = -1 -> about 1/4.
    # Two-sided: |D* + 0.5| >= 0.5  <=>  D* in {0, -1} -> about 1/2.
    res = paired_bootstrap([1.0, 0.0], [1.0, 1.0], resamples=20_000, seed=1)
    assert res.mean_difference == -0.5
    assert (res.ci_low, res.ci_high) == (-1.0, 0.0)
    assert res.p_value == pytest.approx(0.25, abs=0.015)
    assert res.p_value_two_sided == pytest.approx(0.5, abs=0.015)


def test_bootstrap_n3_matches_exact_enumeration() -> None:
    # All 27 index triples are equally likely; their means are the exact bootstrap law.
    d = np.array([-0.3, 0.1, 0.5])
    exact = np.array([d[list(t)].mean() for t in itertools.product(range(3), repeat=3)])
    res = paired_bootstrap(d, np.zeros(3), resamples=40_000, seed=3)
    for value in np.unique(exact):
        share_exact = np.mean(exact <= value + 1e-12)
        share_boot = np.mean(res.distribution <= value + 1e-12)
        assert share_boot == pytest.approx(share_exact, abs=0.01)
    # The exact shift p-value: share of exact means with  m - D <= D.
    observed = d.mean()
    p_exact = np.mean(exact - observed <= observed + 1e-12)
    assert res.p_value == pytest.approx(p_exact, abs=0.01)


# --- against SciPy --------------------------------------------------------------------


def test_bootstrap_ci_agrees_with_scipy() -> None:
    cand, base = correlated_scores(80, -0.03, seed=11)
    ours = paired_bootstrap(cand, base, resamples=5000, seed=5)
    ref = stats.bootstrap(
        (cand, base),
        mean_difference,
        paired=True,
        vectorized=True,
        n_resamples=5000,
        method="percentile",
        rng=np.random.default_rng(123),
    )
    width = ref.confidence_interval.high - ref.confidence_interval.low
    # Monte-Carlo error of a 2.5% quantile with 5000 resamples is a few % of the width.
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.05 * width)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.05 * width)
    assert ours.mean_difference == pytest.approx(float(np.mean(cand - base)))


@pytest.mark.parametrize("alternative", ["less", "greater", "two-sided"])
def test_permutation_exact_equals_scipy(alternative: Alternative) -> None:
    cand, base = correlated_scores(9, -0.05, seed=2)
    ours = paired_permutation_test(cand, base, resamples=1000, alternative=alternative)
    ref = stats.permutation_test(
        (cand, base),
        mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative=alternative,
    )
    assert ours.exact and ours.resamples == 2**9
    assert ours.p_value == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.parametrize("alternative", ["less", "two-sided"])
def test_permutation_random_agrees_with_scipy(alternative: Alternative) -> None:
    cand, base = correlated_scores(40, -0.025, seed=4)
    ours = paired_permutation_test(cand, base, resamples=20_000, alternative=alternative)
    ref = stats.permutation_test(
        (cand, base),
        mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=20_000,
        alternative=alternative,
        rng=np.random.default_rng(99),
    )
    assert not ours.exact
    assert 0.02 < ref.pvalue < 0.5  # a p-value in the informative range
    assert ours.p_value == pytest.approx(ref.pvalue, abs=0.01)


# --- properties ---------------------------------------------------------------------


def test_seeded_runs_are_reproducible() -> None:
    cand, base = correlated_scores(50, 0.0, seed=8)
    first = paired_bootstrap(cand, base, seed=42)
    again = paired_bootstrap(cand, base, seed=42)
    other = paired_bootstrap(cand, base, seed=43)
    assert first == again
    np.testing.assert_array_equal(first.distribution, again.distribution)
    assert not np.array_equal(first.distribution, other.distribution)
    assert paired_permutation_test(cand, base, seed=7) == paired_permutation_test(cand, base, seed=7)


def test_chunking_does_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    cand, base = correlated_scores(300, -0.01, seed=6)
    whole = paired_bootstrap(cand, base, resamples=500, seed=9)
    perm_whole = paired_permutation_test(cand, base, resamples=3000, seed=9)
    # 1000 elements per chunk: three rows of 300 cases at a time.
    monkeypatch.setattr(paired, "_CHUNK_ELEMENTS", 1000)
    chunked = paired_bootstrap(cand, base, resamples=500, seed=9)
    np.testing.assert_array_equal(whole.distribution, chunked.distribution)
    assert paired_permutation_test(cand, base, resamples=3000, seed=9) == perm_whole


def test_p_value_for_zero_margin_is_the_p_value() -> None:
    cand, base = correlated_scores(60, -0.02, seed=10)
    res = paired_bootstrap(cand, base)
    assert res.p_value_for_drop(0.0) == res.p_value
    # A larger tolerated drop makes the same data less surprising.
    assert res.p_value_for_drop(0.05) > res.p_value


def test_discrete_scores_count_ties() -> None:
    # 0/1 scores: the identity sign pattern must tie with the observed statistic even
    # though the two are summed in a different order.
    cand = np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 1], dtype=float)
    base = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 1], dtype=float)
    ours = paired_permutation_test(cand, base, resamples=2**10)
    ref = stats.permutation_test(
        (cand, base),
        mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="less",
    )
    assert ours.p_value == pytest.approx(ref.pvalue, abs=1e-12)


# --- degenerate cases ---------------------------------------------------------------


def test_no_cases_raise() -> None:
    with pytest.raises(StatisticsError, match="at least one case"):
        paired_bootstrap([], [])
    with pytest.raises(StatisticsError, match="at least one case"):
        paired_permutation_test([], [])


def test_nan_is_rejected_with_its_count() -> None:
    with pytest.raises(StatisticsError, match=r"baseline scores contain 2 non-finite.*2 NaN"):
        paired_bootstrap([0.1, 0.2, 0.3], [np.nan, 0.2, np.nan])
    with pytest.raises(StatisticsError, match="1 infinite"):
        paired_permutation_test([0.1, np.inf], [0.1, 0.2])


def test_mismatched_lengths_are_rejected() -> None:
    with pytest.raises(StatisticsError, match="equal lengths"):
        paired_bootstrap([0.1, 0.2], [0.1])


def test_single_case_gives_no_evidence() -> None:
    res = paired_bootstrap([0.2], [0.9])
    assert res.n == 1 and res.mean_difference == pytest.approx(-0.7)
    assert (res.ci_low, res.ci_high) == (-np.inf, np.inf)
    assert res.p_value == res.p_value_two_sided == 1.0
    assert regression_verdict(res, margin=0.1) == "warn"
    # The exact sign-flip null has two points, d and -d.
    assert paired_permutation_test([0.2], [0.9]).p_value == 0.5


def test_all_differences_zero() -> None:
    scores = [0.3, 0.8, 0.5, 0.5]
    res = paired_bootstrap(scores, scores)
    assert (res.ci_low, res.ci_high) == (0.0, 0.0)
    assert res.p_value == res.p_value_two_sided == 1.0
    assert regression_verdict(res) == "pass"
    for alternative in ("less", "greater", "two-sided"):
        assert paired_permutation_test(scores, scores, alternative=alternative).p_value == 1.0
        big = np.linspace(0, 1, 50)
        assert paired_permutation_test(big, big, alternative=alternative).p_value == 1.0


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(StatisticsError, match="confidence"):
        paired_bootstrap([1, 2], [1, 2], confidence=1.0)
    with pytest.raises(StatisticsError, match="resamples"):
        paired_bootstrap([1, 2], [1, 2], resamples=0)
    with pytest.raises(StatisticsError, match="alternative"):
        paired_permutation_test([1, 2], [1, 2], alternative="smaller")  # type: ignore[arg-type]
    res = paired_bootstrap([1, 2], [1, 2])
    with pytest.raises(StatisticsError, match="margin"):
        regression_verdict(res, margin=-0.1)
    with pytest.raises(StatisticsError, match="alpha"):
        regression_verdict(res, alpha=0.0)


# --- verdict ------------------------------------------------------------------------


def test_clear_significant_drop_fails() -> None:
    cand, base = correlated_scores(200, -0.10, seed=12)
    res = paired_bootstrap(cand, base)
    assert res.ci_high < -0.02
    assert regression_verdict(res, margin=0.02, alpha=0.05) == "fail"


def test_small_non_significant_drop_beyond_margin_warns() -> None:
    # A mean drop of exactly 0.03, beyond a 0.01 margin, but 15 noisy cases cannot show it.
    rng = np.random.default_rng(13)
    base = rng.random(15)
    noise = rng.normal(0.0, 0.2, 15)
    cand = base - 0.03 + (noise - noise.mean())
    res = paired_bootstrap(cand, base)
    assert res.mean_difference == pytest.approx(-0.03)
    assert res.ci_high > -0.01 and res.p_value_for_drop(0.01) >= 0.05
    assert regression_verdict(res, margin=0.01, alpha=0.05) == "warn"


def test_improvement_and_drop_within_margin_pass() -> None:
    cand, base = correlated_scores(200, 0.05, seed=14)
    assert regression_verdict(paired_bootstrap(cand, base), margin=0.0) == "pass"
    cand, base = correlated_scores(500, -0.01, seed=15)
    res = paired_bootstrap(cand, base)
    assert -0.02 < res.mean_difference < 0.0
    assert regression_verdict(res, margin=0.02) == "pass"


def test_significant_drop_but_within_margin_is_not_a_failure() -> None:
    # Significantly worse than the baseline, yet by less than the tolerated margin.
    cand, base = correlated_scores(2000, -0.02, seed=16)
    res = paired_bootstrap(cand, base)
    assert res.ci_high < 0.0
    assert regression_verdict(res, margin=0.0) == "fail"
    assert regression_verdict(res, margin=0.05) == "pass"


def test_to_dict_is_plain() -> None:
    res = paired_bootstrap([0.1, 0.5, 0.9], [0.2, 0.4, 0.9])
    summary = res.to_dict()
    assert summary["n"] == 3 and summary["seed"] == 0
    assert "distribution" not in summary
