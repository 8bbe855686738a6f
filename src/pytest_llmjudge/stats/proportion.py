"""Confidence interval of a proportion: the Wilson score interval (Wilson 1927).

For ``k`` successes in ``n`` trials, ``p = k / n`` and ``z`` the normal quantile of the
confidence level::

    centre = (p + z^2 / 2n) / (1 + z^2 / n)
    half   = z * sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n)

clipped to [0, 1]. Unlike the normal (Wald) interval it stays inside [0, 1] and keeps a
width at ``p = 0`` or ``1``, which matters for the small counts of per-language rates.
Degenerate case: ``n = 0`` gives ``(0, 1)``, no information.

``z`` comes from the standard library's ``NormalDist().inv_cdf`` (Wichura's AS241, equal to
``scipy.stats.norm.ppf`` within 1e-15): importing scipy.stats costs about 0.45 s of CPU, and
most runs need nothing else from it.
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
