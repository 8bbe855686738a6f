"""Confidence intervals for agreement statistics of paired labels: the percentile bootstrap,
and the Dirichlet posterior interval the agreement gate reports.

The gate reports a confidence interval next to judge-human weighted F1 (METAL, Hada et al.
2024b, sec. 4.4) and percentage agreement (Hada et al. 2024a, sec. 3.4) because per
language and metric there are often only tens of items.

Percentile bootstrap (:func:`bootstrap_confusion_ci`; Efron and Tibshirani 1993, ch. 13):
draw ``B`` resamples of the ``n`` items with replacement, compute the statistic on each,
and report the ``(1 - c) / 2`` and ``(1 + c) / 2`` quantiles (linear interpolation, as
``numpy.quantile`` and ``scipy.stats.bootstrap(method="percentile")`` do) for confidence
level ``c``. How the resamples are drawn: both statistics only depend on the K x K
confusion matrix of the items, and a resample of n items with replacement puts
``Multinomial(n, C / n)`` items into the cells of that matrix (each draw picks one item,
hence one cell, with probability ``C_ij / n``). Drawing the B x K x K resampled confusion
matrices from that multinomial directly gives exactly the same bootstrap distribution as
drawing item indices and counting them, without ever materialising a B x n index array:
the cost is O(B K^2), independent of n. The statistics are then evaluated on the whole
B x K x K stack at once. Its weakness is small n: a resample can only contain the kinds of
disagreement already seen, so 4 items that all agree give ``[1, 1]``, and at high agreement
the lower bound lies above the true F1 far more often than 2.5% (8% at n = 50 and 95%
agreement, 64-80% at n = 10-20; ``benchmarks/bound_coverage.py``).

Dirichlet posterior (:func:`posterior_confusion_ci`, the gate's interval): the items are
a multinomial sample over the K^2 cells with probabilities ``P``; with a Dirichlet prior of
concentration ``a`` on every cell the posterior is ``Dirichlet(C + a)`` (the conjugate
multinomial model: Gelman et al., *Bayesian Data Analysis*, 3rd ed., sec. 3.4; with
``a -> 0`` over the observed cells it is Rubin's Bayesian bootstrap, Ann. Statist. 1981).
``B`` draws of ``P`` give ``B`` values of the population statistic (F1 of a probability
matrix: every statistic here is a ratio of cell sums, so counts and probabilities give the
same value), and the interval is their ``(1 - c) / 2`` and ``(1 + c) / 2`` quantiles,
widened to contain the statistic of the observed matrix. The prior is Perks' (1947): total
mass one pseudo-item, ``a = 1 / K^2`` per cell, so a disagreement nobody has seen yet keeps
some probability: 4 items that all agree on a 0-2 scale give [0.48, 1], 200 give
[0.98, 1]. At n in the tens its interval is about as wide as the bootstrap's.

Reproducibility: ``rng`` seeds a ``numpy.random.Generator`` and defaults to 0, so a gate
gives the same interval on every run; pass a Generator to share one stream.

Degenerate cases: ``n = 0`` raises :class:`~pytest_llmjudge.errors.StatisticsError`. The
bootstrap at ``n = 1`` has only one possible resample, so its interval is
``(point, point)`` (returned without drawing); the posterior's is wide. Draws whose
statistic is undefined (NaN, for example kappa on a single-class resample) are left out of
the quantiles; if all are, the bounds are NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import (
    confusion_matrix,
    percentage_agreement_from_confusion,
    weighted_f1_from_confusion,
)

__all__ = [
    "ConfidenceInterval",
    "ConfusionStatistic",
    "bootstrap_confusion_ci",
    "bootstrap_percentage_agreement_ci",
    "bootstrap_weighted_f1_ci",
    "posterior_confusion_ci",
    "posterior_confusion_pvalue",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
#: A statistic of a stack of confusion matrices: (..., K, K) counts -> (...) values.
ConfusionStatistic = Callable[[IntArray], FloatArray]
#: The same of cell probabilities (a ratio of cell sums takes either).
ProbabilityStatistic = Callable[[FloatArray], FloatArray]
Seed = int | np.random.Generator | None


class ConfidenceInterval(NamedTuple):
    """An interval and the statistic on the original data."""

    low: float
    high: float
    point: float


def _checked_counts(confusion: npt.ArrayLike, n_resamples: int, confidence: float) -> IntArray:
    counts = np.asarray(confusion, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1]:
        raise ValueError(f"confusion must be a K x K matrix, got shape {counts.shape}")
    if np.any(counts < 0):
        raise ValueError("confusion counts must not be negative")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if int(counts.sum()) == 0:
        raise StatisticsError("an interval needs at least one item (n = 0)")
    return counts


def bootstrap_confusion_ci(
    confusion: npt.ArrayLike,
    statistic: ConfusionStatistic,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    rng: Seed = 0,
) -> ConfidenceInterval:
    """Percentile bootstrap interval of ``statistic`` over the items of a confusion matrix.

    ``statistic`` must accept a (B, K, K) stack and return B values (see the module
    docstring for why resampling cells is resampling items).
    """
    counts = _checked_counts(confusion, n_resamples, confidence)
    n = int(counts.sum())
    point = float(statistic(counts[np.newaxis])[0])
    if n == 1:
        return ConfidenceInterval(point, point, point)

    generator = np.random.default_rng(rng)
    k = counts.shape[0]
    resampled = generator.multinomial(n, counts.ravel() / n, size=n_resamples)
    values = np.asarray(statistic(resampled.reshape(n_resamples, k, k)), dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return ConfidenceInterval(float("nan"), float("nan"), point)
    alpha = 1.0 - confidence
    low, high = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
    return ConfidenceInterval(float(low), float(high), point)


def _posterior_values(
    counts: IntArray, statistic: ProbabilityStatistic, n_draws: int, rng: Seed, prior: float | None
) -> FloatArray:
    """``statistic`` of ``n_draws`` cell-probability draws from the Dirichlet posterior of ``counts``
    (concentration ``prior`` per cell, default Perks' ``1 / K^2``): what the interval and the
    p-value both read."""
    k = counts.shape[0]
    concentration = 1.0 / (k * k) if prior is None else prior
    if not concentration > 0.0:
        raise ValueError(f"prior must be positive, got {prior}")
    draws = np.random.default_rng(rng).dirichlet((counts + concentration).ravel(), size=n_draws)
    return np.asarray(statistic(draws.reshape(n_draws, k, k)), dtype=np.float64)


def posterior_confusion_ci(
    confusion: npt.ArrayLike,
    statistic: ProbabilityStatistic,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    rng: Seed = 0,
    prior: float | None = None,
) -> ConfidenceInterval:
    """Dirichlet posterior interval of ``statistic`` (module docstring), never zero-width.

    ``statistic`` must accept a (B, K, K) stack of cell probabilities and return B values;
    ``prior`` is the concentration per cell, default Perks' ``1 / K^2``.
    """
    counts = _checked_counts(confusion, n_resamples, confidence)
    point = float(statistic(counts[np.newaxis].astype(np.float64))[0])
    values = _posterior_values(counts, statistic, n_resamples, rng, prior)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return ConfidenceInterval(float("nan"), float("nan"), point)
    alpha = 1.0 - confidence
    low, high = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
    # Widening to the observed statistic keeps the posterior mass covered; a report showing
    # "F1 1.00, CI 0.44-0.99" would read as a contradiction.
    if math.isnan(point):
        return ConfidenceInterval(float(low), float(high), point)
    return ConfidenceInterval(min(float(low), point), max(float(high), point), point)


def posterior_confusion_pvalue(
    confusion: npt.ArrayLike,
    statistic: ProbabilityStatistic,
    threshold: float,
    *,
    n_draws: int = 20_000,
    rng: Seed = 0,
    prior: float | None = None,
) -> float:
    """Posterior probability that ``statistic`` is at most ``threshold``, as a one-sided p-value.

    The p-value of H0 "the statistic is below ``threshold``" against "at least ``threshold``"
    read off the same Dirichlet posterior as :func:`posterior_confusion_ci` (Perks' prior):
    ``(#{draws <= threshold} + 1) / (n_draws + 1)``, the add-one form so a finite number of
    draws never reports 0. ``p <= a`` exactly when the posterior's ``a``-quantile lies above
    ``threshold``, so the test and the interval's lower bound agree. It is a Bayesian tail
    probability, not an exact test: ``benchmarks/family_gates.py`` measures how often it
    falls below ``a`` when the statistic sits exactly at ``threshold`` (its type-I error).
    """
    counts = _checked_counts(confusion, n_draws, 0.95)
    values = _posterior_values(counts, statistic, n_draws, rng, prior)
    # An undefined statistic (NaN) shows nothing: it counts against the claim.
    below = int(np.count_nonzero(~(values > threshold)))
    return min(1.0, (below + 1) / (n_draws + 1))


def bootstrap_weighted_f1_ci(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    labels: npt.ArrayLike | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    rng: Seed = 0,
) -> ConfidenceInterval:
    """Bootstrap interval of the weighted F1 of ``y_pred`` (judge) vs ``y_true`` (humans)."""
    return bootstrap_confusion_ci(
        confusion_matrix(y_true, y_pred, labels),
        weighted_f1_from_confusion,
        n_resamples=n_resamples,
        confidence=confidence,
        rng=rng,
    )


def bootstrap_percentage_agreement_ci(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    rng: Seed = 0,
) -> ConfidenceInterval:
    """Bootstrap interval of the share of items on which ``a`` and ``b`` agree."""
    return bootstrap_confusion_ci(
        confusion_matrix(a, b),
        percentage_agreement_from_confusion,
        n_resamples=n_resamples,
        confidence=confidence,
        rng=rng,
    )
