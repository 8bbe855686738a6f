"""Calibration file -> validated :class:`CalibrationSet`, or a located :class:`SuiteError`.

Validation order: YAML syntax, schema (pydantic), ``items_file`` side files, metric names
(built-in rubrics or the file's ``rubrics:``), labels and recorded scores against each
rubric's scale, duplicate ids, and the names used in ``metrics``, ``languages``,
``gate.per_metric``, ``gate.per_language``, ``gate.xfail`` and ``sanity`` (a typo there
would otherwise silently do nothing). Every problem is reported as
``file:line: field: message`` with a hint, like suite errors.

Each item becomes a :class:`~pytest_llmjudge.suite.model.Case` (so live scores go through
the same scorer, cache and concurrency as suite items) plus, per metric, its labels as
``(annotator id, label)`` pairs in the order given.

Degenerate cases: a metric listed in ``metrics`` that no item is labelled on, and a
language-metric pair named in ``per_language``/``xfail`` that has no items, are errors. A
language listed in ``languages`` without items is *not* an error here: it becomes a gate
item that fails with "0 items < min_items", so the gap shows in the run.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from pytest_llmjudge.calibration import schema
from pytest_llmjudge.calibration.plain_items import GROUPABLE, ItemFields, item_fields, plain_item
from pytest_llmjudge.calibration.schema import (
    CalibrationConfig,
    CalibrationItemConfig,
    CorrectionConfig,
    ItemsFileConfig,
    JuryConfig,
    SanityConfig,
)
from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.stats.annotators import AggregationRule, AgreementConvention
from pytest_llmjudge.stats.grouping import Group, field_value, group_of
from pytest_llmjudge.suite.build import (
    _field_names,
    _loc_text,
    _rubric_from_config,
    read_records,
    validation_error,
)
from pytest_llmjudge.suite.expressions import MetricThreshold
from pytest_llmjudge.suite.loader import LocatedDocument, line_for, load_yaml
from pytest_llmjudge.suite.model import Case
from pytest_llmjudge.suite.schema import JudgeConfig, RecordedScore, RubricConfig

__all__ = ["CalibrationSet", "LabelledItem", "build_calibration"]

_ITEM_FIELDS = frozenset(_field_names(CalibrationItemConfig))


@dataclass(frozen=True)
class LabelledItem:
    """One item's labels on one metric: ``values[i]`` is annotator ``annotators[i]``'s label, in the order given."""

    case: Case
    metric: str
    annotators: tuple[str, ...]
    """Shared by the items with the same annotator ids in the same order (the gate's label matrix groups by it)."""
    values: tuple[int, ...]


@dataclass(frozen=True)
class CalibrationSet:
    name: str
    path: Path
    judge: JudgeConfig
    scores: Literal["recorded", "judge"]
    rubrics: Mapping[str, Rubric]
    cases: tuple[Case, ...]
    labelled: Mapping[tuple[str, str], tuple[LabelledItem, ...]]
    """(group name, metric) -> items labelled on that metric, in id order. With the default
    ``group_by: [language]`` the group name is the language."""
    metrics: tuple[str, ...]
    languages: tuple[str, ...]
    gate: schema.GateConfig
    """The ``gate:`` mapping as validated; its lookups apply the override rules."""
    # The options below come from the file, defaults included (calibration/schema.py writes them once).
    aggregation: AggregationRule
    ceiling: Literal["slots", "annotators"]
    convention: AgreementConvention
    group_by: tuple[str, ...]
    correction: CorrectionConfig
    group_info: Mapping[str, Group] = field(default_factory=dict)
    """group name -> its fields and values."""
    sanity: SanityConfig | None = None
    recorded_judge: str | None = None
    task: str | None = None
    description: str | None = None
    line: int | None = None
    """Line of the ``gate:`` key, for reports."""
    listed_languages: tuple[str, ...] = ()
    """The ``languages:`` list as written (each one is gated even without items)."""
    jury: JuryConfig | None = None
    """Several judges scored on the same items (``calibration/jury.py``)."""

    def groups(self) -> list[tuple[str, str]]:
        """Every gated (group, metric): pairs with items, plus all metrics of listed languages
        without items (their group is named by the language alone)."""
        found = []
        for language in self.languages:
            names = sorted(name for name, group in self.group_info.items() if group.values[0] == language)
            for name in names or [language]:
                for metric in self.metrics:
                    if (name, metric) in self.labelled or (not names and language in self.listed_languages):
                        found.append((name, metric))
        return found

    def group_language(self, group: str) -> str:
        """The language of a group (a group name without items is a listed language)."""
        found = self.group_info.get(group)
        return found.values[0] if found is not None else group

    def language_groups(self, language: str, metric: str) -> list[str]:
        """The gated groups of ``language`` on ``metric``."""
        return [name for name, m in self.groups() if m == metric and self.group_language(name) == language]

    def items(self, group: str, metric: str) -> tuple[LabelledItem, ...]:
        return self.labelled.get((group, metric), ())

    def language_items(self, language: str, metric: str) -> tuple[LabelledItem, ...]:
        """Every item of ``language`` on ``metric``, across its groups, in id order."""
        found = [item for group in self.language_groups(language, metric) for item in self.items(group, metric)]
        return tuple(sorted(found, key=lambda item: item.case.id))

    def recorded_label(self) -> str:
        """Who made the recorded scores: ``recorded_judge``, else the scores' own common label."""
        if self.recorded_judge:
            return self.recorded_judge
        names = {value.judge for case in self.cases for value in case.recorded.values() if value.judge}
        return names.pop() if len(names) == 1 else "recorded scores"


_MODELS: dict[str, type[BaseModel]] = {
    "judge": JudgeConfig,
    "rubrics": RubricConfig,
    "items": CalibrationItemConfig,
    "items_file": ItemsFileConfig,
    "gate": schema.GateConfig,
    "correction": schema.CorrectionConfig,
    "sanity": SanityConfig,
    "consistency": schema.ConsistencyConfig,
    "sensitivity": schema.SensitivityConfig,
    "recorded": RecordedScore,
}


def _validation_error(
    exc: ValidationError, path: Path, lines: Mapping[tuple[Any, ...], int], data: Any, root: type[BaseModel]
) -> SuiteError:
    """The first schema error, located, with a 'did you mean' hint from the right model."""
    return validation_error(exc, path, lines, data, root=root, models=_MODELS, unknown_fields_first=True)


def _items_files(config: CalibrationConfig) -> list[tuple[ItemsFileConfig, tuple[Any, ...]]]:
    entries = config.items_file
    if entries is None:
        return []
    if not isinstance(entries, list):
        entry = ItemsFileConfig(path=entries) if isinstance(entries, str) else entries
        return [(entry, ("items_file",))]
    return [
        (ItemsFileConfig(path=entry) if isinstance(entry, str) else entry, ("items_file", index))
        for index, entry in enumerate(entries)
    ]


def _unknown(kind: str, name: str, known: Iterable[str]) -> str:
    choices = sorted(set(known))
    close = difflib.get_close_matches(name, choices, n=1)
    return (f"did you mean {close[0]!r}? " if close else "") + f"known {kind}: {', '.join(choices) or '(none)'}"


def _thresholds(
    known: dict[tuple[str, ...], tuple[MetricThreshold, ...]], metrics: tuple[str, ...], rubrics: Mapping[str, Rubric]
) -> tuple[MetricThreshold, ...]:
    """An item's thresholds (each metric scored at all: ``>=`` the scale's bottom), in metric name order,
    shared per metric set (keyed as the item lists its metrics)."""
    found = known.get(metrics)
    if found is None:
        found = known[metrics] = tuple(
            MetricThreshold(metric=metric, op=">=", value=float(rubrics[metric].scale[0])) for metric in sorted(metrics)
        )
    return found


ItemSource = tuple[ItemFields, Path, int | None, Mapping[str, Any]]
"""An item's fields, the file it came from, its line there, and the record its group is read from."""

At = Callable[..., int | None]
"""The line of a key path in the calibration file (``at("gate", "per_language", "hi")``)."""


def build_calibration(path: Path, registry: Registry, *, document: LocatedDocument | None = None) -> CalibrationSet:
    """Load and validate the calibration set at ``path``: schema -> items -> names -> CalibrationSet.

    Each step raises its own located :class:`SuiteError`, in the order of the module docstring.
    """
    doc, config = _read_calibration(path, document)

    def at(*loc: Any) -> int | None:
        return line_for(doc.lines, loc)

    sources = _item_sources(config, path, at)
    rubrics = _Rubrics(registry, {name: _rubric_from_config(name, rc) for name, rc in config.rubrics.items()})
    if config.metrics is not None:
        for index, name in enumerate(config.metrics):
            rubrics.get(name, path, at("metrics", index), f"metrics[{index}]")
    cases, labelled, group_info = _labelled_items(config, path, at, sources, rubrics)
    metrics = _gated_metrics(config, path, at, labelled)
    languages = tuple(sorted({case.language for case in cases} | set(config.languages or ())))
    _check_names(config, path, at, rubrics, metrics, languages, group_info)
    for metric in metrics:
        if len(rubrics.found[metric].scale) < 2:  # pragma: no cover - RubricConfig already refuses this
            raise SuiteError(f"metric {metric!r} needs a scale of two or more scores", path=path)

    return CalibrationSet(
        name=config.calibration,
        path=path,
        judge=config.judge,
        scores=config.scores,
        rubrics=rubrics.found,
        cases=tuple(sorted(cases, key=attrgetter("id"))),
        labelled={key: tuple(sorted(items, key=attrgetter("case.id"))) for key, items in sorted(labelled.items())},
        metrics=metrics,
        languages=languages,
        gate=config.gate,
        aggregation=config.aggregation,
        ceiling=config.ceiling,
        convention=config.agreement_convention,
        group_by=tuple(config.group_by),
        group_info=dict(sorted(group_info.items())),
        correction=config.correction,
        sanity=config.sanity,
        recorded_judge=config.recorded_judge,
        task=config.task,
        description=config.description,
        line=at("gate"),
        listed_languages=tuple(config.languages or ()),
        jury=config.jury,
    )


# -- the steps of build_calibration, in order ------------------------------------------------


def _read_calibration(path: Path, document: LocatedDocument | None) -> tuple[LocatedDocument, CalibrationConfig]:
    """The YAML (with line numbers) and its validated schema."""
    doc = document or load_yaml(path)
    if not isinstance(doc.data, dict):
        raise SuiteError("a calibration file must be a YAML mapping with a 'calibration:' key", path=path, line=1)
    try:
        return doc, CalibrationConfig.model_validate(doc.data)
    except ValidationError as exc:
        raise _validation_error(exc, path, doc.lines, doc.data, CalibrationConfig) from None


def _item_sources(config: CalibrationConfig, path: Path, at: At) -> list[ItemSource]:
    """Every item, inline then from each ``items_file``, validated and located."""
    # A group_by naming an item field that ItemFields.grouping() lacks needs the model's dump of every item.
    plain = GROUPABLE.issuperset(set(config.group_by) & _ITEM_FIELDS)
    group_fields = {*config.group_by, "metadata"}
    sources: list[ItemSource] = []
    for index, inline in enumerate(config.items):
        fields = item_fields(inline)
        grouping = fields.grouping() if plain else inline.model_dump(include=group_fields)
        sources.append((fields, path, at("items", index), grouping))
    for entry, loc in _items_files(config):
        items_path = path.parent / entry.path
        if not items_path.is_file():
            raise SuiteError(
                f"items file not found: {items_path}",
                path=path,
                line=at(*loc),
                field=_loc_text(loc),
                hint="items_file is resolved relative to the calibration file",
            )
        for number, record in read_records(items_path, entry.where, entry.extra_fields, _ITEM_FIELDS):
            shaped = plain_item(record) if plain else None
            if shaped is not None:
                sources.append((shaped, items_path, number, shaped.grouping()))
                continue
            try:  # a shape plain_item leaves to the model: it accepts it, or names what is wrong
                validated = CalibrationItemConfig.model_validate(record)
            except ValidationError as exc:
                raise _validation_error(exc, items_path, {(): number}, record, CalibrationItemConfig) from None
            fields = item_fields(validated)
            grouping = fields.grouping() if plain else validated.model_dump(include=group_fields)
            sources.append((fields, items_path, number, grouping))
    return sources


@dataclass
class _Rubrics:
    """The rubrics the set uses: its own ``rubrics:``, then the registry's, gathered as they are named."""

    registry: Registry
    found: dict[str, Rubric]

    def get(self, name: str, where: Path, line: int | None, field_name: str) -> Rubric:
        rubric = self.found.get(name) or self.registry.rubric(name)
        if rubric is None:
            raise SuiteError(
                f"unknown metric {name!r}: the gate compares judge scores on a rubric",
                path=where,
                line=line,
                field=field_name,
                hint=_unknown("rubrics", name, list(self.registry.rubrics) + list(self.found))
                + "; define it under 'rubrics:'",
            )
        self.found[name] = rubric
        return rubric

    def known(self, name: str) -> Rubric | None:
        """The rubric of ``name`` if there is one, without adding it."""
        return self.found.get(name) or self.registry.rubric(name)


def _labelled_items(
    config: CalibrationConfig, path: Path, at: At, sources: Sequence[ItemSource], rubrics: _Rubrics
) -> tuple[list[Case], dict[tuple[str, str], list[LabelledItem]], dict[str, Group]]:
    """The items of the set's languages as cases, their labels per (group, metric), and the groups.

    Ids are unique; labels and recorded scores lie on their rubric's scale.
    """
    wanted = set(config.metrics) if config.metrics is not None else None
    language_filter = set(config.languages) if config.languages is not None else None
    suite_name = f"calibration:{config.calibration}"
    cases: list[Case] = []
    labelled: dict[tuple[str, str], list[LabelledItem]] = {}
    group_info: dict[str, Group] = {}
    seen: dict[str, tuple[Path, int | None]] = {}
    # Shared across items (100,000 items, a handful of each): thresholds per metric set, group names per
    # field values, annotator id sequences, and each metric's scale as a set.
    thresholds: dict[tuple[str, ...], tuple[MetricThreshold, ...]] = {}
    group_names: dict[tuple[str, ...], str] = {}
    sequences: dict[tuple[str, ...], tuple[str, ...]] = {}
    label_scales: dict[str, tuple[frozenset[float], tuple[int, ...]]] = {}
    recorded_scales: dict[str, tuple[frozenset[float], tuple[int, ...]] | None] = {}
    for item, source, line, group_record in sources:
        if language_filter is not None and item.language not in language_filter:
            continue
        if item.id in seen:
            first_path, first_line = seen[item.id]
            raise SuiteError(
                f"duplicate item id {item.id!r} (first defined at {first_path}:{first_line})",
                path=source,
                line=line,
                field="id",
            )
        seen[item.id] = (source, line)
        label_sets = item.label_sets
        if wanted is not None and not wanted.issuperset(label_sets):
            label_sets = {m: labels for m, labels in label_sets.items() if m in wanted}
        for metric, labels in label_sets.items():
            found_scale = label_scales.get(metric)
            if found_scale is None:
                scale = rubrics.get(metric, source, line, f"human.{metric}").scale
                found_scale = label_scales[metric] = (frozenset(scale), scale)
            on_scale, scale = found_scale
            if not on_scale.issuperset(labels.values()):
                raise SuiteError(
                    f"labels {sorted(set(labels.values()) - on_scale)} of item {item.id!r} are not on the {metric} "
                    f"scale {list(scale)}",
                    path=source,
                    line=line,
                    field=f"human.{metric}",
                )
        for metric, value in item.recorded.items():
            if metric not in recorded_scales:
                found = rubrics.known(metric)
                recorded_scales[metric] = None if found is None else (frozenset(found.scale), found.scale)
            known = recorded_scales[metric]
            if known is not None and value.score is not None and value.score not in known[0]:
                raise SuiteError(
                    f"recorded {metric} score {value.score:g} of item {item.id!r} is not on the scale {list(known[1])}",
                    path=source,
                    line=line,
                    field=f"recorded.{metric}",
                )
        case = Case(
            suite=suite_name,
            id=item.id,
            language=item.language,
            input=item.input,
            output=item.output,
            reference=item.reference,
            context=item.context,
            metadata=item.metadata,
            recorded=item.recorded,
            thresholds=_thresholds(thresholds, tuple(label_sets), rubrics.found),  # sorted by metric
            path=source,
            line=line,
        )
        cases.append(case)
        values = tuple(field_value(group_record, name) for name in config.group_by)
        group_name = group_names.get(values)
        if group_name is None:
            group = group_of(group_record, config.group_by)
            group_name = group_names[values] = group.name
            group_info[group_name] = group
        for threshold in case.thresholds:
            metric = threshold.metric
            labels = label_sets[metric]
            annotators = tuple(labels)
            labelled.setdefault((group_name, metric), []).append(
                LabelledItem(
                    case=case,
                    metric=metric,
                    annotators=sequences.setdefault(annotators, annotators),
                    values=tuple(labels.values()),
                )
            )
    if not cases:
        raise SuiteError(
            "no items left after the language filter"
            if language_filter is not None
            else "the calibration set has no items",
            path=path,
            line=at("languages") or 1,
        )
    return cases, labelled, group_info


def _gated_metrics(
    config: CalibrationConfig, path: Path, at: At, labelled: Mapping[tuple[str, str], Sequence[LabelledItem]]
) -> tuple[str, ...]:
    """The metrics gated: ``metrics:`` as listed (each labelled on some item), else every labelled one."""
    present_metrics = sorted({metric for _, metric in labelled})
    metrics = tuple(config.metrics) if config.metrics is not None else tuple(present_metrics)
    for index, metric in enumerate(metrics):
        if metric not in present_metrics:
            raise SuiteError(
                f"no item is labelled on metric {metric!r}",
                path=path,
                line=at("metrics", index) or at("metrics"),
                field="metrics",
            )
    return metrics


def _check_names(
    config: CalibrationConfig,
    path: Path,
    at: At,
    rubrics: _Rubrics,
    metrics: tuple[str, ...],
    languages: tuple[str, ...],
    group_info: Mapping[str, Group],
) -> None:
    """The languages, metrics and groups named in ``gate`` and ``sanity`` exist in this set
    (a typo there would otherwise silently do nothing)."""
    gate = config.gate

    def check_language(language: str, loc: tuple[Any, ...]) -> None:
        if language not in languages:
            raise SuiteError(
                f"language {language!r} has no items in this calibration set",
                path=path,
                line=at(*loc),
                field=_loc_text(loc),
                hint=_unknown("languages", language, languages),
            )

    def check_metric(metric: str, loc: tuple[Any, ...]) -> None:
        if metric not in metrics:
            raise SuiteError(
                f"metric {metric!r} is not gated by this calibration set",
                path=path,
                line=at(*loc),
                field=_loc_text(loc),
                hint=_unknown("metrics", metric, metrics),
            )

    for metric in gate.per_metric:
        check_metric(metric, ("gate", "per_metric", metric))

    def check_group(name: str, loc: tuple[Any, ...]) -> None:
        if name not in group_info:
            raise SuiteError(
                f"group {name!r} has no items in this calibration set (group_by {list(config.group_by)})",
                path=path,
                line=at(*loc),
                field=_loc_text(loc),
                hint=_unknown("groups", name, group_info),
            )

    for key in ("per_language", "xfail", "per_group"):
        for language, entry in getattr(gate, key).items():
            if key == "per_group" or (key == "xfail" and language not in languages and language in group_info):
                check_group(language, ("gate", key, language))
            else:
                check_language(language, ("gate", key, language))
            if isinstance(entry, dict):
                for metric in entry:
                    if metric not in schema.CRITERIA:
                        check_metric(metric, ("gate", key, language, metric))

    sanity = config.sanity
    if sanity is not None:
        for index, language in enumerate(sanity.languages or ()):
            check_language(language, ("sanity", "languages", index))
        if sanity.consistency is not None:
            for index, metric in enumerate(sanity.consistency.metrics or ()):
                check_metric(metric, ("sanity", "consistency", "metrics", index))
        if sanity.sensitivity is not None:
            rubrics.get(
                sanity.sensitivity.metric, path, at("sanity", "sensitivity", "metric"), "sanity.sensitivity.metric"
            )
