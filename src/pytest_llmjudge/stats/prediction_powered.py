"""Prediction-powered estimate of a mean human score from judge scores and a few human labels.

Setting: a group of ``N`` cases, each with a judge score ``f_i``; a simple random sample of
``n`` of them also carries a human label ``y_i`` (the aggregate of its annotators). The
target is the mean human label over all ``N`` cases. The judge's own mean is biased (LLM
judges score higher than native speakers: Hada et al. 2024; METAL); the human-only mean of
the ``n`` labels is unbiased but wide. PPI (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic,
*Science* 382, 2023) rectifies the judge's mean with the labelled residuals, and PPI++
(Angelopoulos, Duchi, Zrnic 2023, arXiv:2311.01453, sec. 2 and Example 6.1) weights the
judge by a power-tuning parameter ``lambda``::

    theta = lambda * mean_N(f) + mean_n(y - lambda * f)
    se^2  = lambda^2 * var_N(f) / N + var_n(y - lambda * f) / n
    CI    = theta -/+ z_{1 - alpha/2} * se

``lambda = 1`` is the original PPI, ``lambda = 0`` the classical (human-only) CLT interval.
The power-tuned value minimises the estimated variance (PPI++ eq. (8) for the mean, with
the Hessian the identity)::

    lambda = cov_n(y, f) / ((1 + n / N) * var_{n+N}(f))   clipped to [0, 1]

These are exactly the computations of the reference implementation ``ppi_py`` 0.2.3
(``ppi_mean_pointestimate``, ``ppi_mean_ci`` and ``_calc_lam_glm`` with ``clip=True``):
``cov_n`` and ``var_N``, ``var_n`` divide by the count (numpy's default ``std``),
``var_{n+N}`` is ``np.cov`` (divides by count - 1) of the labelled and the "unlabelled"
judge scores stacked. ``tests/unit/test_prediction_powered.py`` checks estimate, lambda and
interval against ``ppi_py`` on generated and on PARIKSHA data.

Convention for "unlabelled": **all ``N`` judge scores of the group, the labelled cases
included** (``Yhat_unlabeled`` = every case). The target is the mean over the group's own
``N`` cases (a finite population), and with the labelled cases drawn uniformly from them
``mean_n(y - lambda f)`` is unbiased for ``mean_N(y - lambda f)``, so ``theta`` is exactly
unbiased for ``mean_N(y)`` for any fixed lambda. The true sampling variance is then
``(1 - n/N) var(y - lambda f) / n``, which the PPI ``se`` above never undercuts: the
interval is conservative for this target (``benchmarks/ppi_coverage.py`` measures how much).

Degenerate cases:

* ``n < 2``: no interval (there is no spread to estimate); ``n = 0``: no estimate at all.
* every judge score equal: lambda is 0/0 in ``ppi_py`` (NaN); here 0, which gives the same
  estimate and interval as any lambda would (a constant judge carries no information).
* few labels. Two small-sample guards, both switched on by the aggregates
  (``student=True`` and a ``scale``), both only ever widening the interval:

  - the residual variance is at least that of labels that all agree but one, which sits at
    the far end of the scale: ``var >= (high - low)^2 (n - 1) / n^2``. Ten labels that are
    all 2, or whose residuals the tuned judge happens to explain, otherwise give a point or
    near-point interval (the CLT's known failure for small n on a bounded scale); with the
    guard, at ``n = 10`` on 0/1 labels the half-width is at least 0.19 (Wilson's at 0/10 is
    0.28). The floor shrinks as ``1/n``: at ``n = 40`` it is 0.024 on 0/1, below the
    variance of any real mix of labels;
  - Student's ``t`` quantile with ``n - 1`` degrees of freedom instead of ``z`` (2.26 vs
    1.96 at ``n = 10``, 2.02 at ``n = 40``): lambda is tuned on the same few labels, which
    makes the estimated variance optimistic at small ``n``.

  On the shipped PARIKSHA subset with 10 labels per language x metric, PPI++ covered the
  truth in 0.936 of the replications with ``z`` and no floor (lowest cell 0.857), 0.974
  with both (lowest 0.888); ``benchmarks/ppi_coverage.py``. Without them (the defaults of
  :func:`ppi_mean`) the computation is ppi_py's exactly; with them the tests compare with
  ppi_py at the ``alpha`` whose ``z`` equals the ``t`` quantile.
* the interval is clipped to the scale ``[low, high]`` when one is given: the true mean
  lies inside it, so clipping never loses coverage.

:func:`stratified` combines groups (strata) into one estimate: ``theta = sum_g w_g theta_g``
and ``se^2 = sum_g w_g^2 se_g^2`` with ``w_g = N_g / N`` (the standard stratified estimator,
Cochran 1977, sec. 5.3; PPI's strata are independent samples). :func:`labels_needed` inverts
``se`` for a target interval width.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from pytest_llmjudge.errors import StatisticsError


@dataclass(frozen=True)
class MeanEstimate:
    """An estimate of a mean with its normal-theory interval (``se`` None: no interval)."""

    value: float
    se: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class PPIEstimate:
    """The prediction-powered estimate of one group and what it rests on."""

    estimate: MeanEstimate
    """PPI++ (or PPI with a fixed lambda) estimate of the human mean over all N cases."""
    human_only: MeanEstimate
    """The mean of the n labels and its CLT interval (lambda = 0)."""
    judge_mean: float
    """The judge's mean over all N cases."""
    lam: float
    n: int
    N: int

    @property
    def bias(self) -> float:
        """Estimated judge bias on the human scale: judge mean - estimated human mean."""
        return self.judge_mean - self.estimate.value


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _var(values: Sequence[float], ddof: int = 0) -> float:
    centre = _mean(values)
    return math.fsum((v - centre) ** 2 for v in values) / (len(values) - ddof)


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def power_tuned_lambda(labels: Sequence[float], judged_labelled: Sequence[float], judged_all: Sequence[float]) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1] (module docstring)."""
    n, big_n = len(labels), len(judged_all)
    if n < 2 or big_n < 1:
        return 0.0
    centre_y, centre_f = _mean(labels), _mean(judged_labelled)
    cov = math.fsum((y - centre_y) * (f - centre_f) for y, f in zip(labels, judged_labelled, strict=True)) / n
    stacked = [*judged_labelled, *judged_all]
    variance = _var(stacked, ddof=1)
    if variance <= 0.0:
        return 0.0
    return min(1.0, max(0.0, cov / ((1.0 + n / big_n) * variance)))


def _t_two_sided(x: float, df: int) -> float:
    """``P(|T| <= x)`` for Student's t with integer ``df`` >= 1: the finite series of
    Abramowitz and Stegun 26.7.3 (odd df) and 26.7.4 (even df), with ``theta = atan(x / sqrt(df))``."""
    theta = math.atan(x / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:
        if df == 1:
            return 2 * theta / math.pi
        term = total = math.cos(theta)
        for k in range(3, df - 1, 2):  # terms cos^k theta * (2*4*...*(k-1)) / (1*3*...*k)
            term *= c2 * (k - 1) / k
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * total)
    term = total = 1.0
    for k in range(2, df - 1, 2):  # terms cos^k theta * (1*3*...*(k-1)) / (2*4*...*k)
        term *= c2 * (k - 1) / k
        total += term
    return math.sin(theta) * total


@functools.lru_cache(maxsize=256)
def _quantile(confidence: float, df: int | None) -> float:
    """The two-sided quantile: ``z`` (df None) or Student's ``t`` with ``df`` degrees of freedom.

    ``t`` by bisection on :func:`_t_two_sided` (to 1e-12; scipy's ``t.ppf`` agrees, see the
    tests), so an aggregate does not pay scipy.stats' import.
    """
    if df is None:
        return _z(confidence)
    low, high = 0.0, 1.0
    while _t_two_sided(high, df) < confidence:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if _t_two_sided(middle, df) < confidence:
            low = middle
        else:
            high = middle
        if high - low < 1e-12:
            break
    return (low + high) / 2


def _interval(
    value: float, se: float, confidence: float, scale: tuple[float, float] | None, df: int | None = None
) -> MeanEstimate:
    half = _quantile(confidence, df) * se
    low, high = value - half, value + half
    if scale is not None:
        low, high = max(low, scale[0]), min(high, scale[1])
    return MeanEstimate(value, se, low, high)


def _residual_variance(residuals: Sequence[float], scale: tuple[float, float] | None) -> float:
    variance = _var(residuals)
    if scale is not None:
        n = len(residuals)
        return max(variance, (scale[1] - scale[0]) ** 2 * (n - 1) / (n * n))
    return variance


def ppi_mean(
    labels: Sequence[float],
    judged_labelled: Sequence[float],
    judged_all: Sequence[float],
    *,
    lam: float | None = None,
    confidence: float = 0.95,
    scale: tuple[float, float] | None = None,
    student: bool = False,
) -> PPIEstimate:
    """PPI++ estimate of the mean human label over the ``judged_all`` cases (module docstring).

    ``labels[i]`` and ``judged_labelled[i]`` belong to the same labelled case; ``judged_all``
    holds the judge's score of every case of the group, the labelled ones included.
    ``lam=None`` tunes lambda; ``lam=1`` is the original PPI. ``scale`` (low, high) clips the
    intervals and floors a zero residual variance. Raises StatisticsError without labels or cases.
    """
    n, big_n = len(labels), len(judged_all)
    if n != len(judged_labelled):
        raise ValueError(f"{n} labels but {len(judged_labelled)} judge scores of labelled cases")
    if n == 0 or big_n == 0:
        raise StatisticsError(f"a prediction-powered mean needs labelled cases and judge scores (n = {n}, N = {big_n})")
    values = [*labels, *judged_labelled, *judged_all]
    if not all(math.isfinite(v) for v in values):
        raise StatisticsError("labels and judge scores must be finite numbers")
    tuned = power_tuned_lambda(labels, judged_labelled, judged_all) if lam is None else lam
    judge_mean = _mean(judged_all)
    residuals = [y - tuned * f for y, f in zip(labels, judged_labelled, strict=True)]
    value = tuned * judge_mean + _mean(residuals)
    human_value = _mean(labels)
    if n < 2:
        return PPIEstimate(
            MeanEstimate(value, None, None, None),
            MeanEstimate(human_value, None, None, None),
            judge_mean,
            tuned,
            n,
            big_n,
        )
    se = math.sqrt(tuned * tuned * _var(judged_all) / big_n + _residual_variance(residuals, scale) / n)
    human_se = math.sqrt(_residual_variance(labels, scale) / n)
    df = n - 1 if student else None
    return PPIEstimate(
        _interval(value, se, confidence, scale, df),
        _interval(human_value, human_se, confidence, scale, df),
        judge_mean,
        tuned,
        n,
        big_n,
    )


def stratified(
    parts: Sequence[tuple[int, MeanEstimate]],
    *,
    confidence: float = 0.95,
    scale: tuple[float, float] | None = None,
) -> MeanEstimate:
    """Combine per-stratum estimates ``(N_g, estimate_g)`` weighted by ``N_g / N`` (module docstring).

    No interval when some stratum has none.
    """
    total = sum(size for size, _ in parts)
    if not parts or total <= 0:
        raise StatisticsError("a stratified estimate needs at least one non-empty stratum")
    value = math.fsum(size / total * part.value for size, part in parts)
    if any(part.se is None for _, part in parts):
        return MeanEstimate(value, None, None, None)
    se = math.sqrt(math.fsum((size / total) ** 2 * (part.se or 0.0) ** 2 for size, part in parts))
    return _interval(value, se, confidence, scale)


def labels_needed(
    width: float,
    *,
    residual_variance: float,
    judge_variance: float,
    lam: float,
    N: int,
    confidence: float = 0.95,
) -> int | None:
    """How many labelled cases give an interval of total ``width`` (both sides), or None if none can.

    From ``width = 2 z sqrt(lam^2 var_f / N + var_r / n)``::

        n = ceil( var_r / ((width / 2z)^2 - lam^2 var_f / N) )

    None when the judge's term alone is already wider than the target (more labels can't help
    enough; use a smaller lambda or accept a wider interval). At least 2.
    """
    if width <= 0:
        raise ValueError("the target width must be positive")
    room = (width / (2 * _z(confidence))) ** 2 - lam * lam * judge_variance / max(N, 1)
    if room <= 0:
        return None
    return max(2, math.ceil(residual_variance / room))
