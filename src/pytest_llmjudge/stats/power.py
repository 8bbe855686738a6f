"""Power of the paired one-sided test: the smallest drop it detects, the cases a drop needs.

What it is
    For ``n`` paired cases whose differences have standard deviation ``sigma``, a one-sided
    test at level ``a`` detects a true shift ``delta`` (beyond the null value) with power
    ``1 - beta`` when ``sqrt(n) * delta / sigma >= z_{1-a} + z_{1-beta}``. Hence

        minimum detectable effect   MDE(n) = (z_{1-a} + z_{1-beta}) * sigma / sqrt(n)
        cases needed for delta      n(delta) = ceil(((z_{1-a} + z_{1-beta}) * sigma / delta)**2)

    the normal-approximation sample size of a one-sample (paired) mean test (Chow, Shao and
    Wang 2008, *Sample Size Calculations in Clinical Research*, 2nd ed., sec. 3.1;
    ``statsmodels.stats.power.NormalIndPower`` with ``ratio=0`` and ``alternative="larger"``
    solves the same equation, which the tests compare with). The sign-flip test has the same
    asymptotic power as this z-test (Lehmann and Romano 2005, sec. 15.2); ``sigma`` is the
    observed standard deviation of the paired differences (``ddof=1``), so the numbers are
    estimates for planning, not guarantees.

    A discrete test adds a floor: the sign-flip test cannot reach level ``a`` with fewer
    than ``ceil(log2(1 / a))`` non-tied pairs (``2**-m`` is its smallest p-value), so
    :func:`cases_needed` is never below that, and :func:`minimum_detectable_effect` is
    ``inf`` below it.

Degenerate cases: ``sigma = 0`` (every pair moved by the same amount) gives ``MDE = 0``
above the floor and the floor as cases needed; ``delta <= 0`` needs infinitely many cases
(``inf`` is returned as ``None``); ``n < 2`` has no variance estimate (callers pass
``sigma = None`` and get ``inf``/``None``).
"""

from __future__ import annotations

import math

from scipy.stats import norm

from pytest_llmjudge.errors import StatisticsError

__all__ = ["DEFAULT_POWER", "cases_needed", "minimum_detectable_effect", "minimum_pairs"]

DEFAULT_POWER = 0.8


def _z(level: float, power: float) -> float:
    if not 0.0 < level < 1.0:
        raise StatisticsError(f"level must be in (0, 1), got {level}")
    if not 0.0 < power < 1.0:
        raise StatisticsError(f"power must be in (0, 1), got {power}")
    return float(norm.ppf(1.0 - level) + norm.ppf(power))


def minimum_pairs(level: float) -> int:
    """Fewest non-tied pairs with which a one-sided sign-flip test can reach ``level``."""
    if not 0.0 < level < 1.0:
        raise StatisticsError(f"level must be in (0, 1), got {level}")
    return max(1, math.ceil(math.log2(1.0 / level) - 1e-12))


def minimum_detectable_effect(sigma: float | None, n: int, level: float, power: float = DEFAULT_POWER) -> float:
    """The shift detected with ``power`` at ``n`` paired cases (``inf`` when none is)."""
    z = _z(level, power)
    if sigma is None or not math.isfinite(sigma) or n < minimum_pairs(level):
        return math.inf
    return z * sigma / math.sqrt(n)


def cases_needed(sigma: float | None, delta: float, level: float, power: float = DEFAULT_POWER) -> int | None:
    """Paired cases to detect a shift ``delta`` with ``power`` (``None``: no finite number)."""
    z = _z(level, power)
    if sigma is None or not math.isfinite(sigma) or not delta > 0:
        return None
    return max(minimum_pairs(level), math.ceil((z * sigma / delta) ** 2 - 1e-9))
