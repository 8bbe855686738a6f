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
correction. The held-out gain (after minus before) gets a percentile bootstrap interval
over the held-out items: a held-out item is a (human, raw judge) pair and the corrected
score is a function of the raw one, so resampling the held-out confusion matrix ``C`` and
scoring ``C`` against ``C M`` (``M[j, c] = 1`` when raw ``j`` maps to ``c``) is resampling the
items (:func:`~pytest_llmjudge.stats.resampling.bootstrap_confusion_ci`). The map used at run
time is refitted on all items. A correction that lowers held-out F1 is still reported as
such; the plugin applies one only when the user enables it (``judge.correction: true``).

Degenerate maps are flagged (``CorrectionReport.problems``) and never applied: a map with
fewer than 2 distinct outputs although the judge gave 2 or more different scores (on all
items, or on the fitting part; every score becomes one value:
on the PARIKSHA subset Bengali LA maps 0, 1, 2 -> 1, and its held-out F1 "gain" only
says that most held-out items are labelled 1), or an evaluation on fewer than
``min_holdout`` held-out items. Fewer than 2 scored items can't be split: no evaluation
(``None``); ``fit_correction`` on zero items raises
:class:`~pytest_llmjudge.errors.StatisticsError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import as_label_array, confusion_matrix, weighted_f1, weighted_f1_from_confusion
from pytest_llmjudge.stats.resampling import bootstrap_confusion_ci

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

    @property
    def distinct_outputs(self) -> int:
        """How many different scale labels the map gives the raw scores it was fitted on."""
        return len(set(self.apply_labels(np.asarray(sorted(self.mapping), dtype=float)).tolist()))

    def label_matrix(self) -> npt.NDArray[np.int64]:
        """``M`` with ``M[j, c] = 1`` when raw label ``j`` becomes label ``c`` (scale order)."""
        scale = np.asarray(self.labels, dtype=float)
        corrected = self.apply_labels(scale)
        matrix = np.zeros((scale.size, scale.size), dtype=np.int64)
        matrix[np.arange(scale.size), [self.labels.index(int(c)) for c in corrected]] = 1
        return matrix

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
    gain_low: float | None = None
    gain_high: float | None = None
    confidence: float = 0.95
    resamples: int = 1000
    min_holdout: int = 10
    problems: tuple[str, ...] = ()
    """Why the correction is degenerate (never applied); empty when it is usable."""

    @property
    def gain(self) -> float:
        return self.f1_after - self.f1_before

    @property
    def usable(self) -> bool:
        return not self.problems

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
            "gain_ci": {
                "low": self.gain_low,
                "high": self.gain_high,
                "confidence": self.confidence,
                "resamples": self.resamples,
            },
            "min_holdout": self.min_holdout,
            "usable": self.usable,
            "problems": list(self.problems),
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
    min_holdout: int = 10,
    resamples: int = 1000,
    confidence: float = 0.95,
) -> CorrectionReport | None:
    """Fit on a random part, measure weighted F1 on the rest (with a bootstrap interval of
    the gain) and flag a degenerate map; ``None`` below 2 items."""
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
    mapping = fitted.label_matrix()

    def gain(stack: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        result: npt.NDArray[np.float64] = weighted_f1_from_confusion(stack @ mapping) - weighted_f1_from_confusion(
            stack
        )
        return result

    interval = bootstrap_confusion_ci(
        confusion_matrix(truth[test], raw[test], labels),
        gain,
        n_resamples=resamples,
        confidence=confidence,
        rng=seed,
    )
    on_all = fit_correction(truth, raw, labels, method)
    problems = []
    for name, found in (("", on_all), (" fitted on the fitting part", fitted)):
        # A judge that gave one score only has a one-value map that changes nothing; a
        # collapse is two or more raw scores mapped to one value.
        if len(found.mapping) >= 2 and found.distinct_outputs < 2:
            every = found.apply_labels([min(found.mapping)])[0]
            problems.append(f"degenerate map{name}: every judge score becomes {every}")
            break
    if test.size < min_holdout:
        problems.append(f"only {test.size} held-out items (min_holdout {min_holdout})")
    return CorrectionReport(
        method=method,
        holdout=holdout,
        seed=seed,
        n_fit=int(fit.size),
        n_test=int(test.size),
        f1_before=before,
        f1_after=after,
        correction=on_all,
        gain_low=None if np.isnan(interval.low) else interval.low,
        gain_high=None if np.isnan(interval.high) else interval.high,
        confidence=confidence,
        resamples=resamples,
        min_holdout=min_holdout,
        problems=tuple(problems),
    )
