"""Per-language score correction of a judge, fitted on the calibration set.

LLM judges put too many items in the top class, most of all where humans disagree and in
lower-resource languages (Hada et al. 2024a, sec. 4.2 and 5; METAL, Hada et al. 2024b,
sec. 5.2). METAL's limitations (sec. 8) name this scale-region bias as uncorrected. This
module learns, per language and metric, a map from each raw judge score to a human score
using the calibration set's confusion matrix ``C`` (rows = human aggregate ``h``, columns =
judge score ``j``, counts over the items):

* ``most_likely`` (default): ``j -> argmax_h C[h, j]``, the human label most often given to
  items the judge scored ``j``. Ties go to the label closest to ``j``, then to the lower one.
  The corrected score stays on the scale, so F1 can be computed on it directly.
* ``expected``: ``j -> sum_h h C[h, j] / sum_h C[h, j]``, the mean human label of those items
  (a number between scale points; e.g. a judge "2" in Bengali LA becomes 1.31). For F1 it
  is rounded half up to the nearest scale point.

A raw score the judge never gave on the fitting items (column sum 0) maps to itself.

Evaluation (:func:`evaluate_correction`): the items are split at random (``numpy``
``default_rng(seed)``, so the split is reproducible) into a fitting part and a held-out
part of ``round(holdout * n)`` items (at least 1); the map is fitted on the first and
weighted F1 against the human aggregate is reported on the held-out part before and after
correction. The map used at run time is refitted on all items. A correction that lowers
held-out F1 is still reported as such; the plugin applies one only when the user enables
it (``judge.correction: true``).

Degenerate cases: fewer than 2 scored items can't be split: no evaluation (``None``);
``fit_correction`` on zero items raises :class:`~pytest_llmjudge.errors.StatisticsError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import as_label_array, confusion_matrix, weighted_f1

__all__ = ["CorrectionMethod", "CorrectionReport", "ScoreCorrection", "evaluate_correction", "fit_correction"]

CorrectionMethod = Literal["most_likely", "expected"]


@dataclass(frozen=True)
class ScoreCorrection:
    """A raw-judge-score -> corrected-score map for one language and metric."""

    method: CorrectionMethod
    labels: tuple[int, ...]
    mapping: Mapping[int, float] = field(default_factory=dict)
    n_items: int = 0

    def apply(self, raw: float) -> float:
        """The corrected score of ``raw`` (itself when the map has no entry for it)."""
        if float(raw).is_integer() and int(raw) in self.mapping:
            return float(self.mapping[int(raw)])
        return float(raw)

    def apply_labels(self, raw: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Corrected scores as scale labels (``expected`` values rounded half up, clipped to the scale)."""
        original = np.asarray(raw, dtype=float)
        values = original.copy()
        for score, corrected in self.mapping.items():
            values[original == score] = corrected
        low, high = min(self.labels), max(self.labels)
        rounded: npt.NDArray[np.int64] = np.clip(np.floor(values + 0.5), low, high).astype(np.int64)
        return rounded

    def describe(self) -> str:
        pairs = ", ".join(f"{raw}->{_fmt(value)}" for raw, value in sorted(self.mapping.items()))
        return f"{self.method} ({pairs})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "labels": list(self.labels),
            "map": {str(raw): value for raw, value in sorted(self.mapping.items())},
            "n_items": self.n_items,
        }


def _fmt(value: float) -> str:
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def fit_correction(
    human: npt.ArrayLike, judge: npt.ArrayLike, labels: npt.ArrayLike, method: CorrectionMethod = "most_likely"
) -> ScoreCorrection:
    """Fit the map from the items' human aggregate labels and raw judge scores."""
    scale = as_label_array(labels, "labels")
    counts = confusion_matrix(human, judge, scale)
    n = int(counts.sum())
    if n == 0:
        raise StatisticsError("a score correction needs at least one scored item (n = 0)")
    mapping: dict[int, float] = {}
    for column, raw in enumerate(scale.tolist()):
        column_counts = counts[:, column]
        total = int(column_counts.sum())
        if total == 0:
            continue
        if method == "expected":
            mapping[raw] = float(column_counts @ scale) / total
        else:
            best = column_counts.max()
            candidates = [int(scale[row]) for row in np.flatnonzero(column_counts == best)]
            mapping[raw] = float(min(candidates, key=lambda label: (abs(label - raw), label)))
    return ScoreCorrection(method=method, labels=tuple(int(x) for x in scale), mapping=mapping, n_items=n)


@dataclass(frozen=True)
class CorrectionReport:
    """Held-out effect of the correction, and the map fitted on all items."""

    method: CorrectionMethod
    holdout: float
    seed: int
    n_fit: int
    n_test: int
    f1_before: float
    f1_after: float
    correction: ScoreCorrection

    @property
    def gain(self) -> float:
        return self.f1_after - self.f1_before

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "holdout": self.holdout,
            "seed": self.seed,
            "n_fit": self.n_fit,
            "n_test": self.n_test,
            "f1_before": self.f1_before,
            "f1_after": self.f1_after,
            "gain": self.gain,
            "fitted_on_all": self.correction.to_dict(),
        }


def evaluate_correction(
    human: npt.ArrayLike,
    judge: npt.ArrayLike,
    labels: npt.ArrayLike,
    *,
    method: CorrectionMethod = "most_likely",
    holdout: float = 0.3,
    seed: int = 0,
) -> CorrectionReport | None:
    """Fit on a random part, measure weighted F1 on the rest; ``None`` below 2 items."""
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout must be in (0, 1), got {holdout}")
    truth = as_label_array(human, "human")
    raw = as_label_array(judge, "judge")
    if truth.shape != raw.shape:
        raise ValueError(f"human has {truth.size} items but judge has {raw.size}")
    n = truth.size
    if n < 2:
        return None
    n_test = min(n - 1, max(1, int(np.floor(holdout * n + 0.5))))
    order = np.random.default_rng(seed).permutation(n)
    test, fit = order[:n_test], order[n_test:]
    fitted = fit_correction(truth[fit], raw[fit], labels, method)
    before = weighted_f1(truth[test], raw[test], labels)
    after = weighted_f1(truth[test], fitted.apply_labels(raw[test]), labels)
    return CorrectionReport(
        method=method,
        holdout=holdout,
        seed=seed,
        n_fit=int(fit.size),
        n_test=int(test.size),
        f1_before=before,
        f1_after=after,
        correction=fit_correction(truth, raw, labels, method),
    )
