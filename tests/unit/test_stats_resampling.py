"""Percentile bootstrap and Dirichlet posterior intervals: exact cases, properties, and scipy as the reference."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import (
    confusion_matrix,
    percentage_agreement,
    percentage_agreement_from_confusion,
    weighted_f1,
    weighted_f1_from_confusion,
)
from pytest_llmjudge.stats.resampling import (
    ConfidenceInterval,
    bootstrap_confusion_ci,
    bootstrap_percentage_agreement_ci,
    bootstrap_weighted_f1_ci,
    posterior_confusion_ci,
    posterior_confusion_pvalue,
)

K = 3


def _labels(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Skewed human labels and a judge that agrees ~70% of the time, leaning high."""
    rng = np.random.default_rng(seed)
    human = rng.choice(K, size=n, p=[0.15, 0.25, 0.6])
    judge = np.where(rng.random(n) < 0.7, human, np.minimum(human + 1, K - 1))
    judge = np.where(rng.random(n) < 0.1, rng.integers(0, K, n), judge)
    return human, judge


def test_single_item_interval_is_the_point() -> None:
    # One item: every resample is that item, so the interval collapses to the point.
    assert bootstrap_weighted_f1_ci([2], [2]) == (1.0, 1.0, 1.0)
    assert bootstrap_weighted_f1_ci([2], [1]) == (0.0, 0.0, 0.0)
    assert bootstrap_percentage_agreement_ci([0], [0]) == ConfidenceInterval(1.0, 1.0, 1.0)


def test_perfect_agreement_has_no_spread() -> None:
    # Every resample of perfectly agreeing pairs agrees perfectly.
    assert bootstrap_weighted_f1_ci([0, 1, 2, 2], [0, 1, 2, 2]) == (1.0, 1.0, 1.0)


def test_no_items_is_a_statistics_error() -> None:
    with pytest.raises(StatisticsError, match="n = 0"):
        bootstrap_weighted_f1_ci([], [])
    with pytest.raises(StatisticsError, match="n = 0"):
        bootstrap_percentage_agreement_ci([], [])


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_weighted_f1_ci([0, 1], [0, 1], confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_weighted_f1_ci([0, 1], [0, 1], n_resamples=0)
    with pytest.raises(ValueError, match="K x K"):
        bootstrap_confusion_ci(np.ones((2, 3)), weighted_f1_from_confusion)
    with pytest.raises(ValueError, match="negative"):
        bootstrap_confusion_ci(-np.eye(2), weighted_f1_from_confusion)


def test_seeded_runs_are_reproducible() -> None:
    human, judge = _labels(80, seed=1)
    first = bootstrap_weighted_f1_ci(human, judge, rng=42)
    assert bootstrap_weighted_f1_ci(human, judge, rng=42) == first
    assert bootstrap_weighted_f1_ci(human, judge) == bootstrap_weighted_f1_ci(human, judge)
    assert bootstrap_weighted_f1_ci(human, judge, rng=43) != first
    generator_run = bootstrap_weighted_f1_ci(human, judge, rng=np.random.default_rng(42))
    assert generator_run == first


@pytest.mark.parametrize("seed", range(10))
def test_interval_contains_the_point_estimate(seed: int) -> None:
    human, judge = _labels(60, seed)
    low, high, point = bootstrap_weighted_f1_ci(human, judge, labels=[0, 1, 2], rng=seed)
    assert point == pytest.approx(weighted_f1(human, judge))
    assert low <= point <= high
    low, high, point = bootstrap_percentage_agreement_ci(human, judge, rng=seed)
    assert point == pytest.approx(percentage_agreement(human, judge))
    assert low <= point <= high


def test_interval_shrinks_with_more_items() -> None:
    widths = []
    for n in (50, 500, 5000):
        low, high, _ = bootstrap_weighted_f1_ci(*_labels(n, seed=3))
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2] > 0
    # Roughly 1/sqrt(n): ten times the items, about a third of the width.
    assert widths[1] / widths[0] == pytest.approx(10**-0.5, rel=0.35)


def test_higher_confidence_gives_a_wider_interval() -> None:
    human, judge = _labels(200, seed=4)
    narrow = bootstrap_weighted_f1_ci(human, judge, confidence=0.8)
    wide = bootstrap_weighted_f1_ci(human, judge, confidence=0.99)
    assert wide.low < narrow.low and narrow.high < wide.high


def _statistic_on_items(statistic: Any) -> Any:
    """Turn a confusion-matrix statistic into scipy's vectorised (x, y, axis) form.

    This is the textbook item-index bootstrap: scipy resamples the items and we count the
    resampled pairs into one confusion matrix per resample.
    """

    def on_items(true: np.ndarray, pred: np.ndarray, axis: int = -1) -> np.ndarray:
        true = np.moveaxis(true, axis, -1).astype(np.int64)
        pred = np.moveaxis(pred, axis, -1).astype(np.int64)
        batch = true.shape[:-1]
        rows = int(np.prod(batch))
        offsets = np.arange(rows)[:, None] * K * K
        flat = offsets + true.reshape(rows, -1) * K + pred.reshape(rows, -1)
        counts = np.bincount(flat.ravel(), minlength=rows * K * K)
        return np.asarray(statistic(counts.reshape(rows, K, K))).reshape(batch)

    return on_items


@pytest.mark.parametrize(
    ("ours", "statistic"),
    [
        (bootstrap_weighted_f1_ci, weighted_f1_from_confusion),
        (bootstrap_percentage_agreement_ci, percentage_agreement_from_confusion),
    ],
)
@pytest.mark.parametrize("n", [40, 300])
def test_matches_scipy_percentile_bootstrap(ours: Any, statistic: Any, n: int) -> None:
    human, judge = _labels(n, seed=n)
    reference = stats.bootstrap(
        (human, judge),
        _statistic_on_items(statistic),
        paired=True,
        vectorized=True,
        n_resamples=6000,
        method="percentile",
        confidence_level=0.9,
        rng=np.random.default_rng(123),
    )
    low, high, point = ours(human, judge, n_resamples=6000, confidence=0.9, rng=7)
    # Two independent Monte-Carlo runs of the same percentile interval: the bounds differ
    # by a few hundredths of the interval width at most.
    tolerance = 0.08 * (high - low)
    assert low == pytest.approx(reference.confidence_interval.low, abs=tolerance)
    assert high == pytest.approx(reference.confidence_interval.high, abs=tolerance)
    assert point == pytest.approx(float(_statistic_on_items(statistic)(human, judge)))


def test_custom_statistic_and_undefined_resamples() -> None:
    counts = confusion_matrix([0, 0, 1, 1], [0, 1, 1, 1], [0, 1])

    def always_nan(stack: np.ndarray) -> np.ndarray:
        return np.full(stack.shape[0], np.nan)

    low, high, point = bootstrap_confusion_ci(counts, always_nan)
    assert math.isnan(low) and math.isnan(high) and math.isnan(point)

    def nan_unless_first_cell_is_two(stack: np.ndarray) -> np.ndarray:
        return np.where(stack[:, 0, 0] == 2, 1.0, np.nan)

    # Only the resamples where the statistic is defined enter the quantiles.
    assert bootstrap_confusion_ci(counts, nan_unless_first_cell_is_two)[:2] == (
        1.0,
        1.0,
    )


# --------------------------------------------------------------------------- the Dirichlet posterior


def _f1_of_probabilities(p: np.ndarray) -> float:
    """Weighted F1 of a matrix of cell probabilities, written out: sum_k row_k 2 p_kk / (row_k + col_k)."""
    row, col = p.sum(axis=1), p.sum(axis=0)
    return float(sum(row[k] * 2 * p[k, k] / (row[k] + col[k]) for k in range(len(p)) if row[k] + col[k] > 0))


def test_f1_of_probabilities_equals_f1_of_counts() -> None:
    counts = np.array([[5, 2, 0], [1, 10, 3], [0, 2, 30]])
    assert float(weighted_f1_from_confusion(counts / counts.sum())) == pytest.approx(
        float(weighted_f1_from_confusion(counts)), abs=1e-15
    )
    assert float(weighted_f1_from_confusion(counts / counts.sum())) == pytest.approx(
        _f1_of_probabilities(counts / counts.sum()), abs=1e-15
    )


def test_posterior_interval_equals_quantiles_of_scipy_dirichlet_draws() -> None:
    counts = np.array([[5, 2, 0], [1, 10, 3], [0, 2, 30]])
    draws = stats.dirichlet((counts + 1 / 9).ravel()).rvs(500, random_state=np.random.default_rng(4))
    values = [_f1_of_probabilities(d.reshape(3, 3)) for d in draws]
    low, high = np.quantile(values, [0.025, 0.975])
    interval = posterior_confusion_ci(counts, weighted_f1_from_confusion, n_resamples=500, rng=4)
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)
    assert interval.point == pytest.approx(float(weighted_f1_from_confusion(counts)))


def test_posterior_interval_never_collapses_when_every_item_agrees() -> None:
    # The case: 4 items that all agree gave the bootstrap's CI 1.00-1.00.
    assert bootstrap_confusion_ci(np.diag([0, 1, 3]), weighted_f1_from_confusion)[:2] == (1.0, 1.0)
    four = posterior_confusion_ci(np.diag([0, 0, 4]), weighted_f1_from_confusion)
    assert four.point == four.high == 1.0
    assert four.low == pytest.approx(0.479, abs=1e-3)
    one = posterior_confusion_ci(np.diag([0, 0, 1]), weighted_f1_from_confusion)
    assert one.low < 0.2
    many = posterior_confusion_ci(np.diag([20, 30, 150]), weighted_f1_from_confusion)
    assert 0.98 < many.low < 1.0
    # More agreeing items never lower the bound.
    lows = [posterior_confusion_ci(np.diag([0, 0, n]), weighted_f1_from_confusion).low for n in (2, 4, 10, 30, 100)]
    assert lows == sorted(lows)


def test_posterior_interval_contains_the_point_and_is_seeded() -> None:
    human, judge = _labels(40, 3)
    counts = confusion_matrix(human, judge, [0, 1, 2])
    first = posterior_confusion_ci(counts, weighted_f1_from_confusion)
    assert first == posterior_confusion_ci(counts, weighted_f1_from_confusion)
    assert first.low <= first.point <= first.high
    with pytest.raises(StatisticsError):
        posterior_confusion_ci(np.zeros((3, 3), dtype=int), weighted_f1_from_confusion)
    with pytest.raises(ValueError, match="prior"):
        posterior_confusion_ci(counts, weighted_f1_from_confusion, prior=0.0)


def test_posterior_lower_bound_holds_its_level_at_high_agreement_where_the_bootstrap_does_not() -> None:
    # Judge right 95% of the time on skewed 0-2 labels, n = 20, 300 seeded samples: the
    # bootstrap's lower bound lies above the true weighted F1 about a third of the time.
    rng = np.random.default_rng(8)
    prior = np.array([0.1, 0.2, 0.7])
    p = np.where(np.eye(3, dtype=bool), 0.95, 0.025) * prior[:, np.newaxis]
    truth = _f1_of_probabilities(p)
    above_posterior = above_bootstrap = 0
    for _ in range(300):
        counts = rng.multinomial(20, p.ravel()).reshape(3, 3)
        above_posterior += posterior_confusion_ci(counts, weighted_f1_from_confusion, n_resamples=300).low > truth
        above_bootstrap += bootstrap_confusion_ci(counts, weighted_f1_from_confusion, n_resamples=300).low > truth
    assert above_posterior / 300 <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / 300)
    assert above_bootstrap / 300 > 0.2


def test_the_posterior_pvalue_is_the_add_one_share_of_draws_below_the_threshold() -> None:
    confusion = np.array([[8, 2, 0], [1, 9, 2], [0, 3, 15]])
    draws = np.random.default_rng(3).dirichlet((confusion + 1 / 9).ravel(), size=5000).reshape(5000, 3, 3)
    values = weighted_f1_from_confusion(draws)
    for threshold in (0.6, 0.75, 0.9):
        expected = (np.count_nonzero(values <= threshold) + 1) / 5001
        assert posterior_confusion_pvalue(
            confusion, weighted_f1_from_confusion, threshold, n_draws=5000, rng=3
        ) == pytest.approx(expected)
    # The test and the interval agree: p <= a exactly when the a-quantile is above the threshold.
    interval = posterior_confusion_ci(confusion, weighted_f1_from_confusion, n_resamples=5000, confidence=0.9, rng=3)
    below = posterior_confusion_pvalue(confusion, weighted_f1_from_confusion, interval.low - 1e-9, n_draws=5000, rng=3)
    above = posterior_confusion_pvalue(confusion, weighted_f1_from_confusion, interval.low + 0.02, n_draws=5000, rng=3)
    assert below <= 0.05 + 1 / 5001 < above
    # Degenerate thresholds: nothing lies below 0 (p is the add-one floor), everything below 1.
    assert posterior_confusion_pvalue(confusion, weighted_f1_from_confusion, 0.0, n_draws=999) == 1 / 1000
    assert posterior_confusion_pvalue(confusion, weighted_f1_from_confusion, 1.0, n_draws=999) == 1.0
