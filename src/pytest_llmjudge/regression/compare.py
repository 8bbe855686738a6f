"""Candidate vs baseline, case by case: paired difference, its uncertainty, and a gate verdict.

What it is
    For one suite, metric and language, the candidate run and the baseline scored the same
    cases. Pairing each case's two scores removes the between-case variance (a hard case
    is hard for both systems) and leaves ``d_i = candidate_i - baseline_i``. The gate asks
    whether the mean difference ``D`` shows, with confidence, a drop larger than the
    tolerated ``margin`` (release gating against a stored baseline, ``docs/methods.md``
    section 6; resampling whole cases as MIRAGE-BENCH resamples queries, sec. 6.2). The
    statistics are :mod:`pytest_llmjudge.stats.paired`:

    * ``method: bootstrap`` (default): paired bootstrap over cases, percentile interval,
      one-sided shift-method p-value of H0 "the drop is within the margin"
      (``mu >= -margin``); verdict by
      :func:`~pytest_llmjudge.stats.paired.regression_verdict`: **fail** when
      ``D < -margin`` and (``ci_high < -margin`` or ``p < alpha``), **warn** when
      ``D < -margin`` without significance, **pass** otherwise;
    * ``method: permutation``: the paired sign-flip permutation test of the shifted
      differences ``d_i + margin`` (exact when ``2**n <= resamples``), alternative "less";
      **fail** when ``D < -margin`` and ``p < alpha``, **warn** when only ``D < -margin``.
      The interval shown is still the bootstrap's (a permutation test has none).

    Scores are oriented before testing: for a metric where lower is better (e.g.
    ``hallucinations``) a drop is an *increase*, so the test runs on ``-score``. Reported
    means, the difference and the interval are in the metric's own units (candidate minus
    baseline); ``p_value`` is always the one-sided p-value of "the candidate is worse by more
    than the margin".

Missing cases are reported, never silently dropped: cases the baseline lacks
(``missing_in_baseline``), baseline cases the suite no longer has
(``missing_in_candidate``), cases the baseline run could not score (``baseline_unscored``)
and candidate cases without a score now (``candidate_unscored``). Only cases scored on both
sides are compared.

Degenerate cases: no case scored on both sides is an ``error`` (never a pass); candidate
cases without a score beyond ``max_unscored_rate`` (default 0: any) are an ``error``, as
for aggregates; with ``fail_on_missing`` any missing case fails the gate; with one pair the
bootstrap has no variability estimate, so the gate can at most warn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from pytest_llmjudge.stats.paired import paired_bootstrap, paired_permutation_test, regression_verdict

Method = Literal["bootstrap", "permutation"]


class RegressionWarning(UserWarning):
    """A drop beyond the margin that is not significant, or cases missing on one side.

    Filter it like any warning, e.g. ``-W error::pytest_llmjudge.regression.compare.RegressionWarning``
    to make such drops fail a run.
    """


Gate = Literal["pass", "warn", "fail", "error"]

DEFAULT_RESAMPLES: dict[str, int] = {"bootstrap": 2000, "permutation": 10_000}


@dataclass(frozen=True)
class RegressionSettings:
    margin: float = 0.0
    alpha: float = 0.05
    confidence: float = 0.95
    method: Method = "bootstrap"
    resamples: int | None = None
    seed: int = 0
    max_unscored_rate: float = 0.0
    fail_on_missing: bool = False

    @property
    def n_resamples(self) -> int:
        return self.resamples if self.resamples is not None else DEFAULT_RESAMPLES[self.method]


@dataclass(frozen=True)
class RegressionResult:
    """One comparison; see the module docstring for every field's meaning."""

    gate: Gate
    verdict: str
    n: int
    higher_is_better: bool
    settings: RegressionSettings
    mean_candidate: float | None = None
    mean_baseline: float | None = None
    mean_difference: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    method_detail: str = ""
    missing_in_baseline: tuple[str, ...] = ()
    missing_in_candidate: tuple[str, ...] = ()
    baseline_unscored: tuple[str, ...] = ()
    candidate_unscored: tuple[tuple[str, str], ...] = ()
    problem: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def n_missing(self) -> int:
        return len(self.missing_in_baseline) + len(self.missing_in_candidate) + len(self.baseline_unscored)

    def to_dict(self) -> dict[str, Any]:
        s = self.settings
        return {
            "gate": self.gate,
            "verdict": self.verdict,
            "n": self.n,
            "higher_is_better": self.higher_is_better,
            "mean_candidate": self.mean_candidate,
            "mean_baseline": self.mean_baseline,
            "mean_difference": self.mean_difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": s.confidence,
            "p_value": self.p_value,
            "method": s.method,
            "method_detail": self.method_detail,
            "margin": s.margin,
            "alpha": s.alpha,
            "resamples": s.n_resamples,
            "seed": s.seed,
            "missing_in_baseline": list(self.missing_in_baseline),
            "missing_in_candidate": list(self.missing_in_candidate),
            "baseline_unscored": list(self.baseline_unscored),
            "candidate_unscored": [{"case": c, "reason": r} for c, r in self.candidate_unscored],
            "problem": self.problem,
            "notes": list(self.notes),
        }


def compare(
    candidate: Mapping[str, float | None],
    baseline: Mapping[str, float | None],
    *,
    higher_is_better: bool = True,
    settings: RegressionSettings | None = None,
    unscored_reasons: Mapping[str, str] | None = None,
    notes: tuple[str, ...] = (),
) -> RegressionResult:
    """Compare candidate and baseline scores keyed by case id (``None`` = unscored)."""
    settings = settings or RegressionSettings()
    reasons = unscored_reasons or {}
    scored_candidate = {case: v for case, v in candidate.items() if v is not None}
    scored_baseline = {case: v for case, v in baseline.items() if v is not None}
    paired = sorted(set(scored_candidate) & set(scored_baseline))
    missing_in_baseline = tuple(sorted(set(candidate) - set(baseline)))
    missing_in_candidate = tuple(sorted(set(baseline) - set(candidate)))
    baseline_unscored = tuple(sorted(case for case, v in baseline.items() if v is None and case in candidate))
    candidate_unscored = tuple(
        sorted((case, reasons.get(case, "no score")) for case, v in candidate.items() if v is None)
    )
    common: dict[str, Any] = {
        "higher_is_better": higher_is_better,
        "settings": settings,
        "missing_in_baseline": missing_in_baseline,
        "missing_in_candidate": missing_in_candidate,
        "baseline_unscored": baseline_unscored,
        "candidate_unscored": candidate_unscored,
        "notes": notes,
    }
    if candidate and len(candidate_unscored) / len(candidate) > settings.max_unscored_rate:
        return RegressionResult(
            "error",
            "error",
            len(paired),
            problem=f"{len(candidate_unscored)} of {len(candidate)} candidate cases have no score "
            f"(max_unscored_rate {settings.max_unscored_rate:g})",
            **common,
        )
    if not paired:
        return RegressionResult("error", "error", 0, problem="no case is scored on both sides", **common)

    sign = 1.0 if higher_is_better else -1.0
    cand = np.array([scored_candidate[c] for c in paired], dtype=np.float64)
    base = np.array([scored_baseline[c] for c in paired], dtype=np.float64)
    margin = settings.margin
    bootstrap_resamples = settings.n_resamples if settings.method == "bootstrap" else DEFAULT_RESAMPLES["bootstrap"]
    comparison = paired_bootstrap(
        sign * cand, sign * base, resamples=bootstrap_resamples, confidence=settings.confidence, seed=settings.seed
    )
    oriented = comparison.mean_difference
    if settings.method == "bootstrap":
        p_value = comparison.p_value_for_drop(margin)
        gate: Gate = regression_verdict(comparison, margin, settings.alpha)
        detail = comparison.method
    else:
        test = paired_permutation_test(
            sign * cand + margin, sign * base, resamples=settings.n_resamples, seed=settings.seed, alternative="less"
        )
        p_value = test.p_value
        if not oriented < -margin:
            gate = "pass"
        else:
            gate = "fail" if p_value < settings.alpha else "warn"
        detail = (
            f"paired sign-flip permutation test ({'exact, ' if test.exact else ''}{test.resamples} sign patterns); "
            f"interval from the paired bootstrap ({bootstrap_resamples} resamples)"
        )
    low, high = sorted((sign * comparison.ci_low, sign * comparison.ci_high))
    if gate == "fail":
        verdict = "regressed"
    elif gate == "warn":
        verdict = "drop not significant"
    elif comparison.n > 1 and comparison.ci_low > 0:
        verdict = "improved"
    elif oriented < 0:
        verdict = "drop within margin"
    else:
        verdict = "no significant change"
    if settings.fail_on_missing and (missing_in_baseline or missing_in_candidate or baseline_unscored):
        gate = "fail"
        verdict = f"{verdict}; cases missing (fail_on_missing)"
    return RegressionResult(
        gate,
        verdict,
        comparison.n,
        mean_candidate=float(np.mean(cand)),
        mean_baseline=float(np.mean(base)),
        mean_difference=float(np.mean(cand) - np.mean(base)),
        ci_low=float(low),
        ci_high=float(high),
        p_value=float(p_value),
        method_detail=detail,
        **common,
    )
