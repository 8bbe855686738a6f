"""A loaded, validated suite: cases with their thresholds, aggregates, and how each metric is scored.

This is what collection works from; it is built from the YAML schema by
``suite.build.build_suite`` and holds no pytest objects. Each threshold's metric has one
*kind*:

* ``rubric``: scored by an LLM judge (or taken from a case's recorded score for it);
* ``metric``: a reference metric computed from the output (chrF, ROUGE-L, ...);
* ``judged``: a judge-based metric made of one or more judge calls whose replies a formula
  combines (``metrics/rag.py``: faithfulness, context precision and recall);
* ``recorded``: neither, but cases carry recorded scores under that name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.metrics.scales import reference_scale
from pytest_llmjudge.stats.grouping import Group, group_of
from pytest_llmjudge.suite.expressions import AggregateSpec, MetricThreshold, Op
from pytest_llmjudge.suite.schema import JudgeConfig, RegressionConfig

MetricKind = Literal["rubric", "metric", "judged", "recorded"]
JUDGE_KINDS = frozenset({"rubric", "judged"})
"""The kinds scored by a live judge call (unless the case records the score)."""


@dataclass(frozen=True)
class RecordedValue:
    """A score made outside this run, stored with the case."""

    score: float | None
    justification: str | None = None
    judge: str | None = None
    samples: tuple[float | None, ...] = ()
    """Recorded repeated judgments (``recorded: {metric: {samples: [...]}}``); ``score`` is then their
    mean or majority (None when a sample is null)."""


@dataclass(frozen=True)
class Message:
    """One turn of a conversation: who spoke (``user``, ``assistant`` or ``system``) and what."""

    role: str
    content: str


@dataclass(frozen=True)
class Case:
    suite: str
    id: str
    language: str
    input: str | None = None
    output: str | None = None
    reference: str | None = None
    context: tuple[str, ...] = ()
    messages: tuple[Message, ...] = ()
    """The conversation so far: every turn before the output under test (empty: a one-turn case)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    recorded: Mapping[str, RecordedValue] = field(default_factory=dict)
    thresholds: tuple[MetricThreshold, ...] = ()
    human: Mapping[str, float] = field(default_factory=dict)
    """Metric -> the case's human label, its annotators' labels aggregated (``suite/build.py``)."""
    path: Path = Path()
    line: int | None = None
    tags: tuple[str, ...] = ()
    """The suite's tags then the case's own, each once; they become pytest markers (``-m smoke``)."""

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.id}"

    def transcript(self, output: str | None) -> tuple[Message, ...]:
        """The whole conversation: :attr:`messages`, then ``output`` as the assistant's last turn.

        Empty for a one-turn case (no messages); ``output`` None (a target that failed) leaves
        the conversation so far.
        """
        if not self.messages:
            return ()
        return self.messages if output is None else (*self.messages, Message("assistant", output))

    def group(self, fields: Sequence[str]) -> Group:
        """The case's group under ``group_by`` fields: a case key (``language``, ``id``, ...) or a metadata key."""
        record = {
            "id": self.id,
            "language": self.language,
            "input": self.input,
            "output": self.output,
            "reference": self.reference,
            "metadata": self.metadata,
        }
        return group_of(record, fields)


@dataclass(frozen=True)
class AggregateCheck:
    """A suite-level threshold, one row per group of ``group_by`` (plus ``all``).

    ``group_overrides`` replace the threshold for one group (by name, ``hi-task=qa``);
    ``overrides`` for every group of one language, unless the group has its own.
    """

    spec: AggregateSpec
    overrides: Mapping[str, tuple[Op, float]] = field(default_factory=dict)
    min_cases: int = 1
    max_unscored_rate: float = 0.0
    line: int | None = None
    group_by: tuple[str, ...] = ("language",)
    group_overrides: Mapping[str, tuple[Op, float]] = field(default_factory=dict)
    min_labels: int = 5
    """``human_mean``/``human_pass_rate``: fewest human-labelled cases a group needs."""
    xfail: Mapping[str, str] = field(default_factory=dict)
    """Group name, language or ``all`` -> reason: known failures, marked xfail (strict)."""
    scale: tuple[float, float] | None = None
    """The aggregate's ``scale:`` (the scores' range, for a metric that has no known one)."""
    family: str | None = None
    """``release``: the rows join the run's release family (``regression/items.py``, ``decide_family``)."""

    @property
    def joinable(self) -> bool:
        """Whether its rows have a p-value for the release family: a bound check on a mean."""
        spec = self.spec
        return spec.stat == "mean" and (
            (spec.bound == "lower" and spec.op in (">=", ">")) or (spec.bound == "upper" and spec.op in ("<=", "<"))
        )

    def xfail_reason(self, group: str, language: str | None) -> str | None:
        """The reason a row (``group``, of ``language``) is a known failure: its group's, else its language's."""
        return self.xfail.get(group) or (self.xfail.get(language) if language is not None else None)

    def for_language(self, language: str | None) -> AggregateSpec:
        if language is not None and language in self.overrides:
            op, value = self.overrides[language]
            return self.spec.with_threshold(op, value)
        return self.spec

    def for_group(self, group: Group) -> AggregateSpec:
        if group.name in self.group_overrides:
            op, value = self.group_overrides[group.name]
            return self.spec.with_threshold(op, value)
        return self.for_language(group.value("language"))

    def groups(self, cases: Sequence[Case]) -> list[Group]:
        """The groups of ``cases``, sorted (by language first: ``group_by`` starts with it)."""
        return sorted({case.group(self.group_by) for case in cases})


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    cases: tuple[Case, ...]
    judge: JudgeConfig
    rubrics: Mapping[str, Rubric]
    metric_kinds: Mapping[str, MetricKind]
    metric_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    aggregates: tuple[AggregateCheck, ...] = ()
    task: str | None = None
    description: str | None = None
    output_target: str | None = None
    target_timeout: float | None = None
    """Seconds one call of the output target may take (``outputs.timeout``); None: the run's setting."""
    regression: RegressionConfig | None = None
    """The suite's ``regression:`` section (baseline comparison), if any."""
    group_by: tuple[str, ...] = ("language",)
    """The suite's ``group_by``: aggregates and regressions without their own use it."""
    sequential: tuple[bool, int | None, int | None] | None = None
    """The suite's ``sequential:`` as (on, round, seed; None: the run's); None: the run decides."""
    tags: tuple[str, ...] = ()
    """The suite's ``tags``: markers of every item of the suite (each case adds its own)."""
    sources: tuple[Path, ...] = ()
    """The side files the suite was read from (cases files, outputs file): inputs no write may replace."""

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(sorted({case.language for case in self.cases}))

    def scale_of(self, metric: str) -> tuple[float, float] | None:
        """The range a metric's scores lie in: its rubric's scale, a built-in reference
        metric's range, [0, 1] for a judged (RAG) metric, the ``scale:`` an aggregate of the suite declares for it (one
        declaration serves every aggregate of the metric), or None when unknown."""
        rubric = self.rubrics.get(metric)
        if rubric is not None and rubric.scale:
            return float(min(rubric.scale)), float(max(rubric.scale))
        known = reference_scale(metric) if self.metric_kinds.get(metric) == "metric" else None
        if self.metric_kinds.get(metric) == "judged":
            known = (0.0, 1.0)  # a ratio (metrics/rag.py)
        if known is not None:
            return known
        return next((check.scale for check in self.aggregates if check.spec.metric == metric and check.scale), None)

    @property
    def needs_live_judge(self) -> bool:
        """True when some rubric threshold has a case without a recorded score for it."""
        return any(
            self.metric_kinds.get(threshold.metric) in JUDGE_KINDS and threshold.metric not in case.recorded
            for case in self.cases
            for threshold in case.thresholds
        ) or any(
            self.metric_kinds.get(check.spec.metric) in JUDGE_KINDS
            and any(check.spec.metric not in case.recorded for case in self.cases)
            for check in self.aggregates
        )
