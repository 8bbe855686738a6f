"""Pairwise judging with position-bias control: which slot each system is shown in, and what it cost.

What it is
    A pairwise judge reads two answers, shown as A and B, and names the better one. LLM
    judges prefer one position regardless of content (position bias; MIRAGE-BENCH sec. 4.2,
    citing Zheng et al. 2023 and Wang et al. 2024), so a comparison of systems 1 and 2 that
    always shows system 1 first measures the slot as much as the systems. Three orders:

    * ``random`` (default; MIRAGE-BENCH sec. 4.2, "randomly swapping the position of two
      models"): each battle is shown once, swapped or not by a coin derived from the
      recorded ``seed`` and the battle's identity::

          swapped = sha256(f"{seed}|{case}|{system_1}|{system_2}")[0] is odd

      so the order is random across battles but the same on every run (and so cached);
      with many battles a slot preference adds as many wins to every system as it takes
      away, instead of favouring whichever system is listed first.
    * ``both`` (Zheng et al. 2023, the "swap" check MIRAGE-BENCH cites): each battle is
      asked in both orders; when the two verdicts, mapped back to the systems, disagree the
      battle counts as a ``tie`` and as ``inconsistent``.
    * ``fixed``: system 1 always in slot A; only useful to demonstrate the bias.

Verdicts
    A slot verdict maps back to the systems: unswapped, ``A`` means system 1 won; swapped,
    ``A`` means system 2 won. Battle outcomes are from system 1's side: ``"A"`` (system 1
    wins), ``"B"`` (system 2 wins) or ``"tie"`` -- the labels
    :func:`~pytest_llmjudge.stats.bradley_terry.fit_bradley_terry` reads.

Position-bias statistics (:func:`position_bias`)
    * ``first_slot_rate``: share of decisive (non-tie) slot verdicts that named slot A, with
      a two-sided exact binomial test against 1/2. With a randomised order the better
      answer is in slot A half of the time, so an unbiased judge gives about 1/2.
    * ``position_bias_rate``, how often the verdict follows the slot. With both orders it is
      measured directly: the share of battles whose two verdicts named the *same slot*
      (A then A, or B then B), i.e. the judge picked the position, not the answer. With one
      randomised order it is estimated: if a share ``beta`` of decisive verdicts pick slot A
      whatever the content and the rest pick the better answer, which is in slot A with
      probability 1/2, then ``first_slot_rate = beta + (1 - beta) / 2``, so
      ``beta = |2 * first_slot_rate - 1|`` (a preference for slot B counts the same way).
      With ``fixed`` order slot and system are confounded and the estimate means nothing;
      it is reported with that note.
    * ``inconsistent_rate`` (both orders only): share of battles whose verdicts disagree
      once mapped back to the systems.

Degenerate cases: a battle whose call failed or stayed unparseable after the re-asks has no
outcome (``error`` set) and is left out of the ranking and counted as unjudged, never turned
into a tie; with no decisive verdict the rates are ``None``.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_llmjudge.execution.runner import CallResult, JudgeRunner
from pytest_llmjudge.execution.xdist_sharing import WorkerShare
from pytest_llmjudge.judges.base import JudgeProvider, ProviderRequest
from pytest_llmjudge.judges.prompts import JudgeSettings
from pytest_llmjudge.pairwise.prompts import (
    PairwiseText,
    SlotJudgment,
    SlotVerdict,
    build_pairwise_request,
    parse_pairwise_reply,
)

OrderMode = Literal["random", "both", "fixed"]
Outcome = Literal["A", "B", "tie"]


@dataclass(frozen=True)
class Battle:
    """Two systems' outputs on one case; outcomes are from ``system_1``'s side."""

    case: str
    language: str
    system_1: str
    system_2: str
    output_1: str
    output_2: str
    input: str | None = None
    reference: str | None = None
    context: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Identity of the battle (case ids are unique within a language only)."""
        return (self.language, self.case, self.system_1, self.system_2)


@dataclass(frozen=True)
class Presentation:
    """One request of a battle: the order shown and the judge's slot verdict."""

    swapped: bool
    slot_verdict: SlotVerdict | None
    justification: str = ""
    error: str | None = None
    cached: bool | None = None

    @property
    def outcome(self) -> Outcome | None:
        """The slot verdict mapped back to the systems (system 1's side)."""
        if self.slot_verdict is None or self.slot_verdict == "tie":
            return self.slot_verdict
        if not self.swapped:
            return self.slot_verdict
        return "B" if self.slot_verdict == "A" else "A"


@dataclass(frozen=True)
class BattleResult:
    battle: Battle
    outcome: Outcome | None
    presentations: tuple[Presentation, ...]
    inconsistent: bool = False
    error: str | None = None

    @property
    def cached(self) -> bool:
        return all(p.cached for p in self.presentations)


def is_swapped(seed: int, case: str, system_1: str, system_2: str) -> bool:
    """The recorded coin of ``order: random``: whether system 2 is shown in slot A."""
    digest = hashlib.sha256(f"{seed}|{case}|{system_1}|{system_2}".encode()).digest()
    return bool(digest[0] & 1)


def presentations_of(order: OrderMode, seed: int, battle: Battle) -> tuple[bool, ...]:
    """The ``swapped`` flag of every request a battle needs under ``order``."""
    if order == "fixed":
        return (False,)
    if order == "both":
        return (False, True)
    return (is_swapped(seed, battle.case, battle.system_1, battle.system_2),)


def combine(battle: Battle, presentations: Sequence[Presentation]) -> BattleResult:
    """One battle's outcome from its presentations (disagreeing orders make a tie)."""
    errors = [p.error for p in presentations if p.error is not None]
    if errors:
        return BattleResult(battle, None, tuple(presentations), error="; ".join(dict.fromkeys(errors)))
    outcomes = {p.outcome for p in presentations}
    if len(outcomes) == 1:
        (only,) = outcomes
        return BattleResult(battle, only, tuple(presentations))
    return BattleResult(battle, "tie", tuple(presentations), inconsistent=True)


@dataclass(frozen=True)
class PositionBias:
    """See the module docstring for each number; ``None`` when undefined."""

    requests: int
    decisive: int
    first_slot: int
    first_slot_rate: float | None
    binomial_p: float | None
    position_bias_rate: float | None
    measured: bool
    """True when ``position_bias_rate`` was measured with both orders, False when estimated."""
    battles_both_orders: int = 0
    inconsistent: int = 0
    inconsistent_rate: float | None = None
    note: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    """95% Wilson interval of a *measured* ``position_bias_rate`` (over battles judged in both orders)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "decisive": self.decisive,
            "first_slot": self.first_slot,
            "first_slot_rate": self.first_slot_rate,
            "binomial_p": self.binomial_p,
            "position_bias_rate": self.position_bias_rate,
            "measured": self.measured,
            "battles_both_orders": self.battles_both_orders,
            "inconsistent": self.inconsistent,
            "inconsistent_rate": self.inconsistent_rate,
            "note": self.note,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def position_bias(results: Iterable[BattleResult], order: OrderMode) -> PositionBias:
    """Position-bias statistics of judged battles (module docstring)."""
    requests = decisive = first = 0
    both = inconsistent = slot_following = 0
    for result in results:
        shown = [p for p in result.presentations if p.slot_verdict is not None]
        requests += len(shown)
        for p in shown:
            if p.slot_verdict != "tie":
                decisive += 1
                first += p.slot_verdict == "A"
        if len(result.presentations) == 2 and result.error is None:
            both += 1
            inconsistent += result.inconsistent
            slots = {p.slot_verdict for p in result.presentations}
            if len(slots) == 1 and slots != {"tie"}:
                slot_following += 1
    rate = first / decisive if decisive else None
    p_value = None
    if decisive:
        # The exact two-sided binomial test at 1/2 (scipy.stats.binomtest's p-value; by symmetry
        # twice the smaller tail) from scipy.special, whose import costs far less than scipy.stats'.
        from scipy.special import bdtr

        p_value = min(1.0, 2.0 * float(bdtr(min(first, decisive - first), decisive, 0.5)))
    if order == "both":
        from pytest_llmjudge.stats.proportion import wilson_interval

        bias = slot_following / both if both else None
        low, high = wilson_interval(slot_following, both)
        return PositionBias(
            requests,
            decisive,
            first,
            rate,
            p_value,
            bias,
            True,
            both,
            inconsistent,
            inconsistent / both if both else None,
            ci_low=low if both else None,
            ci_high=high if both else None,
        )
    note = "fixed order: slot and system are confounded, the estimate is not meaningful" if order == "fixed" else None
    return PositionBias(
        requests, decisive, first, rate, p_value, None if rate is None else abs(2 * rate - 1), False, note=note
    )


ShownVerdict = tuple[str, str, Outcome | None]
"""One recorded presentation: (system in slot A, system in slot B, the slot verdict)."""


def recorded_position_bias(pairs: Iterable[tuple[ShownVerdict, ShownVerdict]]) -> PositionBias:
    """Position bias of recorded verdicts, from pairs judged in both orders (reversed duplicates).

    Each pair is the same two systems on the same case, shown once each way round. It is
    read as one battle asked in both orders, so the statistics are :func:`position_bias`'s
    with ``order: both``: ``position_bias_rate`` is the share of pairs whose two verdicts
    named the same slot (A then A, or B then B), with its Wilson interval. A pair with a
    missing verdict on either side is left out.
    """
    results = []
    for first, second in pairs:
        if first[2] is None or second[2] is None:
            continue
        if (first[0], first[1]) != (second[1], second[0]):
            raise ValueError(f"not a reversed pair: {first[:2]} and {second[:2]}")
        battle = Battle("", "", first[0], first[1], "", "")
        shown = (Presentation(swapped=False, slot_verdict=first[2]), Presentation(swapped=True, slot_verdict=second[2]))
        results.append(combine(battle, shown))
    return position_bias(results, "both")


class PairwiseJudge:
    """Submits a ranking's battles to the judge runner and collects their results.

    ``share`` (pytest-xdist): calls are partitioned between workers like rubric calls are
    (``execution.xdist_sharing``); eager submission makes only this worker's calls, a later
    :meth:`result` waits for another worker's reply through the cache.
    """

    def __init__(
        self,
        runner: JudgeRunner,
        provider: JudgeProvider,
        settings: JudgeSettings,
        *,
        order: OrderMode = "random",
        seed: int = 0,
        max_reasks: int = 2,
        task: str | None = None,
        criteria: str | None = None,
        share: WorkerShare | None = None,
    ) -> None:
        self.runner = runner
        self.provider = provider
        self.settings = settings
        self.order: OrderMode = order
        self.seed = seed
        self.max_reasks = max_reasks
        self.task = task
        self.criteria = criteria
        self.share = share
        self._futures: dict[tuple[str, str, str, str, bool], concurrent.futures.Future[CallResult[SlotJudgment]]] = {}

    def _text(self, battle: Battle, swapped: bool) -> PairwiseText:
        first, second = (battle.output_2, battle.output_1) if swapped else (battle.output_1, battle.output_2)
        return PairwiseText(
            language=battle.language,
            answer_a=first,
            answer_b=second,
            input=battle.input,
            reference=battle.reference,
            context=battle.context,
        )

    def _unsent(
        self, battles: Iterable[Battle], *, eager: bool
    ) -> Iterator[tuple[tuple[str, str, str, str, bool], ProviderRequest, bool]]:
        """The presentations of ``battles`` not submitted yet: key, request, whether another
        xdist worker makes the call (left out when ``eager``: only this worker's calls)."""
        for battle in battles:
            for swapped in presentations_of(self.order, self.seed, battle):
                key = (*battle.key, swapped)
                if key in self._futures:
                    continue
                owner_elsewhere = self.share is not None and not self.share.owns(repr(("pairwise", *key)))
                if eager and owner_elsewhere:
                    continue
                request = build_pairwise_request(
                    self._text(battle, swapped), self.settings, task=self.task, criteria=self.criteria
                )
                yield key, request, owner_elsewhere

    def planned_requests(self, battles: Iterable[Battle]) -> list[ProviderRequest]:
        """The requests this process would make for ``battles`` (batch mode sends them first;
        their replies reach :meth:`submit` through the cache)."""
        return [request for _, request, _ in self._unsent(battles, eager=True)]

    def submit(self, battles: Iterable[Battle], *, eager: bool = False) -> int:
        """Submit the requests of ``battles`` not submitted yet; returns how many were."""
        count = 0
        for key, request, owner_elsewhere in self._unsent(battles, eager=eager):
            self._futures[key] = self.runner.submit_call(
                self.provider,
                request,
                parse_pairwise_reply,
                max_reasks=self.max_reasks,
                owner_elsewhere=owner_elsewhere,
            )
            count += 1
        return count

    def result(self, battle: Battle) -> BattleResult:
        """The battle's outcome; blocks until its requests are answered."""
        self.submit([battle])
        shown = []
        for swapped in presentations_of(self.order, self.seed, battle):
            future = self._futures[(*battle.key, swapped)]
            try:
                call = future.result()
            except concurrent.futures.CancelledError:
                shown.append(Presentation(swapped, None, error="the judge call was cancelled"))
                continue
            if call.value is None:
                shown.append(Presentation(swapped, None, error=call.error or "no verdict", cached=call.cached))
            else:
                shown.append(Presentation(swapped, call.value.verdict, call.value.justification, cached=call.cached))
        return combine(battle, shown)
