"""Agreement between a judge and human labels on an ordinal or categorical scale.

The human-agreement gate compares, per language and metric, the scores an LLM judge gave
with the aggregated human label of the same items (METAL, Hada et al. 2024b, sec. 4.4 and
5.1; Hada et al. 2024a, sec. 3.4 and 4.1). Everything here is computed from one K x K
confusion matrix ``C`` whose rows are the reference labels (humans) and whose columns are
the predicted labels (the judge), in the order of ``labels``:

* per-class F1: ``F1_k = 2 C_kk / (row_k + col_k)``, which equals the harmonic mean of
  precision ``C_kk / col_k`` and recall ``C_kk / row_k``;
* **weighted F1** (METAL's headline number): ``sum_k row_k F1_k / sum_k row_k``, i.e. the
  per-class F1 averaged with the class support among the reference labels as weight. METAL
  (sec. 4.4) uses it instead of accuracy because the label distributions are skewed;
* macro F1: the unweighted mean of ``F1_k`` over all ``labels``;
* percentage agreement (PA, Hada et al. 2024a sec. 3.4): ``trace(C) / n``;
* Cohen's kappa: ``(p_o - p_e) / (1 - p_e)`` with ``p_o = trace(C) / n`` and
  ``p_e = sum_k row_k col_k / n^2``; the weighted variant is
  ``1 - sum(W * C) / sum(W * E)`` with ``E = outer(row, col) / n`` and ``W`` the linear
  ``|i - j|`` or quadratic ``(i - j)^2`` distance between label positions.

These match scikit-learn's ``f1_score(average="weighted" | "macro", zero_division=0)``,
``cohen_kappa_score`` and ``confusion_matrix`` wherever scikit-learn gives a number.

Degenerate cases, decided once here:

* A class that is never predicted and never true has ``row_k + col_k = 0``: its F1 is 0
  (scikit-learn's ``zero_division=0``). In the weighted mean it has weight 0 anyway; in the
  macro mean it counts as 0 when it is listed in ``labels`` explicitly.
* A class the judge uses but humans never do has F1 0 and support 0, so it carries no
  weight in weighted F1. The items the judge put there still count: as lost recall of
  the classes the humans chose for them.
* No items at all (``n = 0``): every statistic here is undefined and raises
  :class:`~pytest_llmjudge.errors.StatisticsError` (scikit-learn raises a ``ValueError``).
  A gate must never pass or fail on zero evidence silently.
* Cohen's kappa when the expected disagreement is 0 (both raters used one and the same
  class for every item, so ``p_e = 1``): the ratio is 0/0. We return ``undefined``
  (default NaN, which is what scikit-learn returns too, but without a warning). METAL's
  Table 6 prints 0.0 for such cells; pass ``undefined=0.0`` to reproduce that convention.
* Values that are not in an explicit ``labels`` list raise ``ValueError``. (scikit-learn
  silently drops such items from the confusion matrix; for a gate a judge score outside the
  scale is a bug to report, not an item to forget.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError

__all__ = [
    "AgreementReport",
    "agreement_report",
    "as_label_array",
    "cohen_kappa",
    "cohen_kappa_from_confusion",
    "confusion_matrix",
    "encode_labels",
    "macro_f1",
    "macro_f1_from_confusion",
    "per_class_f1_from_confusion",
    "percentage_agreement",
    "percentage_agreement_from_confusion",
    "resolve_labels",
    "weighted_f1",
    "weighted_f1_from_confusion",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
KappaWeights = Literal["linear", "quadratic"] | None


def as_label_array(values: npt.ArrayLike, name: str = "labels") -> IntArray:
    """Return ``values`` as a 1-D int64 array, refusing NaN and non-integer numbers.

    Floats are accepted when they hold whole numbers (labels often arrive as floats from
    pandas or JSON); anything else would be silently truncated by ``astype(int)``.
    """
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype.kind in "iub":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if not np.all(array == np.round(array)):
            raise ValueError(f"{name} contains non-integer values")
        return array.astype(np.int64)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    raise ValueError(f"{name} must hold integer labels, got dtype {array.dtype}")


def resolve_labels(labels: npt.ArrayLike | None, *arrays: IntArray) -> IntArray:
    """The label order to use: ``labels`` as given, or the sorted union of ``arrays``."""
    if labels is None:
        if not arrays:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(arrays))
    resolved = as_label_array(labels, "labels")
    if np.unique(resolved).size != resolved.size:
        raise ValueError(f"labels contains duplicates: {resolved.tolist()}")
    return resolved


def encode_labels(values: IntArray, labels: IntArray) -> npt.NDArray[np.intp]:
    """Map each value to its position in ``labels``; raise if a value is not listed."""
    if labels.size == 0:
        if values.size:
            raise ValueError("no labels given for non-empty data")
        return np.zeros(0, dtype=np.intp)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    positions = np.searchsorted(sorted_labels, values)
    clipped = np.minimum(positions, sorted_labels.size - 1)
    unknown = sorted_labels[clipped] != values
    if np.any(unknown):
        bad = sorted(set(values[unknown].tolist()))
        raise ValueError(f"values {bad} are not in labels {labels.tolist()}")
    return order[clipped]


def _paired(
    y_true: npt.ArrayLike, y_pred: npt.ArrayLike, labels: npt.ArrayLike | None
) -> tuple[IntArray, IntArray, IntArray]:
    true = as_label_array(y_true, "y_true")
    pred = as_label_array(y_pred, "y_pred")
    if true.shape != pred.shape:
        raise ValueError(f"y_true has {true.size} items but y_pred has {pred.size}")
    return true, pred, resolve_labels(labels, true, pred)


def _confusion(true: IntArray, pred: IntArray, labels: IntArray) -> IntArray:
    k = labels.size
    flat = encode_labels(true, labels) * k + encode_labels(pred, labels)
    return np.bincount(flat, minlength=k * k).astype(np.int64).reshape(k, k)


def _require_items(confusion: npt.NDArray[Any]) -> None:
    if np.any(confusion.sum(axis=(-2, -1)) == 0):
        raise StatisticsError("agreement statistics need at least one labelled item (n = 0)")


def confusion_matrix(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, labels: npt.ArrayLike | None = None) -> IntArray:
    """K x K counts: row = reference (human) label, column = predicted (judge) label.

    Rows and columns follow the order of ``labels`` (default: the sorted values seen in
    either array). An empty input with explicit labels gives a zero matrix.
    """
    true, pred, resolved = _paired(y_true, y_pred, labels)
    return _confusion(true, pred, resolved)


def per_class_f1_from_confusion(confusion: npt.ArrayLike) -> FloatArray:
    """Per-class F1 ``2 C_kk / (row_k + col_k)`` of one or a stack (..., K, K) of matrices.

    A class with ``row_k + col_k = 0`` gets 0 (zero-division convention, see module doc).
    """
    counts = np.asarray(confusion)
    tp = np.diagonal(counts, axis1=-2, axis2=-1)
    denominator = counts.sum(axis=-1) + counts.sum(axis=-2)
    # 0/0 is 0 without a warning (tp is 0 there too). Dividing only where the denominator is
    # positive, not by max(denominator, 1), keeps F1 right for cell probabilities (a posterior
    # draw, stats/resampling.py), whose denominators lie below 1.
    result: FloatArray = np.divide(
        2.0 * tp, denominator, out=np.zeros(np.broadcast(tp, denominator).shape), where=denominator > 0
    )
    return result


def weighted_f1_from_confusion(confusion: npt.ArrayLike) -> FloatArray:
    """Support-weighted mean of per-class F1 for one or a stack (..., K, K) of matrices.

    Returns a 0-d array for a single matrix. Raises StatisticsError when any matrix is empty.
    """
    counts = np.asarray(confusion)
    _require_items(counts)
    support = counts.sum(axis=-1)
    result: FloatArray = (per_class_f1_from_confusion(counts) * support).sum(axis=-1) / support.sum(axis=-1)
    return result


def macro_f1_from_confusion(confusion: npt.ArrayLike) -> FloatArray:
    """Unweighted mean of per-class F1 over all K classes of (..., K, K) matrices."""
    counts = np.asarray(confusion)
    _require_items(counts)
    result: FloatArray = per_class_f1_from_confusion(counts).mean(axis=-1)
    return result


def percentage_agreement_from_confusion(confusion: npt.ArrayLike) -> FloatArray:
    """Share of items on the diagonal of one or a stack (..., K, K) of matrices."""
    counts = np.asarray(confusion)
    _require_items(counts)
    result: FloatArray = np.trace(counts, axis1=-2, axis2=-1) / counts.sum(axis=(-2, -1))
    return result


def _kappa_weights(k: int, weights: KappaWeights) -> IntArray:
    distance = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(np.int64)
    if weights is None:
        return (distance > 0).astype(np.int64)
    if weights == "linear":
        return distance
    if weights == "quadratic":
        return distance * distance
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def cohen_kappa_from_confusion(
    confusion: npt.ArrayLike,
    *,
    weights: KappaWeights = None,
    undefined: float = math.nan,
) -> float:
    """Cohen's kappa of one K x K confusion matrix (see the module docstring)."""
    counts = np.asarray(confusion, dtype=np.int64)
    _require_items(counts)
    w = _kappa_weights(counts.shape[0], weights)
    n = int(counts.sum())
    # n * sum(W * E) in exact integers, so "expected disagreement is 0" is an exact test.
    expected_scaled = int((w * np.outer(counts.sum(axis=1), counts.sum(axis=0))).sum())
    if expected_scaled == 0:
        return undefined
    observed_scaled = int((w * counts).sum()) * n
    return 1.0 - observed_scaled / expected_scaled


def weighted_f1(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, labels: npt.ArrayLike | None = None) -> float:
    """Weighted F1 of ``y_pred`` (judge) against ``y_true`` (human aggregate).

    ``labels`` only fixes the scale to validate against; classes without human support
    have weight 0, so adding labels never changes the value. Raises StatisticsError for n = 0.
    """
    true, pred, resolved = _paired(y_true, y_pred, labels)
    return float(weighted_f1_from_confusion(_confusion(true, pred, resolved)))


def macro_f1(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, labels: npt.ArrayLike | None = None) -> float:
    """Macro F1 over ``labels`` (default: every value seen in either array).

    Unlike weighted F1, listing a class that nobody used adds a 0 to the mean.
    """
    true, pred, resolved = _paired(y_true, y_pred, labels)
    return float(macro_f1_from_confusion(_confusion(true, pred, resolved)))


def percentage_agreement(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Share of items on which ``a`` and ``b`` give the same label (Hada et al. 2024a, 3.4)."""
    first = as_label_array(a, "a")
    second = as_label_array(b, "b")
    if first.shape != second.shape:
        raise ValueError(f"a has {first.size} items but b has {second.size}")
    if first.size == 0:
        raise StatisticsError("percentage agreement needs at least one item (n = 0)")
    return float(np.count_nonzero(first == second) / first.size)


def cohen_kappa(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    labels: npt.ArrayLike | None = None,
    *,
    weights: KappaWeights = None,
    undefined: float = math.nan,
) -> float:
    """Cohen's kappa between two raters; ``undefined`` is returned when ``p_e = 1``.

    ``weights`` selects the linear or quadratic variant for ordinal scales; the distances
    are between positions in ``labels`` (as in scikit-learn), not between label values.
    """
    first, second, resolved = _paired(a, b, labels)
    return cohen_kappa_from_confusion(_confusion(first, second, resolved), weights=weights, undefined=undefined)


@dataclass(frozen=True, eq=False)
class AgreementReport:
    """Judge-vs-human agreement on one slice (for example one language and metric).

    ``confusion`` is read-only; rows are human labels, columns judge labels, both in the
    order of ``labels``. ``cohen_kappa`` may be NaN (see the module docstring).
    """

    labels: tuple[int, ...]
    weighted_f1: float
    macro_f1: float
    percentage_agreement: float
    cohen_kappa: float
    confusion: IntArray

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.confusion.sum())

    @property
    def support(self) -> tuple[int, ...]:
        """Number of items per human label."""
        return tuple(int(x) for x in self.confusion.sum(axis=1))

    @property
    def per_class_f1(self) -> tuple[float, ...]:
        """F1 of each label, in the order of ``labels``."""
        return tuple(float(x) for x in per_class_f1_from_confusion(self.confusion))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (NaN kappa becomes ``None``)."""
        return {
            "labels": list(self.labels),
            "n": self.n,
            "weighted_f1": self.weighted_f1,
            "macro_f1": self.macro_f1,
            "percentage_agreement": self.percentage_agreement,
            "cohen_kappa": None if math.isnan(self.cohen_kappa) else self.cohen_kappa,
            "confusion": self.confusion.tolist(),
            "support": list(self.support),
            "per_class_f1": list(self.per_class_f1),
        }


def agreement_report(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    labels: npt.ArrayLike | None = None,
    *,
    kappa_undefined: float = math.nan,
) -> AgreementReport:
    """All agreement statistics of ``y_pred`` (judge) against ``y_true`` (humans) at once.

    The confusion matrix is built once and every statistic is read off it.
    Raises StatisticsError for n = 0.
    """
    true, pred, resolved = _paired(y_true, y_pred, labels)
    confusion = _confusion(true, pred, resolved)
    confusion.setflags(write=False)
    return AgreementReport(
        labels=tuple(int(x) for x in resolved),
        weighted_f1=float(weighted_f1_from_confusion(confusion)),
        macro_f1=float(macro_f1_from_confusion(confusion)),
        percentage_agreement=float(percentage_agreement_from_confusion(confusion)),
        cohen_kappa=cohen_kappa_from_confusion(confusion, undefined=kappa_undefined),
        confusion=confusion,
    )
