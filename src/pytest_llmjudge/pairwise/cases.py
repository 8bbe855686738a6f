"""The cases of a ranking file and the matchups read from them: types shared by the
ranking loader (``pairwise.ranking``) and the surrogate (``pairwise.surrogate``).

A separate module so that neither of those two imports the other (the surrogate only needs
cases and matchups, never the loader).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_llmjudge.pairwise.pairwise_judge import Outcome

Matchup = tuple[str, str, Outcome]
"""One battle as (system shown first, system shown second, outcome from the first's side)."""


@dataclass(frozen=True)
class RankedCase:
    """A query with the outputs of the systems that answered it."""

    id: str
    language: str
    outputs: Mapping[str, str]
    input: str | None = None
    reference: str | None = None
    context: tuple[str, ...] = ()
    features: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
