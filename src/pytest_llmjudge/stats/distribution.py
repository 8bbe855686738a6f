"""Class distributions of judge and human labels, and the judge's high-score bias.

Hada et al. (2024a, sec. 4.2) and METAL (Hada et al. 2024b, sec. 4.4 and 5.2) compare how
often the judge and the human aggregate use each class, separately for items on which the
annotators agree fully, partially or not at all. Their finding, the one this module makes
measurable: LLM judges pile onto the top score, most of all where humans disagree and for
low-resource or non-Latin-script languages.

For a group of ``n`` items with judge counts ``J_k`` and human-aggregate counts ``H_k`` per
class ``k`` of the scale:

* shares ``J_k / n`` and ``H_k / n``;
* over-prediction of class k: ``J_k / n - H_k / n`` (positive: the judge uses k more often
  than the humans do);
* skew: judge mean minus human mean, reading the ordinal labels as numbers (positive: the
  judge scores higher);
* top-score share: the share of the highest class of the scale for each side; the scale's
  top is ``max(labels)`` even when nobody used it.

Groups are the agreement levels of :mod:`pytest_llmjudge.stats.annotators` (``full``,
``partial``, ``none``, ``single``) plus ``all`` for every item. Degenerate cases: a level
without items is left out of ``by_level``; no items at all raises
:class:`~pytest_llmjudge.errors.StatisticsError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import (
    as_label_array,
    encode_labels,
    resolve_labels,
)
from pytest_llmjudge.stats.annotators import AGREEMENT_LEVELS

__all__ = ["ClassDistribution", "DistributionAnalysis", "class_distribution"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class ClassDistribution:
    """Judge and human class counts of one group of items; the rest is derived from them."""

    group: str
    labels: tuple[int, ...]
    judge_counts: IntArray
    human_counts: IntArray

    @property
    def n(self) -> int:
        """Number of items in the group."""
        return int(self.human_counts.sum())

    @property
    def judge_share(self) -> FloatArray:
        """Share of the group's items the judge put in each class."""
        result: FloatArray = self.judge_counts / self.n
        return result

    @property
    def human_share(self) -> FloatArray:
        """Share of the group's items whose human aggregate is each class."""
        result: FloatArray = self.human_counts / self.n
        return result

    @property
    def over_prediction(self) -> FloatArray:
        """Judge share minus human share per class (> 0: the judge over-uses the class)."""
        result: FloatArray = self.judge_share - self.human_share
        return result

    @property
    def judge_mean(self) -> float:
        """Mean judge score."""
        return float(self.judge_share @ np.asarray(self.labels, dtype=np.float64))

    @property
    def human_mean(self) -> float:
        """Mean human aggregate score."""
        return float(self.human_share @ np.asarray(self.labels, dtype=np.float64))

    @property
    def skew(self) -> float:
        """Judge mean minus human mean (> 0: the judge scores higher than humans)."""
        # One integer difference before dividing keeps e.g. 3/5 exact at 0.6.
        difference = (self.judge_counts - self.human_counts) @ np.asarray(self.labels)
        return float(difference / self.n)

    @property
    def judge_top_share(self) -> float:
        """Share of items the judge gave the top score of the scale."""
        return float(self.judge_share[int(np.argmax(self.labels))])

    @property
    def human_top_share(self) -> float:
        """Share of items whose human aggregate is the top score of the scale."""
        return float(self.human_share[int(np.argmax(self.labels))])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with counts, shares and the bias figures."""
        return {
            "group": self.group,
            "n": self.n,
            "labels": list(self.labels),
            "judge_counts": self.judge_counts.tolist(),
            "human_counts": self.human_counts.tolist(),
            "judge_share": self.judge_share.tolist(),
            "human_share": self.human_share.tolist(),
            "over_prediction": self.over_prediction.tolist(),
            "judge_mean": self.judge_mean,
            "human_mean": self.human_mean,
            "skew": self.skew,
            "judge_top_share": self.judge_top_share,
            "human_top_share": self.human_top_share,
        }


@dataclass(frozen=True)
class DistributionAnalysis:
    """Distribution of all items and, per agreement level present, of that level's items."""

    overall: ClassDistribution
    by_level: dict[str, ClassDistribution]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``all`` first, then the levels in their canonical order."""
        return {
            "all": self.overall.to_dict(),
            **{level: dist.to_dict() for level, dist in self.by_level.items()},
        }


def class_distribution(
    human: npt.ArrayLike,
    judge: npt.ArrayLike,
    levels: npt.ArrayLike | None = None,
    labels: npt.ArrayLike | None = None,
) -> DistributionAnalysis:
    """Compare judge and human-aggregate class distributions, overall and per level.

    ``levels`` holds one of ``full``/``partial``/``none``/``single`` per item (for example
    ``aggregate_labels(...).level``); without it only ``overall`` is filled. ``labels`` is
    the scale (default: every value seen); pass it so an unused top score still counts.
    """
    human_labels = as_label_array(human, "human")
    judge_labels = as_label_array(judge, "judge")
    if human_labels.shape != judge_labels.shape:
        raise ValueError(f"human has {human_labels.size} items but judge has {judge_labels.size}")
    if human_labels.size == 0:
        raise StatisticsError("a class distribution needs at least one item (n = 0)")
    scale = resolve_labels(labels, human_labels, judge_labels)
    k = scale.size
    label_tuple = tuple(int(x) for x in scale)

    if levels is None:
        # Everything lands in group 0; only ``overall`` (the sum over groups) is reported.
        group_index = np.zeros(human_labels.size, dtype=np.intp)
    else:
        level_array = np.asarray(levels).astype(str)
        if level_array.shape != human_labels.shape:
            raise ValueError(f"levels has {level_array.size} entries for {human_labels.size} items")
        names, inverse = np.unique(level_array, return_inverse=True)
        unknown = sorted(set(names.tolist()) - set(AGREEMENT_LEVELS))
        if unknown:
            raise ValueError(f"unknown agreement levels {unknown}; use {AGREEMENT_LEVELS}")
        lookup = np.array([AGREEMENT_LEVELS.index(name) for name in names.tolist()])
        group_index = lookup[inverse.reshape(-1)]
    n_groups = len(AGREEMENT_LEVELS)

    def counts_per_group(values: IntArray) -> IntArray:
        flat = group_index * k + encode_labels(values, scale)
        table = np.bincount(flat, minlength=n_groups * k).reshape(n_groups, k)
        return table.astype(np.int64)

    judge_table = counts_per_group(judge_labels)
    human_table = counts_per_group(human_labels)
    overall = ClassDistribution("all", label_tuple, judge_table.sum(axis=0), human_table.sum(axis=0))
    by_level: dict[str, ClassDistribution] = {}
    if levels is not None:
        for index, level in enumerate(AGREEMENT_LEVELS):
            if human_table[index].sum() > 0:
                by_level[level] = ClassDistribution(level, label_tuple, judge_table[index], human_table[index])
    return DistributionAnalysis(overall=overall, by_level=by_level)
