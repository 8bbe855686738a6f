"""Paired comparison of a candidate against a baseline, for release gating.

What it is
    Both systems are scored on the same cases, so case ``i`` gives a pair
    ``(candidate[i], baseline[i])`` and a difference ``d[i] = candidate[i] - baseline[i]``.
    The question a release gate asks is whether the observed mean difference
    ``D = (1/n) * sum(d)`` shows that the expected per-case difference ``mu`` is negative,
    i.e. that the candidate got worse. Working on the differences
    removes the between-case variance (hard cases are hard for both systems), which makes a
    paired test much more sensitive than comparing two independent means.

    This regression check against a stored baseline is one of the additions of the plugin
    itself (``docs/methods.md``, section 6); the resampling-over-queries idea it builds on is
    the one MIRAGE-BENCH uses for its arena leaderboard (``mirage_bench_rag_arena.md``,
    sections 4.3 and 6.2).

Paired bootstrap (:func:`paired_bootstrap`)
    Draw ``B`` resamples of the case indices with replacement, each of size ``n``, and take
    the mean difference of each resample: ``D*_b = (1/n) * sum_k d[I_bk]``. Resampling the
    *index* keeps each candidate score with its own baseline score. The (B x n) index matrix
    is drawn in row chunks so memory stays bounded for large suites.

    * Confidence interval: percentile interval, the ``(1 - c)/2`` and ``(1 + c)/2`` quantiles
      (linear interpolation, as ``numpy.quantile``) of ``D*_1 .. D*_B`` (Efron and
      Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13).
    * One-sided p-value (``p_value``): tests H0 "no drop", ``mu >= 0``, against H1 "the
      candidate is worse", ``mu < 0``. It uses the shift method (same book, ch. 16),
      translating the bootstrap
      distribution so that it is centred on the null value gives an approximate null
      distribution ``D*_b - D``; the p-value is the share of it at or below the observed
      ``D``, with the usual add-one correction so it is never exactly 0::

          p_value = (1 + #{b : D*_b - D <= D}) / (B + 1)

      Small values are evidence of a drop. :meth:`PairedComparison.p_value_for_drop` moves
      the null to ``mu >= -margin`` (``#{b : D*_b - D - margin <= D}``);
      :meth:`PairedComparison.p_value_non_inferior` tests the reverse, H0 ``mu <= -margin``
      (``#{b : D*_b - D - margin >= D}``), for non-inferiority.
    * Two-sided p-value (``p_value_two_sided``): H0 ``mu = 0``;
      ``(1 + #{b : |D*_b - D| >= |D|}) / (B + 1)``.

Paired permutation test (:func:`paired_permutation_test`)
    Under H0 the two labels of each pair are exchangeable, so each ``d[i]`` is as likely to
    have the opposite sign. The null distribution is that of ``(1/n) * sum(s_i * d[i])`` over
    random signs ``s_i = +-1``. When ``2**n <= resamples`` all sign patterns are enumerated
    and the p-value is exact (a plain fraction, no add-one); otherwise ``resamples`` random
    patterns are drawn and the add-one correction is applied. For ``alternative="less"`` the
    p-value is the share of null statistics ``<=`` the observed one, for ``"greater"`` the
    share ``>=``, and for ``"two-sided"`` the share with ``|T*| >= |T|``. The enumerated
    sign-flip null is symmetric about 0, so the exact two-sided value equals
    ``min(1, 2 * min(p_less, p_greater))``, the definition ``scipy.stats.permutation_test``
    uses.

Verdict (:func:`regression_verdict`), with ``m = margin >= 0`` the tolerated drop
    * ``"fail"``: the point estimate drops by more than ``m`` (``D < -m``) **and** the drop is
      significant: the upper confidence bound is below ``-m`` (``ci_high < -m``) or the
      one-sided p-value of H0 ``mu >= -m`` is below ``alpha``.
    * ``"warn"``: ``D < -m`` but neither significance criterion holds.
    * ``"pass"``: otherwise (``D >= -m``: no drop beyond the margin, or an improvement).

    The interval criterion is a one-sided test at level ``(1 - confidence) / 2``, the p-value
    criterion one at level ``alpha``; for a symmetric bootstrap distribution they coincide
    when ``alpha = (1 - confidence) / 2``. With the defaults (0.95 and 0.05) the p-value
    criterion is the looser one, so the gate is a one-sided 5% test.

Degenerate cases
    * ``n = 0`` raises :class:`~pytest_llmjudge.errors.StatisticsError`; so do NaN or
      infinite scores (the message counts them and lists the first positions) and arrays of
      different lengths.
    * ``n = 1``: a single pair carries no information about variability, so the bootstrap
      reports the point estimates with an unbounded interval ``(-inf, inf)`` and p-values of
      1.0; the verdict can then be at most ``"warn"``. The permutation test needs no special
      case (its exact null has two points).
    * All differences zero: the bootstrap distribution is a point mass at 0, so the interval is
      ``[0, 0]`` and both p-values are 1.0; the permutation p-values are 1.0 as well.
    * Very small ``n`` (below about 20): the bootstrap is known to be anti-conservative; when
      all differences are equal and non-zero it reports a near-zero p-value for any
      ``n >= 2``.
      Prefer :func:`paired_permutation_test` for tiny suites.

Ties between a null statistic and the observed one are decided with a tolerance of
``4 * n * eps * max|d|``, the worst-case rounding error of a sum of ``n`` terms, so that
discrete scores (0/1, Likert) are counted as ties even when the summation order differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError

__all__ = [
    "Alternative",
    "PairedComparison",
    "PermutationTestResult",
    "Verdict",
    "paired_bootstrap",
    "paired_permutation_test",
    "regression_verdict",
]

FloatArray = npt.NDArray[np.float64]
Verdict = Literal["pass", "warn", "fail"]
Alternative = Literal["less", "greater", "two-sided"]

# Elements of the (rows x n) index matrix drawn at once: 2**20 int64 indices plus the same
# number of gathered float64 values is 16 MiB, small enough for CI runners and large enough
# that the per-chunk Python overhead is negligible.
_CHUNK_ELEMENTS = 1 << 20

_BOOTSTRAP_METHOD = "paired bootstrap, percentile interval, shift-method p-value"


@dataclass(frozen=True)
class PairedComparison:
    """Result of :func:`paired_bootstrap`; differences are always candidate minus baseline.

    ``p_value`` is one-sided, H0 "no drop" (``mu >= 0``); small means the candidate is
    worse. ``p_value_two_sided`` tests ``mu = 0``. ``distribution`` holds the ``B``
    bootstrap mean differences, kept so that other margins can be tested later;
    ``tie_tolerance`` is the absolute tolerance used when comparing with the observed mean.
    """

    n: int
    mean_candidate: float
    mean_baseline: float
    mean_difference: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    p_value_two_sided: float
    resamples: int
    seed: int
    method: str
    distribution: FloatArray = field(repr=False, compare=False)
    tie_tolerance: float = field(default=0.0, repr=False)

    def p_value_for_drop(self, margin: float = 0.0) -> float:
        """One-sided shift-method p-value of H0 ``mu >= -margin`` (drop within margin).

        ``margin = 0`` gives :attr:`p_value`. With ``n = 1`` there is no variability
        estimate and the result is 1.0.
        """
        margin = _check_margin(margin)
        if self.n < 2:
            return 1.0
        return _shift_p_value(self.distribution, self.mean_difference, margin, self.tie_tolerance)

    def p_value_non_inferior(self, margin: float = 0.0) -> float:
        """One-sided shift-method p-value of H0 ``mu <= -margin`` (worse by at least the margin).

        Small values show the candidate not worse by more than ``margin`` (non-inferiority):
        ``(1 + #{b : D*_b - D - margin >= D}) / (B + 1)``. With ``n = 1`` the result is 1.0.
        """
        margin = _check_margin(margin)
        if self.n < 2:
            return 1.0
        tol = max(self.tie_tolerance, 4.0 * float(np.finfo(np.float64).eps) * margin)
        null = self.distribution - self.mean_difference - margin
        hits = int(np.count_nonzero(null >= self.mean_difference - tol))
        return (1 + hits) / (self.distribution.size + 1)

    def to_dict(self) -> dict[str, float | int | str]:
        """Plain summary without the bootstrap distribution, ready for ``json.dumps``
        (with ``n = 1`` the interval bounds are the floats ``-inf`` and ``inf``)."""
        return {
            "n": self.n,
            "mean_candidate": self.mean_candidate,
            "mean_baseline": self.mean_baseline,
            "mean_difference": self.mean_difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "p_value": self.p_value,
            "p_value_two_sided": self.p_value_two_sided,
            "resamples": self.resamples,
            "seed": self.seed,
            "method": self.method,
        }


@dataclass(frozen=True)
class PermutationTestResult:
    """Result of :func:`paired_permutation_test`.

    ``resamples`` is the number of sign patterns actually evaluated: ``2**n`` when
    ``exact`` is true, otherwise the requested number of random patterns.
    """

    n: int
    mean_difference: float
    p_value: float
    alternative: Alternative
    resamples: int
    exact: bool
    seed: int


def paired_bootstrap(
    candidate: npt.ArrayLike,
    baseline: npt.ArrayLike,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Bootstrap the mean paired difference ``candidate - baseline`` over cases.

    ``candidate[i]`` and ``baseline[i]`` must be scores of the same case. The same ``seed``
    always gives the same result (``numpy.random.default_rng(seed)``). See the module
    docstring for the interval, the p-value definitions and the degenerate cases.
    """
    cand, base = _paired_arrays(candidate, baseline)
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"confidence must be in (0, 1), got {confidence}")
    n = cand.size
    diff = cand - base
    observed = float(np.mean(diff))
    mean_cand = float(np.mean(cand))
    mean_base = float(np.mean(base))

    if n == 1:
        # One pair: every resample is that pair, so the spread says nothing about the
        # sampling variability; report no evidence rather than a zero-width interval.
        return PairedComparison(
            n=1,
            mean_candidate=mean_cand,
            mean_baseline=mean_base,
            mean_difference=observed,
            ci_low=-np.inf,
            ci_high=np.inf,
            confidence=confidence,
            p_value=1.0,
            p_value_two_sided=1.0,
            resamples=resamples,
            seed=seed,
            method=_BOOTSTRAP_METHOD + " (n=1: no variability estimate)",
            distribution=np.full(resamples, observed),
        )

    distribution = _bootstrap_means(diff, resamples, np.random.default_rng(seed))
    lower_q = (1.0 - confidence) / 2.0
    ci_low, ci_high = (float(v) for v in np.quantile(distribution, [lower_q, 1.0 - lower_q]))
    tol = _tie_tolerance(n, float(np.max(np.abs(diff))))
    p_less = _shift_p_value(distribution, observed, 0.0, tol)
    centred_hits = np.count_nonzero(np.abs(distribution - observed) >= abs(observed) - tol)
    p_two = (1 + int(centred_hits)) / (resamples + 1)
    return PairedComparison(
        n=n,
        mean_candidate=mean_cand,
        mean_baseline=mean_base,
        mean_difference=observed,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        p_value=p_less,
        p_value_two_sided=p_two,
        resamples=resamples,
        seed=seed,
        method=_BOOTSTRAP_METHOD,
        distribution=distribution,
        tie_tolerance=tol,
    )


def paired_permutation_test(
    candidate: npt.ArrayLike,
    baseline: npt.ArrayLike,
    *,
    resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "less",
) -> PermutationTestResult:
    """Sign-flip permutation test of the mean paired difference ``candidate - baseline``.

    ``alternative="less"`` (the default) asks whether the candidate is worse, ``"greater"``
    whether it is better, ``"two-sided"`` whether it differs. Exact when ``2**n <=
    resamples``; see the module docstring for the p-value formulas.
    """
    cand, base = _paired_arrays(candidate, baseline)
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, got {resamples}")
    if alternative not in ("less", "greater", "two-sided"):
        raise StatisticsError(f"alternative must be 'less', 'greater' or 'two-sided', got {alternative!r}")
    diff = cand - base
    n = diff.size
    observed = float(np.mean(diff))
    tol = _tie_tolerance(n, float(np.max(np.abs(diff))))

    exact = n < 63 and (1 << n) <= resamples
    if exact:
        null = _all_sign_flip_means(diff)
        hits = _count_extreme(null, observed, tol, alternative)
        p_value = hits / null.size
        evaluated = null.size
    else:
        rng = np.random.default_rng(seed)
        hits = 0
        rows_per_chunk = max(1, _CHUNK_ELEMENTS // n)
        for start in range(0, resamples, rows_per_chunk):
            rows = min(rows_per_chunk, resamples - start)
            hits += _count_extreme(_random_sign_flip_means(diff, rows, rng), observed, tol, alternative)
        # Add-one: the observed labelling is itself one admissible permutation.
        p_value = (1 + hits) / (resamples + 1)
        evaluated = resamples
    return PermutationTestResult(
        n=n,
        mean_difference=observed,
        p_value=min(1.0, p_value),
        alternative=alternative,
        resamples=evaluated,
        exact=exact,
        seed=seed,
    )


def regression_verdict(comparison: PairedComparison, margin: float = 0.0, alpha: float = 0.05) -> Verdict:
    """Gate a candidate: ``"fail"``, ``"warn"`` or ``"pass"`` (see the module docstring).

    ``margin`` is the tolerated drop in score units (``>= 0``); ``alpha`` the significance
    level of the one-sided test of H0 ``mu >= -margin``. Failing needs both a point drop
    beyond the margin and significance (``ci_high < -margin`` or ``p < alpha``); a point drop
    beyond the margin without significance warns; anything else passes.
    """
    margin = _check_margin(margin)
    if not 0.0 < alpha < 1.0:
        raise StatisticsError(f"alpha must be in (0, 1), got {alpha}")
    if not comparison.mean_difference < -margin:
        return "pass"
    if comparison.ci_high < -margin or comparison.p_value_for_drop(margin) < alpha:
        return "fail"
    return "warn"


def _paired_arrays(candidate: npt.ArrayLike, baseline: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    cand = np.asarray(candidate, dtype=np.float64)
    base = np.asarray(baseline, dtype=np.float64)
    for name, arr in (("candidate", cand), ("baseline", base)):
        if arr.ndim != 1:
            raise StatisticsError(f"{name} scores must be one-dimensional, got shape {arr.shape}")
    if cand.size != base.size:
        raise StatisticsError(f"paired scores need equal lengths: candidate has {cand.size}, baseline has {base.size}")
    if cand.size == 0:
        raise StatisticsError("paired comparison needs at least one case, got 0")
    for name, arr in (("candidate", cand), ("baseline", base)):
        bad = ~np.isfinite(arr)
        if bad.any():
            positions = np.flatnonzero(bad)
            n_nan = int(np.count_nonzero(np.isnan(arr)))
            shown = ", ".join(str(int(i)) for i in positions[:10])
            more = ", ..." if positions.size > 10 else ""
            raise StatisticsError(
                f"{name} scores contain {positions.size} non-finite value(s) "
                f"({n_nan} NaN, {positions.size - n_nan} infinite) at index {shown}{more}"
            )
    return cand, base


def _check_margin(margin: float) -> float:
    margin = float(margin)
    if not (np.isfinite(margin) and margin >= 0.0):
        raise StatisticsError(f"margin must be a finite number >= 0, got {margin}")
    return margin


def _tie_tolerance(n: int, scale: float) -> float:
    return 4.0 * n * float(np.finfo(np.float64).eps) * scale


def _shift_p_value(distribution: FloatArray, observed: float, margin: float, tol: float) -> float:
    # Null centred on -margin: D*_b - D - margin; count those at or below D. The margin
    # enters the subtraction, so the tolerance grows with it to absorb its rounding.
    tol = max(tol, 4.0 * float(np.finfo(np.float64).eps) * margin)
    null = distribution - observed - margin
    hits = int(np.count_nonzero(null <= observed + tol))
    return (1 + hits) / (distribution.size + 1)


def _bootstrap_means(diff: FloatArray, resamples: int, rng: np.random.Generator) -> FloatArray:
    n = diff.size
    out = np.empty(resamples, dtype=np.float64)
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, resamples, rows_per_chunk):
        stop = min(resamples, start + rows_per_chunk)
        # Default int64 indices: numpy gathers with its native index type without a copy,
        # which is faster overall than drawing int32 and converting.
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = np.take(diff, idx).sum(axis=1)
    out /= n
    return out


def _all_sign_flip_means(diff: FloatArray) -> FloatArray:
    n = diff.size
    patterns = np.arange(1 << n, dtype=np.int64)
    # Bit k of the pattern number says whether difference k has its sign flipped.
    flips = ((patterns[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64)
    means: FloatArray = (float(diff.sum()) - 2.0 * (flips @ diff)) / n
    return means


def _random_sign_flip_means(diff: FloatArray, rows: int, rng: np.random.Generator) -> FloatArray:
    n = diff.size
    # Each 64-bit draw supplies 64 fair coin flips. Full-range uint64 draws are taken
    # straight from the bit generator, one per word and never buffered across calls, so the
    # flips of a row do not depend on how the rows are split into chunks.
    words = (n + 63) // 64
    raw = rng.integers(0, np.iinfo(np.uint64).max, size=(rows, words), dtype=np.uint64, endpoint=True)
    flips = np.unpackbits(raw.view(np.uint8), axis=1, count=n).astype(np.float64)
    means: FloatArray = (float(diff.sum()) - 2.0 * (flips @ diff)) / n
    return means


def _count_extreme(null: FloatArray, observed: float, tol: float, alternative: Alternative) -> int:
    if alternative == "less":
        return int(np.count_nonzero(null <= observed + tol))
    if alternative == "greater":
        return int(np.count_nonzero(null >= observed - tol))
    return int(np.count_nonzero(np.abs(null) >= abs(observed) - tol))
