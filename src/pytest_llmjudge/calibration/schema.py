"""The YAML format of calibration sets, as pydantic models (``extra="forbid"``).

A calibration file is a mapping with a top-level ``calibration:`` name; that key is how the
collector tells it from a suite (``suite:``) or any other YAML file. ``docs/calibration.md``
documents every field with examples.

The format follows what the methods need (METAL, Hada et al. 2024b, sec. 3.2 and 4.4; Hada
et al. 2024a, sec. 3.4): items carry a language, the judged text (and the input or
reference a rubric may need), and per metric the labels of each annotator by annotator id.
Judge scores are either recorded with the items (``recorded:``, the same shape as a suite
case's recorded scores, so the PARIKSHA release loads unchanged) or asked of a live judge.

An item gives its labels in one of two shapes:

* ``human: {metric: {annotator_id: label, ...}, ...}``: several metrics per item (the
  PARIKSHA JSONL records have three);
* ``metric: name`` with ``labels: {annotator_id: label, ...}``: one metric.

Degenerate cases rejected here: an item with both shapes or neither, an empty label
mapping (an item nobody labelled can't be aggregated), a file with neither ``items`` nor
``items_file``, a threshold outside [0, 1], a calibration judge that names a calibration
set itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from pytest_llmjudge.stats.annotators import AggregationRule, AgreementConvention
from pytest_llmjudge.suite.schema import JudgeConfig, Number, RecordedScore, RubricConfig, StrictModel

__all__ = [
    "CalibrationConfig",
    "CalibrationItemConfig",
    "ConsistencyConfig",
    "CorrectionConfig",
    "GateConfig",
    "ItemsFileConfig",
    "SanityConfig",
    "SensitivityConfig",
]


Labels = dict[str | int, int]


class CalibrationItemConfig(StrictModel):
    """One judged text with its annotators' labels (and, optionally, recorded judge scores)."""

    id: str = Field(..., min_length=1)
    language: str = Field(..., min_length=2, description="ISO 639-1 or BCP-47 code, e.g. 'hi', 'pt-BR'.")
    output: str = Field(..., description="The judged text.")
    input: str | None = None
    reference: str | None = None
    context: list[str] | str | None = None
    metric: str | None = Field(None, description="With 'labels': the one metric this item is labelled on.")
    labels: Labels | None = Field(None, description="With 'metric': annotator id -> label.")
    human: dict[str, Labels] = Field(
        default_factory=dict, description="metric -> annotator id -> label (several metrics per item)."
    )
    recorded: dict[str, RecordedScore | Number] = Field(
        default_factory=dict, description="Judge scores made elsewhere, per metric."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_is_clean(cls, value: str) -> str:
        if value != value.strip() or "\n" in value:
            raise ValueError("item ids can't have newlines or edge spaces")
        return value

    @model_validator(mode="after")
    def _one_label_shape(self) -> CalibrationItemConfig:
        short = self.metric is not None or self.labels is not None
        if short and self.human:
            raise ValueError("give either 'human' or 'metric' with 'labels', not both")
        if short and (self.metric is None or self.labels is None):
            raise ValueError("'metric' and 'labels' go together")
        if not short and not self.human:
            raise ValueError(
                "an item needs annotator labels: 'human: {metric: {annotator: label}}' or 'metric' + 'labels'"
            )
        for metric, labels in self.label_sets().items():
            if not labels:
                raise ValueError(f"no annotator labels for {metric!r}")
        return self

    def label_sets(self) -> dict[str, dict[str, int]]:
        """metric -> {annotator id (as text): label}, whichever shape the item used."""
        if self.metric is not None and self.labels is not None:
            return {self.metric: {str(k): v for k, v in self.labels.items()}}
        return {metric: {str(k): v for k, v in labels.items()} for metric, labels in self.human.items()}


class ItemsFileConfig(StrictModel):
    """A JSONL file of items next to the calibration file, optionally filtered."""

    path: str
    extra_fields: Literal["error", "metadata"] = Field(
        "error", description="Keys an item doesn't define: reject them, or move them into metadata."
    )
    where: dict[str, Any] = Field(
        default_factory=dict, description="Keep only records whose top-level fields equal these values."
    )


CRITERIA: dict[str, tuple[float, float]] = {
    "threshold": (0.0, 1.0),
    "min_kappa": (-1.0, 1.0),
    "min_ceiling_ratio": (0.0, 10.0),
    "max_abs_skew": (0.0, 1e9),
}
"""Gate criteria that ``per_metric``/``per_language``/``per_group`` entries may override, with their ranges."""

Criteria = dict[str, float]


def _check_criteria(where: str, entry: dict[str, Any]) -> None:
    for name, value in entry.items():
        low, high = CRITERIA[name]
        if not low <= value <= high:
            raise ValueError(f"{name} for {where} must be in [{low:g}, {high:g}], got {value}")


Override = float | Mapping[str, Any]
"""A ``per_metric``/``per_language``/``per_group`` entry: a threshold, or criteria (and metrics)."""


def _criteria(entry: Override | None, metric: str) -> tuple[dict[str, float], dict[str, float]]:
    """(criteria for every metric, criteria for ``metric``) of one per_language/per_group entry."""
    if entry is None:
        return {}, {}
    if not isinstance(entry, Mapping):
        return {"threshold": float(entry)}, {}
    general = {k: float(v) for k, v in entry.items() if k in CRITERIA}
    specific = entry.get(metric)
    if specific is None:
        return general, {}
    if isinstance(specific, Mapping):
        return general, {k: float(v) for k, v in specific.items()}
    return general, {"threshold": float(specific)}


class GateConfig(StrictModel):
    """When a group x metric passes: weighted F1 (or its CI lower bound) >= threshold, and the optional criteria.

    The one place the gate's options and their defaults are written: a calibration set keeps
    it as validated (``CalibrationSet.gate``), its lookups apply the override rules, and
    :class:`~pytest_llmjudge.calibration.agreement_gate.GateOptions` takes its defaults from here.
    """

    threshold: float = Field(..., ge=0.0, le=1.0, description="Minimum judge-vs-human weighted F1.")
    min_kappa: float | None = Field(None, ge=-1.0, le=1.0, description="Minimum judge-vs-human Cohen's kappa.")
    min_ceiling_ratio: float | None = Field(
        None, ge=0.0, le=10.0, description="Minimum weighted F1 divided by the human ceiling."
    )
    max_abs_skew: float | None = Field(None, ge=0.0, description="Maximum |judge mean - human mean| in scale points.")
    per_metric: dict[str, float | Criteria] = Field(
        default_factory=dict, description="metric -> threshold, or metric -> {criterion: value}."
    )
    per_language: dict[str, float | dict[str, float | Criteria]] = Field(
        default_factory=dict,
        description="language -> threshold, or language -> {criterion: value, metric: threshold or {criterion: value}}.",
    )
    per_group: dict[str, float | dict[str, float | Criteria]] = Field(
        default_factory=dict,
        description="group name (e.g. 'hi-task=qa', see group_by) -> the same shapes as per_language.",
    )
    ci_lower_bound: bool = Field(False, description="Compare the F1 interval's lower bound instead of F1.")
    family: Literal["release"] | None = Field(
        None,
        description="release: each gate joins the run's release family; it passes only when F1 >= threshold is "
        "shown at the family's corrected level (posterior p-value, regression.correction).",
    )
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    resamples: int = Field(1000, ge=10, le=100_000)
    seed: int = Field(0, description="Seed of the F1 interval's posterior draws.")
    min_items: int = Field(30, ge=1, description="Fewer labelled items in a language x metric is an error.")
    max_unscored_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="Share of items without a judge score tolerated (default none)."
    )
    xfail: dict[str, str | dict[str, str]] = Field(
        default_factory=dict,
        description="Known failures: language -> reason, or language -> {metric: reason}.",
    )

    @field_validator("per_metric")
    @classmethod
    def _metric_criteria_in_range(cls, value: dict[str, float | Criteria]) -> dict[str, float | Criteria]:
        for metric, entry in value.items():
            criteria = entry if isinstance(entry, dict) else {"threshold": entry}
            unknown = sorted(set(criteria) - set(CRITERIA))
            if unknown:
                raise ValueError(f"unknown criteria {unknown} for {metric!r}; known: {', '.join(CRITERIA)}")
            _check_criteria(repr(metric), criteria)
        return value

    @field_validator("per_language", "per_group")
    @classmethod
    def _group_criteria_in_range(
        cls, value: dict[str, float | dict[str, float | Criteria]]
    ) -> dict[str, float | dict[str, float | Criteria]]:
        for group, entry in value.items():
            if not isinstance(entry, dict):
                _check_criteria(repr(group), {"threshold": entry})
                continue
            for key, sub in entry.items():
                if key in CRITERIA:
                    if isinstance(sub, dict):
                        raise ValueError(f"{key} for {group!r} must be a number")
                    _check_criteria(repr(group), {key: sub})
                    continue
                criteria = sub if isinstance(sub, dict) else {"threshold": sub}
                unknown = sorted(set(criteria) - set(CRITERIA))
                if unknown:
                    raise ValueError(f"unknown criteria {unknown} for {group!r} {key!r}; known: {', '.join(CRITERIA)}")
                _check_criteria(f"{group!r} {key!r}", criteria)
        return value

    def criteria_for(self, language: str, metric: str, group: str | None = None) -> dict[str, float | None]:
        """Every criterion of one gate. Most specific wins, per criterion: group+metric, group,
        language+metric, language, metric, then the global value."""
        found: dict[str, float | None] = {
            "threshold": self.threshold,
            "min_kappa": self.min_kappa,
            "min_ceiling_ratio": self.min_ceiling_ratio,
            "max_abs_skew": self.max_abs_skew,
        }
        metric_entry = self.per_metric.get(metric)
        found.update(_criteria({metric: metric_entry} if metric_entry is not None else None, metric)[1])
        layers = [_criteria(self.per_language.get(language), metric)]
        if group is not None and group != language:
            layers.append(_criteria(self.per_group.get(group), metric))
        for general, specific in layers:
            found.update(general)
            found.update(specific)
        return found

    def threshold_for(self, language: str, metric: str, group: str | None = None) -> float:
        """The weighted-F1 threshold (see :meth:`criteria_for` for the precedence)."""
        return float(self.criteria_for(language, metric, group)["threshold"] or 0.0)

    def xfail_for(self, language: str, metric: str, group: str | None = None) -> str | None:
        """The reason a group x metric is a known failure (keyed by group name or language), or None."""
        for key in (group, language):
            entry = self.xfail.get(key) if key is not None else None
            if isinstance(entry, Mapping):
                if metric in entry:
                    return entry[metric]
            elif entry is not None:
                return entry
        return None


class CorrectionConfig(StrictModel):
    """The per-language score correction and its held-out evaluation."""

    method: Literal["most_likely", "expected"] = Field(
        "most_likely",
        description="most_likely: the human label most often given to a raw judge score; "
        "expected: the mean human label for it.",
    )
    holdout: float = Field(0.3, gt=0.0, lt=1.0, description="Share of items held out to evaluate the correction.")
    seed: int = Field(0, description="Seed of the held-out split (and of the bootstrap of the held-out gain).")
    min_holdout: int = Field(
        10, ge=1, description="Fewer held-out items makes the correction unusable: it is reported, never applied."
    )
    resamples: int = Field(1000, ge=10, le=100_000, description="Bootstrap resamples of the held-out gain.")


class ConsistencyConfig(StrictModel):
    """Repeat the same request k times; the scores must agree (Hada et al. 2024a, sec. 3.5, 4.2.1)."""

    repeats: int = Field(5, ge=2, le=20)
    min_agreement: float = Field(0.9, ge=0.0, le=1.0, description="Share of items whose k scores must all be equal.")
    items: int = Field(10, ge=1, description="Items per language (the first ones by id).")
    metrics: list[str] | None = Field(None, description="Metrics to check (default: every gated metric).")


class SensitivityConfig(StrictModel):
    """Shuffle some words of each output; the judge must rate it worse (Hada et al. 2024a, sec. 4.3)."""

    metric: str = "linguistic_acceptability"
    fraction: float = Field(0.1, gt=0.0, le=1.0, description="Share of the words that are shuffled.")
    seed: int = Field(0, description="Seed of the shuffles (each item's own seed derives from it and the item id).")
    min_lowered: float = Field(
        0.6, ge=0.0, le=1.0, description="Share of items whose score must get worse after shuffling."
    )
    items: int = Field(10, ge=1, description="Items per language (the first ones by id).")


class SanityConfig(StrictModel):
    """Judge sanity checks, run through the live judge."""

    consistency: ConsistencyConfig | None = None
    sensitivity: SensitivityConfig | None = None
    languages: list[str] | None = Field(None, description="Languages to check (default: all of the set).")


class JuryConfig(StrictModel):
    """Several live judges scored on the same items (``calibration/jury.py``)."""

    judges: list[JudgeConfig] = Field(..., min_length=2, description="The jury's judges (provider, model, ...).")
    level: Literal["nominal", "ordinal", "interval"] = Field(
        "ordinal", description="Level of measurement of Krippendorff's alpha among the judges."
    )
    min_alpha: float | None = Field(
        None, ge=-1.0, le=1.0, description="Fail a language whose inter-judge Krippendorff's alpha is below this."
    )
    combine: Literal["best", "majority", "mean", "weighted"] = Field(
        "best",
        description="Which jury verdict a language uses: the best-agreeing judge that passes the gate, or the "
        "judges' majority, rounded mean, or agreement-weighted rounded mean.",
    )

    @model_validator(mode="after")
    def _plain_judges(self) -> JuryConfig:
        if any(judge.calibration is not None or judge.correction for judge in self.judges):
            raise ValueError("a jury's judges can't name a calibration set or enable correction")
        return self


class CalibrationConfig(StrictModel):
    """A whole calibration file."""

    calibration: str = Field(..., min_length=1, description="Name; its presence marks the file as a calibration set.")
    description: str | None = None
    task: str | None = Field(None, description="What the judged texts answer, shown to a live judge.")
    judge: JudgeConfig = Field(default_factory=JudgeConfig, description="The live judge (scores: judge, sanity).")
    scores: Literal["recorded", "judge"] = Field(
        "recorded", description="recorded: the items' recorded scores; judge: ask the live judge (cached)."
    )
    recorded_judge: str | None = Field(None, description="Who made the recorded scores, e.g. 'gpt-4 (PARIKSHA)'.")
    rubrics: dict[str, RubricConfig] = Field(default_factory=dict)
    metrics: list[str] | None = Field(None, description="Metrics to gate (default: every labelled metric).")
    languages: list[str] | None = Field(
        None, description="Languages to gate; a listed language without items is an error, not a pass."
    )
    aggregation: AggregationRule = Field(
        "majority_then_rounded_mean", description="How annotator labels become one label per item."
    )
    ceiling: Literal["slots", "annotators"] = Field(
        "slots",
        description="Human ceiling pairs: each item's 1st/2nd/3rd label by annotator id (slots), or fixed annotator ids.",
    )
    agreement_convention: AgreementConvention = Field(
        "all_pairs",
        description="Human ceiling and Fleiss' kappa: all_pairs (items with >= 2 labels, both directions, pairs "
        "weighted by shared items) or metal (items with exactly 3 labels, A1-A2, A2-A3, A3-A1 one way, as METAL).",
    )
    group_by: list[str] = Field(
        default_factory=lambda: ["language"],
        min_length=1,
        description="Item fields whose values form one gate group: language, id, input, output, reference, "
        "or metadata keys (e.g. task, model). The first must be language.",
    )
    items: list[CalibrationItemConfig] = Field(default_factory=list)
    items_file: str | ItemsFileConfig | list[str | ItemsFileConfig] | None = None
    gate: GateConfig
    correction: CorrectionConfig = Field(default_factory=CorrectionConfig)
    sanity: SanityConfig | None = None
    jury: JuryConfig | None = Field(
        None, description="Several judges scored per language and metric; needs scores: judge (calibration.md, Juries)."
    )

    @model_validator(mode="after")
    def _has_items(self) -> CalibrationConfig:
        if not self.items and self.items_file is None:
            raise ValueError("a calibration set needs 'items' or 'items_file'")
        if self.judge.calibration is not None or self.judge.correction:
            raise ValueError("a calibration set's own judge can't name a calibration set or enable correction")
        if self.agreement_convention == "metal" and self.ceiling == "annotators":
            raise ValueError("agreement_convention 'metal' pairs three label slots; use it with ceiling: slots")
        if self.group_by[0] != "language" or len(set(self.group_by)) != len(self.group_by):
            raise ValueError("group_by must start with 'language' and name each field once, e.g. [language, task]")
        if self.jury is not None and self.scores != "judge":
            raise ValueError("a jury asks its judges live: set scores: judge")
        return self
