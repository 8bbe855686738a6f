"""Confidence bounds on the mean of bounded scores by betting (Waudby-Smith and Ramdas 2024).

Source: I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by
betting", JRSS-B 86(1), 2024 (arXiv:2010.09686), sections 3-4 (the capital process, the
predictable plug-in bets, hedging) and the fixed-n variant of its section on confidence
intervals; compared line by line with the source of the authors' ``confseq`` package
(``betting.py``: ``betting_mart``, ``betting_ci``; ``betting_strategies.lambda_predmix_eb``),
which does not build here (its C++ extension needs Boost), so the tests pin a term-by-term
implementation of the formulas below and hand-computed cases instead.

Why: a percentile bootstrap of the mean has no guarantee at small n, and none at all when
the scores crowd one end of the scale. With ``p = (.02, .08, .90)`` on a 0-2 rubric (true
mean 1.88) the bootstrap's 95% interval covered 66.6% at n = 10 (issue 23; 65.0% in
``benchmarks/bound_coverage.py``, where this interval covered 100%): a third of the samples are
all 2s, and every resample of them has mean 2, the point interval ``[2, 2]``. A betting
interval holds its level for every distribution on ``[low, high]`` and every n, because it
rests only on the scale being known (the bound below is a martingale argument, not an
asymptotic one).

The construction, on scores rescaled to ``x = (score - low) / (high - low)`` in [0, 1]:

* Running moments (a prior of one fake observation with mean 1/2, variance 1/4)::

      mu_t     = (1/2 + sum_{i<=t} x_i) / (t + 1)
      sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1),     sigma2_0 = 1/4

* Predictable plug-in bet, for a one-sided level ``a`` (``a = alpha / 2`` for each side
  of a two-sided ``1 - alpha`` interval, i.e. the paper's ``log(2 / alpha)``)::

      fixed n (an interval):    lam_t = sqrt(2 log(1/a) / (n sigma2_{t-1}))
      any time (a sequence):    lam_t = sqrt(2 log(1/a) / (t log(1 + t) sigma2_{t-1}))

  truncated at ``c / m`` with ``c = 3/4`` (the paper suggests 1/2 or 3/4; 3/4 gave the
  narrower intervals at n <= 30 in ``benchmarks/bound_coverage.py``, e.g. a mean lower bound
  of 1.15 instead of 0.98 at n = 10 under heavy skew) so every factor of the capital stays
  at least ``1 - c > 0``.
* Capital of a gambler betting that the mean exceeds ``m``::

      K_t^+(m) = prod_{i<=t} (1 + min(lam_i, c/m) (x_i - m))

  Under the null ``E[x] = m`` it is a non-negative martingale starting at 1, whatever the
  (predictable) bets, so by Ville's inequality ``P(sup_t K_t^+(m) >= 1/a) <= a``.
* Lower bound: ``L_n = sup {m : max_{t<=n} K_t^+(m) >= 1/a}``. Each factor is
  non-increasing in m, so the rejected means form an interval ``[0, L_n)``, found by
  bisection (60 halvings, keeping the rejected end: the bound is never above the exact
  one). ``P(mean < L_n) <= a``. Taking the maximum over ``t <= n`` (the running
  intersection of the paper's ``B_t``) is valid by Ville and never wider than ``K_n`` alone.
* Upper bound: the same on ``1 - x`` (the paper's ``K^-`` with ``lam^- = min(lam, c/(1-m))``
  is exactly that), ``U_n = 1 - L_n(1 - x)``.
* Two-sided ``1 - alpha`` interval: ``[L_n, U_n]`` with ``a = alpha / 2`` on each side, i.e.
  the paper's hedged capital ``max(K^+/2, K^-/2) < 1/alpha`` (theta = 1/2). Its lower end is
  therefore a one-sided ``1 - alpha/2`` bound: 97.5% for the 95% interval.
* The sample mean is kept inside the interval (the interval only widens, which keeps the
  guarantee), then everything is mapped back to ``[low, high]``.

Order. The guarantee needs each score's conditional mean, given the scores before it, to
be the mean being estimated: i.i.d. scores in an order that does not depend on their
values. A suite's cases come in the order of its file, often grouped (by language for the
``all`` row, by task, easy ones first), and the capital then grows on a block whose mean
differs from the overall one: 50 2s followed by 50 1s (mean 1.5) gave [1.5, 1.74] in that
order and [1.37, 1.5] reversed. So the fixed-n interval first puts the scores in one
seeded random order (``shuffle_seed``, default 0; a permutation of positions drawn without
looking at the values), which breaks such blocks ([1.39, 1.63] for that example) and gives
the same interval on every run. Reordering the cases in the file can therefore move the
bounds a little (not their level). The permutation must not depend on the values: sorting
the scores first, which would make the interval depend only on their multiset, made the
order a function of the data, and the bounds then missed 5-6% of the time for two-point
scores at n = 10-20 (``benchmarks/bound_coverage.py``). The sequence
(:func:`betting_confidence_sequence`) keeps the arrival order, which must therefore be
random (sequential judging draws cases in a seeded random order).

The anytime-valid version (:func:`betting_confidence_sequence`) gives ``(L_t, U_t)`` for
every ``t`` at once, with the ``t log(1 + t)`` bets and the running intersection: valid
simultaneously over all t, hence under optional stopping (sequential judging can stop a
group as soon as its bound clears a threshold). It costs ``O(n^2)`` per bisection step.

The p-value of a bound check (:func:`betting_pvalue`). ``lower(mean(m)) >= t`` asserts
``H1: mean > t`` against ``H0: mean <= t``. The gambler's capital ``K_t^+(t)`` above is a
non-negative supermartingale under every mean ``<= t`` (each factor has expectation
``1 + lam (mean - t) <= 1``), so by Ville's inequality ``P(max_{t<=n} K_t^+ >= 1/u) <= u``
for every ``u`` at once, and ``p = min(1, 1 / max_{t<=n} K_t^+(t))`` is a valid p-value
(Waudby-Smith and Ramdas 2024, sec. 3: the test's capital is an e-process; its reciprocal
running maximum is an anytime p-value). The bets are those of the fixed-n interval tuned to a
*design level* ``a`` fixed before looking at the scores (the level the family will test the
item at, ``alpha / k``); then ``p <= a`` exactly when the bound ``L_n`` at level ``a`` clears
``t`` (``L_n`` is where that capital crosses ``1/a``). Bisection over the level of
:func:`betting_interval` instead is not a valid p-value in general: the bets change with the
level, so the rejection regions of different levels are not nested. ``upper(...) <= t`` is the
same test on ``1 - x``. A threshold below the scale's low end gives 0 (every bound clears
it), one at or above the high end gives 1.

Degenerate cases: ``n = 0`` gives the whole scale ``(low, high)`` (no information), and so
does one score at 95% (the first bet is ``sqrt(2 log 40 / (1/4)) = 5.4``, and one factor of
at most 6.4 never reaches 1/a = 40); scores all at one end of the scale give an interval
that touches that end and keeps a width, never the point (three 2s on 0-2: [0.47, 2]; ten:
[1.25, 2]); ``low == high`` or a score outside ``[low, high]``
(beyond a 1e-9 relative rounding allowance) raises :class:`ValueError`, as does a NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "TRUNCATION",
    "BettingInterval",
    "betting_confidence_sequence",
    "betting_sequence_extend",
    "betting_interval",
    "betting_intervals",
    "betting_lower_bounds",
    "betting_pvalue",
]

FloatArray = npt.NDArray[np.float64]

#: ``c`` of the truncation ``min(lam, c/m)``: the paper suggests 1/2 or 3/4.
TRUNCATION = 0.75
_HALVINGS = 60
# Scores a rounding step outside their scale (chrF's 100.00000000000001) are clipped, not refused.
_SLACK = 1e-9


class BettingInterval(NamedTuple):
    """A two-sided betting interval on the scores' own scale."""

    low: float
    high: float


def _unit(values: npt.ArrayLike, low: float, high: float) -> FloatArray:
    """Scores rescaled to [0, 1], checked against the scale."""
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise ValueError(f"the scale needs finite low < high, got [{low}, {high}]")
    data = np.asarray(values, dtype=float)
    if data.size and not np.all(np.isfinite(data)):
        raise ValueError("scores must be finite numbers (a NaN or infinite one has no bounded mean)")
    slack = _SLACK * (high - low)
    if data.size and (data.min() < low - slack or data.max() > high + slack):
        raise ValueError(f"scores must lie on the scale [{low:g}, {high:g}]; got {data.min():g} to {data.max():g}")
    return np.asarray(np.clip((data - low) / (high - low), 0.0, 1.0), dtype=float)


def _previous_variance(x: FloatArray) -> FloatArray:
    """``sigma2_{t-1}`` for t = 1..n along the last axis (module docstring)."""
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    first = np.full(x.shape[:-1] + (1,), 0.25)
    return np.concatenate([first, sigma2[..., :-1]], axis=-1)


def _bets(x: FloatArray, level: float, fixed_n: bool) -> FloatArray:
    """Untruncated plug-in bets ``lam_t``; ``level`` is the one-sided ``a``."""
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=float)
    horizon = float(n) if fixed_n else t * np.log1p(t)
    return np.asarray(np.sqrt(2.0 * math.log(1.0 / level) / (horizon * _previous_variance(x))), dtype=float)


def _lower_unit(x: FloatArray, level: float, truncation: float) -> FloatArray:
    """Fixed-n lower bounds of rows of ``x`` (R x n, in [0, 1]), vectorised over the rows."""
    bets = _bets(x, level, fixed_n=True)
    threshold = math.log(1.0 / level)
    mean = x.mean(axis=-1)
    below = np.zeros_like(mean)  # a rejected mean (0 stands for "nothing rejected yet")
    above = mean.copy()  # the sample mean is kept in the interval
    for _ in range(_HALVINGS):
        m = (below + above) / 2.0
        safe = np.maximum(m, np.finfo(float).tiny)[:, np.newaxis]
        lam = np.minimum(bets, truncation / safe)
        with np.errstate(divide="ignore"):  # c = 1 can bet everything: log(0) = -inf, capital 0
            log_capital = np.cumsum(np.log1p(lam * (x - m[:, np.newaxis])), axis=-1)
        rejected = log_capital.max(axis=-1) >= threshold
        below = np.where(rejected, m, below)
        above = np.where(rejected, above, m)
    return np.asarray(below, dtype=float)


def _check(confidence: float, truncation: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not 0.0 < truncation <= 1.0:
        raise ValueError(f"truncation must be in (0, 1], got {truncation}")


def _rows(samples: npt.ArrayLike, low: float, high: float, shuffle_seed: int | None) -> FloatArray:
    """Rows on [0, 1], their columns in the seeded random order (module docstring, Order)."""
    x = _unit(samples, low, high)
    if x.ndim != 2:
        raise ValueError(f"samples must be R x n, got shape {x.shape}")
    if shuffle_seed is None or x.shape[1] < 2:
        return x
    order = np.random.default_rng(shuffle_seed).permutation(x.shape[1])
    return np.asarray(x[:, order], dtype=float)


def betting_lower_bounds(
    samples: npt.ArrayLike,
    low: float,
    high: float,
    *,
    level: float,
    truncation: float = TRUNCATION,
    shuffle_seed: int | None = 0,
) -> FloatArray:
    """One-sided lower bounds (``P(mean < bound) <= level``) of each row of ``samples`` (R x n).

    The batch form exists for simulations (``benchmarks/bound_coverage.py``); the plugin
    uses :func:`betting_interval`, which calls the same code. ``n = 0`` gives ``low``.
    ``shuffle_seed=None`` keeps the rows' order (only for scores already in random order).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    _check(0.5, truncation)
    x = _rows(samples, low, high, shuffle_seed)
    if x.shape[1] == 0:
        return np.full(x.shape[0], float(low))
    return np.asarray(low + (high - low) * _lower_unit(x, level, truncation), dtype=float)


def betting_intervals(
    samples: npt.ArrayLike,
    low: float,
    high: float,
    *,
    confidence: float = 0.95,
    truncation: float = TRUNCATION,
    shuffle_seed: int | None = 0,
) -> tuple[FloatArray, FloatArray]:
    """Two-sided intervals of each row of ``samples`` (R x n): (lows, highs)."""
    _check(confidence, truncation)
    x = _rows(samples, low, high, shuffle_seed)
    if x.shape[1] == 0:
        return np.full(x.shape[0], float(low)), np.full(x.shape[0], float(high))
    level = (1.0 - confidence) / 2.0
    lows = _lower_unit(x, level, truncation)
    highs = 1.0 - _lower_unit(1.0 - x, level, truncation)
    return (
        np.asarray(low + (high - low) * lows, dtype=float),
        np.asarray(low + (high - low) * highs, dtype=float),
    )


def betting_interval(
    values: Sequence[float] | npt.ArrayLike,
    low: float,
    high: float,
    *,
    confidence: float = 0.95,
    truncation: float = TRUNCATION,
    shuffle_seed: int | None = 0,
) -> BettingInterval:
    """The two-sided ``confidence`` interval of the mean of ``values`` on ``[low, high]``.

    Each end is a one-sided bound at level ``(1 - confidence) / 2`` (module docstring). The
    scores are put in the order drawn with ``shuffle_seed`` first (a permutation of their
    positions), which breaks up blocks of similar cases; ``None`` keeps their order.
    """
    row = np.asarray(values, dtype=float).reshape(1, -1)
    lows, highs = betting_intervals(
        row, low, high, confidence=confidence, truncation=truncation, shuffle_seed=shuffle_seed
    )
    return BettingInterval(float(lows[0]), float(highs[0]))


def _per_time_lower(x: FloatArray, level: float, truncation: float, first: int = 0) -> FloatArray:
    """``sup {m : K_t^+(m) >= 1/a}`` for t = first+1 .. n (no running intersection yet), with the
    anytime bets. ``O(n^2)`` per halving, in blocks of rows to bound memory; ``first`` skips the
    times an earlier look already has (each time's bound uses its prefix only)."""
    n = x.size
    bets = _bets(x[np.newaxis, :], level, fixed_n=False)[0]
    threshold = math.log(1.0 / level)
    means = (np.cumsum(x) / np.arange(1, n + 1))[first:]
    below = np.zeros(n - first)
    above = means.copy()
    block = max(1, 2**20 // max(n, 1))
    for _ in range(_HALVINGS):
        m = (below + above) / 2.0
        rejected = np.empty(n - first, dtype=bool)
        for start in range(first, n, block):
            stop = min(n, start + block)
            rows = m[start - first : stop - first, np.newaxis]  # candidate mean for time t = start+1 .. stop
            lam = np.minimum(bets[np.newaxis, :stop], truncation / np.maximum(rows, np.finfo(float).tiny))
            with np.errstate(divide="ignore"):
                terms = np.log1p(lam * (x[np.newaxis, :stop] - rows))
            # Only the first t observations count towards K_t.
            mask = np.arange(stop)[np.newaxis, :] <= np.arange(start, stop)[:, np.newaxis]
            rejected[start - first : stop - first] = np.where(mask, terms, 0.0).sum(axis=1) >= threshold
        below = np.where(rejected, m, below)
        above = np.where(rejected, above, m)
    return below


def betting_confidence_sequence(
    values: Sequence[float] | npt.ArrayLike,
    low: float,
    high: float,
    *,
    confidence: float = 0.95,
    truncation: float = TRUNCATION,
) -> tuple[FloatArray, FloatArray]:
    """Anytime-valid ``(lows, highs)`` after each of the ``n`` values, in arrival order.

    ``P(mean outside [lows[t], highs[t]] for some t) <= 1 - confidence``: the bounds may be
    checked after every value and the sampling stopped when they settle a verdict. The
    bounds only narrow (running intersection). Wider than :func:`betting_interval` at the
    same n: that is the price of looking at every t.
    """
    _check(confidence, truncation)
    x = _unit(values, low, high)
    if x.ndim != 1:
        raise ValueError(f"values must be one sequence, got shape {x.shape}")
    if x.size == 0:
        return np.empty(0), np.empty(0)
    level = (1.0 - confidence) / 2.0
    lows = np.maximum.accumulate(_per_time_lower(x, level, truncation))
    highs = np.minimum.accumulate(1.0 - _per_time_lower(1.0 - x, level, truncation))
    return (
        np.asarray(low + (high - low) * lows, dtype=float),
        np.asarray(low + (high - low) * highs, dtype=float),
    )


def betting_pvalue(
    values: Sequence[float] | npt.ArrayLike,
    low: float,
    high: float,
    threshold: float,
    *,
    side: str = "lower",
    design_level: float = 0.025,
    truncation: float = TRUNCATION,
    shuffle_seed: int | None = 0,
) -> float:
    """The p-value of ``H0: mean <= threshold`` (``side="lower"``; ``"upper"``: ``mean >= threshold``).

    ``min(1, 1 / max_t K_t)`` of the capital betting against ``H0`` with the bets of the
    fixed-n interval at one-sided ``design_level`` (module docstring): ``<= design_level``
    exactly when the bound at that level clears ``threshold``. The scores are put in the
    same seeded order as :func:`betting_interval`'s. ``n = 0`` gives 1.
    """
    if side not in ("lower", "upper"):
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
    if not 0.0 < design_level < 1.0:
        raise ValueError(f"design_level must be in (0, 1), got {design_level}")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold}")
    _check(0.5, truncation)
    row = np.asarray(values, dtype=float).reshape(1, -1)
    x = _rows(row, low, high, shuffle_seed)[0]
    m = (threshold - low) / (high - low)
    if side == "upper":
        x, m = 1.0 - x, 1.0 - m
    if m < 0.0:
        return 0.0
    if m >= 1.0 or x.size == 0:
        return 1.0
    bets = _bets(x[np.newaxis, :], design_level, fixed_n=True)[0]
    lam = np.minimum(bets, truncation / max(m, np.finfo(float).tiny))
    with np.errstate(divide="ignore"):
        log_capital = np.cumsum(np.log1p(lam * (x - m)))
    return float(min(1.0, math.exp(-min(float(log_capital.max()), 745.0))))


def betting_sequence_extend(
    values: Sequence[float] | npt.ArrayLike,
    low: float,
    high: float,
    previous: tuple[float, float, int],
    *,
    confidence: float = 0.95,
    truncation: float = TRUNCATION,
) -> tuple[float, float]:
    """The last ``(low, high)`` of :func:`betting_confidence_sequence` of ``values``, given its
    last bounds after the first ``k`` values, ``previous = (low_k, high_k, k)``: only the times
    after ``k`` are computed (each time's bound rests on its prefix alone, and the running
    intersection carries the rest). Sequential judging looks after every round this way, which
    costs ``O(new x n)`` per halving instead of ``O(n^2)``."""
    _check(confidence, truncation)
    x = _unit(values, low, high)
    lows_before, highs_before, first = previous
    if x.ndim != 1 or not 0 <= first <= x.size:
        raise ValueError(f"values must be one sequence of at least {first} values, got shape {x.shape}")
    if first == x.size:
        return lows_before, highs_before
    level = (1.0 - confidence) / 2.0
    span = high - low
    new_low = low + span * float(np.max(_per_time_lower(x, level, truncation, first)))
    new_high = low + span * float(np.min(1.0 - _per_time_lower(1.0 - x, level, truncation, first)))
    if first == 0:
        return new_low, new_high
    return max(lows_before, new_low), min(highs_before, new_high)
