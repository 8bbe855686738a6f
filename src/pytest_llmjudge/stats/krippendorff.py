"""Krippendorff's alpha: agreement among any number of raters (judges, annotators), with
missing ratings, at the nominal, ordinal or interval level; and judges' error correlation.

Source: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), and *Content
Analysis* (4th ed., 2019), ch. 12. With ``m_u`` the number of ratings of unit ``u``, only
units with ``m_u >= 2`` are pairable. The coincidence matrix counts every ordered pair of
ratings ``(c, k)`` within a unit, each unit weighted ``1 / (m_u - 1)``::

    o_ck = sum_u  #{ordered pairs (c, k) in u} / (m_u - 1)
    n_c  = sum_k o_ck,   n = sum_c n_c
    alpha = 1 - (n - 1) * sum_ck o_ck d2(c, k) / sum_ck n_c n_k d2(c, k)

with the squared difference ``d2`` of the level of measurement:

* nominal: 0 if ``c == k`` else 1;
* interval: ``(c - k) ** 2``;
* ordinal: ``(sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2`` over the ranks of the values seen
  (the value domain is the sorted distinct values, as in the ``krippendorff`` package).

alpha is 1 for perfect agreement, 0 for agreement at chance level, and can be negative
(systematic disagreement). It is checked against the ``krippendorff`` package (PyPI) in
the tests, and pinned to Krippendorff's own worked example (4 coders, 12 units, missing
data: nominal 0.743, ordinal 0.815, interval 0.849).

Error correlation: with several judges scoring the same labelled items, judge ``j``'s error
is ``e_j = score_j - human``; the Pearson correlation of two judges' errors says whether
they are wrong on the same items. A committee of ``k`` judges whose errors correlate on
average ``r`` is worth about ``k / (1 + (k - 1) r)`` independent judges (Kish's design
effect for equicorrelated units: *Survey Sampling*, 1965, sec. 5.4), the "effective
committee size".

Degenerate cases: fewer than two pairable ratings, or a single value seen (no expected
disagreement: ``sum_ck n_c n_k d2 == 0``), give ``None`` (undefined), never 1; a judge with
constant errors has no correlation with anyone (``None`` in the matrix), and is left out of
the mean correlation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

Level = Literal["nominal", "ordinal", "interval"]


def _values(ratings: Sequence[Sequence[float | None]]) -> np.ndarray:
    matrix = np.array([[math.nan if value is None else float(value) for value in row] for row in ratings], dtype=float)
    if matrix.ndim != 2:
        raise ValueError("ratings: one row per rater, one column per unit")
    return matrix


def coincidences(ratings: Sequence[Sequence[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """``(domain, o)``: the sorted distinct values and the coincidence matrix over them."""
    matrix = _values(ratings)
    present = ~np.isnan(matrix)
    domain = np.unique(matrix[present])
    index = {value: position for position, value in enumerate(domain.tolist())}
    o = np.zeros((len(domain), len(domain)))
    for unit in matrix.T:
        seen = unit[~np.isnan(unit)]
        m = len(seen)
        if m < 2:
            continue
        counts = np.zeros(len(domain))
        for value in seen.tolist():
            counts[index[value]] += 1
        # Ordered pairs of distinct ratings: counts_c * counts_k, minus each rating paired with itself.
        o += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return domain, o


def _squared_differences(domain: np.ndarray, n_c: np.ndarray, level: Level) -> np.ndarray:
    if level == "nominal":
        return 1.0 - np.eye(len(domain))
    if level == "interval":
        squared: np.ndarray = np.subtract.outer(domain, domain) ** 2
        return squared
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
        size = len(domain)
        d2 = np.zeros((size, size))
        for c in range(size):
            for k in range(size):
                low, high = min(c, k), max(c, k)
                between = cumulative[high + 1] - cumulative[low]
                d2[c, k] = (between - (n_c[c] + n_c[k]) / 2) ** 2
        return d2
    raise ValueError(f"unknown level of measurement {level!r}; use nominal, ordinal or interval")


def krippendorff_alpha(ratings: Sequence[Sequence[float | None]], level: Level = "nominal") -> float | None:
    """Krippendorff's alpha of ``ratings`` (rows: raters, columns: units; ``None``/NaN: missing)."""
    domain, o = coincidences(ratings)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n < 2 or len(domain) < 2:
        return None
    d2 = _squared_differences(domain, n_c, level)
    expected = float((np.outer(n_c, n_c) * d2).sum())
    if expected == 0.0:
        return None
    observed = float((o * d2).sum())
    return float(1.0 - (n - 1) * observed / expected)


def error_correlation(
    scores: Mapping[str, Sequence[float]], human: Sequence[float]
) -> tuple[dict[tuple[str, str], float | None], float | None]:
    """Pairwise Pearson correlation of judges' errors against ``human``, and the effective
    committee size ``k / (1 + (k - 1) * mean r)`` (None with fewer than two usable judges)."""
    truth = np.asarray(human, dtype=float)
    errors = {name: np.asarray(values, dtype=float) - truth for name, values in scores.items()}
    names = sorted(errors)
    matrix: dict[tuple[str, str], float | None] = {}
    usable: list[float] = []
    for position, first in enumerate(names):
        for second in names[position + 1 :]:
            a, b = errors[first], errors[second]
            keep = ~(np.isnan(a) | np.isnan(b))
            r: float | None = None
            if keep.sum() >= 2 and np.std(a[keep]) > 0 and np.std(b[keep]) > 0:
                r = float(np.corrcoef(a[keep], b[keep])[0, 1])
                usable.append(r)
            matrix[(first, second)] = matrix[(second, first)] = r
    if len(names) < 2 or not usable:
        return matrix, None
    mean_r = float(np.mean(usable))
    k = len(names)
    denominator = 1 + (k - 1) * mean_r
    return matrix, (k / denominator if denominator > 0 else None)
