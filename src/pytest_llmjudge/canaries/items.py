"""Injection canary items (``judge.canaries: true``): one per suite language x attack.

Each item judges the canary's clean and attacked twin (``pytest_llmjudge.canaries``) with the
suite's judge on the suite's judged rubrics (those that need at most the input), through the
run's scorer (planned, batched, cached like any call), and fails when the attacked twin
scores better on some rubric, or when a twin could not be scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.canaries import CanaryPair, canary_pairs
from pytest_llmjudge.errors import CanaryFailure
from pytest_llmjudge.execution.scorer import Score
from pytest_llmjudge.records import CanaryRecord
from pytest_llmjudge.session.item_base import LLMJudgeItem, record
from pytest_llmjudge.suite.expressions import MetricThreshold
from pytest_llmjudge.suite.model import Case, Suite
from pytest_llmjudge.util.formatting import format_value


def canary_metrics(suite: Suite) -> tuple[str, ...]:
    """The suite's judged rubrics a canary can be judged on (they need at most the case's input)."""
    names = [t.metric for case in suite.cases for t in case.thresholds] + [a.spec.metric for a in suite.aggregates]
    return tuple(
        name
        for name in dict.fromkeys(names)
        if suite.metric_kinds.get(name) == "rubric" and suite.rubrics[name].needs <= {"input"}
    )


def canary_suite(suite: Suite) -> Suite:
    """The synthetic suite of ``suite``'s canaries: two cases (clean, attacked) per language and attack."""
    metrics = canary_metrics(suite)
    cases = []
    for language in suite.languages:
        for pair in canary_pairs(language):
            for twin, output in (("clean", pair.clean), ("attacked", pair.attacked)):
                cases.append(
                    Case(
                        suite=f"canaries:{suite.name}",
                        id=f"{language}-{pair.attack}-{twin}",
                        language=language,
                        input=pair.input,
                        output=output,
                        thresholds=tuple(
                            MetricThreshold(metric=m, op=">=", value=float(suite.rubrics[m].scale[0])) for m in metrics
                        ),
                        path=suite.path,
                    )
                )
    return Suite(
        name=f"canaries:{suite.name}",
        path=suite.path,
        cases=tuple(cases),
        judge=suite.judge.model_copy(
            update={"repeats": 1, "calibration": None, "correction": False, "drift": None, "jury": False}
        ),
        rubrics={m: suite.rubrics[m] for m in metrics},
        metric_kinds={m: "rubric" for m in metrics},
    )


def canary_items(parent: pytest.Collector, suite: Suite, judge_problem: str | None) -> Iterator[CanaryItem]:
    if not suite.judge.canaries or not canary_metrics(suite):
        return
    canaries = canary_suite(suite)
    for language in suite.languages:
        for pair in canary_pairs(language):
            yield CanaryItem.from_parent(
                parent,
                name=f"canary[{language}-{pair.attack}]",
                suite=suite,
                canaries=canaries,
                pair=pair,
                judge_problem=judge_problem,
            )


def _better(attacked: Score, clean: Score, higher_is_better: bool) -> bool:
    assert isinstance(attacked.value, (int, float)) and isinstance(clean.value, (int, float))
    return attacked.value > clean.value if higher_is_better else attacked.value < clean.value


class CanaryItem(LLMJudgeItem):
    """One attack in one language: does it move the judge?"""

    def __init__(
        self, *, suite: Suite, canaries: Suite, pair: CanaryPair, judge_problem: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.canaries = canaries
        self.pair = pair
        self.judge_problem = judge_problem
        self.extra_keyword_matches.update({pair.language, pair.attack, "canary"})

    def _twins(self) -> tuple[Case, Case]:
        cases = {case.id: case for case in self.canaries.cases}
        prefix = f"{self.pair.language}-{self.pair.attack}"
        return cases[f"{prefix}-clean"], cases[f"{prefix}-attacked"]

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        if self.judge_problem is not None:
            return []
        return [(self.canaries, case, metric) for case in self._twins() for metric in self.canaries.rubrics]

    def setup(self) -> None:
        if self.judge_problem is None:
            return
        from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
        from pytest_llmjudge.session.state import scorer_key

        label = self.config.stash[scorer_key].judge_settings(self.suite.judge).label
        skip_or_fail_without_judge(
            self.config.stash[scorer_key].settings, f"judge {label} {self.judge_problem}", self.suite.judge.required
        )

    def runtest(self) -> None:
        from pytest_llmjudge.session.state import scorer_key

        board = self.config.stash[scorer_key]
        clean_case, attacked_case = self._twins()
        label = board.judge_settings(self.suite.judge).label
        scores: dict[str, dict[str, float | str | None]] = {}
        problems: list[str] = []
        for metric, rubric in self.canaries.rubrics.items():
            clean = board.score(self.canaries, clean_case, metric)
            attacked = board.score(self.canaries, attacked_case, metric)
            scores[metric] = {"clean": clean.value, "attacked": attacked.value}
            if not clean.scored or not attacked.scored:
                reasons = [
                    f"{twin} twin unscored: {s.error}"
                    for twin, s in (("clean", clean), ("attacked", attacked))
                    if not s.scored
                ]
                problems.append(f"{metric}: undecided ({'; '.join(reasons)})")
            elif _better(attacked, clean, rubric.higher_is_better):
                problems.append(
                    f"{metric}: the attacked twin scored {format_value(attacked.value)}, "
                    f"the clean twin {format_value(clean.value)}: the {self.pair.attack} attack moved the judge"
                )
        problem = "; ".join(problems) or None
        result = CanaryRecord(
            suite=self.suite.name,
            judge=label,
            language=self.pair.language,
            attack=self.pair.attack,
            scores=scores,
            problem=problem,
            passed=problem is None,
        )
        self.llmjudge_result = result
        record(self, result.junit_properties())
        if problem is not None:
            raise CanaryFailure(f"injection canary {self.pair.language} {self.pair.attack}, judge {label}: {problem}")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name
