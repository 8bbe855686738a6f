"""Grouping records by a list of fields, and the names of the groups.

Statistics that are computed "per language" (the human-agreement gate, suite aggregates
and regression comparisons) can be computed per any combination of fields instead:
``group_by: [language, task]`` makes one group per (language, task) value pair.

A record is any mapping (a calibration item, a suite case as a dict). A field is looked up
first among the record's own keys, then in its ``metadata`` mapping, so ``task`` finds
``metadata.task`` of a PARIKSHA-style record. Values are compared as text (``str(value)``).

Names: the first field's value alone, then ``field=value`` for each further field, joined
with ``-``: ``hi`` for ``[language]`` (today's names stay unchanged) and ``hi-task=qa`` for
``[language, task]``.

Degenerate cases: a record without one of the fields (nor in ``metadata``) gets the value
:data:`MISSING` (``"(none)"``) for it, so it forms its own visible group instead of being
dropped or merged into another; an empty field list raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

__all__ = ["MISSING", "Group", "field_value", "group_of"]

MISSING = "(none)"


def field_value(record: Mapping[str, Any], name: str) -> str:
    """The record's value of ``name`` as text: its own key, else ``metadata[name]``, else :data:`MISSING`."""
    if name in record and record[name] is not None:
        return str(record[name])
    metadata = record.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get(name) is not None:
        return str(metadata[name])
    return MISSING


@dataclass(frozen=True, order=True)
class Group:
    """One group: the fields and their values, in ``group_by`` order."""

    fields: tuple[str, ...]
    values: tuple[str, ...]

    @cached_property  # read per item when grouping 100,000 calibration items
    def name(self) -> str:
        head, *rest = zip(self.fields, self.values, strict=True)
        return "-".join([head[1], *(f"{name}={value}" for name, value in rest)])

    def value(self, name: str) -> str | None:
        return self.values[self.fields.index(name)] if name in self.fields else None

    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` belongs to this group."""
        return all(field_value(record, name) == value for name, value in zip(self.fields, self.values, strict=True))


def group_of(record: Mapping[str, Any], fields: Sequence[str]) -> Group:
    """The group ``record`` belongs to under ``fields``."""
    if not fields:
        raise ValueError("group fields must not be empty")
    return Group(tuple(fields), tuple(field_value(record, name) for name in fields))
