"""The human-agreement gate for one language and metric: every statistic and the verdict.

Input: an items x annotators label matrix (NaN where an annotator gave no label) and one
judge score per item (NaN where the judge gave none). Steps, with their sources:

1. Aggregate the annotators per item (METAL, Hada et al. 2024b, sec. 3.2: majority vote,
   and the rounded mean when all annotators differ; other rules configurable), and record
   each item's agreement level: full / partial / none / single
   (:func:`~pytest_llmjudge.stats.annotators.aggregate_labels`).
2. Judge vs aggregate on the items the judge scored: weighted F1 (METAL sec. 4.4 and 5.1,
   the headline number), macro F1, percentage agreement (Hada et al. 2024a, sec. 3.4, 4.1),
   Cohen's kappa and the confusion matrix (rows human, columns judge)
   (:func:`~pytest_llmjudge.stats.agreement.agreement_report`).
3. An interval of weighted F1: the Dirichlet posterior of the confusion cells with Perks'
   prior (``resamples`` draws, seeded) (:func:`~pytest_llmjudge.stats.resampling.posterior_confusion_ci`).
   Unlike the percentile bootstrap it replaced, it never collapses to a point: 4 items that
   all agree gave the bootstrap's ``CI 1.00-1.00`` and give [0.48, 1.00] now; and its lower
   bound lies above the true F1 about as often as it should (``benchmarks/bound_coverage.py``).
4. The human side: the ceiling, i.e. the mean pairwise weighted F1 between annotators
   A1-A2, A2-A3, A3-A1 (METAL sec. 5.1; by label slot by default, see
   :func:`~pytest_llmjudge.stats.annotators.pairwise_slot_f1`), and Fleiss' kappa (METAL
   Table 6; Hada et al. 2024a, appendix A.3), under one of two conventions
   (``GateOptions.convention``): ``all_pairs`` (every item with two or more labels, both
   directions, pairs weighted by shared items) or ``metal`` (only items with exactly three
   labels, one direction per pair, as METAL computes them). The result records how many
   items each statistic rests on.
5. Class distributions of judge and humans, overall and per agreement level, with the skew
   (judge mean minus human mean) and top-score shares (Hada et al. 2024a, sec. 4.2; METAL
   sec. 5.2) (:func:`~pytest_llmjudge.stats.distribution.class_distribution`).
6. A majority baseline: the weighted F1 of a "judge" that always answers the humans' most
   common label. With skewed labels it is high (``p * 2p / (1 + p)`` for a top share
   ``p``), which is why kappa and the distributions are shown next to F1.
7. The held-out effect of a score correction (:mod:`~pytest_llmjudge.calibration.correction`).

Verdict: the gate passes when there is no *problem* and every criterion holds (1e-12
tolerance for float noise): weighted F1 (or the lower CI bound, with ``ci_lower_bound``) is
at least ``threshold``, and, when set, Cohen's kappa is at least ``min_kappa``, F1 divided by
the human ceiling is at least ``min_ceiling_ratio``, and the absolute skew (judge mean minus
human mean) is at most ``max_abs_skew``. Kappa and the ratio catch a judge that agrees only
by answering the majority label: in a skewed language its F1 is high, its kappa is 0. An
optional criterion whose statistic is undefined (kappa with one class on both sides, the
ratio without a ceiling) fails: it can't be shown to hold.
Problems, each a failure that no threshold can hide: no labelled items, fewer items than
``min_items`` (the message names the count and the minimum), a share of unscored items above
``max_unscored_rate``, or no scored item at all. Undefined statistics (kappa when both sides
use one class, the ceiling without any two-label item) are ``None``, reported as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.calibration.correction import (
    CorrectionMethod,
    CorrectionReport,
    ScoreCorrection,
    evaluate_correction,
    fit_correction,
)
from pytest_llmjudge.calibration.schema import CalibrationConfig, CorrectionConfig, GateConfig
from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import agreement_report, as_label_array, weighted_f1_from_confusion
from pytest_llmjudge.stats.annotators import (
    AGREEMENT_LEVELS,
    AggregationRule,
    AgreementConvention,
    aggregate_labels,
    complete_items,
    fleiss_kappa,
    pairwise_annotator_f1,
    pairwise_slot_f1,
)
from pytest_llmjudge.stats.distribution import class_distribution
from pytest_llmjudge.stats.resampling import posterior_confusion_ci, posterior_confusion_pvalue

__all__ = ["GateOptions", "GateResult", "evaluate_gate"]

_TOLERANCE = 1e-12


# The defaults are the file format's (calibration/schema.py), written once there.
_GATE = GateConfig.model_fields
_CALIBRATION = CalibrationConfig.model_fields
_CORRECTION = CorrectionConfig.model_fields


@dataclass(frozen=True)
class GateOptions:
    """How one gate (one group x metric) is computed and judged: the gate's criteria resolved
    for it (:meth:`GateConfig.criteria_for`) and the calibration set's options."""

    threshold: float
    min_kappa: float | None = None
    min_ceiling_ratio: float | None = None
    max_abs_skew: float | None = None
    ci_lower_bound: bool = _GATE["ci_lower_bound"].default
    family: str | None = _GATE["family"].default
    """``release``: the gate joins the run's release family (:func:`release_pvalue`)."""
    confidence: float = _GATE["confidence"].default
    resamples: int = _GATE["resamples"].default
    seed: int = _GATE["seed"].default
    min_items: int = _GATE["min_items"].default
    max_unscored_rate: float = _GATE["max_unscored_rate"].default
    aggregation: AggregationRule = _CALIBRATION["aggregation"].default
    ceiling: Literal["slots", "annotators"] = _CALIBRATION["ceiling"].default
    convention: AgreementConvention = _CALIBRATION["agreement_convention"].default
    correction_method: CorrectionMethod = _CORRECTION["method"].default
    holdout: float = _CORRECTION["holdout"].default
    correction_seed: int = _CORRECTION["seed"].default
    correction_min_holdout: int = _CORRECTION["min_holdout"].default
    correction_resamples: int = _CORRECTION["resamples"].default


def _optional(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class GateResult:
    """Everything the gate measured for one language x metric, and its verdict."""

    language: str
    metric: str
    labels: tuple[int, ...]
    higher_is_better: bool
    options: GateOptions
    n_items: int
    n_scored: int
    problem: str | None = None
    f1: float | None = None
    macro_f1: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    percentage_agreement: float | None = None
    cohen_kappa: float | None = None
    ceiling: float | None = None
    ceiling_pairs: int = 0
    ceiling_items: int = 0
    fleiss_kappa: float | None = None
    fleiss_items: int = 0
    confusion: tuple[tuple[int, ...], ...] | None = None
    levels: Mapping[str, int] = field(default_factory=dict)
    distribution: Mapping[str, Any] | None = None
    baseline_f1: float | None = None
    correction: CorrectionReport | None = None
    correction_map: ScoreCorrection | None = None
    unscored_reasons: tuple[str, ...] = ()
    group: str = ""
    """The group's name (the language with the default ``group_by: [language]``)."""
    release_shown: bool | None = None
    """Set when the gate joined a release family: whether F1 >= threshold was shown at the
    family's corrected level (it then replaces the point comparison)."""
    release_text: str = ""
    """What the family found, when it did not show F1 >= threshold."""

    @property
    def threshold(self) -> float:
        return self.options.threshold

    @property
    def n_unscored(self) -> int:
        return self.n_items - self.n_scored

    @property
    def compared_value(self) -> float | None:
        """What is held against the threshold: F1, or the CI's lower bound."""
        return self.ci_low if self.options.ci_lower_bound else self.f1

    @property
    def ceiling_ratio(self) -> float | None:
        """Weighted F1 divided by the human ceiling (None when either is undefined or 0)."""
        if self.f1 is None or not self.ceiling:
            return None
        return self.f1 / self.ceiling

    @property
    def abs_skew(self) -> float | None:
        overall = self.overall
        return None if overall is None else abs(float(overall["skew"]))

    @property
    def failed_criteria(self) -> tuple[str, ...]:
        """Each criterion that does not hold, as text naming the statistic and its limit."""
        if self.n_scored == 0:
            return ()
        opts = self.options
        failed: list[str] = []
        name = "weighted F1 CI lower bound" if opts.ci_lower_bound else "weighted F1"
        value = self.compared_value
        if self.release_shown is not None:
            # In a release family the F1 criterion is the family's test, not the point value.
            if not self.release_shown:
                failed.append(self.release_text)
        elif value is None or value + _TOLERANCE < opts.threshold:
            failed.append(f"{name} {_text(value)} < threshold {opts.threshold:.3f}")
        return (*failed, *self.other_failed_criteria)

    @property
    def other_failed_criteria(self) -> tuple[str, ...]:
        """The optional criteria that do not hold (kappa, ceiling ratio, skew): everything but F1."""
        if self.n_scored == 0:
            return ()
        opts = self.options
        failed: list[str] = []
        if opts.min_kappa is not None and (self.cohen_kappa is None or self.cohen_kappa + _TOLERANCE < opts.min_kappa):
            failed.append(f"Cohen's kappa {_text(self.cohen_kappa)} < min_kappa {opts.min_kappa:.3f}")
        ratio = self.ceiling_ratio
        if opts.min_ceiling_ratio is not None and (ratio is None or ratio + _TOLERANCE < opts.min_ceiling_ratio):
            failed.append(f"F1/ceiling {_text(ratio)} < min_ceiling_ratio {opts.min_ceiling_ratio:.3f}")
        skew = self.abs_skew
        if opts.max_abs_skew is not None and (skew is None or skew - _TOLERANCE > opts.max_abs_skew):
            failed.append(f"|skew| {_text(skew)} > max_abs_skew {opts.max_abs_skew:.3f}")
        return tuple(failed)

    @property
    def passed(self) -> bool:
        return self.problem is None and self.n_scored > 0 and not self.failed_criteria

    @property
    def single_annotator(self) -> int:
        return int(self.levels.get("single", 0))

    @property
    def overall(self) -> Mapping[str, Any] | None:
        return None if self.distribution is None else self.distribution.get("all")

    @property
    def best_label(self) -> int:
        """The scale's best score: the top for higher-is-better metrics, else the bottom."""
        return max(self.labels) if self.higher_is_better else min(self.labels)

    def share_of(self, label: int, side: Literal["judge", "human"], group: str = "all") -> float | None:
        if self.distribution is None or group not in self.distribution:
            return None
        shares = self.distribution[group][f"{side}_share"]
        return float(shares[self.labels.index(label)])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of every diagnostic (None where a statistic is undefined)."""
        overall = self.overall
        best = self.best_label
        top = max(self.labels)
        return {
            "language": self.language,
            "group": self.group or self.language,
            "metric": self.metric,
            "labels": list(self.labels),
            "higher_is_better": self.higher_is_better,
            "f1": self.f1,
            "macro_f1": self.macro_f1,
            "ci": {
                "low": self.ci_low,
                "high": self.ci_high,
                "confidence": self.options.confidence,
                "resamples": self.options.resamples,
                "seed": self.options.seed,
            },
            "threshold": self.threshold,
            "compared": "ci_low" if self.options.ci_lower_bound else "f1",
            "n": self.n_scored,
            "n_items": self.n_items,
            "n_unscored": self.n_unscored,
            "unscored_reasons": list(self.unscored_reasons),
            "min_items": self.options.min_items,
            "max_unscored_rate": self.options.max_unscored_rate,
            "ceiling": self.ceiling,
            "ceiling_mode": self.options.ceiling,
            "ceiling_pairs": self.ceiling_pairs,
            "ceiling_items": self.ceiling_items,
            "ceiling_ratio": self.ceiling_ratio,
            "convention": self.options.convention,
            "fleiss_items": self.fleiss_items,
            "criteria": {
                "threshold": self.options.threshold,
                "min_kappa": self.options.min_kappa,
                "min_ceiling_ratio": self.options.min_ceiling_ratio,
                "max_abs_skew": self.options.max_abs_skew,
            },
            "failed_criteria": list(self.failed_criteria),
            "pa": self.percentage_agreement,
            "kappa": self.cohen_kappa,
            "fleiss": self.fleiss_kappa,
            "baseline_f1": self.baseline_f1,
            "confusion": None
            if self.confusion is None
            else {
                "labels": list(self.labels),
                "rows": "human",
                "columns": "judge",
                "matrix": [list(r) for r in self.confusion],
            },
            "aggregation": self.options.aggregation,
            "agreement_levels": dict(self.levels),
            "single_annotator": self.single_annotator,
            "distribution": None if self.distribution is None else dict(self.distribution),
            "skew": None
            if overall is None
            else {
                "judge_mean": overall["judge_mean"],
                "human_mean": overall["human_mean"],
                "skew": overall["skew"],
                "top_label": top,
                "judge_top_share": overall["judge_top_share"],
                "human_top_share": overall["human_top_share"],
                "best_label": best,
                "judge_best_share": self.share_of(best, "judge"),
                "human_best_share": self.share_of(best, "human"),
            },
            "correction": None if self.correction is None else self.correction.to_dict(),
            "problem": self.problem,
            "passed": self.passed,
        }


def _text(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _majority_baseline(confusion: npt.NDArray[np.int64]) -> float:
    """Weighted F1 of always answering the most common human label."""
    support = confusion.sum(axis=1)
    constant = np.zeros_like(confusion)
    constant[:, int(np.argmax(support))] = support
    return float(weighted_f1_from_confusion(constant))


def evaluate_gate(
    human: npt.ArrayLike,
    judge: npt.ArrayLike,
    labels: Sequence[int],
    options: GateOptions,
    *,
    language: str = "",
    metric: str = "",
    group: str = "",
    higher_is_better: bool = True,
    unscored_reasons: Sequence[str] = (),
) -> GateResult:
    """Compute the gate (see the module docstring). ``judge`` holds NaN for unscored items."""
    ratings = np.asarray(human, dtype=np.float64)
    if ratings.ndim != 2:
        raise ValueError(f"human must be an items x annotators matrix, got shape {ratings.shape}")
    scores = np.asarray(judge, dtype=np.float64).reshape(-1)
    if scores.size != ratings.shape[0]:
        raise ValueError(f"{ratings.shape[0]} labelled items but {scores.size} judge scores")
    if options.convention == "metal" and options.ceiling == "annotators":
        raise ValueError("the METAL convention pairs three label slots; it can't be combined with ceiling 'annotators'")
    scale = tuple(int(x) for x in labels)
    n_items = int(ratings.shape[0])
    scored = ~np.isnan(scores)
    n_scored = int(np.count_nonzero(scored))
    base: dict[str, Any] = {
        "language": language,
        "group": group or language,
        "metric": metric,
        "labels": scale,
        "higher_is_better": higher_is_better,
        "options": options,
        "n_items": n_items,
        "n_scored": n_scored,
        "unscored_reasons": tuple(unscored_reasons)[:5],
    }
    if n_items == 0:
        return GateResult(**base, problem=f"no labelled items (min_items {options.min_items})")

    aggregated = aggregate_labels(ratings, options.aggregation, labels=scale)
    levels = {level: int(np.count_nonzero(aggregated.level == level)) for level in AGREEMENT_LEVELS}
    base["levels"] = {level: count for level, count in levels.items() if count}
    # METAL's statistics rest on the items with exactly three labels; ours on every item
    # with two or more (see stats/annotators.py).
    human_side = ratings[complete_items(ratings)] if options.convention == "metal" else ratings
    try:
        base["fleiss_kappa"] = _optional(fleiss_kappa(human_side, scale))
        base["fleiss_items"] = int(np.count_nonzero((~np.isnan(human_side)).sum(axis=1) >= 2))
    except StatisticsError:
        pass
    try:
        if options.ceiling == "annotators":
            ceiling = pairwise_annotator_f1(human_side, labels=scale)
        else:
            ceiling = pairwise_slot_f1(ratings, scale, options.convention)
        base["ceiling"] = ceiling.mean
        base["ceiling_pairs"] = len(ceiling.pairs)
        base["ceiling_items"] = ceiling.n_items
    except StatisticsError:
        pass

    problems: list[str] = []
    if n_items < options.min_items:
        problems.append(f"too few items: {n_items} < min_items {options.min_items}")
    if n_scored == 0:
        problems.append("no item has a judge score")
    elif (n_items - n_scored) / n_items > options.max_unscored_rate + _TOLERANCE:
        problems.append(
            f"{n_items - n_scored} of {n_items} items have no judge score "
            f"(max_unscored_rate {options.max_unscored_rate:g})"
        )
    if problems:
        base["problem"] = "; ".join(problems)
    if n_scored == 0:
        return GateResult(**base)

    truth = aggregated.labels[scored]
    predicted = as_label_array(scores[scored], "judge scores")
    report = agreement_report(truth, predicted, scale)
    interval = posterior_confusion_ci(
        report.confusion,
        weighted_f1_from_confusion,
        n_resamples=options.resamples,
        confidence=options.confidence,
        rng=options.seed,
    )
    distribution = class_distribution(truth, predicted, aggregated.level[scored], scale)
    correction = evaluate_correction(
        truth,
        predicted,
        scale,
        method=options.correction_method,
        holdout=options.holdout,
        seed=options.correction_seed,
        min_holdout=options.correction_min_holdout,
        resamples=options.correction_resamples,
        confidence=options.confidence,
    )
    return GateResult(
        **base,
        f1=report.weighted_f1,
        macro_f1=report.macro_f1,
        ci_low=_optional(interval.low),
        ci_high=_optional(interval.high),
        percentage_agreement=report.percentage_agreement,
        cohen_kappa=_optional(report.cohen_kappa),
        confusion=tuple(tuple(int(x) for x in row) for row in report.confusion),
        distribution=distribution.to_dict(),
        baseline_f1=_majority_baseline(report.confusion),
        correction=correction,
        correction_map=correction.correction
        if correction is not None
        else fit_correction(truth, predicted, scale, options.correction_method),
    )


RELEASE_DRAWS = 20_000
"""Posterior draws behind a release-family gate's p-value: its resolution, ``1 / 20,001``, is
well below the per-item level of a large family (``0.05 / 100``)."""


def release_pvalue(result: GateResult, *, n_draws: int = RELEASE_DRAWS) -> float | None:
    """The p-value of H0 "weighted F1 < threshold" of a gate in a release family (``family: release``).

    Read off the posterior of the confusion cells (:func:`~pytest_llmjudge.stats.resampling.posterior_confusion_pvalue`,
    the interval's posterior, seeded by the gate's ``seed``): small when the humans' and the
    judge's labels show F1 above the threshold. None when the gate has a problem (too few
    items, unscored items) or nothing was scored: such a gate is an error, outside the count.
    """
    if result.problem is not None or result.confusion is None or result.n_scored == 0:
        return None
    confusion = np.asarray(result.confusion, dtype=np.int64)
    return posterior_confusion_pvalue(
        confusion, weighted_f1_from_confusion, result.threshold, n_draws=n_draws, rng=result.options.seed
    )
