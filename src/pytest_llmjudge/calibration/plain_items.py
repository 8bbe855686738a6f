"""Calibration items read without a pydantic model per item, where the record's shape is plain.

A calibration set of 100,000 items spent more time validating each JSONL record through
:class:`~pytest_llmjudge.calibration.schema.CalibrationItemConfig` (and freeing the
models) than in everything else it does. Almost every record has the plain shape of a
JSONL export: text fields as strings, ``human: {metric: {annotator: integer label}}`` (or
``metric`` + ``labels``), recorded scores as numbers or ``{score, judge, justification}``.
:func:`plain_item` checks exactly that shape with type checks and returns the item's fields
(:class:`ItemFields`), the same values the model would have produced.

It accepts a strict subset of what the model accepts, and returns ``None`` for anything
else: a missing or mistyped field, an unknown key, a label that is not an ``int`` (pydantic
would turn ``2.0`` or ``"2"`` into 2: the model decides), a non-finite number, an id with
edge spaces, both label shapes. The caller then validates that record through the model,
which either accepts it (an unusual but valid shape) or raises the error that names the
file, line and field. So no record is accepted here that the model would refuse, and
every error message is the model's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pytest_llmjudge.calibration.schema import CalibrationItemConfig
from pytest_llmjudge.suite.build import _field_names, _recorded
from pytest_llmjudge.suite.model import RecordedValue

__all__ = ["GROUPABLE", "ItemFields", "item_fields", "plain_item"]

_KNOWN = frozenset(_field_names(CalibrationItemConfig))
_RECORDED_KEYS = frozenset(("score", "justification", "judge"))
_EXACT = 2**53

GROUPABLE = frozenset(("id", "language", "output", "input", "reference"))
"""Item fields a ``group_by`` can name that :meth:`ItemFields.grouping` holds as the model dumps them
(any other item field in ``group_by`` sends every item through the model)."""


@dataclass(frozen=True, slots=True)
class ItemFields:
    """What the calibration set keeps of one item."""

    id: str
    language: str
    output: str
    input: str | None
    reference: str | None
    context: tuple[str, ...]
    metadata: dict[str, Any]
    label_sets: dict[str, dict[str, int]]
    """metric -> {annotator id (as text): label}, in the order given."""
    recorded: dict[str, RecordedValue]

    def grouping(self) -> dict[str, Any]:
        """The fields a group is looked up in (``stats/grouping.py``): :data:`GROUPABLE` and ``metadata``."""
        return {
            "id": self.id,
            "language": self.language,
            "output": self.output,
            "input": self.input,
            "reference": self.reference,
            "metadata": self.metadata,
        }


def item_fields(config: CalibrationItemConfig) -> ItemFields:
    """The fields of an item the model validated."""
    context = config.context
    return ItemFields(
        id=config.id,
        language=config.language,
        output=config.output,
        input=config.input,
        reference=config.reference,
        context=(context,) if isinstance(context, str) else tuple(context or ()),
        metadata=dict(config.metadata),
        label_sets=config.label_sets(),
        recorded=_recorded(config.recorded),
    )


def _text_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _number(value: Any) -> bool:
    kind = type(value)  # exactly int or float: bool is an int subclass that the model refuses
    # An integer too large for a float (JSON allows any) is the model's to judge.
    return (kind is int and -_EXACT <= value <= _EXACT) or (kind is float and math.isfinite(value))


def _labels(given: Any) -> dict[str, int] | None:
    if type(given) is not dict or not given:
        return None
    for annotator, label in given.items():
        if type(annotator) is not str or type(label) is not int:
            return None
    return given


@lru_cache(maxsize=4096)
def _recorded_value(score: float | None, justification: str | None, judge: str | None) -> RecordedValue:
    """One shared (immutable) value per distinct score: a set of 100,000 items holds a handful."""
    return RecordedValue(score=score, justification=justification, judge=judge)


def _recorded_values(raw: Any) -> dict[str, RecordedValue] | None:
    if type(raw) is not dict:
        return None
    values: dict[str, RecordedValue] = {}
    for metric, entry in raw.items():
        if type(entry) is dict and "score" in entry and _RECORDED_KEYS.issuperset(entry):
            score, justification, judge = entry["score"], entry.get("justification"), entry.get("judge")
            if not (score is None or _number(score)) or not _text_or_none(justification) or not _text_or_none(judge):
                return None
            values[metric] = _recorded_value(None if score is None else float(score), justification, judge)
        elif _number(entry):
            values[metric] = _recorded_value(float(entry), None, None)
        else:
            return None
    return values


def plain_item(record: Mapping[str, Any]) -> ItemFields | None:
    """``record``'s fields when it has the plain shape (see the module docstring), else ``None``."""
    if not _KNOWN.issuperset(record):
        return None
    item_id, language, output = record.get("id"), record.get("language"), record.get("output")
    if type(item_id) is not str or not item_id or item_id != item_id.strip() or "\n" in item_id:
        return None
    if type(language) is not str or len(language) < 2 or type(output) is not str:
        return None
    input_text, reference = record.get("input"), record.get("reference")
    if not _text_or_none(input_text) or not _text_or_none(reference):
        return None
    context = record.get("context")
    if context is None:
        contexts: tuple[str, ...] = ()
    elif type(context) is str:
        contexts = (context,)
    elif type(context) is list and all(type(text) is str for text in context):
        contexts = tuple(context)
    else:
        return None
    metadata = record.get("metadata", {})
    if type(metadata) is not dict:
        return None
    if "metric" in record or "labels" in record:
        metric, labels = record.get("metric"), _labels(record.get("labels"))
        if "human" in record or type(metric) is not str or labels is None:
            return None
        label_sets = {metric: labels}
    else:
        human = record.get("human")
        if type(human) is not dict or not human:
            return None
        label_sets = {}
        for metric, given in human.items():
            labels = _labels(given)
            if labels is None:
                return None
            label_sets[metric] = labels
    recorded = _recorded_values(record.get("recorded", {}))
    if recorded is None:
        return None
    return ItemFields(
        id=item_id,
        language=language,
        output=output,
        input=input_text,
        reference=reference,
        context=contexts,
        metadata=dict(metadata),
        label_sets=label_sets,
        recorded=recorded,
    )
