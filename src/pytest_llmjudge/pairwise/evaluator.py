"""The checks of one ranking: leaderboards per source and language, then each assertion's verdict.

Degenerate cases, all failing the item rather than passing it: a system named in an
assertion that has no battle in the language; a comparison graph that is disconnected, in
the data or in a bootstrap resample (Bradley-Terry strengths of separate groups share no
scale); no battle with verdicts from both sources; fewer than three common systems for a
Kendall tau. Unjudged live battles (provider failure, unparseable reply) are left out and
counted; a language with any is reported as such, never silently.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from pytest_llmjudge.pairwise.cases import Matchup
from pytest_llmjudge.pairwise.leaderboard import (
    AgreementResult,
    Leaderboard,
    annotator_agreement,
    fit_leaderboard,
)
from pytest_llmjudge.pairwise.pairwise_judge import (
    BattleResult,
    OrderMode,
    Outcome,
    PositionBias,
    position_bias,
    recorded_position_bias,
)
from pytest_llmjudge.pairwise.ranking import Ranking
from pytest_llmjudge.pairwise.schema import (
    LIVE_SOURCE,
)
from pytest_llmjudge.stats.proportion import wilson_interval


class RankingEvaluator:
    """Fits and checks of one ranking; ``live(language)`` gives the live judge's battle results."""

    def __init__(self, ranking: Ranking, live: Callable[[str], Sequence[BattleResult]] | None = None) -> None:
        self.ranking = ranking
        self.live = live
        self._boards: dict[tuple[str, str], Leaderboard] = {}
        self._surrogates: dict[str, Any] = {}

    def live_results(self, language: str) -> Sequence[BattleResult]:
        if self.live is None:
            return []
        return self.live(language)

    def matchups(self, source: str, language: str) -> dict[str, list[Matchup]]:
        by_case: dict[str, list[Matchup]] = defaultdict(list)
        if source == LIVE_SOURCE:
            for result in self.live_results(language):
                if result.outcome is not None:
                    live = result.battle
                    by_case[live.case].append((live.system_1, live.system_2, result.outcome))
            return dict(by_case)
        for battle in self.ranking.battles:
            verdict = battle.verdicts.get(source)
            if battle.language == language and verdict is not None:
                by_case[battle.case].append((battle.system_a, battle.system_b, verdict))
        return dict(by_case)

    def leaderboard(self, source: str, language: str) -> Leaderboard:
        key = (source, language)
        if key not in self._boards:
            board = fit_leaderboard(
                source,
                language,
                self.matchups(source, language),
                bootstrap=self.ranking.bootstrap,
                prior=self.ranking.prior,
                order=self.ranking.systems,
            )
            if source == LIVE_SOURCE:
                unjudged = [r for r in self.live_results(language) if r.outcome is None]
                board.n_unjudged = len(unjudged)
                board.unjudged_examples = tuple(
                    f"{r.battle.case} {r.battle.system_1} vs {r.battle.system_2}: {r.error}" for r in unjudged[:3]
                )
            self._boards[key] = board
        return self._boards[key]

    def _oriented(self, source: str, language: str) -> dict[tuple[Any, ...], Outcome]:
        """Verdicts keyed by battle; recorded ones by record, live ones by (case, systems)."""
        keyed: dict[tuple[Any, ...], Outcome] = {}
        if source == LIVE_SOURCE:
            for result in self.live_results(language):
                if result.outcome is not None:
                    b = result.battle
                    keyed[("pair", b.case, b.system_1, b.system_2)] = result.outcome
            return keyed
        for battle in self.ranking.battles:
            verdict = battle.verdicts.get(source)
            if battle.language == language and verdict is not None:
                keyed[("record", battle.index)] = verdict
        return keyed

    def agreement(self, first: str, second: str, language: str) -> AgreementResult:
        if LIVE_SOURCE in (first, second) and first != second:
            # Live verdicts are keyed by (case, systems); map recorded battles onto them.
            live = self._oriented(LIVE_SOURCE, language)
            other = second if first == LIVE_SOURCE else first
            pairs: list[tuple[Outcome, Outcome]] = []
            excluded = 0
            for recorded in self.ranking.battles:
                if recorded.language != language:
                    continue
                verdict = recorded.verdicts.get(other)
                forward = live.get(("pair", recorded.case, recorded.system_a, recorded.system_b))
                backward = live.get(("pair", recorded.case, recorded.system_b, recorded.system_a))
                mine = forward if forward is not None else _flip(backward)
                if mine is None:
                    continue
                if verdict is None:
                    excluded += 1
                    continue
                pairs.append((mine, verdict) if first == LIVE_SOURCE else (verdict, mine))
        else:
            a, b = self._oriented(first, language), self._oriented(second, language)
            union = set(a) | set(b)
            pairs = [(a[k], b[k]) for k in sorted(union, key=repr) if k in a and k in b]
            excluded = len(union) - len(pairs)
        agree = sum(x == y for x, y in pairs)
        low, high = wilson_interval(agree, len(pairs))
        ceiling_votes = [
            battle.votes[s]
            for battle in self.ranking.battles
            if battle.language == language
            for s in (first, second)
            if s in self.ranking.majority_sources and s in battle.votes
        ]
        confusion = Counter(f"{x}/{y}" for x, y in pairs)
        return AgreementResult(
            n=len(pairs),
            agree=agree,
            rate=agree / len(pairs) if pairs else None,
            ci_low=low if pairs else None,
            ci_high=high if pairs else None,
            excluded=excluded,
            human_ceiling=annotator_agreement(ceiling_votes),
            confusion=dict(sorted(confusion.items())),
        )

    def position_bias(self, language: str, source: str | None = None) -> PositionBias:
        """The live judge's position bias, or with ``source`` a recorded source's, from the
        reversed pairs (``pairwise.pairwise_judge.recorded_position_bias``)."""
        if source is not None:
            return recorded_position_bias(
                ((x.system_a, x.system_b, x.verdicts.get(source)), (y.system_a, y.system_b, y.verdicts.get(source)))
                for x, y in self.ranking.reversed_pairs
                if x.language == language
            )
        order: OrderMode = self.ranking.pairwise.order
        return position_bias(self.live_results(language), order)

    def surrogate(self, language: str) -> Any:
        from pytest_llmjudge.pairwise.surrogate import run_surrogate

        if language not in self._surrogates:
            assert self.ranking.surrogate is not None
            source = self.ranking.surrogate.source or self.ranking.primary
            self._surrogates[language] = run_surrogate(
                self.ranking.cases,
                language,
                self.matchups(source, language),
                self.ranking.surrogate,
                source=source,
                prior=self.ranking.prior,
                systems=self.ranking.systems,
            )
        return self._surrogates[language]


def _flip(outcome: Outcome | None) -> Outcome | None:
    if outcome is None or outcome == "tie":
        return outcome
    return "B" if outcome == "A" else "A"
