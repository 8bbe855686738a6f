"""Candidate vs baseline, case by case: the paired test of each comparison and the family's verdict.

What it is
    For one suite, metric and group of cases, the candidate run and the baseline scored the
    same cases. Pairing each case's two scores removes the between-case variance and leaves
    ``d_i = candidate_i - baseline_i``, oriented so that a drop is negative (for a metric
    where lower is better the test runs on ``-score``). With margin ``m >= 0`` (the tolerated
    drop) and mean difference ``D``, every comparison gets two one-sided p-values:

    * ``p_value`` (raw): H0 "the drop is within the margin" (``mu >= -m``) against "worse by
      more than the margin"; small is evidence of a regression.
    * ``p_non_inferiority``: H0 "worse by at least the margin" (``mu <= -m``) against "not
      worse by more than the margin"; small shows the release safe.

    ``method: permutation`` (default) is the paired sign-flip test of the shifted differences
    (:mod:`pytest_llmjudge.stats.signflip`): exact up to 24 non-tied pairs, Monte-Carlo with
    the add-one p-value beyond (valid at every n). ``method: bootstrap`` (opt-in; accurate
    only with many cases) uses the paired bootstrap's shift-method p-values
    (:mod:`pytest_llmjudge.stats.paired`). The interval shown is the paired bootstrap's
    percentile interval in both cases.

The family (:func:`decide`)
    A run's comparisons are one family (``family: run``; or per ``suite``, or per suite and
    ``metric``), and their p-values are adjusted together (``correction: holm`` by default;
    ``bh``, ``bonferroni`` or ``none``; :mod:`pytest_llmjudge.stats.multiplicity`). ``k`` is
    the number of comparisons with a p-value. A comparison whose test can't give a p-value
    small enough (``2**-m'`` for ``m'`` changed pairs) is not counted: the correction runs
    over Tarone's ``K <= k`` testable comparisons (the others get adjusted p 1), and the
    per-item level ``a = alpha / K`` (``alpha`` without correction) is what one item must
    reach alone. Aggregate bound checks that joined the family (``family: release``) bring
    their betting p-values (:func:`decide_joined`): continuous tests, smallest possible p 0,
    so Tarone always counts them; they are adjusted with the rest. Per item, in the default
    ``mode: regression``:

    * **fail** ("regressed"): adjusted p ``<= alpha`` and ``D < -m``;
    * **undecided** ("too few cases to decide"): otherwise, when no outcome could have been
      significant: the smallest p-value of ``n`` pairs (``2**-n``) is above ``a`` (2 cases at
      5%), or a drop beyond the margin was seen and the smallest p-value of its ``m'``
      non-tied pairs (``2**-m'``: 4 drops among 20 ties give 0.0625) is above ``a``. A
      warning, never a pass or a failure;
    * **warn** ("inconclusive"): otherwise, when the candidate scored lower (``D < 0``) and
      the test could not rule out a drop larger than the margin: the ``1 - a`` upper
      confidence bound of the drop exceeds ``m`` (equivalently ``p_non_inferiority > a``).
      The message gives the smallest drop the item could detect with 80% power at its n and
      the cases needed to rule out a drop of the margin (:mod:`pytest_llmjudge.stats.power`);
    * **pass** otherwise ("improved" when the interval is above 0, "drop within margin" when
      a drop was seen and bounded by the margin, "no significant change").

    ``mode: non_inferiority`` passes only when the adjusted ``p_non_inferiority`` is ``<=
    alpha`` (the family-wise upper bound of the drop is below the margin); anything else,
    too few cases included, fails. ``fail_on: warn`` makes an inconclusive or undecided item
    fail as a regression would.

Missing cases are reported, never silently dropped: cases the baseline lacks
(``missing_in_baseline``), baseline cases the suite no longer has (``missing_in_candidate``),
cases the baseline run could not score (``baseline_unscored``) and candidate cases without a
score now (``candidate_unscored``). Only cases scored on both sides are compared.

Degenerate cases: no case scored on both sides is an ``error`` (never a pass, and outside the
family's count); candidate cases without a score beyond ``max_unscored_rate`` (default 0) are
an ``error``; with ``fail_on_missing`` any missing case fails the item; all differences zero
give p-values of 1 and, having no non-tied pair, "too few cases to decide"; with one pair the
sample standard deviation is undefined, so no minimum detectable effect is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from pytest_llmjudge.stats.multiplicity import adjust, per_item_level, tarone
from pytest_llmjudge.stats.paired import paired_bootstrap
from pytest_llmjudge.stats.power import cases_needed, minimum_detectable_effect
from pytest_llmjudge.stats.signflip import drop_upper_bound, min_achievable_p, sign_flip_tests

Method = Literal["bootstrap", "permutation"]
Mode = Literal["regression", "non_inferiority"]
Correction = Literal["holm", "bh", "bonferroni", "none"]
FamilyScope = Literal["run", "suite", "metric"]
FailOn = Literal["fail", "warn"]


class RegressionWarning(UserWarning):
    """An inconclusive drop, too few cases to decide, or cases missing on one side.

    ``fail_on: warn`` (or ``--llmjudge-fail-on=warn``) makes the first two fail the item
    with the regression text.
    """


Gate = Literal["pass", "warn", "fail", "error", "undecided"]

DEFAULT_RESAMPLES: dict[str, int] = {"bootstrap": 2000, "permutation": 10_000}
_DISPLAY_RESAMPLES = 2000


@dataclass(frozen=True)
class RegressionSettings:
    margin: float = 0.0
    alpha: float = 0.05
    confidence: float = 0.95
    method: Method = "permutation"
    resamples: int | None = None
    seed: int = 0
    max_unscored_rate: float = 0.0
    fail_on_missing: bool = False
    mode: Mode = "regression"
    correction: Correction = "holm"
    family: FamilyScope = "run"
    fail_on: FailOn = "fail"

    @property
    def n_resamples(self) -> int:
        return self.resamples if self.resamples is not None else DEFAULT_RESAMPLES[self.method]


@dataclass(frozen=True)
class RegressionResult:
    """One comparison; see the module docstring for every field's meaning.

    ``drop`` is the oriented mean drop (positive: the candidate is worse); ``drop_upper`` its
    ``1 - level`` upper confidence bound (``inf``: nothing ruled out); ``mde`` the smallest
    drop detected with 80% power at this n and level; ``cases_needed`` the pairs needed to
    rule out a drop of the margin (None: no margin, or no variance estimate).
    """

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
    p_non_inferiority: float | None = None
    p_adjusted: float | None = None
    family_size: int | None = None
    family_testable: int | None = None
    level: float | None = None
    min_p: float | None = None
    nonzero: int | None = None
    sd: float | None = None
    drop_upper: float | None = None
    mde: float | None = None
    cases_needed: int | None = None
    improved: bool = False
    method_detail: str = ""
    missing_in_baseline: tuple[str, ...] = ()
    missing_in_candidate: tuple[str, ...] = ()
    baseline_unscored: tuple[str, ...] = ()
    candidate_unscored: tuple[tuple[str, str], ...] = ()
    problem: str | None = None
    notes: tuple[str, ...] = field(default=())
    bound: Callable[[float], float] | None = field(default=None, repr=False, compare=False)
    """The upper confidence bound of the drop at a level (decided once the family's level is known)."""

    @property
    def n_missing(self) -> int:
        return len(self.missing_in_baseline) + len(self.missing_in_candidate) + len(self.baseline_unscored)

    @property
    def drop(self) -> float | None:
        if self.mean_difference is None:
            return None
        return -self.mean_difference if self.higher_is_better else self.mean_difference

    @property
    def primary_p(self) -> float | None:
        """The p-value the family adjusts: of a regression, or of non-inferiority in that mode."""
        return self.p_non_inferiority if self.settings.mode == "non_inferiority" else self.p_value

    @property
    def fails_run(self) -> bool:
        """Whether this comparison fails the run (an inconclusive or undecided one only with fail_on: warn)."""
        if self.gate in ("fail", "error"):
            return True
        return self.settings.fail_on == "warn" and self.gate in ("warn", "undecided")

    def to_dict(self) -> dict[str, Any]:
        s = self.settings

        def finite(value: float | None) -> float | None:
            return value if value is None or math.isfinite(value) else None

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
            "p_non_inferiority": self.p_non_inferiority,
            "p_adjusted": self.p_adjusted,
            "correction": s.correction,
            "family": s.family,
            "family_size": self.family_size,
            "family_testable": self.family_testable,
            "level": self.level,
            "min_p": self.min_p,
            "n_nonzero": self.nonzero,
            "drop_upper": finite(self.drop_upper),
            "mde": finite(self.mde),
            "cases_needed": self.cases_needed,
            "mode": s.mode,
            "fail_on": s.fail_on,
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


def measure(
    candidate: Mapping[str, float | None],
    baseline: Mapping[str, float | None],
    *,
    higher_is_better: bool = True,
    settings: RegressionSettings | None = None,
    unscored_reasons: Mapping[str, str] | None = None,
    notes: tuple[str, ...] = (),
) -> RegressionResult:
    """The raw statistics of one comparison, not yet decided (``gate`` is provisional until :func:`decide`)."""
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
    oriented = sign * (cand - base)
    margin = settings.margin
    bootstrap_resamples = settings.n_resamples if settings.method == "bootstrap" else _DISPLAY_RESAMPLES
    comparison = paired_bootstrap(
        sign * cand, sign * base, resamples=bootstrap_resamples, confidence=settings.confidence, seed=settings.seed
    )
    # The drop test's own ties (pairs exactly at -margin) decide what the data could show.
    drop_test, non_inferiority = sign_flip_tests(
        oriented, shift=margin, resamples=settings.n_resamples, seed=settings.seed
    )
    bound: Callable[[float], float]
    if settings.method == "bootstrap":
        p_value = comparison.p_value_for_drop(margin)
        p_ni = comparison.p_value_non_inferior(margin)
        distribution = comparison.distribution

        def bound(level: float) -> float:
            return math.inf if comparison.n < 2 else -float(np.quantile(distribution, level))

        detail = comparison.method
    else:
        p_value = drop_test.p_value
        p_ni = non_inferiority.p_value

        def bound(level: float) -> float:
            return drop_upper_bound(oriented, level, resamples=settings.n_resamples, seed=settings.seed)

        detail = f"{drop_test.detail}; interval from the paired bootstrap ({bootstrap_resamples} resamples)"
    low, high = sorted((sign * comparison.ci_low, sign * comparison.ci_high))
    return RegressionResult(
        "pass",
        "undecided",
        comparison.n,
        mean_candidate=float(np.mean(cand)),
        mean_baseline=float(np.mean(base)),
        mean_difference=float(np.mean(cand) - np.mean(base)),
        ci_low=float(low),
        ci_high=float(high),
        p_value=float(p_value),
        p_non_inferiority=float(p_ni),
        min_p=drop_test.min_p,
        nonzero=drop_test.nonzero,
        sd=float(np.std(oriented, ddof=1)) if oriented.size > 1 else None,
        improved=comparison.n > 1 and comparison.ci_low > 0,
        method_detail=detail,
        bound=bound,
        **common,
    )


def decide(family: Sequence[RegressionResult], *, bounds: bool = True) -> list[RegressionResult]:
    """Decide every comparison of one family together (module docstring).

    The family's correction and ``alpha`` are the first member's settings (callers group
    comparisons by them). Errors keep their gate and do not count in ``k``. ``bounds=False``
    leaves ``drop_upper`` unset (the gates do not depend on it; simulations skip its cost).
    """
    return decide_joined(family, (), bounds=bounds).results


@dataclass(frozen=True)
class JoinedFamily:
    """A family decided with checks that joined it (aggregate bound checks, ``family: release``).

    ``joined_adjusted[i]`` is the adjusted p of ``joined[i]`` (None: it had no p-value, an
    error row, and does not count); ``size`` the comparisons tested, ``testable`` Tarone's K.
    """

    results: list[RegressionResult]
    joined_adjusted: list[float | None]
    size: int
    testable: int


def decide_joined(
    family: Sequence[RegressionResult],
    joined: Sequence[float | None],
    *,
    bounds: bool = True,
    correction: str = "holm",
    alpha: float = 0.05,
) -> JoinedFamily:
    """Decide ``family`` together with the raw p-values of checks that joined it.

    A joined check's test is continuous (a betting test, ``stats/betting.py``), so its
    smallest possible p-value is 0: Tarone always counts it. ``correction``/``alpha`` are used
    when the family has no regression comparison (the first one's settings otherwise).
    """
    tested = [r for r in family if r.gate != "error" and r.primary_p is not None]
    joined_p = [p for p in joined if p is not None]
    if not tested and not joined_p:
        return JoinedFamily(list(family), [None] * len(joined), 0, 0)
    if tested:
        correction, alpha = tested[0].settings.correction, tested[0].settings.alpha
    k = len(tested) + len(joined_p)
    # Tarone: only the comparisons that could reach significance count (module docstring).
    min_p = [r.min_p if r.min_p is not None else 1.0 for r in tested] + [0.0] * len(joined_p)
    K, eligible = tarone(min_p, alpha, correction)
    counted = [r for r, ok in zip(tested, eligible, strict=False) if ok]
    raw = [float(r.primary_p or 1.0) for r in counted] + joined_p
    adjusted_all = adjust(raw, correction, size=K)
    adjusted = {id(r): 1.0 for r in tested}
    adjusted.update(zip(map(id, counted), adjusted_all[: len(counted)], strict=True))
    rest = iter(adjusted_all[len(counted) :])
    joined_adjusted = [None if p is None else next(rest) for p in joined]
    level = per_item_level(alpha, K, correction)
    results = [_decide_one(r, adjusted[id(r)], k, K, level, bounds) if id(r) in adjusted else r for r in family]
    return JoinedFamily(results, joined_adjusted, k, K)


def _decide_one(
    result: RegressionResult, adjusted: float, k: int, K: int, level: float, bounds: bool
) -> RegressionResult:
    s = result.settings
    drop = result.drop or 0.0
    margin = s.margin
    # An item that could never reach the level (2 pairs), or whose observed drop beyond the
    # margin rests on too few non-tied pairs (4 drops among 20 ties), can't be decided.
    structural = min_achievable_p(result.n, resamples=s.n_resamples) > level
    conditional = drop > margin and (result.min_p or 1.0) > level
    too_few = structural or conditional
    upper = (result.bound(level) if result.bound is not None else math.inf) if bounds else None
    mde = minimum_detectable_effect(result.sd, result.n, level)
    mde = margin + mde if math.isfinite(mde) else mde
    needed = cases_needed(result.sd, margin, level) if margin > 0 else None
    gate: Gate
    if s.mode == "non_inferiority":
        if adjusted <= s.alpha:
            gate, verdict = "pass", "non-inferior: a drop beyond the margin is ruled out"
        elif too_few:
            gate, verdict = "fail", "too few cases to show non-inferiority"
        else:
            gate, verdict = "fail", "non-inferiority not shown"
    elif adjusted <= s.alpha and drop > margin:
        gate, verdict = "fail", "regressed"
    elif too_few:
        gate, verdict = "undecided", "too few cases to decide"
    elif drop > 0 and result.p_non_inferiority is not None and result.p_non_inferiority > level:
        gate, verdict = "warn", "inconclusive: a drop beyond the margin is not ruled out"
    elif result.improved:
        gate, verdict = "pass", "improved"
    elif drop > 0:
        gate, verdict = "pass", "drop within margin"
    else:
        gate, verdict = "pass", "no significant change"
    if s.fail_on_missing and (result.missing_in_baseline or result.missing_in_candidate or result.baseline_unscored):
        gate = "fail"
        verdict = f"{verdict}; cases missing (fail_on_missing)"
    return replace(
        result,
        gate=gate,
        verdict=verdict,
        p_adjusted=adjusted,
        family_size=k,
        family_testable=K,
        level=level,
        drop_upper=upper,
        mde=mde,
        cases_needed=needed,
    )


def compare(
    candidate: Mapping[str, float | None],
    baseline: Mapping[str, float | None],
    *,
    higher_is_better: bool = True,
    settings: RegressionSettings | None = None,
    unscored_reasons: Mapping[str, str] | None = None,
    notes: tuple[str, ...] = (),
) -> RegressionResult:
    """Compare candidate and baseline scores keyed by case id (``None`` = unscored), as a family of one."""
    measured = measure(
        candidate,
        baseline,
        higher_is_better=higher_is_better,
        settings=settings,
        unscored_reasons=unscored_reasons,
        notes=notes,
    )
    return decide([measured])[0]


__all__ = [
    "RegressionResult",
    "RegressionSettings",
    "RegressionWarning",
    "compare",
    "decide",
    "measure",
]
