"""Correlation of a metric with human scores: Pearson, Spearman and Kendall.

LRM2QAS (Kumar et al., sec. 3-4, Tables 1, 2, 7 and 10) judges a metric by how well its
scores follow human scores over the same items, with three coefficients:

* Pearson's r: linear agreement of the raw values;
* Spearman's rho: Pearson's r of the ranks (average ranks for ties), i.e. monotone agreement;
* Kendall's tau-b: ``(C - D) / sqrt((n0 - n1)(n0 - n2))`` over all item pairs, with ``C``
  and ``D`` the concordant and discordant pairs and ``n1``, ``n2`` the pairs tied in the
  metric and in the human scores (``n0 = n(n-1)/2``); the tie correction matters because
  human scores are on a coarse scale.

All three and their two-sided p-values come from :mod:`scipy.stats` (``pearsonr``,
``spearmanr``, ``kendalltau`` with its default tau-b).

Degenerate cases, decided here (the coefficients are NaN and ``reason`` says why):

* pairs where either value is NaN or infinite are dropped first; ``dropped`` counts them;
* fewer than 3 remaining pairs: any two distinct points correlate perfectly, so the
  number would carry no information;
* constant metric values or constant human scores: the coefficients divide by a zero
  variance (scipy returns NaN with a warning; we return NaN with a reason, no warning).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["MIN_PAIRS", "Correlations", "correlations", "correlations_by_language"]

MIN_PAIRS = 3


@dataclass(frozen=True)
class Correlations:
    """The three coefficients with their p-values, over ``n`` usable pairs."""

    n: int
    pearson: float
    spearman: float
    kendall: float
    pearson_p: float
    spearman_p: float
    kendall_p: float
    reason: str | None = None
    dropped: int = 0

    @property
    def defined(self) -> bool:
        """Whether the coefficients are numbers rather than NaN."""
        return self.reason is None


def _undefined(n: int, reason: str, dropped: int) -> Correlations:
    nan = math.nan
    return Correlations(n, nan, nan, nan, nan, nan, nan, reason=reason, dropped=dropped)


def correlations(
    metric_values: Sequence[float] | npt.NDArray[np.float64],
    human_scores: Sequence[float] | npt.NDArray[np.float64],
) -> Correlations:
    """Pearson, Spearman and Kendall correlation of paired metric values and human scores."""
    if len(metric_values) != len(human_scores):
        raise ValueError(f"got {len(metric_values)} metric values but {len(human_scores)} human scores")
    x = np.asarray(metric_values, dtype=np.float64)
    y = np.asarray(human_scores, dtype=np.float64)
    finite = np.isfinite(x) & np.isfinite(y)
    dropped = int((~finite).sum())
    x, y = x[finite], y[finite]
    n = int(x.size)
    if n < MIN_PAIRS:
        return _undefined(n, f"fewer than {MIN_PAIRS} usable pairs", dropped)
    if np.ptp(x) == 0:
        return _undefined(n, "the metric values are constant", dropped)
    if np.ptp(y) == 0:
        return _undefined(n, "the human scores are constant", dropped)

    # Imported here: scipy.stats costs a few hundred ms to import and most runs never need it.
    from scipy import stats

    pearson = stats.pearsonr(x, y)
    spearman = stats.spearmanr(x, y)
    kendall = stats.kendalltau(x, y)
    return Correlations(
        n=n,
        pearson=float(pearson.statistic),
        spearman=float(spearman.statistic),
        kendall=float(kendall.statistic),
        pearson_p=float(pearson.pvalue),
        spearman_p=float(spearman.pvalue),
        kendall_p=float(kendall.pvalue),
        dropped=dropped,
    )


def correlations_by_language(
    rows: Iterable[tuple[str, float, float]], *, pooled: str | None = "all"
) -> dict[str, Correlations]:
    """Correlations per language from ``(language, metric_value, human_score)`` rows.

    The result is ordered by language code; with ``pooled`` set (default ``"all"``) one
    more entry under that key correlates all rows together.
    """
    groups: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    all_values: list[float] = []
    all_scores: list[float] = []
    for language, value, score in rows:
        values, scores = groups[language]
        values.append(value)
        scores.append(score)
        all_values.append(value)
        all_scores.append(score)
    result = {language: correlations(*groups[language]) for language in sorted(groups)}
    if pooled is not None:
        result[pooled] = correlations(all_values, all_scores)
    return result
