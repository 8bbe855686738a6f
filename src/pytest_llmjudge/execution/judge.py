"""The judge object Python tests use: ``llmjudge_judge.score(text, rubric=..., language=...)``.

It goes through the same provider, cache, retries and concurrency as suite items, so a
score asserted in a Python test is as reproducible (and as cached) as one in a YAML suite.
An unparseable reply or a provider failure raises :class:`UnscoredError`: a test can never
pass on a missing score.

:meth:`Judge.human_estimate` turns the judge's scores of a list of outputs, plus a random
sample of outputs that native speakers labelled, into the prediction-powered estimate of
the mean human label over all of them (``stats/prediction_powered.py``, as ``human_mean``
in suites): a Python test can assert on the humans' scale, e.g.
``assert judge.human_estimate(outputs, labelled, language="ta").estimate.ci_low >= 1.2``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_llmjudge.errors import ConfigError, UnscoredError
from pytest_llmjudge.execution.scorer import Score, Scorer, verdict_score
from pytest_llmjudge.judges.prompts import JudgedText, build_request
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.suite.model import Suite
from pytest_llmjudge.suite.schema import JudgeConfig

if TYPE_CHECKING:
    from pytest_llmjudge.stats.prediction_powered import PPIEstimate


class Judge:
    """A configured LLM judge."""

    def __init__(self, board: Scorer, config: JudgeConfig | None = None, *, task: str | None = None) -> None:
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

    def human_estimate(
        self,
        outputs: Sequence[str],
        labelled: Sequence[tuple[str, float | Sequence[float] | Mapping[str, float]]],
        *,
        rubric: str | Rubric = "linguistic_acceptability",
        language: str = "en",
        input: str | None = None,
        min_labels: int = 2,
    ) -> PPIEstimate:
        """The native speakers' mean ``rubric`` label over ``outputs`` and the labelled texts together.

        ``labelled`` holds ``(text, labels)`` pairs: a label, a list of annotators' labels or a
        mapping annotator -> label, aggregated as calibration sets do (majority, else the
        rounded mean). They must be a random sample of all the texts. Every text is judged
        (cached like any judgment); the result is :func:`ppi_mean` with the judge's scores on
        all ``len(outputs) + len(labelled)`` texts as the unlabelled set, Student intervals
        and the rubric's scale (``estimate``, ``human_only``, ``judge_mean``, ``bias``, ``lam``).
        No calibration is required: the estimate is valid whatever the judge's bias. Raises
        :class:`UnscoredError` when a text can't be scored, ``StatisticsError`` with fewer than
        ``min_labels`` labelled texts.
        """
        from pytest_llmjudge.errors import StatisticsError
        from pytest_llmjudge.stats.prediction_powered import ppi_mean
        from pytest_llmjudge.suite.build import aggregate_human_labels

        chosen = self._rubric(rubric)
        if len(labelled) < min_labels:
            raise StatisticsError(f"a human estimate needs at least {min_labels} labelled texts, got {len(labelled)}")
        problem = self.unavailable_reason()
        if problem is not None:
            raise ConfigError(f"judge {self.model} {problem}")
        label_sets = {
            str(index): {chosen.name: [labels] if isinstance(labels, (int, float)) else labels}
            for index, (_, labels) in enumerate(labelled)
        }
        aggregated = aggregate_human_labels(
            [
                (
                    key,
                    {
                        name: list(value) if not isinstance(value, Mapping) else dict(value)
                        for name, value in sets.items()
                    },
                )
                for key, sets in label_sets.items()
            ]
        )
        texts = [text for text, _ in labelled] + list(outputs)
        settings = self._board.judge_settings(self._suite.judge)
        provider = self._board.provider_for(self._suite.judge)
        # Submit every request before waiting on any, so they run concurrently.
        futures = [
            self._board.runner.submit_judgment(
                provider,
                build_request(
                    (chosen,), JudgedText(language=language, output=text, input=input), settings, task=self._suite.task
                ),
                (chosen,),
                max_reasks=self._suite.judge.max_reasks,
            )
            for text in texts
        ]
        scores: list[float] = []
        for future in futures:
            result = verdict_score(chosen, settings.label, [future.result()])
            if not result.scored or isinstance(result.value, str) or result.value is None:
                raise UnscoredError(f"{result.metric}: {result.error or 'no score'}")
            scores.append(float(result.value))
        labels = [aggregated[str(index)][chosen.name] for index in range(len(labelled))]
        scale = (float(min(chosen.scale)), float(max(chosen.scale))) if chosen.scale else None
        return ppi_mean(labels, scores[: len(labelled)], scores, scale=scale, student=True)
