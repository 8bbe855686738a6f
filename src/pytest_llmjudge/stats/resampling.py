"""Percentile bootstrap confidence intervals for agreement statistics of paired labels.

The gate reports a confidence interval next to judge-human weighted F1 (METAL, Hada et al.
2024b, sec. 4.4) and percentage agreement (Hada et al. 2024a, sec. 3.4) because per
language and metric there are often only tens of items. The method is the plain percentile
bootstrap (Efron and Tibshirani 1993, ch. 13): draw ``B`` resamples of the ``n`` items with
replacement, compute the statistic on each, and report the ``(1 - c) / 2`` and
``(1 + c) / 2`` quantiles (linear interpolation, as ``numpy.quantile`` and
``scipy.stats.bootstrap(method="percentile")`` do) for confidence level ``c``.

How the resamples are drawn: both statistics only depend on the K x K confusion matrix of
the items, and a resample of n items with replacement puts ``Multinomial(n, C / n)`` items
into the cells of that matrix (each draw picks one item, hence one cell, with probability
``C_ij / n``). Drawing the B x K x K resampled confusion matrices from that multinomial
directly gives exactly the same bootstrap distribution as drawing item indices and counting
them, without ever materialising a B x n index array: the cost is O(B K^2), independent of
n. The statistics are then evaluated on the whole B x K x K stack at once.

Reproducibility: ``rng`` seeds a ``numpy.random.Generator`` and defaults to 0, so a gate
gives the same interval on every run; pass a Generator to share one stream.

Degenerate cases: ``n = 0`` raises :class:`~pytest_llmjudge.errors.StatisticsError`;
``n = 1`` has only one possible resample, so the interval is ``(point, point)`` (returned
without drawing). Resamples whose statistic is undefined (NaN, for example kappa on a
single-class resample) are left out of the quantiles; if all are, the bounds are NaN.
"""

from __future__ import annotations

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
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
#: A statistic of a stack of confusion matrices: (..., K, K) counts -> (...) values.
ConfusionStatistic = Callable[[IntArray], FloatArray]
Seed = int | np.random.Generator | None


class ConfidenceInterval(NamedTuple):
    """A bootstrap interval and the statistic on the original data."""

    low: float
    high: float
    point: float


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
    counts = np.asarray(confusion, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1]:
        raise ValueError(f"confusion must be a K x K matrix, got shape {counts.shape}")
    if np.any(counts < 0):
        raise ValueError("confusion counts must not be negative")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = int(counts.sum())
    if n == 0:
        raise StatisticsError("a bootstrap interval needs at least one item (n = 0)")
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
