"""A jury: several live judges scored on one calibration group x metric, and which to use.

Per judge of ``jury.judges``: its own agreement gate on the group's items (the gate of
``calibration/agreement_gate.py``, with the set's criteria), so each judge's weighted F1 vs the human
aggregate and pass/fail per language. Among the judges (Krippendorff 2011; implemented and
checked against the ``krippendorff`` package in ``stats/krippendorff.py``):

* Krippendorff's alpha at ``jury.level`` (nominal, ordinal or interval) over the items,
  each judge a rater, unscored items missing;
* the pairwise Pearson correlation of the judges' errors (score minus human aggregate) and
  the effective committee size ``k / (1 + (k - 1) * mean r)`` (Kish 1965): judges wrong on
  the same items add little to each other.

The verdict a language uses (``jury.combine``):

* ``best``: the judge with the highest weighted F1 among those whose gate passes (ties: the
  first listed);
* ``majority``, ``mean``, ``weighted``: per item, the judges' majority, rounded mean, or mean
  weighted by each judge's weighted F1 (agreement-weighted), ``stats/committee.py``.

Every combination's weighted F1 against the humans is reported, so a reader sees what the
chosen one gains. The jury item fails when no judge passes its gate (for ``best``), when the
chosen combination's F1 is below the gate threshold (the others), or when alpha is below
``jury.min_alpha`` (an undefined alpha fails it too: agreement can't be shown).

Degenerate cases: an item no judge scored is left out of the combinations; a judge that
scored no item has F1 ``None`` and fails its gate; alpha is ``None`` with fewer than two
pairable ratings or a single value seen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_llmjudge.calibration.agreement_gate import GateResult
from pytest_llmjudge.calibration.schema import JuryConfig
from pytest_llmjudge.stats.agreement import weighted_f1
from pytest_llmjudge.stats.committee import combine_scores
from pytest_llmjudge.stats.krippendorff import error_correlation, krippendorff_alpha

__all__ = ["JuryMember", "JuryResult", "combine_scores", "evaluate_jury"]


@dataclass(frozen=True)
class JuryMember:
    """One judge of the jury on one group x metric."""

    label: str
    gate: GateResult
    scores: tuple[float, ...]
    calls: int
    """Judge calls its scores needed (one per item)."""
    cached: int
    """Of those, answered from the cache."""

    @property
    def f1(self) -> float | None:
        return self.gate.f1


def _f1(human: Sequence[int], scores: Sequence[float], scale: Sequence[int]) -> float | None:
    kept = [(h, int(s)) for h, s in zip(human, scores, strict=True) if not math.isnan(s)]
    if not kept:
        return None
    return float(weighted_f1(np.array([h for h, _ in kept]), np.array([s for _, s in kept]), labels=list(scale)))


@dataclass(frozen=True)
class JuryResult:
    group: str
    metric: str
    members: tuple[JuryMember, ...]
    alpha: float | None
    level: str
    correlations: Mapping[str, float | None]
    """``judge A | judge B`` -> the correlation of their errors."""
    effective_size: float | None
    combined_f1: Mapping[str, float | None]
    """Weighted F1 vs the humans of each combination (best, majority, mean, weighted)."""
    combine: str
    chosen: str | None
    """The judge a language uses with ``combine: best`` (None: none passes); else the combination's name."""
    problem: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "metric": self.metric,
            "judges": [
                {
                    "judge": m.label,
                    "f1": m.f1,
                    "passed": m.gate.passed,
                    "calls": m.calls,
                    "cached": m.cached,
                }
                for m in self.members
            ],
            "alpha": self.alpha,
            "level": self.level,
            "error_correlation": dict(self.correlations),
            "effective_committee_size": self.effective_size,
            "combined_f1": dict(self.combined_f1),
            "combine": self.combine,
            "chosen": self.chosen,
            "problem": self.problem,
        }


def evaluate_jury(
    jury: JuryConfig,
    group: str,
    metric: str,
    members: Sequence[JuryMember],
    human: Sequence[int],
    scale: Sequence[int],
    threshold: float,
) -> JuryResult:
    """The jury's statistics and verdict on one group x metric (see the module docstring)."""
    scores = {m.label: list(m.scores) for m in members}
    alpha = krippendorff_alpha([m.scores for m in members], jury.level)
    matrix, effective = error_correlation(scores, [float(h) for h in human])
    labels = [m.label for m in members]
    correlations = {f"{a} | {b}": matrix.get((a, b)) for i, a in enumerate(labels) for b in labels[i + 1 :]}
    weights = {m.label: m.f1 or 0.0 for m in members}
    passing = [m for m in members if m.gate.passed]
    best = max(passing, key=lambda m: m.f1 or 0.0, default=None)
    combined_f1: dict[str, float | None] = {"best": best.f1 if best is not None else None}
    for how in ("majority", "mean", "weighted"):
        combined_f1[how] = _f1(human, combine_scores(scores, how, weights, scale), scale)
    problems = []
    if jury.combine == "best":
        chosen = best.label if best is not None else None
        if best is None:
            problems.append("no judge of the jury passes its gate")
    else:
        chosen = jury.combine
        value = combined_f1[jury.combine]
        if value is None or value < threshold - 1e-12:
            shown = "-" if value is None else f"{value:.3f}"
            problems.append(f"the jury's {jury.combine} verdict has weighted F1 {shown} < threshold {threshold:.3f}")
    if jury.min_alpha is not None and (alpha is None or alpha < jury.min_alpha - 1e-12):
        shown = "undefined" if alpha is None else f"{alpha:.3f}"
        problems.append(f"Krippendorff's alpha ({jury.level}) among the judges {shown} < min_alpha {jury.min_alpha:g}")
    return JuryResult(
        group=group,
        metric=metric,
        members=tuple(members),
        alpha=alpha,
        level=jury.level,
        correlations=correlations,
        effective_size=effective,
        combined_f1=combined_f1,
        combine=jury.combine,
        chosen=chosen,
        problem="; ".join(problems) or None,
    )
