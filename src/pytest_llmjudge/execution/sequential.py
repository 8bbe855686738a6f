"""Sequential judging: judge an aggregate's cases in rounds and stop a group once its verdict is settled.

``--llmjudge-sequential`` (or a suite's ``sequential:`` setting). The cases of each aggregate
row (a group, or ``all``) are judged in one seeded random order, ``round`` cases per row per
round (the ``all`` row: ``round`` x its number of groups), every row's round at once (so a round costs about ``ceil(rows x round / concurrency)``
round trips). After each round every still-open row is checked with the anytime-valid betting
confidence sequence of Waudby-Smith and Ramdas (JRSS-B 2024; ``stats/betting.py``,
:func:`~pytest_llmjudge.stats.betting.betting_confidence_sequence`) at the row's own level
(95% two-sided, 2.5% per side, the level of the fixed-size ``lower``/``upper``), on the metric's
scale (``mean``) or on 0/1 passes (``pass_rate``). A row is settled, and not judged further, when

* its verdict is shown: for ``>=``/``>`` the sequence's lower bound holds the threshold, for
  ``<=``/``<`` its upper bound does (the row passes);
* or it can no longer be shown: the other bound misses it (the row fails).

Why it keeps its error rate under optional stopping: the sequence covers the true mean at
*every* round at once with probability 0.975 per side (Ville's inequality on the betting
capital), so a verdict read off it after any data-dependent number of rounds is wrong with
probability at most 2.5%, the one-sided level the fixed-size ``lower(...)`` states. Each row's
claim is its own, as in a full run, so alpha is not split across rows (a Bonferroni split would
make the sequential run stricter than the full run it replaces and flip verdicts; the family-wise
view belongs to the regression items). ``benchmarks/sequential.py`` measures it.

What the verdict of a row is in sequential mode:

* ``lower(...)``/``upper(...)`` rows: always the confidence sequence's (when the row ran to the
  end unsettled, its bound at n): a row that reaches its last case without the bound clearing
  fails. The sequence is wider than the fixed-size interval, so a borderline row that a full
  run passes by a hair can fail here: the price of being allowed to stop.
* plain ``mean``/``pass_rate`` rows (the point value): settled rows as above; a row that runs
  to the end is the full run's row (every case judged, the point value compared).
* not sequential (judged in full, as without the option): ``median``/``min``/``max``, the
  ``human_*`` statistics, a ``mean`` of a metric whose scale is unknown (no bounded mean),
  ``==``/``!=`` thresholds, and regression items (they plan their own calls).

Case items: a case with its own threshold is judged whatever the rows decide (per-case
thresholds are never dropped); a row whose cases all have one is judged as without the
option (``suite.items.judge_sequentially``). A row with an unscored case among the judged
ones stops being sequential and is judged in full (the full row's ``max_unscored_rate`` rules apply); a row is never settled before
``min_cases`` scored cases.

Order: a case's place is ``sha256(seed, case key)``, the same in every row it belongs to (so
the ``all`` row and a language row share their judged prefix), independent of the scores, the
same in every process (xdist workers, a re-run from the cache: same seed, same order, same
scores, same decisions).

Degenerate cases: a row without cases has nothing to judge (it is the full run's row);
``round`` must be at least 1; one case never settles a 95% row (``stats/betting.py``).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_llmjudge.stats.betting import betting_confidence_sequence, betting_sequence_extend

DEFAULT_ROUND = 20
DEFAULT_SEED = 0
CONFIDENCE = 0.95
"""The level of the aggregates' intervals (``suite/aggregate.py``): 2.5% per side."""

NOT_NEEDED = "not needed: "
"""How the reason of a case sequential judging never judged begins."""

SEQUENTIAL_STATS = frozenset({"mean", "pass_rate"})

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}


@dataclass(frozen=True)
class SequentialConfig:
    """How sequential judging runs: cases per row per round, and the order's seed."""

    round: int = DEFAULT_ROUND
    seed: int = DEFAULT_SEED


def order_key(seed: int, case_key: str) -> str:
    """A case's place in the seeded random order (module docstring, Order)."""
    return hashlib.sha256(f"{seed}\x00{case_key}".encode()).hexdigest()


@dataclass(frozen=True)
class Decision:
    """A row's state after a look: ``passed`` None while it is open."""

    passed: bool | None
    low: float
    high: float
    k: int
    """Scored cases the look used."""

    @property
    def settled(self) -> bool:
        return self.passed is not None


def decide(
    values: Sequence[float],
    op: str,
    threshold: float,
    scale: tuple[float, float],
    *,
    min_cases: int = 1,
    confidence: float = CONFIDENCE,
    previous: Decision | None = None,
) -> Decision:
    """Whether the confidence sequence of ``values`` (in their judged order) settles ``op threshold``.

    Passed when the bound on the side of the claim holds the threshold (lower for ``>=``/``>``,
    upper for ``<=``/``<``), failed when the other bound misses it, else open. The bounds are
    the running intersection, so a decision never changes as more values come. ``previous``:
    the decision of the look before on the first ``previous.k`` of these values (computes
    only the new times; the same bounds).
    """
    if op not in _OPERATORS:
        raise ValueError(f"sequential judging needs a one-sided threshold (>=, >, <=, <), got {op!r}")
    low_end, high_end = scale
    if not values:
        return Decision(None, low_end, high_end, 0)
    if previous is not None and 0 < previous.k <= len(values):
        # The look before covered the first k values: only the times after them are new.
        low, high = betting_sequence_extend(
            values, low_end, high_end, (previous.low, previous.high, previous.k), confidence=confidence
        )
    else:
        lows, highs = betting_confidence_sequence(values, low_end, high_end, confidence=confidence)
        low, high = float(lows[-1]), float(highs[-1])
    passed = settle(low, high, op, threshold) if len(values) >= min_cases else None
    return Decision(passed, low, high, len(values))


def settle(low: float, high: float, op: str, threshold: float) -> bool | None:
    """The rule on one look's bounds: True (shown), False (can't be shown any more) or None (open).

    The sequence at look t depends on the first t values only (predictable bets, a running
    intersection), so its value at every t can be read off one sequence of all the values:
    ``benchmarks/sequential.py`` simulates the rule that way.
    """
    holds = _OPERATORS[op]
    claim, other = (low, high) if op in (">=", ">") else (high, low)
    if holds(claim, threshold):
        return True
    if not holds(other, threshold):
        return False
    return None


@dataclass
class RowRun:
    """One aggregate row judged sequentially: its cases in order, what was judged, its decision."""

    name: str
    """The row's group name (``hi``, ``hi-task=qa``) or ``all``."""
    case_keys: list[str]
    """The row's cases, in the seeded order."""
    op: str
    threshold: float
    scale: tuple[float, float]
    min_cases: int = 1
    size: int = DEFAULT_ROUND
    """Cases per round."""
    judged: int = 0
    values: list[float] = field(default_factory=list)
    decision: Decision | None = None
    full: bool = False
    """Judged in full (an unscored case): no sequential verdict."""

    @property
    def open(self) -> bool:
        if self.judged >= len(self.case_keys):
            return False
        return self.full or not (self.decision is not None and self.decision.settled)

    def next_round(self) -> list[str]:
        """The next :attr:`size` cases to judge (all the rest once the row is judged in full)."""
        if self.full:
            return self.case_keys[self.judged :]
        return self.case_keys[self.judged : self.judged + self.size]

    def take(self, scores: Sequence[float | None]) -> None:
        """The scores of the cases :meth:`next_round` gave (None: unscored), then a new look."""
        self.judged += len(scores)
        if any(score is None for score in scores):
            self.full = True
        if self.full:
            return
        self.values.extend(float(score) for score in scores if score is not None)
        self.decision = decide(
            self.values, self.op, self.threshold, self.scale, min_cases=self.min_cases, previous=self.decision
        )

    @property
    def not_needed(self) -> list[str]:
        """The row's cases it never needed (its verdict settled first)."""
        return [] if self.full else self.case_keys[self.judged :]

    @property
    def reason(self) -> str:
        return f"{NOT_NEEDED}verdict settled after {self.judged} of {len(self.case_keys)}"


def run_rounds(
    rows: Sequence[RowRun],
    judge: Callable[[list[tuple[RowRun, list[str]]]], list[list[float | None]]],
) -> int:
    """Judge ``rows`` in rounds until every row is settled or judged in full; returns the rounds.

    ``judge`` gets one round (each open row and its next cases), sends them all at once and
    returns each row's scores in order (None for an unscored case).
    """
    for row in rows:
        if row.size < 1:
            raise ValueError(f"a round needs at least 1 case, got {row.size}")
    rounds = 0
    while True:
        batch = [(row, row.next_round()) for row in rows if row.open]
        if not batch:
            return rounds
        rounds += 1
        for (row, _), scores in zip(batch, judge(batch), strict=True):
            row.take(scores)
