"""The baseline file's contents: per suite, metric and language, each case's score (the schema).

What it is
    :class:`Baseline` holds one saved run's scores (:class:`SuiteScores` per suite,
    :class:`MetricScores` per metric), as ``regression/baseline.py`` writes them and
    ``regression/build.py`` reads them back; the file format is in ``regression/baseline.py``.
    A regression "file kind" reads schema (this module, and the suite's ``regression:``
    section in ``suite/schema.py``) -> build (``regression/build.py``) -> items
    (``regression/items.py``), as suites, calibration sets and rankings do.

Degenerate cases: a score of ``None`` is a case the saved run could not score (kept so a
comparison reports it); groups are recomputed from the suite (:meth:`MetricScores.group`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "pytest-llmjudge-baseline"
VERSION = 1


@dataclass
class MetricScores:
    """One suite metric's baseline: ``scores[language][case_id]`` (None = unscored)."""

    higher_is_better: bool = True
    sources: set[str] = field(default_factory=set)
    judges: set[str] = field(default_factory=set)
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    human: dict[str, dict[str, float]] = field(default_factory=dict)
    """``human[language][case_id]``: the case's aggregated human label (empty in older baselines)."""

    def language(self, language: str) -> dict[str, float | None]:
        return self.scores.get(language, {})

    def group(
        self, language: str, group_cases: Collection[str], suite_cases: Collection[str]
    ) -> tuple[dict[str, float | None], tuple[str, ...]]:
        """The baseline scores of one group of ``language``, and the ids of the cases it could not place.

        A baseline stores scores per language, not case fields, so groups are recomputed
        from the suite's cases: a case is in the group when the suite puts it there
        (``group_cases``). A baseline case the suite no longer has (not in ``suite_cases``,
        the suite's case ids in that language) can't be placed; it is kept in every group of
        its language, so that it is reported missing rather than silently dropped.
        """
        scores = self.language(language)
        unplaced = tuple(sorted(case for case in scores if case not in suite_cases))
        kept = {case: value for case, value in scores.items() if case in group_cases or case not in suite_cases}
        return kept, unplaced


@dataclass
class SuiteScores:
    path: str | None = None
    metrics: dict[str, MetricScores] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    """case id -> the output that was judged (empty for baselines saved before outputs were)."""


@dataclass
class Baseline:
    name: str
    created: str
    run: dict[str, Any] = field(default_factory=dict)
    suites: dict[str, SuiteScores] = field(default_factory=dict)
    path: Path | None = None

    def metric(self, suite: str, metric: str) -> MetricScores | None:
        entry = self.suites.get(suite)
        return None if entry is None else entry.metrics.get(metric)

    @property
    def n_scores(self) -> int:
        return sum(len(cases) for s in self.suites.values() for m in s.metrics.values() for cases in m.scores.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "created": self.created,
            "run": self.run,
            "suites": {
                suite_name: {
                    "path": suite.path,
                    "metrics": {
                        metric_name: {
                            "higher_is_better": metric.higher_is_better,
                            "sources": sorted(metric.sources),
                            "judges": sorted(metric.judges),
                            "scores": {
                                language: dict(sorted(cases.items()))
                                for language, cases in sorted(metric.scores.items())
                            },
                            **(
                                {
                                    "human": {
                                        language: dict(sorted(cases.items()))
                                        for language, cases in sorted(metric.human.items())
                                    }
                                }
                                if metric.human
                                else {}
                            ),
                        }
                        for metric_name, metric in sorted(suite.metrics.items())
                    },
                    **({"outputs": dict(sorted(suite.outputs.items()))} if suite.outputs else {}),
                }
                for suite_name, suite in sorted(self.suites.items())
            },
        }
