"""Several human annotators per item: the aggregate label, agreement levels, the human ceiling.

Input representation: a 2-D float array, items x annotator columns, with NaN where an
annotator did not label an item. Items may have any number of labels (real releases such
as PARIKSHA have items with only one or two of the planned three annotators).
:func:`slot_matrix` builds it from long-format rows (one row per item and label).

Aggregation (METAL, Hada et al. 2024b, sec. 3.2): take the majority vote of the annotators;
when there is none (all three disagree), take the average and round it. Generalised here to
any number of labels per item:

* the *majority* label is the unique most frequent label of the item. A tie for the top
  count (1-1 with two annotators, 2-2 with four, 1-1-1 with three) means "no majority".
  With four or more labels this is a plurality: 2-1-1 picks the label with two votes;
* the fallback is the mean of the item's labels rounded **half up** (1.5 -> 2, 0.5 -> 1), the
  rounding a reader expects; Python's and numpy's ``round`` would send 0.5 to 0 and 2.5 to 2.
  It is computed in integers, ``floor((2 * sum + n) / (2 * n))``, so no float error can flip
  a half. It treats the scale as an integer interval (0/1/2 or 1..5), as METAL does.

Rules for :func:`aggregate_labels`: ``"majority_then_rounded_mean"`` (METAL, default),
``"majority_then_median"`` (fallback: median, halves rounded up) and ``"mean_rounded"``
(always the rounded mean, majority or not).

Agreement level of an item (the three cases of METAL sec. 4.4/5.2 and Hada et al. 2024a
sec. 4.2): ``"full"`` all of at least two labels equal; ``"partial"`` a majority exists but
not everyone agrees; ``"none"`` no majority (the fallback decided); ``"single"`` only one
label, so agreement cannot be judged. For three annotators this is exactly the papers' split.

Fleiss' kappa (reported by METAL, Table 6, and Hada et al. 2024a, appendix A.3). With
``n_ij`` the number of labels of class j on item i and ``n_i = sum_j n_ij``::

    P_i  = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1))   share of agreeing ordered label pairs
    Pbar = mean of P_i over items with n_i >= 2
    p_j  = sum_i n_ij / sum_i n_i                   over the same items
    Pe   = sum_j p_j^2
    kappa = (Pbar - Pe) / (1 - Pe)

Fleiss (1971) assumes the same n for every item; computing ``P_i`` with each item's own
``n_i`` and pooling all labels for ``p_j`` is the direct generalisation to varying numbers
of annotators, and it is identical to the textbook formula (and statsmodels) when n is
constant. Items with a single label carry no agreement information and are left out.

Human ceiling (METAL sec. 5.1): the mean pairwise weighted F1 between annotators (A1-A2,
A2-A3, A3-A1), each pair scored on the items both labelled. Weighted F1 is not symmetric
(the first of the pair gives the class weights). Two conventions
(:data:`AgreementConvention`), because releases rarely have exactly three labels per item:

* ``"metal"``: what METAL describes. Only items with exactly three labels (its design has
  three annotators per item), the three pairs A1-A2, A2-A3, A3-A1 in that cyclic order with
  the first annotator of each pair as the reference, and their plain mean. Fleiss' kappa
  is computed on the same complete items.
* ``"all_pairs"``: every item with two or more labels and every pair of annotators; each
  pair's F1 is the mean of both directions (so no side is privileged), and the ceiling is
  the mean of the pairs' F1 **weighted by the number of items each pair shares**. A 4th
  label on a few items creates pairs resting on those few items; with equal weights they
  would count as much as the pairs seen on every item and pull the ceiling towards their
  small-sample F1 (``tests/unit/test_stats_annotators.py`` builds such a case). Fleiss'
  kappa uses every item with two or more labels.

Who is "A1": :func:`pairwise_annotator_f1` takes each column as one person (a fixed
annotator team); :func:`pairwise_slot_f1` takes each item's 1st, 2nd, 3rd label in column
order, whoever gave them (release data such as PARIKSHA has worker ids that change from
item to item). The caller fixes the column order; the gate sorts each item's labels by
annotator id, so its ceiling does not depend on the order of a label mapping.

Degenerate cases: no items, an item without any label, a matrix with no item of two or
more labels (Fleiss' kappa) and no pair of annotators sharing an item (the ceiling) raise
:class:`~pytest_llmjudge.errors.StatisticsError`. When every label falls in one class the
chance agreement ``Pe`` is 1 and kappa is 0/0: :func:`fleiss_kappa` returns ``undefined``
(default NaN; statsmodels gives NaN too, METAL's Table 6 prints 0.0 for such cells).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import (
    as_label_array,
    encode_labels,
    resolve_labels,
    weighted_f1_from_confusion,
)

__all__ = [
    "AGREEMENT_LEVELS",
    "AggregatedLabels",
    "AggregationRule",
    "AgreementConvention",
    "AnnotatorPair",
    "METAL_ANNOTATORS",
    "PairwiseF1",
    "aggregate_labels",
    "complete_items",
    "fleiss_kappa",
    "fleiss_kappa_from_counts",
    "pairwise_annotator_f1",
    "pairwise_slot_f1",
    "rating_counts",
    "slot_matrix",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
AggregationRule = Literal["majority_then_rounded_mean", "majority_then_median", "mean_rounded"]
AgreementConvention = Literal["all_pairs", "metal"]
METAL_ANNOTATORS = 3

AGREEMENT_LEVELS: tuple[str, ...] = ("full", "partial", "none", "single")
_FULL, _PARTIAL, _NONE, _SINGLE = range(4)


def _as_rating_matrix(matrix: npt.ArrayLike) -> FloatArray:
    ratings = np.asarray(matrix, dtype=np.float64)
    if ratings.ndim != 2:
        raise ValueError(f"ratings must be a 2-D items x annotators array, got shape {ratings.shape}")
    present = ratings[~np.isnan(ratings)]
    if not np.all(np.isfinite(present)) or not np.all(present == np.round(present)):
        raise ValueError("ratings must be whole numbers or NaN for a missing label")
    return ratings


def _matrix_labels(ratings: FloatArray, labels: npt.ArrayLike | None) -> IntArray:
    present = ratings[~np.isnan(ratings)].astype(np.int64)
    return resolve_labels(labels, present)


def _counts(ratings: FloatArray, labels: IntArray) -> IntArray:
    present = ~np.isnan(ratings)
    rows = np.nonzero(present)[0]
    columns = encode_labels(ratings[present].astype(np.int64), labels)
    k = labels.size
    flat = np.bincount(rows * k + columns, minlength=ratings.shape[0] * k)
    return flat.astype(np.int64).reshape(ratings.shape[0], k)


def rating_counts(matrix: npt.ArrayLike, labels: npt.ArrayLike | None = None) -> IntArray:
    """Items x classes table of how many annotators chose each label (NaN = no label).

    Columns follow ``labels`` (default: the sorted labels present). This is the NaN-aware
    counterpart of statsmodels' ``aggregate_raters``.
    """
    ratings = _as_rating_matrix(matrix)
    return _counts(ratings, _matrix_labels(ratings, labels))


def slot_matrix(item_ids: npt.ArrayLike, ratings: npt.ArrayLike) -> tuple[npt.NDArray[np.generic], FloatArray]:
    """Pivot long-format ratings (one row per label) into an items x slots matrix.

    Returns the sorted unique item ids and a matrix whose row i holds the labels of item i
    in their input order, left-aligned and padded with NaN to the largest count.
    """
    values = as_label_array(ratings, "ratings")
    unique_items, item_index = np.unique(np.asarray(item_ids), return_inverse=True)
    item_index = item_index.reshape(-1)
    if item_index.size != values.size:
        raise ValueError(f"{item_index.size} item ids but {values.size} ratings")
    # A stable sort keeps each item's labels in input order; the slot of a label is its
    # position minus the position of the item's first label.
    order = np.argsort(item_index, kind="stable")
    sorted_items = item_index[order]
    starts = np.searchsorted(sorted_items, np.arange(unique_items.size))
    slots = np.arange(sorted_items.size) - starts[sorted_items]
    width = int(slots.max()) + 1 if slots.size else 0
    matrix = np.full((unique_items.size, width), np.nan)
    matrix[sorted_items, slots] = values[order]
    return unique_items, matrix


@dataclass(frozen=True, eq=False)
class AggregatedLabels:
    """One aggregate label per item, with how it was reached.

    ``level`` holds one of :data:`AGREEMENT_LEVELS` per item; ``n_annotators`` the number of
    labels the item had; ``label_set`` the scale the labels were checked against.
    """

    labels: IntArray
    level: npt.NDArray[np.str_]
    n_annotators: IntArray
    rule: AggregationRule
    label_set: tuple[int, ...]

    def mask(self, level: str) -> npt.NDArray[np.bool_]:
        """Boolean mask of the items at ``level``."""
        if level not in AGREEMENT_LEVELS:
            raise ValueError(f"level must be one of {AGREEMENT_LEVELS}, got {level!r}")
        result: npt.NDArray[np.bool_] = self.level == level
        return result


def _round_half_up_ratio(numerator: IntArray, denominator: IntArray) -> IntArray:
    """floor(numerator / denominator + 1/2) in exact integer arithmetic (denominator > 0)."""
    result: IntArray = np.floor_divide(2 * numerator + denominator, 2 * denominator)
    return result


def _rounded_median(counts: IntArray, labels: IntArray) -> IntArray:
    order = np.argsort(labels)
    sorted_labels = labels[order]
    cumulative = np.cumsum(counts[:, order], axis=1)
    n = cumulative[:, -1]

    def kth(k: IntArray) -> IntArray:
        # The k-th smallest label (0-based) is the first class whose cumulative count > k.
        column = (cumulative <= k[:, None]).sum(axis=1)
        kth_label: IntArray = sorted_labels[column]
        return kth_label

    twice_median = kth((n - 1) // 2) + kth(n // 2)
    rounded: IntArray = np.floor_divide(twice_median + 1, 2)
    return rounded


def aggregate_labels(
    matrix: npt.ArrayLike,
    rule: AggregationRule = "majority_then_rounded_mean",
    labels: npt.ArrayLike | None = None,
) -> AggregatedLabels:
    """Aggregate each item's annotator labels into one label (see the module docstring).

    ``labels`` is the scale to validate against (default: the labels present). Raises
    StatisticsError when there are no items or an item has no label at all.
    """
    if rule not in get_args(AggregationRule):
        raise ValueError(f"unknown aggregation rule {rule!r}")
    ratings = _as_rating_matrix(matrix)
    if ratings.shape[0] == 0:
        raise StatisticsError("no items to aggregate (n = 0)")
    label_values = _matrix_labels(ratings, labels)
    counts = _counts(ratings, label_values)
    n = counts.sum(axis=1)
    empty = np.flatnonzero(n == 0)
    if empty.size:
        raise StatisticsError(f"{empty.size} item(s) have no annotator label, first rows: {empty[:5].tolist()}")

    top = counts.max(axis=1)
    has_majority = (counts == top[:, None]).sum(axis=1) == 1
    level_code = np.where(has_majority, _PARTIAL, _NONE)
    level_code[top == n] = _FULL
    level_code[n == 1] = _SINGLE

    if rule == "mean_rounded":
        aggregate = _round_half_up_ratio(counts @ label_values, n)
    else:
        if rule == "majority_then_rounded_mean":
            fallback = _round_half_up_ratio(counts @ label_values, n)
        else:
            fallback = _rounded_median(counts, label_values)
        aggregate = np.where(has_majority, label_values[counts.argmax(axis=1)], fallback)

    return AggregatedLabels(
        labels=aggregate.astype(np.int64),
        level=np.asarray(AGREEMENT_LEVELS)[level_code],
        n_annotators=n,
        rule=rule,
        label_set=tuple(int(x) for x in label_values),
    )


def fleiss_kappa_from_counts(counts: npt.ArrayLike, *, undefined: float = math.nan) -> float:
    """Fleiss' kappa of an items x classes count table; rows may have different totals.

    Rows with fewer than two labels are ignored (see the module docstring for the formula).
    """
    table = np.asarray(counts, dtype=np.int64)
    if table.ndim != 2:
        raise ValueError(f"counts must be a 2-D items x classes table, got {table.shape}")
    n = table.sum(axis=1)
    table = table[n >= 2]
    n = n[n >= 2]
    if n.size == 0:
        raise StatisticsError("Fleiss' kappa needs at least one item with two or more labels")
    class_totals = table.sum(axis=0)
    if np.count_nonzero(class_totals) == 1:
        return undefined
    per_item = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    shares = class_totals / class_totals.sum()
    chance = float((shares * shares).sum())
    return (float(per_item.mean()) - chance) / (1.0 - chance)


def fleiss_kappa(
    matrix: npt.ArrayLike,
    labels: npt.ArrayLike | None = None,
    *,
    undefined: float = math.nan,
) -> float:
    """Fleiss' kappa of an items x annotators matrix with NaN gaps (varying n per item)."""
    return fleiss_kappa_from_counts(rating_counts(matrix, labels), undefined=undefined)


@dataclass(frozen=True)
class AnnotatorPair:
    """Agreement of one pair of annotators on the items both labelled.

    ``f1`` is weighted F1 with ``first`` as the reference when ``both_directions`` is
    false, else the mean of both directions.
    """

    first: str
    second: str
    n_items: int
    f1: float
    both_directions: bool = True


@dataclass(frozen=True)
class PairwiseF1:
    """The human ceiling and its per-pair parts.

    ``pairs`` lists only pairs that share at least one item. ``mean`` is the mean of their
    F1 weighted by the items each pair shares (with three complete slots every pair shares
    every item, so it is METAL's plain mean of A1-A2, A2-A3, A3-A1). ``n_items`` counts the
    items that entered at least one pair; ``convention`` is how the pairs were formed.
    """

    mean: float
    pairs: tuple[AnnotatorPair, ...]
    n_items: int = 0
    convention: AgreementConvention = "all_pairs"


def _pair_confusions(
    codes: IntArray, present: npt.NDArray[np.bool_], pairs: Sequence[tuple[int, int]], k: int
) -> list[tuple[int, int, int, IntArray]]:
    found = []
    for i, j in pairs:
        shared = present[:, i] & present[:, j]
        n_shared = int(np.count_nonzero(shared))
        if n_shared == 0:
            continue
        flat = codes[shared, i] * k + codes[shared, j]
        found.append((i, j, n_shared, np.bincount(flat, minlength=k * k).reshape(k, k)))
    return found


def pairwise_annotator_f1(
    matrix: npt.ArrayLike,
    annotator_ids: Sequence[str] | None = None,
    labels: npt.ArrayLike | None = None,
    *,
    pairs: Sequence[tuple[int, int]] | None = None,
    both_directions: bool = True,
    convention: AgreementConvention = "all_pairs",
) -> PairwiseF1:
    """Human ceiling with each column being one annotator (METAL sec. 5.1).

    ``pairs`` are column pairs ``(reference, other)`` (default: every pair ``i < j``). Each
    pair's F1 is taken on the items both labelled: the mean of both directions, or with
    the first column as reference when ``both_directions`` is false. The ceiling is the
    mean over pairs weighted by their shared items. Raises StatisticsError when no pair
    shares an item.
    """
    ratings = _as_rating_matrix(matrix)
    columns = ratings.shape[1]
    ids = list(annotator_ids) if annotator_ids is not None else [f"A{j + 1}" for j in range(columns)]
    if len(ids) != columns:
        raise ValueError(f"{len(ids)} annotator ids for {columns} annotator columns")
    label_values = _matrix_labels(ratings, labels)
    k = label_values.size
    present = ~np.isnan(ratings)
    # Encode every label once; -1 marks a gap and never enters a confusion matrix.
    codes = np.full(ratings.shape, -1, dtype=np.int64)
    codes[present] = encode_labels(ratings[present].astype(np.int64), label_values)
    chosen = list(pairs) if pairs is not None else list(combinations(range(columns), 2))

    found: list[AnnotatorPair] = []
    used = np.zeros(ratings.shape[0], dtype=bool)
    for i, j, n_shared, confusion in _pair_confusions(codes, present, chosen, k):
        used |= present[:, i] & present[:, j]
        if both_directions:
            f1 = float(weighted_f1_from_confusion(np.stack([confusion, confusion.T])).mean())
        else:
            f1 = float(weighted_f1_from_confusion(confusion))
        found.append(AnnotatorPair(ids[i], ids[j], n_shared, f1, both_directions))
    if not found:
        raise StatisticsError("no two annotators labelled a common item: no human ceiling")
    weights = np.asarray([pair.n_items for pair in found], dtype=np.float64)
    mean = float(np.average([pair.f1 for pair in found], weights=weights))
    return PairwiseF1(mean=mean, pairs=tuple(found), n_items=int(np.count_nonzero(used)), convention=convention)


def _compact(ratings: FloatArray) -> FloatArray:
    """Move each row's labels left (keeping their order), dropping all-gap columns."""
    missing = np.isnan(ratings)
    # A stable sort on "is missing" moves each row's labels left, keeping their order.
    order = np.argsort(missing, axis=1, kind="stable")
    width = int((~missing).sum(axis=1).max()) if ratings.size else 0
    compacted: FloatArray = np.take_along_axis(ratings, order, axis=1)[:, :width]
    return compacted


def complete_items(matrix: npt.ArrayLike, n_annotators: int = METAL_ANNOTATORS) -> npt.NDArray[np.bool_]:
    """Mask of the items with exactly ``n_annotators`` labels (METAL's complete items)."""
    ratings = _as_rating_matrix(matrix)
    mask: npt.NDArray[np.bool_] = (~np.isnan(ratings)).sum(axis=1) == n_annotators
    return mask


def pairwise_slot_f1(
    matrix: npt.ArrayLike,
    labels: npt.ArrayLike | None = None,
    convention: AgreementConvention = "all_pairs",
) -> PairwiseF1:
    """Human ceiling with each item's 1st, 2nd, 3rd... label as annotators A1, A2, A3...

    Labels are taken in column order after dropping the item's gaps; the caller fixes that
    order (the gate sorts each item's labels by annotator id, so the result does not depend
    on the order of a label mapping). ``convention``:

    * ``"all_pairs"``: every item with two or more labels, every slot pair, both directions,
      pairs weighted by their shared items (an item with two labels only enters A1-A2; a
      rare 4th label enters three small pairs that barely move the mean);
    * ``"metal"``: only items with exactly three labels, the pairs A1-A2, A2-A3, A3-A1 with
      the first as reference (METAL sec. 5.1), plain mean.
    """
    ratings = _compact(_as_rating_matrix(matrix))
    if convention == "metal":
        ratings = ratings[complete_items(ratings)][:, :METAL_ANNOTATORS]
        if ratings.shape[0] == 0:
            raise StatisticsError("no item has exactly three labels: no human ceiling under the METAL convention")
        return pairwise_annotator_f1(
            ratings, labels=labels, pairs=[(0, 1), (1, 2), (2, 0)], both_directions=False, convention="metal"
        )
    if convention != "all_pairs":
        raise ValueError(f"convention must be one of {get_args(AgreementConvention)}, got {convention!r}")
    return pairwise_annotator_f1(ratings, labels=labels)
