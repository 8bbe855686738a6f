"""Multiple-testing corrections: adjusted p-values for a family of one-sided tests.

What it is
    A release gate of ``k`` comparisons (8 languages x 3 metrics = 24) tested each at level
    ``alpha`` fails an unchanged model with probability up to ``1 - (1 - alpha)**k`` (71% at
    ``k = 24``, 64% measured). A correction turns the family's raw p-values ``p_1 .. p_k``
    into adjusted ones; an item is rejected when its adjusted p is ``<= alpha``. With the
    sorted raw p-values ``p_(1) <= ... <= p_(k)``:

    * ``bonferroni``: ``min(1, k * p_i)``. Controls the family-wise error rate (FWER, the
      chance of any false rejection) under any dependence.
    * ``holm`` (default): ``p~_(j) = max_{i <= j} min(1, (k - i + 1) * p_(i))`` (Holm 1979,
      *A simple sequentially rejective multiple test procedure*, Scand. J. Statist. 6:65-70).
      Controls the FWER under any dependence, like Bonferroni, and rejects everything
      Bonferroni rejects, and more.
    * ``bh``: Benjamini-Hochberg, ``p~_(j) = min_{i >= j} min(1, k * p_(i) / i)``
      (Benjamini and Hochberg 1995, JRSS-B 57:289-300). Controls the false discovery rate
      (the expected share of false rejections among the rejections), not the FWER; it
      assumes the p-values are independent or positively regression dependent on the subset
      of true nulls (PRDS; Benjamini and Yekutieli 2001, Ann. Statist. 29:1165-1188, Thm 1.2).
      One-sided tests whose statistics are jointly normal with non-negative correlations
      are PRDS (ibid., sec. 3.1), roughly the case of metrics scored on the same answers
      (task quality and acceptability move together; the mean differences are
      approximately normal); it is not guaranteed under negative dependence.
    * ``none``: the raw p-values (each item at ``alpha`` alone).

    These are ``statsmodels.stats.multitest.multipletests`` with methods ``bonferroni``,
    ``holm`` and ``fdr_bh`` (the tests compare with it).

Discrete tests: only the testable count (:func:`tarone`)
    A sign-flip test of ``m`` changed pairs can't give a p-value below ``2**-m``. A
    hypothesis whose smallest possible p-value is above the level it would be tested at can
    never be rejected, so counting it only weakens the others. Tarone (1990) counts ``K``,
    the smallest number such that at most ``K`` hypotheses have a smallest possible p-value
    ``<= alpha / K``, and corrects over those (Gilbert 2005, *A modified false discovery
    rate multiple-comparisons procedure for discrete data*, Appl. Statist. 54:143-158, does
    the same for BH). The choice depends only on the smallest possible p-values, which the
    sign-flip test conditions on (the pairs' absolute differences), so it is made before
    looking at any outcome and the error control holds. The correction is then applied to
    the testable hypotheses with ``size=K``; the others are not rejected.

Per-item level (:func:`per_item_level`)
    The level a single item must reach when it is the only one that changed, the case a
    release gate is planned for: ``alpha / K`` under all three corrections (Holm's and BH's
    first step, Bonferroni's every step), ``alpha`` under ``none``. Power, the minimum
    detectable effect and "too few cases to decide" are computed at this level.

Degenerate cases: an empty family gives an empty list; p-values outside ``[0, 1]`` or NaN
raise :class:`~pytest_llmjudge.errors.StatisticsError`; an unknown method too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from pytest_llmjudge.errors import StatisticsError

__all__ = ["CORRECTIONS", "Correction", "adjust", "method_name", "per_item_level", "tarone"]

Correction = Literal["holm", "bh", "bonferroni", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)

_NAMES = {
    "holm": "Holm",
    "bh": "Benjamini-Hochberg",
    "bonferroni": "Bonferroni",
    "none": "no correction",
}


def method_name(method: str) -> str:
    """How reports name ``method`` ("Holm", "Benjamini-Hochberg", ...)."""
    return _NAMES.get(method, method)


def _check(method: str) -> None:
    if method not in CORRECTIONS:
        raise StatisticsError(f"unknown correction {method!r}: expected one of {', '.join(CORRECTIONS)}")


def adjust(pvalues: Sequence[float], method: str = "holm", *, size: int | None = None) -> list[float]:
    """The adjusted p-values of ``pvalues`` (same order) under ``method``.

    ``size``: the number of hypotheses the correction counts, when larger than
    ``len(pvalues)`` (Tarone's ``K``, :func:`tarone`); default ``len(pvalues)``.
    """
    _check(method)
    p = np.asarray(pvalues, dtype=np.float64)
    if p.size == 0:
        return []
    if np.any(np.isnan(p)) or np.any(p < 0) or np.any(p > 1):
        raise StatisticsError(f"p-values must be in [0, 1], got {list(map(float, p))}")
    if size is not None and size < p.size:
        raise StatisticsError(f"size {size} is smaller than the {p.size} p-values")
    k = p.size if size is None else size
    if method == "none":
        return [float(v) for v in p]
    if method == "bonferroni":
        return [float(v) for v in np.minimum(1.0, k * p)]
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    ranks = np.arange(1, p.size + 1, dtype=np.float64)
    if method == "holm":
        stepped = np.maximum.accumulate(np.minimum(1.0, (k - ranks + 1) * ranked))
    else:  # bh
        stepped = np.minimum.accumulate(np.minimum(1.0, k * ranked / ranks)[::-1])[::-1]
    out = np.empty(p.size, dtype=np.float64)
    out[order] = stepped
    return [float(v) for v in out]


def tarone(min_p: Sequence[float], alpha: float, method: str = "holm") -> tuple[int, list[bool]]:
    """Tarone's ``K`` and which hypotheses can reach significance (all of them without correction).

    ``min_p[i]`` is the smallest p-value hypothesis ``i``'s test can give (a discrete test;
    computed from what the test conditions on, so choosing by it is no peeking). ``K`` is
    the smallest ``K`` with at most ``K`` hypotheses having ``min_p <= alpha / K``; those are
    the testable ones, and the correction counts ``K`` (Tarone 1990, *A modified Bonferroni
    method for discrete data*, Biometrics 46:1071-1076). The others could not be
    significant at ``alpha / K`` whatever their outcome, and are not counted.
    """
    _check(method)
    k = len(min_p)
    if method == "none" or k == 0:
        return k, [True] * k
    for K in range(1, k + 1):
        eligible = [m <= alpha / K for m in min_p]
        if sum(eligible) <= K:
            return K, eligible
    return k, [True] * k  # pragma: no cover - K = k always qualifies


def per_item_level(alpha: float, k: int, method: str = "holm") -> float:
    """The level one item must reach alone in a family of ``k`` (module docstring)."""
    _check(method)
    if not 0.0 < alpha < 1.0:
        raise StatisticsError(f"alpha must be in (0, 1), got {alpha}")
    if method == "none" or k <= 1:
        return alpha
    return alpha / k
