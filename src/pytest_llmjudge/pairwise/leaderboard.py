"""Leaderboards: Bradley-Terry standings per source and language, and the agreement statistics.

:func:`fit_leaderboard` fits a Bradley-Terry model to a language's battles and bootstraps
it over cases (a case is resampled with all its battles); :func:`kendall_between` compares
two leaderboards' strengths; :func:`annotator_agreement` and :func:`majority_verdict` are
the human side (pooled pairwise agreement; PARIKSHA's strict-majority rule).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from pytest_llmjudge.pairwise.cases import Matchup
from pytest_llmjudge.pairwise.pairwise_judge import (
    Outcome,
)
from pytest_llmjudge.pairwise.schema import (
    BootstrapConfig,
)


def majority_verdict(votes: Sequence[Outcome]) -> Outcome | None:
    """The verdict more than half of the annotators gave, or None (PARIKSHA's rule)."""
    if not votes:
        return None
    label, count = Counter(votes).most_common(1)[0]
    return label if 2 * count > len(votes) else None


@dataclass(frozen=True)
class Standing:
    system: str
    rank: int
    strength: float
    ci_low: float
    ci_high: float
    rank_ci_low: int
    rank_ci_high: int
    wins: float
    losses: float
    ties: float
    games: int


@dataclass
class Leaderboard:
    """Bradley-Terry fit of one source in one language, bootstrapped over cases."""

    source: str
    language: str
    systems: tuple[str, ...] = ()
    standings: tuple[Standing, ...] = ()
    n_cases: int = 0
    n_battles: int = 0
    n_unjudged: int = 0
    resamples: int = 0
    confidence: float = 0.95
    seed: int = 0
    error: str | None = None
    strength_samples: np.ndarray[Any, np.dtype[np.float64]] | None = None
    head_to_head: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    unjudged_examples: tuple[str, ...] = ()

    def standing(self, system: str) -> Standing | None:
        return next((s for s in self.standings if s.system == system), None)

    def win_rate(self, a: str, b: str) -> tuple[float, float, float]:
        """Model probability that ``a`` beats ``b`` with its bootstrap percentile interval."""
        from scipy.special import expit

        first, second = self.standing(a), self.standing(b)
        assert first is not None and second is not None and self.strength_samples is not None
        i, j = self.systems.index(a), self.systems.index(b)
        samples = expit(self.strength_samples[:, i] - self.strength_samples[:, j])
        tail = (1 - self.confidence) / 2
        low, high = np.quantile(samples, [tail, 1 - tail])
        return float(expit(first.strength - second.strength)), float(low), float(high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "systems": [
                {
                    "name": s.system,
                    "rank": s.rank,
                    "strength": s.strength,
                    "ci_low": s.ci_low,
                    "ci_high": s.ci_high,
                    "rank_ci": [s.rank_ci_low, s.rank_ci_high],
                    "wins": s.wins,
                    "losses": s.losses,
                    "ties": s.ties,
                    "games": s.games,
                }
                for s in self.standings
            ],
            "n_cases": self.n_cases,
            "n_battles": self.n_battles,
            "n_unjudged": self.n_unjudged,
            "resamples": self.resamples,
            "confidence": self.confidence,
            "seed": self.seed,
            "error": self.error,
        }


def fit_leaderboard(
    source: str,
    language: str,
    by_case: Mapping[str, Sequence[Matchup]],
    *,
    bootstrap: BootstrapConfig,
    prior: float,
    order: Sequence[str] | None = None,
) -> Leaderboard:
    """Bradley-Terry strengths with bootstrap intervals from matchups grouped by case."""
    from pytest_llmjudge.errors import StatisticsError
    from pytest_llmjudge.pairwise.bootstrap import bootstrap_leaderboard

    cases = [case for case in sorted(by_case) if by_case[case]]
    seen = {s for case in cases for m in by_case[case] for s in m[:2]}
    systems = tuple(s for s in order if s in seen) if order is not None else tuple(sorted(seen))
    board = Leaderboard(source, language, systems, n_cases=len(cases), n_battles=sum(len(by_case[c]) for c in cases))
    if len(systems) < 2:
        board.error = f"fewer than two systems have {source} verdicts in {language}"
        return board
    index = {s: i for i, s in enumerate(systems)}
    record: dict[str, list[float]] = {s: [0.0, 0.0, 0.0] for s in systems}
    head: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for case in cases:
        for first, second, outcome in by_case[case]:
            points = {"A": 1.0, "B": 0.0, "tie": 0.5}[outcome]
            for me, other, mine in ((first, second, points), (second, first, 1 - points)):
                record[me][0 if mine == 1 else 1 if mine == 0 else 2] += 1
                head[(me, other)][0] += mine
                head[(me, other)][1] += 1
    matchups = [[(index[a], index[b], outcome) for a, b, outcome in by_case[case]] for case in cases]
    try:
        result = bootstrap_leaderboard(
            matchups, len(systems), bootstrap.resamples, bootstrap.seed, confidence=bootstrap.confidence, prior=prior
        )
    except StatisticsError as exc:
        board.error = str(exc)
        return board
    ranks = result.point.ranks()
    standings = [
        Standing(
            system=s,
            rank=int(ranks[i]),
            strength=float(result.point.strengths[i]),
            ci_low=float(result.strength_ci_low[i]),
            ci_high=float(result.strength_ci_high[i]),
            rank_ci_low=int(result.rank_ci_low[i]),
            rank_ci_high=int(result.rank_ci_high[i]),
            wins=record[s][0],
            losses=record[s][1],
            ties=record[s][2],
            games=int(sum(record[s])),
        )
        for i, s in enumerate(systems)
    ]
    board.standings = tuple(sorted(standings, key=lambda s: (s.rank, s.system)))
    board.resamples, board.confidence, board.seed = result.resamples, result.confidence, result.seed
    board.strength_samples = result.strength_samples
    board.head_to_head = {pair: (value[0], int(value[1])) for pair, value in head.items()}
    return board


@dataclass(frozen=True)
class AgreementResult:
    n: int
    agree: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    excluded: int
    """Battles where one of the sources has no verdict (e.g. no annotator majority)."""
    human_ceiling: float | None = None
    """Pairwise agreement of the annotators of a majority source, pooled over battles."""
    confusion: Mapping[str, int] = field(default_factory=dict)


def annotator_agreement(votes: Iterable[Sequence[Outcome]]) -> float | None:
    """Share of agreeing annotator pairs, pooled over battles with at least two annotators."""
    agree = pairs = 0
    for battle_votes in votes:
        for x, y in combinations(battle_votes, 2):
            pairs += 1
            agree += x == y
    return agree / pairs if pairs else None


def kendall_between(first: Leaderboard, second: Leaderboard) -> tuple[float | None, float | None, int, str | None]:
    """Kendall tau-b (and p) between two leaderboards' strengths over their common systems."""
    from pytest_llmjudge.stats.correlation import correlations

    common = [s for s in first.systems if s in second.systems]
    x = [first.standing(s).strength for s in common]  # type: ignore[union-attr]
    y = [second.standing(s).strength for s in common]  # type: ignore[union-attr]
    result = correlations(x, y)
    if not result.defined:
        return None, None, result.n, result.reason
    return result.kendall, result.kendall_p, result.n, None
