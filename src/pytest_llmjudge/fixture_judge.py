"""The judge object Python tests use: ``llmjudge_judge.score(text, rubric=..., language=...)``.

It goes through the same provider, cache, retries and concurrency as suite items, so a
score asserted in a Python test is as reproducible (and as cached) as one in a YAML suite.
An unparseable reply or a provider failure raises :class:`UnscoredError`: a test can never
pass on a missing score.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_llmjudge.errors import ConfigError, UnscoredError
from pytest_llmjudge.execution.scoreboard import Score, ScoreBoard, verdict_score
from pytest_llmjudge.judges.prompts import JudgedText, build_request
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.suite.model import Suite
from pytest_llmjudge.suite.schema import JudgeConfig


class Judge:
    """A configured LLM judge."""

    def __init__(self, board: ScoreBoard, config: JudgeConfig | None = None, *, task: str | None = None) -> None:
        self._board = board
        self._suite = Suite(
            name="<python>",
            path=Path("<python>"),
            cases=(),
            judge=config or JudgeConfig(),
            rubrics={},
            metric_kinds={},
            task=task,
        )

    @property
    def model(self) -> str:
        return self._board.judge_settings(self._suite.judge).label

    def unavailable_reason(self) -> str | None:
        """Why this judge can't be called (e.g. no API key), or None."""
        return self._board.judge_problem(self._suite.judge)

    def _rubric(self, rubric: str | Rubric) -> Rubric:
        if isinstance(rubric, Rubric):
            return rubric
        found = self._board.registry.rubric(rubric)
        if found is None:
            raise ConfigError(f"unknown rubric {rubric!r}; known: {', '.join(sorted(self._board.registry.rubrics))}")
        return found

    def verdict(
        self,
        text: str,
        *,
        rubric: str | Rubric = "linguistic_acceptability",
        language: str = "en",
        input: str | None = None,
        reference: str | None = None,
        context: Sequence[str] = (),
    ) -> Score:
        """Judge ``text`` on one rubric; the :class:`Score` carries the justification."""
        chosen = self._rubric(rubric)
        problem = self.unavailable_reason()
        if problem is not None:
            raise ConfigError(f"judge {self.model} {problem}")
        settings = self._board.judge_settings(self._suite.judge)
        request = build_request(
            (chosen,),
            JudgedText(language=language, output=text, input=input, reference=reference, context=tuple(context)),
            settings,
            task=self._suite.task,
        )
        provider = self._board.provider_for(self._suite.judge)
        outcome = self._board.runner.submit_judgment(
            provider, request, (chosen,), max_reasks=self._suite.judge.max_reasks
        ).result()
        return self._board.noted(verdict_score(chosen, settings.label, [outcome]))

    def score(
        self,
        text: str,
        *,
        rubric: str | Rubric = "linguistic_acceptability",
        language: str = "en",
        input: str | None = None,
        reference: str | None = None,
        context: Sequence[str] = (),
    ) -> float:
        """The numeric score; raises :class:`UnscoredError` when there is none."""
        result = self.verdict(text, rubric=rubric, language=language, input=input, reference=reference, context=context)
        if not result.scored or isinstance(result.value, str) or result.value is None:
            raise UnscoredError(f"{result.metric}: {result.error or 'no score'}")
        return float(result.value)
