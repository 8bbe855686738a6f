"""The assertion language of ranking files: what each check means and how its text is read.

Checks are asserted per language:

    ``rank(S) <= k`` (or ``S ranks <= k``)
        the rank of system S in the point fit, 1 for the strongest (``<= 2``: top two).
    ``win_rate(S, T) >= x`` (or ``S beats T with win rate >= x``)
        the model probability that S beats T, ``sigmoid(theta_S - theta_T)`` (Bradley-Terry,
        Hunter 2004), with its bootstrap interval; the raw head-to-head record is reported.
    ``agreement(P, Q) >= x``
        share of battles where sources P and Q give the same verdict (A, B or tie), over
        the battles where both have one (a source combined by majority has no verdict on a
        battle without a strict majority: PARIKSHA's convention, Watts et al. 2024), with a
        Wilson score interval. When one source is an annotator majority, the annotators'
        own pairwise agreement is reported beside it as the human ceiling.
    ``kendall_tau(P, Q) >= x``
        Kendall's tau-b between the two sources' Bradley-Terry strengths over the systems
        both rank (MIRAGE-BENCH's agreement measure between leaderboards, sec. 6.2, Table 2).
    ``position_bias <= x``
        the live judge's position-bias rate (``pairwise.pairwise_judge``).
    ``surrogate_tau >= x``
        Kendall's tau of the heuristic surrogate on held-out cases (``pairwise.surrogate``).

:func:`parse_assertion` reads one assertion (the long and the short form of each check,
names quoted or bare, spaces free) into ``(kind, a, b, op, value)``; anything else is a
ValueError listing the accepted forms. ``COMPARISONS`` maps each operator to its test
(``==`` compares with ``math.isclose``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Literal

CheckKind = Literal["rank", "win_rate", "agreement", "kendall_tau", "position_bias", "surrogate_tau"]

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: math.isclose(a, b),
}
_NAME = r"(?:'[^']+'|\"[^\"]+\"|[^\s,()'\"]+)"
_OP = r"(?P<op>>=|<=|==|>|<)"
_NUM = r"(?P<value>[-+]?(?:\d+(?:\.\d*)?|\.\d+))"
_PATTERNS: tuple[tuple[CheckKind, re.Pattern[str]], ...] = (
    ("rank", re.compile(rf"^rank\(\s*(?P<a>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("rank", re.compile(rf"^(?P<a>{_NAME})\s+ranks\s*{_OP}\s*{_NUM}$")),
    ("win_rate", re.compile(rf"^win_rate\(\s*(?P<a>{_NAME})\s*,\s*(?P<b>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("win_rate", re.compile(rf"^(?P<a>{_NAME})\s+beats\s+(?P<b>{_NAME})\s+with\s+win\s+rate\s*{_OP}\s*{_NUM}$")),
    ("agreement", re.compile(rf"^agreement\(\s*(?P<a>{_NAME})\s*,\s*(?P<b>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("kendall_tau", re.compile(rf"^kendall_tau\(\s*(?P<a>{_NAME})\s*,\s*(?P<b>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("position_bias", re.compile(rf"^position_bias\s*{_OP}\s*{_NUM}$")),
    ("position_bias", re.compile(rf"^position_bias\(\s*(?P<a>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("surrogate_tau", re.compile(rf"^surrogate_tau\s*{_OP}\s*{_NUM}$")),
)


def _unquote(name: str) -> str:
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"" else name


def parse_assertion(text: str) -> tuple[CheckKind, str | None, str | None, str, float]:
    """``(kind, a, b, op, value)`` of an assertion, or ValueError naming the accepted forms."""
    stripped = " ".join(text.split())
    for kind, pattern in _PATTERNS:
        match = pattern.match(stripped)
        if match:
            groups = match.groupdict()
            a = _unquote(groups["a"]) if groups.get("a") else None
            b = _unquote(groups["b"]) if groups.get("b") else None
            return kind, a, b, groups["op"], float(groups["value"])
    raise ValueError(
        f"can't read assertion {text!r}; use rank(S) <= k, S ranks <= k, win_rate(S, T) >= x, "
        "S beats T with win rate >= x, agreement(P, Q) >= x, kendall_tau(P, Q) >= x, "
        "position_bias <= x or surrogate_tau >= x"
    )
