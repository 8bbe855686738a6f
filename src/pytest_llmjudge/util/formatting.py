"""Numbers as text: the one place that decides how a score, a statistic or a threshold reads.

Every failure message, terminal line and report cell formats numbers through these, so a
score reads the same in a failure, in the summary and in the HTML report.

* :func:`number`: a finite float, or None (booleans, text, NaN, infinities, missing);
* :func:`format_value`: a score or threshold as the user wrote it (``3``, ``0.8125``,
  ``'hi'`` for a category), four significant digits;
* :func:`format_number`: a table cell: integers whole, else ``digits`` decimals (large
  values in four significant digits);
* :func:`format_fixed`: always ``digits`` decimals (differences, p-values, strengths),
  so a column of them lines up.

Degenerate cases: anything that is not a finite number formats as ``-`` (a category in
:func:`format_value` is quoted instead); ``-0`` formats as ``0``.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "-"


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None (bools, text, NaN and missing are not numbers)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    result = float(value)
    return result + 0.0 if math.isfinite(result) else None


def format_value(value: Any) -> str:
    """A score or threshold: ``3``, ``0.8125``, ``'hi'`` (a category), ``-`` (none)."""
    if isinstance(value, str):
        return repr(value)
    x = number(value)
    if x is None:
        return MISSING
    return f"{x:g}" if x.is_integer() else f"{x:.4g}"


def format_number(value: Any, digits: int = 2) -> str:
    """A table cell: ``3``, ``0.81``, ``1.235e+04``, ``-``."""
    x = number(value)
    if x is None:
        return MISSING
    if x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    if abs(x) >= 1000:
        return f"{x:.4g}"
    return f"{x:.{digits}f}" if round(x, digits) != 0 else f"{0.0:.{digits}f}"


def format_fixed(value: Any, digits: int = 3) -> str:
    """Always ``digits`` decimals: ``-0.050``, ``0.271``, ``-``."""
    x = number(value)
    if x is None:
        return MISSING
    return f"{x:.{digits}f}" if round(x, digits) != 0 else f"{0.0:.{digits}f}"


def format_interval(low: Any, high: Any, digits: int = 2) -> str:
    """``[low, high]`` in :func:`format_number` cells, or ``-`` when either end is missing."""
    if number(low) is None or number(high) is None:
        return MISSING
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"
