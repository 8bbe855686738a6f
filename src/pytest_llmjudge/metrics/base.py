"""The interface between reference metrics and the suite runner.

A suite case becomes one :class:`MetricInput`; a metric turns it into one
:class:`MetricValue`. The runner compares ``value`` with the assertion's threshold in the
direction given by ``higher_is_better`` and shows ``detail`` (components, confidence,
which tokenizer was used, ...) when a case fails.

``requires`` names the :class:`MetricInput` fields that must be non-empty for the metric
to be defined. A missing one is a :class:`~pytest_llmjudge.errors.MetricError`, which the
runner reports as a per-case error: a case that cannot be scored never passes. ``output``
is never listed there on purpose: an empty answer is a legitimate (bad) answer and gets
the metric's documented score for it, usually 0.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pytest_llmjudge.errors import MetricError

__all__ = ["Metric", "MetricInput", "MetricValue", "check_required", "is_blank"]


@dataclass(frozen=True)
class MetricInput:
    """One case as a metric sees it."""

    output: str
    reference: str | None = None
    input: str | None = None
    context: tuple[str, ...] = ()
    language: str = "en"
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricValue:
    """A metric's verdict on one case; ``value`` is a str only for categorical metrics."""

    value: float | str
    detail: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Metric(Protocol):
    """What the suite runner needs from a reference metric."""

    name: str
    higher_is_better: bool
    requires: frozenset[str]

    def compute(self, item: MetricInput) -> MetricValue: ...


# How each field is named in the "needs ..." message, so a suite author knows what to add.
_FIELD_PHRASES = {
    "reference": "a reference",
    "input": "an input (the question)",
    "context": "context passages",
    "output": "an output",
}


def is_blank(value: str | tuple[str, ...] | None) -> bool:
    """True for ``None``, an empty or whitespace-only string, or a tuple of such strings."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return all(not part.strip() for part in value)


@functools.lru_cache(maxsize=64)
def _in_order(requires: frozenset[str]) -> tuple[str, ...]:
    # Sorted once per distinct set: this runs for every case of every metric.
    return tuple(sorted(requires))


def check_required(name: str, requires: frozenset[str], item: MetricInput) -> None:
    """Raise :class:`MetricError` naming the first field in ``requires`` that is blank."""
    for field_name in _in_order(requires):
        if is_blank(getattr(item, field_name)):
            phrase = _FIELD_PHRASES.get(field_name, field_name)
            raise MetricError(f"{name} needs {phrase}, but the case has none")
