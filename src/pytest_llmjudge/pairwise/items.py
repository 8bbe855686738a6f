"""Ranking files as pytest items: leaderboards, surrogate rankings and ranking assertions.

A YAML file with a top-level ``ranking:`` key (``pairwise.schema``) becomes a
:class:`RankingFile` with, per language:

* ``leaderboard[<source>-<lang>]``: the Bradley-Terry leaderboard of one verdict source,
  with bootstrap intervals (fails when it can't be fitted); for the live judge it also
  reports the position-bias statistics (``pairwise.pairwise_judge``);
* ``surrogate[<source>-<lang>]`` with a ``surrogate:`` section (``pairwise.surrogate``);
* one item per assertion, e.g. ``rank(sysA)<=2[judge-hi]``, ``agreement(gpt4,human)>=0.75[hi]``;
  an assertion's ``xfail: {lang: reason}`` marks that language's item as a strict xfail.

:class:`RankingRun` is one file's runtime: its evaluator and, for a live judge, its battles,
which ``pairwise/run_phase.py`` submits after collection; items block on their language's
battles. Without credentials for the judge, items that need it are skipped (failed with
``--llmjudge-require-judge``); items on recorded verdicts still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.errors import RankingFailure
from pytest_llmjudge.session.item_base import InvalidFileItem, LLMJudgeItem, record
from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
from pytest_llmjudge.session.state import scorer_key
from pytest_llmjudge.util.formatting import format_fixed

if TYPE_CHECKING:
    from pytest_llmjudge.judges.base import JudgeProvider, ProviderRequest
    from pytest_llmjudge.pairwise.evaluator import RankingEvaluator
    from pytest_llmjudge.pairwise.leaderboard import Leaderboard
    from pytest_llmjudge.pairwise.pairwise_judge import BattleResult, PairwiseJudge
    from pytest_llmjudge.pairwise.ranking import Ranking, RankingAssertion
    from pytest_llmjudge.records import Battle, ItemRecord

_TABLE_ROWS = 12
MAX_BATTLES_RECORDED = 5000
"""Live battles kept in a leaderboard's record (order shown, verdicts), for reports."""


def _battle(result: BattleResult) -> Battle:
    from pytest_llmjudge.records import Battle

    b = result.battle
    return Battle(
        case=b.case,
        system_1=b.system_1,
        system_2=b.system_2,
        shown_first=[b.system_2 if p.swapped else b.system_1 for p in result.presentations],
        slot_verdicts=[p.slot_verdict for p in result.presentations],
        outcome=result.outcome,
        inconsistent=result.inconsistent,
        error=result.error,
        cached=result.cached,
    )


class RankingRun:
    """The runtime of one ranking file: its evaluator and, for a live judge, its battles."""

    def __init__(self, ranking: Ranking, config: pytest.Config) -> None:
        from pytest_llmjudge.pairwise.evaluator import RankingEvaluator

        self.ranking = ranking
        self.config = config
        self.judge: PairwiseJudge | None = None
        self.judge_problem: str | None = None
        self.judge_label: str | None = None
        self._live: dict[str, list[BattleResult]] = {}
        if ranking.live:
            assert ranking.judge is not None
            board = config.stash[scorer_key]
            self.judge_problem = board.judge_problem(ranking.judge)
            self.judge_label = board.judge_settings(ranking.judge).label
        self.evaluator: RankingEvaluator = RankingEvaluator(ranking, self.live if ranking.live else None)

    def pairwise_judge(self) -> PairwiseJudge:
        if self.judge is None:
            from pytest_llmjudge.pairwise.pairwise_judge import PairwiseJudge

            board = self.config.stash[scorer_key]
            assert self.ranking.judge is not None
            self.judge = PairwiseJudge(
                board.runner,
                board.provider_for(self.ranking.judge),
                board.judge_settings(self.ranking.judge),
                order=self.ranking.pairwise.order,
                seed=self.ranking.pairwise.seed,
                max_reasks=self.ranking.judge.max_reasks,
                task=self.ranking.task,
                criteria=self.ranking.pairwise.criteria,
                share=board.share,
            )
        return self.judge

    def plan(self, languages: set[str]) -> int:
        if not self.ranking.live or self.judge_problem is not None:
            return 0
        judge = self.pairwise_judge()
        return judge.submit((b for lang in sorted(languages) for b in self.ranking.live_battles(lang)), eager=True)

    def planned_requests(self, languages: set[str]) -> list[tuple[JudgeProvider, ProviderRequest]]:
        """The live judge's requests for the battles of ``languages`` (none without a usable judge)."""
        if not self.ranking.live or self.judge_problem is not None:
            return []
        judge = self.pairwise_judge()
        battles = (b for lang in sorted(languages) for b in self.ranking.live_battles(lang))
        return [(judge.provider, request) for request in judge.planned_requests(battles)]

    def live(self, language: str) -> list[BattleResult]:
        if language not in self._live:
            judge = self.pairwise_judge()
            self._live[language] = [judge.result(b) for b in self.ranking.live_battles(language)]
        return self._live[language]


@dataclass
class PairwiseState:
    runs: dict[Path, RankingRun] = field(default_factory=dict)


state_key = pytest.StashKey[PairwiseState]()


class RankingFile(pytest.File):
    def collect(self) -> list[pytest.Item]:
        from pytest_llmjudge.errors import LLMJudgeError
        from pytest_llmjudge.pairwise.build import load_ranking

        try:
            ranking = load_ranking(self.path)
        except LLMJudgeError as exc:
            return [InvalidRankingItem.from_parent(self, name="ranking-error", error=str(exc))]
        state = self.config.stash[state_key]
        run = state.runs.setdefault(self.path, RankingRun(ranking, self.config))
        items: list[pytest.Item] = []
        surrogate_source = (ranking.surrogate.source or ranking.primary) if ranking.surrogate else None
        for language in ranking.languages:
            for source in ranking.sources:
                items.append(
                    LeaderboardItem.from_parent(
                        self, name=f"leaderboard[{source}-{language}]", run=run, source=source, language=language
                    )
                )
            if surrogate_source is not None:
                items.append(
                    SurrogateItem.from_parent(
                        self,
                        name=f"surrogate[{surrogate_source}-{language}]",
                        run=run,
                        source=surrogate_source,
                        language=language,
                    )
                )
        for assertion in ranking.assertions:
            source = assertion.source or ranking.primary
            for language in assertion.languages or ranking.languages:
                where = f"{source}-{language}" if assertion.kind in ("rank", "win_rate") else language
                item = CheckItem.from_parent(
                    self,
                    name=f"{assertion.label}[{where}]",
                    run=run,
                    source=source,
                    language=language,
                    assertion=assertion,
                )
                reason = assertion.xfail.get(language)
                if reason is not None:
                    item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
                items.append(item)
        return items


class RankingItem(LLMJudgeItem):
    run: RankingRun
    source: str
    language: str

    def __init__(self, *, run: RankingRun, source: str, language: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.source = source
        self.language = language
        self.extra_keyword_matches.update({language, source, "ranking"})

    @property
    def ranking(self) -> Ranking:
        return self.run.ranking

    def needs_live(self) -> bool:
        return self.source == "judge"

    def setup(self) -> None:
        if not self.needs_live() or self.run.judge_problem is None:
            return
        reason = f"pairwise judge {self.run.judge_label} {self.run.judge_problem}"
        skip_or_fail_without_judge(self.config.stash[scorer_key].settings, reason)

    def _keep(self, result: ItemRecord) -> None:
        self.llmjudge_result = result
        record(self, result.junit_properties())

    def planned_requests(self) -> list[tuple[JudgeProvider, ProviderRequest]]:
        return self.run.planned_requests({self.language}) if self.needs_live() else []

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # Not the bare name: pytest would show a '.' before '[' as '::' (0.5 -> 0::5) in -v lines.
        return self.path, 0, f"{self.name} ({self.ranking.name})"


class InvalidRankingItem(InvalidFileItem):
    """Stands in for a ranking file that failed to load."""

    what = "ranking"


def render_leaderboard(board: Leaderboard, highlight: tuple[str, ...] = ()) -> str:
    """The leaderboard as a small text table (strongest first)."""
    level = f"{board.confidence:.0%}"
    lines = [
        f"  {'rank':>4}  {'system':<44} {'strength':>8}  {level + ' CI':<17} {'ranks':<7} {'W-L-T':<11}",
    ]
    for s in board.standings[:_TABLE_ROWS]:
        mark = ">" if s.system in highlight else " "
        lines.append(
            f"{mark} {s.rank:>4}  {s.system[:44]:<44} {s.strength:>8.3f}  [{s.ci_low:.2f}, {s.ci_high:.2f}]".ljust(83)
            + f"{s.rank_ci_low}-{s.rank_ci_high}".ljust(8)
            + f"{s.wins:g}-{s.losses:g}-{s.ties:g}"
        )
    if len(board.standings) > _TABLE_ROWS:
        lines.append(f"  … {len(board.standings) - _TABLE_ROWS} more")
    return "\n".join(lines)


class LeaderboardItem(RankingItem):
    """Fits and reports one source's leaderboard in one language."""

    def runtest(self) -> None:
        from pytest_llmjudge.records import LeaderboardRecord

        board = self.run.evaluator.leaderboard(self.source, self.language)
        live = self.source == "judge"
        battles = [_battle(r) for r in self.run.live(self.language)] if live else []
        self._keep(
            LeaderboardRecord(
                suite=self.ranking.name,
                metric=f"{self.source} [{self.language}]",
                ranking=self.ranking.name,
                ranking_path=str(self.ranking.path),
                source=self.source,
                language=self.language,
                judge=self.run.judge_label if live else None,
                order=self.ranking.pairwise.order if live else None,
                order_seed=self.ranking.pairwise.seed if live else None,
                position_bias=self.run.evaluator.position_bias(self.language).to_dict() if live else None,
                unjudged_examples=list(board.unjudged_examples),
                battles=battles[:MAX_BATTLES_RECORDED],
                battles_truncated=len(battles) > MAX_BATTLES_RECORDED,
                passed=board.error is None and board.n_unjudged == 0,
                **board.to_dict(),
            )
        )
        if board.error is not None:
            raise RankingFailure(f"ERROR: leaderboard of {self.source} in {self.language}: {board.error}")
        if board.n_unjudged:
            raise RankingFailure(
                f"UNJUDGED: {board.n_unjudged} of {board.n_battles + board.n_unjudged} battles in {self.language} have no "
                f"verdict (left out of the fit):\n  " + "\n  ".join(board.unjudged_examples)
            )


class SurrogateItem(RankingItem):
    def needs_live(self) -> bool:
        return self.source == "judge"

    def runtest(self) -> None:
        from pytest_llmjudge.records import SurrogateRecord

        result = self.run.evaluator.surrogate(self.language)
        self._keep(SurrogateRecord(ranking=self.ranking.name, passed=result.error is None, **result.to_dict()))
        if result.error is not None:
            raise RankingFailure(f"ERROR: surrogate for {self.source} in {self.language}: {result.error}")


class CheckItem(RankingItem):
    """One ranking assertion in one language."""

    def __init__(self, *, assertion: RankingAssertion, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.assertion = assertion

    def needs_live(self) -> bool:
        a = self.assertion
        if a.kind in ("agreement", "kendall_tau"):
            return "judge" in (a.a, a.b)
        if a.kind == "position_bias":
            return a.a is None  # position_bias(<source>) reads recorded reversed pairs
        if a.kind == "surrogate_tau":
            surrogate = self.ranking.surrogate
            return surrogate is not None and (surrogate.source or self.ranking.primary) == "judge"
        return self.source == "judge"

    def runtest(self) -> None:
        from pytest_llmjudge.records import RankingCheckRecord, Threshold

        a = self.assertion
        observed, detail, context = self._evaluate()
        passed = observed is not None and a.holds(observed)
        threshold = f"{a.op} {a.value:g}"
        working = {name: value for name, value in detail.items() if name != "problem"}
        self._keep(
            RankingCheckRecord(
                ranking=self.ranking.name,
                check=a.label,
                expr=a.text,
                source=self.source if a.kind in ("rank", "win_rate") else None,
                language=self.language,
                value=observed,
                threshold=Threshold(op=a.op, value=a.value),
                passed=passed,
                problem=detail.get("problem"),
                detail=working,
            )
        )
        if passed:
            return
        shown = detail.get("problem") or (f"{format_fixed(observed)}" if a.kind != "rank" else f"rank {observed:g}")
        verdict = "ERROR" if observed is None else "FAILED"
        raise RankingFailure(
            f"{verdict}: {a.text} [{self.language}]: {shown}, expected {threshold}\n{context}".rstrip()
        )

    def _evaluate(self) -> tuple[float | None, dict[str, Any], str]:
        from pytest_llmjudge.pairwise.leaderboard import kendall_between

        a = self.assertion
        evaluator = self.run.evaluator
        if a.kind in ("rank", "win_rate"):
            board = evaluator.leaderboard(self.source, self.language)
            if board.error is not None:
                return None, {"problem": f"no leaderboard: {board.error}"}, ""
            names = tuple(v for v in (a.a, a.b) if v is not None)
            absent = [n for n in names if board.standing(n) is None]
            table = f"leaderboard ({self.source}, {self.language}):\n{render_leaderboard(board, names)}"
            if absent:
                return None, {"problem": f"system {absent[0]!r} has no {self.source} battles in {self.language}"}, table
            first = board.standing(names[0])
            assert first is not None
            if a.kind == "rank":
                detail: dict[str, Any] = {
                    "rank": first.rank,
                    "of": len(board.standings),
                    "rank_ci_low": first.rank_ci_low,
                    "rank_ci_high": first.rank_ci_high,
                    "strength": first.strength,
                }
                context = (
                    f"  {first.system}: rank {first.rank} of {len(board.standings)} ({board.confidence:.0%} bootstrap "
                    f"ranks {first.rank_ci_low}-{first.rank_ci_high}), strength {first.strength:.3f}\n{table}"
                )
                return float(first.rank), detail, context
            assert a.b is not None
            rate, low, high = board.win_rate(a.a or "", a.b)
            points, games = board.head_to_head.get((names[0], a.b), (0.0, 0))
            detail = {
                "ci_low": low,
                "ci_high": high,
                "head_to_head_points": points,
                "head_to_head_games": games,
            }
            context = (
                f"  model win rate {rate:.3f} ({board.confidence:.0%} CI [{low:.3f}, {high:.3f}]); "
                f"head to head {points:g} of {games} points\n{table}"
            )
            return rate, detail, context
        if a.kind == "agreement":
            assert a.a is not None and a.b is not None
            result = evaluator.agreement(a.a, a.b, self.language)
            detail = {
                "n": result.n,
                "agree": result.agree,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "excluded": result.excluded,
                "human_ceiling": result.human_ceiling,
                "confusion": dict(result.confusion),
            }
            if result.rate is None:
                detail["problem"] = f"no battle has verdicts from both {a.a} and {a.b}"
            context = (
                f"  {result.agree} of {result.n} battles agree (95% Wilson CI [{format_fixed(result.ci_low)}, {format_fixed(result.ci_high)}]); "
                f"{result.excluded} without both verdicts left out; annotators' own pairwise agreement "
                f"{format_fixed(result.human_ceiling)}"
            )
            return result.rate, detail, context
        if a.kind == "kendall_tau":
            assert a.a is not None and a.b is not None
            first_board = evaluator.leaderboard(a.a, self.language)
            second_board = evaluator.leaderboard(a.b, self.language)
            for board in (first_board, second_board):
                if board.error is not None:
                    return None, {"problem": f"no {board.source} leaderboard: {board.error}"}, ""
            tau, p, n, reason = kendall_between(first_board, second_board)
            detail = {"kendall_p": p, "n_systems": n}
            if reason:
                detail["problem"] = f"Kendall tau undefined: {reason}"
            order_a = ", ".join(s.system for s in first_board.standings[:5])
            order_b = ", ".join(s.system for s in second_board.standings[:5])
            context = f"  {a.a} top 5: {order_a}\n  {a.b} top 5: {order_b}"
            return tau, detail, context
        if a.kind == "position_bias":
            bias = evaluator.position_bias(self.language, a.a)
            detail = bias.to_dict()
            if bias.position_bias_rate is None:
                detail["problem"] = (
                    f"no reversed pair with both {a.a} verdicts in {self.language}"
                    if a.a is not None
                    else "no decisive verdict to measure position bias on"
                )
            context = (
                f"  first-slot share {format_fixed(bias.first_slot_rate)} of {bias.decisive} decisive verdicts "
                f"(binomial p {format_fixed(bias.binomial_p, 4)})"
                + (
                    f"; same slot both times in {bias.battles_both_orders} pairs: {format_fixed(bias.position_bias_rate)} "
                    f"[95% Wilson {format_fixed(bias.ci_low)}, {format_fixed(bias.ci_high)}]; inconsistent across orders "
                    f"{format_fixed(bias.inconsistent_rate)}"
                    if bias.measured
                    else ""
                )
            )
            return bias.position_bias_rate, detail, context
        result_s = evaluator.surrogate(self.language)
        detail = result_s.to_dict()
        if result_s.error:
            detail["problem"] = result_s.error
        return result_s.kendall_tau, {k: v for k, v in detail.items() if k != "language"}, ""
