"""Confidence intervals of a proportion: Wilson's score interval and Clopper-Pearson's exact one.

Wilson score interval (Wilson 1927, :func:`wilson_interval`).

For ``k`` successes in ``n`` trials, ``p = k / n`` and ``z`` the normal quantile of the
confidence level::

    centre = (p + z^2 / 2n) / (1 + z^2 / n)
    half   = z * sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n)

clipped to [0, 1]. Unlike the normal (Wald) interval it stays inside [0, 1] and keeps a
width at ``p = 0`` or ``1``, which matters for the small counts of per-language rates.
Degenerate case: ``n = 0`` gives ``(0, 1)``, no information.

``z`` comes from the standard library's ``NormalDist().inv_cdf`` (Wichura's AS241, equal to
``scipy.stats.norm.ppf`` within 1e-15): importing scipy.stats is slow (docs/scale.md), and
most runs need nothing else from it. Wilson's coverage is only about nominal: each of its
ends can be wrong far more often than ``(1 - c) / 2``. At 95%, over true rates 0.005-0.995,
the lower end lies above a rate near 0 (the upper end below a rate near 1) with
probability up to 16.3% at n = 5, 14.0% at n = 10 and 30, 9.0% at n = 100 (computed exactly
in ``benchmarks/bound_coverage.py``), so it is not what a one-sided gate should act on;
the aggregates' ``pass_rate`` uses Clopper-Pearson.

Clopper-Pearson exact interval (Clopper and Pearson 1934, Biometrika 26:404;
:func:`clopper_pearson_interval`): with ``a = (1 - c) / 2``, the lower end is the ``a``
quantile of ``Beta(k, n - k + 1)`` and the upper end the ``1 - a`` quantile of
``Beta(k + 1, n - k)``, i.e. the rates at which seeing ``>= k`` (``<= k``) successes has
probability exactly ``a``. Each end is wrong with probability at most ``a`` for every n and
every true rate (it is conservative: below ``a`` between the binomial's lattice points),
which is what ``lower(pass_rate(...))`` and ``upper(pass_rate(...))`` need. Equal to
``statsmodels``' ``proportion_confint(method="beta")`` and scipy's
``binomtest(k, n).proportion_ci(method="exact")`` (tested). The quantiles come from
``scipy.special.betaincinv``, imported on first use (``scipy.stats``, slower still, is not).
Degenerate cases: ``k = 0`` has lower end 0, ``k = n`` upper end 1 (with a width:
5 of 5 is [0.478, 1]); ``n = 0`` gives ``(0, 1)``.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``successes / n`` (module docstring); ``(0, 1)`` for ``n = 0``."""
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def clopper_pearson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson exact interval of ``successes / n`` (module docstring); ``(0, 1)`` for ``n = 0``."""
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n = {n}, got {successes}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return 0.0, 1.0
    from scipy.special import betaincinv

    alpha = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, alpha))
    high = 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1.0 - alpha))
    return low, high
