"""Exact paired sign-flip test of a mean difference, its Monte-Carlo form, and the bound it implies.

What it is
    ``n`` cases scored twice give differences ``d_i`` (candidate minus baseline, oriented so
    that a drop is negative). Under H0 "no difference beyond the shift" each ``d_i`` is as
    likely to carry either sign (the two labels of a pair are exchangeable), so the null
    distribution of ``T = sum_i d_i`` is that of ``T(s) = sum_i s_i d_i`` over the ``2**n``
    sign vectors ``s``: Fisher's randomisation test for paired data (Fisher 1935, *The
    Design of Experiments*, sec. 21; Good 2005, *Permutation, Parametric and Bootstrap Tests
    of Hypotheses*, sec. 3.7.2). ``scipy.stats.permutation_test(...,
    permutation_type='samples')`` computes the same p-value; the tests compare with it.

    * Ties (``d_i = 0``) contribute ``0`` under either sign, so only the ``m`` non-tied
      pairs matter: the p-value is a count over ``2**m`` sign vectors and its smallest
      possible value is ``2**-m`` (the all-worse outcome, ``min_p``). A one-sided test at
      5% therefore needs ``m >= 5`` (``2**-4 = 0.0625``); at ``alpha / k`` it needs
      ``m >= log2(k / alpha)``.
    * **Exact** when ``m <= exact_limit`` (24): the ``2**m`` sums are counted without
      listing them, by splitting the pairs into two halves, listing each half's ``2**(m/2)``
      signed sums and counting, for each sum of one half, the sums of the other half that
      complete an extreme total (a sorted search; Horowitz and Sahni 1974's
      meet-in-the-middle). ``p = #{s : T(s) <= T} / 2**m`` for ``alternative="less"``,
      ``#{s : T(s) >= T} / 2**m`` for ``"greater"``.
    * **Exact on a lattice** beyond 24 pairs when every ``|d_i|`` is a whole multiple of one
      unit (Likert and 0/1 scores, and their differences shifted by a margin on the same
      grid: ``u`` is the smallest ``|d_i|`` divided by at most 12, and the units add up to at
      most 50,000). Then ``T / u = sum_v v (2 B_v - c_v)`` over the distinct magnitudes ``v``
      (in units), with ``c_v`` pairs of magnitude ``v`` and independent ``B_v ~ Bin(c_v,
      1/2)`` under H0, so the null distribution is the convolution of those scaled binomials
      on the integers (Pagano and Tritchler 1983, *On obtaining permutation distributions in
      polynomial time*, JASA 78(382): the shift-algorithm idea for scores on a lattice). The
      p-value is exact at every ``n`` and needs no seed; with all ``|d_i|`` equal it is the
      sign test's (``scipy.stats.binomtest``).
    * **Monte Carlo** otherwise: ``B`` random sign vectors (seeded) and the add-one
      p-value ``(b + 1) / (B + 1)``, which is a valid p-value at every ``B`` (Phipson and
      Smyth 2010, *Permutation p-values should never be zero*, SAGMB 9(1)); its smallest
      value is ``1 / (B + 1)``. The sign vectors are
      :func:`~pytest_llmjudge.stats.paired.paired_permutation_test`'s.
    * Ties between ``T(s)`` and ``T`` are decided with a tolerance of ``4 * n * eps *
      max|d|`` (the rounding of a sum of ``n`` terms), so Likert and 0/1 scores tie exactly.

Non-inferiority and the bound on a drop
    ``H0: mu <= -delta`` (the candidate is worse by at least ``delta``) against ``mu >
    -delta`` is the same test on ``d_i + delta`` with ``alternative="greater"``
    (:func:`sign_flip_test` with ``shift=delta``). Its p-value falls as ``delta`` grows (for
    fixed sign vectors, ``T(s) >= T`` becomes ``sum(s_i d_i) - sum(d_i) >= delta * (n -
    sum(s_i))`` and the right side grows), so the set of drops the data do not rule out is
    an interval and :func:`drop_upper_bound` finds its end: the smallest ``delta`` with
    ``p <= level`` is the ``1 - level`` upper confidence bound of the drop (test inversion;
    Lehmann and Romano 2005, *Testing Statistical Hypotheses*, sec. 3.5). Up to 24 pairs by
    bisection on the exact test; beyond, over ``B`` random sign vectors of all pairs, where
    each vector's crossing point is a ratio and the bound is an order statistic of them
    (:func:`_monte_carlo_bound`).
    When even ``delta`` beyond every observed drop gives ``p > level`` (too few pairs), the
    bound is ``inf``: nothing was ruled out.

Degenerate cases: ``n = 0`` or non-finite values raise
:class:`~pytest_llmjudge.errors.StatisticsError`; all differences zero give ``p = 1`` and
``min_p = 1`` (no non-tied pair: nothing could be significant).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError

__all__ = [
    "EXACT_LIMIT",
    "SignFlipResult",
    "drop_upper_bound",
    "min_achievable_p",
    "sign_flip_test",
    "sign_flip_tests",
]

FloatArray = npt.NDArray[np.float64]
OneSided = Literal["less", "greater"]

EXACT_LIMIT = 24
"""Non-tied pairs up to which the test enumerates (two halves of at most 4,096 sums each)."""


@dataclass(frozen=True)
class SignFlipResult:
    """One sign-flip test: ``p_value``, whether it was ``exact``, and the smallest p it could give."""

    n: int
    nonzero: int
    mean_difference: float
    p_value: float
    alternative: OneSided
    exact: bool
    resamples: int
    """Sign vectors counted: ``2**nonzero`` when enumerated, the random ones drawn in the
    Monte-Carlo form, 0 when computed exactly on the score lattice."""
    min_p: float
    """The smallest p-value this test could have produced with these pairs."""

    @property
    def detail(self) -> str:
        if self.exact and self.resamples == 0:
            return f"exact paired sign-flip test on the score lattice ({self.nonzero} non-tied of {self.n} pairs)"
        if self.exact:
            return f"exact paired sign-flip test ({self.nonzero} non-tied of {self.n} pairs, 2^{self.nonzero} signs)"
        return f"Monte-Carlo paired sign-flip test ({self.resamples} random signs, p = (b+1)/(B+1))"


def min_achievable_p(nonzero: int, *, exact_limit: int = EXACT_LIMIT, resamples: int = 10_000) -> float:
    """The smallest p-value a one-sided sign-flip test of ``nonzero`` non-tied pairs can give."""
    if nonzero <= 0:
        return 1.0
    if nonzero <= exact_limit:
        return 2.0**-nonzero
    return max(2.0**-nonzero, 1.0 / (resamples + 1))


def sign_flip_test(
    differences: npt.ArrayLike,
    *,
    alternative: OneSided = "less",
    shift: float = 0.0,
    exact_limit: int = EXACT_LIMIT,
    resamples: int = 10_000,
    seed: int = 0,
) -> SignFlipResult:
    """Test the mean of ``differences + shift`` against 0 by flipping signs (module docstring)."""
    raw = np.asarray(differences, dtype=np.float64)
    if raw.ndim != 1 or raw.size == 0:
        raise StatisticsError(f"sign-flip test needs a non-empty 1-d array of differences, got shape {raw.shape}")
    if not np.all(np.isfinite(raw)):
        raise StatisticsError("sign-flip test: differences contain NaN or infinite values")
    if alternative not in ("less", "greater"):
        raise StatisticsError(f"alternative must be 'less' or 'greater', got {alternative!r}")
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, got {resamples}")
    d = raw + float(shift)
    n = d.size
    scale = float(np.max(np.abs(d)))
    tol = 4.0 * n * float(np.finfo(np.float64).eps) * max(scale, abs(float(shift)))
    nonzero = d[np.abs(d) > tol]
    m = int(nonzero.size)
    mean = float(np.mean(raw))
    if m == 0:
        return SignFlipResult(n, 0, mean, 1.0, alternative, True, 1, 1.0)
    if m <= exact_limit:
        hits = _exact_count(nonzero, tol, alternative)
        total = 1 << m
        return SignFlipResult(n, m, mean, hits / total, alternative, True, total, 2.0**-m)
    lattice = _lattice_tails(nonzero)
    if lattice is not None:
        less, greater = lattice
        p = less if alternative == "less" else greater
        return SignFlipResult(n, m, mean, p, alternative, True, 0, 2.0**-m)
    from pytest_llmjudge.stats.paired import paired_permutation_test

    mc = paired_permutation_test(nonzero, np.zeros(m), resamples=resamples, seed=seed, alternative=alternative)
    return SignFlipResult(
        n, m, mean, mc.p_value, alternative, mc.exact, mc.resamples, min_achievable_p(m, resamples=resamples)
    )


def sign_flip_tests(
    differences: npt.ArrayLike,
    *,
    shift: float = 0.0,
    exact_limit: int = EXACT_LIMIT,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[SignFlipResult, SignFlipResult]:
    """Both one-sided tests of ``differences + shift`` ("less", "greater") from one null distribution.

    The same as two calls of :func:`sign_flip_test` (the same counts when exact, the same
    random sign vectors when not), at the cost of one.
    """
    raw = np.asarray(differences, dtype=np.float64)
    d = raw + float(shift)
    if raw.ndim != 1 or raw.size == 0 or not np.all(np.isfinite(raw)):
        return (
            sign_flip_test(raw, alternative="less", shift=shift, exact_limit=exact_limit, resamples=resamples),
            sign_flip_test(raw, alternative="greater", shift=shift, exact_limit=exact_limit, resamples=resamples),
        )
    n = d.size
    tol = 4.0 * n * float(np.finfo(np.float64).eps) * max(float(np.max(np.abs(d))), abs(float(shift)))
    nonzero = d[np.abs(d) > tol]
    m = int(nonzero.size)
    if m <= exact_limit:
        return (
            sign_flip_test(raw, alternative="less", shift=shift, exact_limit=exact_limit, resamples=resamples),
            sign_flip_test(raw, alternative="greater", shift=shift, exact_limit=exact_limit, resamples=resamples),
        )
    lattice = _lattice_tails(nonzero)
    if lattice is not None:
        mean = float(np.mean(raw))
        less_p, greater_p = lattice
        return (
            SignFlipResult(n, m, mean, less_p, "less", True, 0, 2.0**-m),
            SignFlipResult(n, m, mean, greater_p, "greater", True, 0, 2.0**-m),
        )
    from pytest_llmjudge.stats.paired import _random_sign_flip_means

    # The sign vectors paired_permutation_test draws for these pairs and this seed.
    rng = np.random.default_rng(seed)
    observed = float(np.mean(nonzero))
    tol_mean = tol  # a mean of m terms rounds no worse than their sum
    less = greater = 0
    rows_per_chunk = max(1, (1 << 20) // m)
    for start in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - start)
        null = _random_sign_flip_means(nonzero, rows, rng)
        less += int(np.count_nonzero(null <= observed + tol_mean))
        greater += int(np.count_nonzero(null >= observed - tol_mean))
    mean = float(np.mean(raw))
    floor = min_achievable_p(m, exact_limit=exact_limit, resamples=resamples)
    return (
        SignFlipResult(n, m, mean, min(1.0, (1 + less) / (resamples + 1)), "less", False, resamples, floor),
        SignFlipResult(n, m, mean, min(1.0, (1 + greater) / (resamples + 1)), "greater", False, resamples, floor),
    )


def drop_upper_bound(
    differences: npt.ArrayLike,
    level: float,
    *,
    exact_limit: int = EXACT_LIMIT,
    resamples: int = 10_000,
    seed: int = 0,
    iterations: int = 24,
) -> float:
    """The ``1 - level`` upper confidence bound of the drop ``-mu``, by inverting the test.

    ``inf`` when no drop can be ruled out at ``level`` (too few non-tied pairs).
    """
    if not 0.0 < level < 1.0:
        raise StatisticsError(f"level must be in (0, 1), got {level}")
    d = np.asarray(differences, dtype=np.float64)
    if d.size > exact_limit:
        return _monte_carlo_bound(d, level, resamples, seed)
    spread = float(np.max(d) - np.min(d)) if d.size else 0.0

    def p(delta: float) -> float:
        return sign_flip_test(
            d, alternative="greater", shift=delta, exact_limit=exact_limit, resamples=resamples, seed=seed
        ).p_value

    # Beyond the largest observed drop every shifted difference is positive: the most extreme
    # outcome. If even that is not significant, nothing is ruled out.
    step = max(spread, float(np.max(np.abs(d))), 1e-12)
    hi = float(-np.min(d)) + step
    if p(hi) > level:
        return math.inf
    lo = float(-np.max(d)) - step  # every shifted difference negative: p = 1
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if p(mid) <= level:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-6 * step:
            break
    return hi


def _monte_carlo_bound(d: FloatArray, level: float, resamples: int, seed: int) -> float:
    """The bound over ``B`` random sign vectors of all ``n`` pairs, in closed form.

    For a sign vector with ``c = n - sum(s) > 0`` flips, ``T(s) >= T`` holds at shift
    ``delta`` exactly when ``delta <= r = (sum(s_i d_i) - sum(d_i)) / c``; with no flip it
    always holds. So ``p(delta) = (1 + z + #{r >= delta}) / (B + 1)`` (``z``: vectors without
    a flip), and the smallest ``delta`` with ``p <= level`` is the ``(j + 1)``-th largest
    ``r``, ``j = floor(level * (B + 1)) - 1 - z``.
    """
    n = d.size
    rng = np.random.default_rng(seed)
    words = (n + 63) // 64
    flipped = np.empty(resamples, dtype=np.float64)  # c / 2: each flip moves sum(s) by 2
    shift_sum = np.empty(resamples, dtype=np.float64)  # sum(s_i d_i) - sum(d_i)
    # In row chunks of about 2**20 signs, so memory stays bounded for large groups; each
    # row's draws are whole uint64 words, so the rows do not depend on the chunking.
    rows_per_chunk = max(1, (1 << 20) // n)
    for start in range(0, resamples, rows_per_chunk):
        stop = min(resamples, start + rows_per_chunk)
        raw = rng.integers(0, np.iinfo(np.uint64).max, size=(stop - start, words), dtype=np.uint64, endpoint=True)
        flips = np.unpackbits(raw.view(np.uint8), axis=1, count=n).astype(np.float64)
        flipped[start:stop] = flips.sum(axis=1)
        shift_sum[start:stop] = -2.0 * (flips @ d)
    some = flipped > 0
    z = int(np.count_nonzero(~some))
    ratios = np.sort(shift_sum[some] / (2.0 * flipped[some]))[::-1]
    j = math.floor(level * (resamples + 1) + 1e-9) - 1 - z
    if j < 0 or j >= ratios.size:
        return math.inf if j < 0 else float(-np.inf)
    return float(ratios[j])


def _signed_sums(values: FloatArray) -> FloatArray:
    sums = np.zeros(1, dtype=np.float64)
    for v in values:
        sums = np.concatenate((sums + v, sums - v))
    return sums


def _exact_count(d: FloatArray, tol: float, alternative: OneSided) -> int:
    observed = float(d.sum())
    half = d.size // 2
    left = _signed_sums(d[:half])
    right = np.sort(_signed_sums(d[half:]))
    if alternative == "less":
        # #{(a, b) : a + b <= T + tol}
        return int(np.searchsorted(right, observed + tol - left, side="right").sum())
    # #{(a, b) : a + b >= T - tol}
    return int((right.size - np.searchsorted(right, observed - tol - left, side="left")).sum())


LATTICE_MAX_UNITS = 50_000
"""Largest sum of ``|d_i|`` in lattice units for which the exact lattice distribution is computed."""
_LATTICE_DENOMINATORS = range(1, 13)


def _lattice_units(magnitudes: FloatArray) -> npt.NDArray[np.int64] | None:
    """``|d_i|`` as whole multiples of one unit, or None when they are not on a small lattice."""
    smallest = float(np.min(magnitudes))
    if not smallest > 0.0:
        return None
    for denominator in _LATTICE_DENOMINATORS:
        ratio = magnitudes * (denominator / smallest)
        units = np.rint(ratio)
        # Relative tolerance: 0.8 / 0.2 is 4.000000000000001 in binary floating point.
        if np.all(np.abs(ratio - units) <= 1e-9 * np.maximum(units, 1.0)):
            whole = units.astype(np.int64)
            common = int(np.gcd.reduce(whole))
            whole //= common
            return whole if int(whole.sum()) <= LATTICE_MAX_UNITS else None
    return None


def _lattice_tails(nonzero: FloatArray) -> tuple[float, float] | None:
    """``(P(T <= t), P(T >= t))`` under sign flips, exactly, when the pairs lie on a lattice."""
    units = _lattice_units(np.abs(nonzero))
    if units is None:
        return None
    from scipy.stats import binom

    total = int(units.sum())
    observed = int(np.sum(np.where(nonzero > 0, units, -units)))
    # pmf[j] = P(T / u = j - total); T / u ranges over [-total, total].
    pmf = np.zeros(2 * total + 1, dtype=np.float64)
    pmf[total] = 1.0
    values, counts = np.unique(units, return_counts=True)
    for value, count in zip(values.tolist(), counts.tolist(), strict=True):
        # value * (2 B - count): count + 1 atoms spaced 2 * value apart, centred on 0.
        kernel = np.zeros(2 * value * count + 1, dtype=np.float64)
        kernel[:: 2 * value] = binom.pmf(np.arange(count + 1), count, 0.5)
        pmf = np.convolve(pmf, kernel)[value * count : value * count + 2 * total + 1]
    cdf_index = observed + total
    less = float(np.sum(pmf[: cdf_index + 1]))
    greater = float(np.sum(pmf[cdf_index:]))
    floor = 2.0**-nonzero.size
    return min(1.0, max(less, floor)), min(1.0, max(greater, floor))
