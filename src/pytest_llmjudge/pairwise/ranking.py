"""A loaded ranking file: its systems, cases, recorded battles and assertions (plain frozen data).

Built by :func:`~pytest_llmjudge.pairwise.build.load_ranking`; checked by
:class:`~pytest_llmjudge.pairwise.evaluator.RankingEvaluator`. An assertion holds when its
observed value compares with its threshold as its operator says
(:data:`~pytest_llmjudge.pairwise.assertions.COMPARISONS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from pytest_llmjudge.pairwise.assertions import COMPARISONS, CheckKind
from pytest_llmjudge.pairwise.cases import RankedCase
from pytest_llmjudge.pairwise.pairwise_judge import (
    Battle,
    Outcome,
)
from pytest_llmjudge.pairwise.schema import (
    BootstrapConfig,
    PairwiseConfig,
    SurrogateConfig,
)
from pytest_llmjudge.suite.schema import JudgeConfig


@dataclass(frozen=True)
class RecordedBattle:
    """One recorded battle with each source's verdict (from ``system_a``'s side)."""

    index: int
    case: str
    language: str
    system_a: str
    system_b: str
    verdicts: Mapping[str, Outcome | None]
    votes: Mapping[str, tuple[Outcome, ...]] = field(default_factory=dict)
    battle_id: str | None = None


@dataclass(frozen=True)
class RankingAssertion:
    kind: CheckKind
    op: str
    value: float
    text: str
    a: str | None = None
    b: str | None = None
    source: str | None = None
    languages: tuple[str, ...] | None = None
    xfail: Mapping[str, str] = field(default_factory=dict)
    line: int | None = None

    @property
    def label(self) -> str:
        """Compact form for node ids: ``rank(x)<=2``, ``win_rate(x,y)>=0.5``."""
        args = ",".join(v for v in (self.a, self.b) if v is not None)
        head = f"{self.kind}({args})" if args else self.kind
        return f"{head}{self.op}{self.value:g}"

    def holds(self, observed: float) -> bool:
        return COMPARISONS[self.op](observed, self.value)


@dataclass(frozen=True)
class Ranking:
    name: str
    path: Path
    cases: tuple[RankedCase, ...]
    battles: tuple[RecordedBattle, ...]
    sources: tuple[str, ...]
    recorded_sources: tuple[str, ...]
    majority_sources: frozenset[str]
    primary: str
    assertions: tuple[RankingAssertion, ...]
    bootstrap: BootstrapConfig
    pairwise: PairwiseConfig
    prior: float = 0.1
    judge: JudgeConfig | None = None
    systems: tuple[str, ...] | None = None
    languages: tuple[str, ...] = ()
    surrogate: SurrogateConfig | None = None
    task: str | None = None
    description: str | None = None
    reversed_pairs: tuple[tuple[RecordedBattle, RecordedBattle], ...] = ()
    """Recorded battles shown in both orders (``verdicts.reversed_pair``): position bias only."""

    @property
    def live(self) -> bool:
        return self.judge is not None

    def system_order(self, names: Iterable[str]) -> list[str]:
        """``names`` restricted to ``systems`` (in its order) or sorted."""
        present = set(names)
        if self.systems is not None:
            return [s for s in self.systems if s in present]
        return sorted(present)

    def live_battles(self, language: str) -> list[Battle]:
        """Every pair of systems on every case of ``language``, for the live judge."""
        if not self.live:
            return []
        battles = []
        for case in self.cases:
            if case.language != language:
                continue
            systems = self.system_order(case.outputs)
            for first, second in combinations(systems, 2):
                battles.append(
                    Battle(
                        case=case.id,
                        language=language,
                        system_1=first,
                        system_2=second,
                        output_1=case.outputs[first],
                        output_2=case.outputs[second],
                        input=case.input,
                        reference=case.reference,
                        context=case.context,
                    )
                )
        return battles
