"""Suite-level aggregates of case scores, per language and overall, with their intervals.

Statistics: ``mean``, ``median``, ``min``, ``max`` over the *scored* cases, and
``pass_rate`` = cases meeting the inner case threshold / all cases (an unscored case counts
as not passing).

Intervals (95%), chosen so that they never leave the metric's scale:

* the mean of a metric whose scale ``[low, high]`` is known (a rubric's scores, a built-in
  reference metric's range, an aggregate's ``scale:``): the betting interval of
  Waudby-Smith and Ramdas (JRSS-B 2024), ``stats/betting.py``. It holds its level at every
  n and every shape of the scores, skew included: each end is a one-sided bound at 2.5%,
  so ``lower(...)`` of the 95% interval is a 97.5% one-sided lower confidence bound (and
  ``upper(...)`` likewise). The bootstrap it replaces covered 65.0% at n = 10 when the scores
  crowd the top of a 0-2 scale, the betting interval 100% (``benchmarks/bound_coverage.py``). One scored case has an
  interval (the whole scale at 95%); identical scores keep a width (ten 2s on 0-2:
  [1.25, 2]). A score outside the scale makes the row an error.
* the mean of a metric with no known scale (scores recorded under a name that is neither
  a rubric nor a built-in metric, a metric plugin without a ``scale``): the percentile
  bootstrap (Efron and Tibshirani 1993, ch. 13), ``B = 2000`` resamples of the scored cases
  with replacement, drawn from a generator seeded with 0 (the same interval on every run),
  bounds the 2.5% and 97.5% quantiles of the resampled means (linear interpolation):
  exactly ``scipy.stats.bootstrap(method="percentile")`` with the same generator. It stays
  inside the data's range but is only approximate: it under-covers at small n and under
  skew (a sample of identical scores gives the point). Declare the scale to get the betting
  interval.
* ``pass_rate``: the Clopper-Pearson exact interval (``stats/proportion.py``) of passing /
  all cases, which stays inside [0, 1], keeps a width at 0% and 100%, and holds its level
  at every n and rate: each end is a one-sided 97.5% bound, like the mean's. (The Wilson
  interval it replaces put its lower end above a true rate near 0, or its upper end below
  one near 1, up to 16.3% of the time at n = 5.)
* median, min, max: no interval.

Degenerate cases: no scored case gives no value and no interval; with the bootstrap, one
scored case has no interval for the mean (one resample is possible: nothing to say about
spread) and identical scores give the point as the interval (every resample has the same
mean). ``lower(...)`` and ``upper(...)`` assert on a bound, so a row without an interval is
an error, never a pass.

A NaN or infinite score (which the loaders reject, but a metric plugin could return) makes
its row an error rather than an infinite mean.

``human_mean`` and ``human_pass_rate`` (:func:`compute_human_row`) estimate the statistic on
the human labels' scale from the judge's values on every case and the labels of a random
sample (PPI++, ``stats/prediction_powered.py``): per group its own estimate, for ``all`` the
groups' estimates stratified by size. Fewer than ``min_labels`` labelled cases is an error.

``pass_at_k`` and ``pass_hat_k`` (:func:`compute_pass_k_row`) are over a case's repeated
samples: per case, with ``n`` samples of which ``c`` meet the inner threshold, the unbiased
estimate of "at least one of k attempts passes" (Chen et al. 2021) or "all k pass" (Yao et
al. 2024), ``stats/pass_k.py``; ``k`` is the assertion's or, unset, the case's ``n``. A case
without samples (one judgment, a recorded score, a reference metric) has ``n = 1``. The
row's value is the mean of the per-case estimates over the row's cases, and its interval
the betting interval on ``[0, 1]`` (each estimate lies there, and the cases are the
independent draws), so it holds its level at every number of cases like the mean's.
An unscored case (the scorer unscores a case when any of its samples has no score)
counts as 0, not passing, and as unscored (which fails the row unless
``max_unscored_rate`` allows it). ``k`` larger than a scored case's ``n`` is an error naming
the case: no k of its samples can be drawn (``suite/build.py`` already refuses such a suite
when it loads; the row checks again for values given directly).

Unscored cases never disappear silently: every row reports ``n_scored`` and
``n_unscored``, and a row fails when fewer than ``min_cases`` cases are scored or when the
unscored share exceeds ``max_unscored_rate`` (default 0: any unscored case fails the row).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pytest_llmjudge.stats.betting import betting_interval
from pytest_llmjudge.stats.proportion import clopper_pearson_interval
from pytest_llmjudge.suite.expressions import HUMAN_STATS, PASS_K_STATS, AggregateSpec

ALL_LANGUAGES = "all"
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class ScoredValue:
    """What an aggregate needs of one case's score."""

    language: str
    value: float | str | None
    scored: bool
    group: str | None = None
    """The name of the case's group (``stats/grouping.py``) when rows are not per language."""
    human: float | None = None
    """The case's human label on the metric (its annotators aggregated), if it has one: ``human_mean``."""
    samples: tuple[float, ...] = ()
    """The case's repeated judgments (``judge.repeats``, recorded ``samples``); empty for one: ``pass_at_k``."""
    case: str | None = None
    """The case's id, for errors that name a case."""


@dataclass(frozen=True)
class AggregateRow:
    language: str
    spec: AggregateSpec
    n_scored: int
    n_unscored: int
    value: float | None
    ci_low: float | None
    ci_high: float | None
    passed: bool
    problem: str | None
    human: HumanDetail | None = None
    """For ``human_mean``/``human_pass_rate``: what the estimate rests on."""

    @property
    def n(self) -> int:
        return self.n_scored + self.n_unscored

    @property
    def asserted(self) -> float | None:
        """What the threshold is compared with: the value, or the interval bound ``lower``/``upper`` names."""
        if self.spec.bound is None:
            return self.value
        return self.ci_low if self.spec.bound == "lower" else self.ci_high


Scale = tuple[float, float]


def mean_ci(
    values: Sequence[float], confidence: float = 0.95, scale: Scale | None = None
) -> tuple[float, float] | None:
    """Interval of the mean (module docstring): the betting interval on a known ``scale``,
    else the percentile bootstrap.

    None when there is no interval: no value, a NaN or infinite one, a value off the scale,
    or (bootstrap) fewer than two values.
    """
    if not values or not all(math.isfinite(value) for value in values):
        return None
    if scale is not None:
        if not _on_scale(values, scale):
            return None
        return _betting_mean(tuple(values), confidence, scale)
    if len(values) < 2:
        return None
    return _bootstrap_mean(tuple(values), confidence)


def _on_scale(values: Sequence[float], scale: Scale) -> bool:
    # The betting module's own allowance for a rounding step past an end (chrF's 100.00000000000001).
    slack = 1e-9 * (scale[1] - scale[0])
    return scale[0] - slack <= min(values) and max(values) <= scale[1] + slack


@functools.lru_cache(maxsize=64)
def _betting_mean(values: tuple[float, ...], confidence: float, scale: Scale) -> tuple[float, float]:
    interval = betting_interval(values, scale[0], scale[1], confidence=confidence)
    return interval.low, interval.high


# Each aggregate item computes every row of its aggregate (it prints them all), so the same
# values are bootstrapped once per language item: cache the result. 64 entries hold the rows
# of an aggregate over 60 languages; an entry of 10,000 scores is about 0.3 MB.
@functools.lru_cache(maxsize=64)
def _bootstrap_mean(values: tuple[float, ...], confidence: float) -> tuple[float, float]:
    import numpy as np

    data = np.asarray(values, dtype=float)
    if np.all(data == data[0]):
        return values[0], values[0]
    # Resamples are drawn in blocks of about a million indices (8 MB) rather than one
    # B x n array (160 MB at 10,000 cases); the generator's stream, hence the result, is the same.
    rng = np.random.default_rng(0)
    block = max(1, 2**20 // len(data))
    means = np.concatenate(
        [
            data[rng.integers(0, len(data), (min(block, BOOTSTRAP_RESAMPLES - start), len(data)))].mean(axis=1)
            for start in range(0, BOOTSTRAP_RESAMPLES, block)
        ]
    )
    alpha = 1.0 - confidence
    low, high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    # Rounding in the mean of identical-ish values can step a hair outside the data.
    return max(float(low), float(data.min())), min(float(high), float(data.max()))


def compute_row(
    language: str,
    spec: AggregateSpec,
    values: Sequence[ScoredValue],
    *,
    min_cases: int = 1,
    max_unscored_rate: float = 0.0,
    min_labels: int = 5,
    scale: Scale | None = None,
) -> AggregateRow:
    """One group's row; ``scale`` is the metric's ``(low, high)`` when known (module docstring)."""
    if spec.stat in HUMAN_STATS:
        return compute_human_row(
            language,
            spec,
            values,
            min_cases=min_cases,
            max_unscored_rate=max_unscored_rate,
            min_labels=min_labels,
            scale=scale,
        )
    if spec.stat in PASS_K_STATS:
        return compute_pass_k_row(language, spec, values, min_cases=min_cases, max_unscored_rate=max_unscored_rate)
    scored = [v.value for v in values if v.scored]
    n_unscored = len(values) - len(scored)
    numbers = [float(v) for v in scored if v is not None and not isinstance(v, str)]
    value: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    problem: str | None = None
    if spec.stat == "pass_rate":
        assert spec.inner is not None
        if values:
            passing = sum(1 for v in values if v.scored and spec.inner.holds(v.value, v.language))
            value = passing / len(values)
            ci = clopper_pearson_interval(passing, len(values))
    elif len(numbers) != len(scored):
        problem = f"{spec.stat}() needs numeric scores; {spec.metric} is categorical"
    elif not all(math.isfinite(number) for number in numbers):
        bad = sum(1 for number in numbers if not math.isfinite(number))
        problem = f"{bad} score(s) of {spec.metric} in {language} are not finite numbers (NaN or infinite)"
    elif scale is not None and numbers and not _on_scale(numbers, scale):
        off = sum(1 for number in numbers if not _on_scale([number], scale))
        problem = f"{off} score(s) of {spec.metric} in {language} lie off its scale [{scale[0]:g}, {scale[1]:g}]"
    elif numbers:
        if spec.stat == "mean":
            value = statistics.fmean(numbers)
            ci = mean_ci(numbers, scale=scale) or (None, None)
        elif spec.stat == "median":
            value = statistics.median(numbers)
        elif spec.stat == "min":
            value = min(numbers)
        else:
            value = max(numbers)
    if problem is None and len(scored) < min_cases:
        problem = f"only {len(scored)} scored case(s) in {language}; the aggregate needs at least {min_cases}"
    if problem is None and values and n_unscored / len(values) > max_unscored_rate:
        problem = f"{n_unscored} of {len(values)} case(s) unscored in {language} (allowed: {max_unscored_rate:.0%})"
    if problem is None and spec.bound is not None and value is not None and ci[0] is None:
        problem = (
            f"{spec.label} needs an interval, hence at least 2 scored cases (or a known scale); "
            f"{language} has {len(numbers)}"
        )
    row = AggregateRow(language, spec, len(scored), n_unscored, value, ci[0], ci[1], False, problem)
    return replace(row, passed=problem is None and spec.holds(row.asserted))


def compute_rows(
    spec_for: Mapping[str, AggregateSpec],
    default_spec: AggregateSpec,
    values: Sequence[ScoredValue],
    *,
    min_cases: int = 1,
    max_unscored_rate: float = 0.0,
    min_labels: int = 5,
    scale: Scale | None = None,
) -> list[AggregateRow]:
    """One row per group (sorted; a value's group is its language unless it names one) plus the ``all`` row.

    ``spec_for`` is keyed by the same names; a row's ``language`` holds its group's name.
    ``scale``: the metric's known ``(low, high)``, for the mean's betting interval.
    """
    languages = sorted({v.group or v.language for v in values})
    rows = [
        compute_row(
            language,
            spec_for.get(language, default_spec),
            [v for v in values if (v.group or v.language) == language],
            min_cases=min_cases,
            max_unscored_rate=max_unscored_rate,
            min_labels=min_labels,
            scale=scale,
        )
        for language in languages
    ]
    rows.append(
        compute_row(
            ALL_LANGUAGES,
            default_spec,
            values,
            min_cases=min_cases,
            max_unscored_rate=max_unscored_rate,
            min_labels=min_labels,
            scale=scale,
        )
    )
    return rows


def render_table(rows: Sequence[AggregateRow], highlight: str | None = None) -> str:
    """A plain-text table of rows, marking the row being asserted with ``>``."""
    # Rows are languages, or groups (``hi-task=qa``: the further fields are named) that need a wider column.
    title = "group" if any("=" in row.language for row in rows) else "language"
    width = max([10, *(len(row.language) for row in rows)])
    header = f"  {title:<{width}} {'n':>5} {'unscored':>8} {'value':>8} {'95% CI':>17} {'threshold':>12}  result"
    lines = [header]
    for row in rows:
        value = "-" if row.value is None else f"{row.value:.3f}"
        ci = "" if row.ci_low is None or row.ci_high is None else f"[{row.ci_low:.3f}, {row.ci_high:.3f}]"
        # The bound a lower()/upper() assertion compares, so the column says what was tested.
        threshold = f"{row.spec.bound + ' ' if row.spec.bound else ''}{row.spec.op} {row.spec.value:g}"
        result = "pass" if row.passed else ("FAIL" if row.problem is None else "ERROR")
        mark = ">" if row.language == highlight else " "
        lines.append(
            f"{mark} {row.language:<{width}} {row.n:>5} {row.n_unscored:>8} {value:>8} {ci:>17} {threshold:>12}  {result}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- pass@k, pass^k


@dataclass(frozen=True)
class PassKCase:
    """One case's part of a ``pass_at_k``/``pass_hat_k`` row: ``passing`` of ``n`` samples, its estimate."""

    case: str | None
    language: str
    n: int
    passing: int
    k: int
    estimate: float
    scored: bool


def pass_k_cases(spec: AggregateSpec, values: Sequence[ScoredValue]) -> list[PassKCase]:
    """Each case's estimate (module docstring); an unscored case is 0 with ``scored`` False.

    Raises ValueError naming the case when ``k`` exceeds a scored case's samples.
    """
    from pytest_llmjudge.stats.pass_k import pass_at_k, pass_hat_k

    assert spec.inner is not None
    estimator = pass_at_k if spec.stat == "pass_at_k" else pass_hat_k
    found = []
    for v in values:
        samples: tuple[float | str | None, ...] = v.samples or (v.value,)
        n = len(samples)
        k = spec.k or n
        if not v.scored:
            found.append(PassKCase(v.case, v.language, n, 0, k, 0.0, False))
            continue
        if k > n:
            raise ValueError(
                f"case {v.case!r} ({v.language}) has {n} sample(s), fewer than k = {k}: "
                "set judge.repeats (or record samples) to at least k, or lower k"
            )
        passing = sum(1 for sample in samples if spec.inner.holds(sample, v.language))
        found.append(PassKCase(v.case, v.language, n, passing, k, estimator(n, passing, k), True))
    return found


def compute_pass_k_row(
    language: str,
    spec: AggregateSpec,
    values: Sequence[ScoredValue],
    *,
    min_cases: int = 1,
    max_unscored_rate: float = 0.0,
) -> AggregateRow:
    """A ``pass_at_k``/``pass_hat_k`` row: the mean of the per-case estimates and its betting interval on [0, 1]."""
    n_scored = sum(1 for v in values if v.scored)
    n_unscored = len(values) - n_scored
    value: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    problem: str | None = None
    try:
        cases = pass_k_cases(spec, values)
    except ValueError as exc:
        problem = str(exc)
    else:
        if cases:
            estimates = [case.estimate for case in cases]
            value = statistics.fmean(estimates)
            ci = mean_ci(estimates, scale=(0.0, 1.0)) or (None, None)
    if problem is None and n_scored < min_cases:
        problem = f"only {n_scored} scored case(s) in {language}; the aggregate needs at least {min_cases}"
    if problem is None and values and n_unscored / len(values) > max_unscored_rate:
        problem = f"{n_unscored} of {len(values)} case(s) unscored in {language} (allowed: {max_unscored_rate:.0%})"
    row = AggregateRow(language, spec, n_scored, n_unscored, value, ci[0], ci[1], False, problem)
    return replace(row, passed=problem is None and spec.holds(row.asserted))


# --------------------------------------------------------------------------- human estimates


@dataclass(frozen=True)
class HumanDetail:
    """What a ``human_mean``/``human_pass_rate`` row rests on (``stats/prediction_powered.py``).

    ``judge`` is the judge's own mean (or pass rate) over the N cases; ``human_only`` the
    mean of the n labels alone with its interval; ``bias`` judge minus the estimate;
    ``lam`` PPI++'s power-tuning weight (None for the stratified ``all`` row).
    """

    n_labelled: int
    n_total: int
    judge: float | None
    human_only: float | None
    human_only_low: float | None
    human_only_high: float | None
    bias: float | None
    lam: float | None


def _human_pairs(spec: AggregateSpec, values: Sequence[ScoredValue]) -> tuple[list[float], list[tuple[float, float]]]:
    """(judge value of every scored case, (human, judge) of the scored labelled ones) on the statistic's scale."""

    def convert(value: float | str | None, language: str) -> float:
        if spec.stat == "human_pass_rate":
            assert spec.inner is not None
            return 1.0 if spec.inner.holds(value, language) else 0.0
        assert isinstance(value, (int, float))
        return float(value)

    judged = [convert(v.value, v.language) for v in values if v.scored]
    pairs = [
        (convert(v.human, v.language), convert(v.value, v.language)) for v in values if v.scored and v.human is not None
    ]
    return judged, pairs


def compute_human_row(
    language: str,
    spec: AggregateSpec,
    values: Sequence[ScoredValue],
    *,
    min_cases: int = 1,
    max_unscored_rate: float = 0.0,
    min_labels: int = 5,
    scale: tuple[float, float] | None = None,
) -> AggregateRow:
    """A ``human_mean``/``human_pass_rate`` row: the PPI++ estimate of the human statistic.

    Per group the estimate of ``stats/prediction_powered.py`` from the judge's values on the
    group's scored cases and the human labels of its scored labelled cases; the ``all`` row
    (values of several groups) combines the groups' estimates stratified by their sizes.
    A labelled case without a judge score is left out (the estimate needs both). Fewer than
    ``min_labels`` labelled cases (in the row; for ``all``, in some group) is an error.
    """
    from pytest_llmjudge.stats.prediction_powered import MeanEstimate, ppi_mean, stratified

    n_scored = sum(1 for v in values if v.scored)
    n_unscored = len(values) - n_scored
    what = "human_pass_rate()" if spec.stat == "human_pass_rate" else "human_mean()"
    if spec.stat == "human_pass_rate":
        scale = (0.0, 1.0)
    problem: str | None = None
    if spec.stat == "human_mean" and any(
        v.scored and isinstance(v.value, str) or isinstance(v.human, str) for v in values
    ):
        problem = f"{what} needs numeric scores; {spec.metric} is categorical"
    elif any(v.scored and isinstance(v.value, float) and not math.isfinite(v.value) for v in values):
        problem = f"score(s) of {spec.metric} in {language} are not finite numbers (NaN or infinite)"
    if problem is not None:
        return AggregateRow(language, spec, n_scored, n_unscored, None, None, None, False, problem)
    if spec.stat == "human_mean":
        values = [v for v in values if not v.scored or v.value is not None]
    groups = sorted({v.group or v.language for v in values})
    strata = groups if language == ALL_LANGUAGES and len(groups) > 1 else [language]
    parts: list[tuple[int, MeanEstimate]] = []
    human_parts: list[tuple[int, MeanEstimate]] = []
    judged_all: list[float] = []
    n_labelled = 0
    lam: float | None = None
    short: list[str] = []
    for stratum in strata:
        members = values if len(strata) == 1 else [v for v in values if (v.group or v.language) == stratum]
        judged, pairs = _human_pairs(spec, members)
        judged_all.extend(judged)
        n_labelled += len(pairs)
        if len(pairs) < min_labels or not judged:
            short.append(f"{stratum} {len(pairs)}")
            continue
        estimate = ppi_mean([y for y, _ in pairs], [f for _, f in pairs], judged, scale=scale, student=True)
        parts.append((len(judged), estimate.estimate))
        human_parts.append((len(judged), estimate.human_only))
        lam = estimate.lam if len(strata) == 1 else None
    value: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    detail = HumanDetail(n_labelled, len(judged_all), None, None, None, None, None, None)
    if short:
        where = (
            "" if len(strata) == 1 else f" (stratified per group, every group needs them; short: {', '.join(short)})"
        )
        problem = (
            f"only {n_labelled} human-labelled case(s) in {language}; {what} needs at least {min_labels}{where}: "
            "label a random sample of the group (--llmjudge-label-queue)"
        )
    elif parts:
        # One group: its own (Student) interval; several: the stratified sum, with z (its
        # degrees of freedom are those of all the groups' labels together).
        combined = parts[0][1] if len(parts) == 1 else stratified(parts, scale=scale)
        human_only = human_parts[0][1] if len(parts) == 1 else stratified(human_parts, scale=scale)
        judge = statistics.fmean(judged_all)
        value, ci = combined.value, (combined.ci_low, combined.ci_high)
        detail = HumanDetail(
            n_labelled,
            len(judged_all),
            judge,
            human_only.value,
            human_only.ci_low,
            human_only.ci_high,
            judge - combined.value,
            lam,
        )
    if problem is None and n_scored < min_cases:
        problem = f"only {n_scored} scored case(s) in {language}; the aggregate needs at least {min_cases}"
    if problem is None and values and n_unscored / len(values) > max_unscored_rate:
        problem = f"{n_unscored} of {len(values)} case(s) unscored in {language} (allowed: {max_unscored_rate:.0%})"
    if problem is None and spec.bound is not None and ci[0] is None:
        problem = f"{spec.label} needs an interval; {language} has none"
    row = AggregateRow(language, spec, n_scored, n_unscored, value, ci[0], ci[1], False, problem, detail)
    return replace(row, passed=problem is None and spec.holds(row.asserted))


def render_human_table(rows: Sequence[AggregateRow], highlight: str | None = None) -> str:
    """The rows of a human estimate: what was estimated from what, beside the judge's own value."""
    title = "group" if any("=" in row.language for row in rows) else "language"
    width = max([10, *(len(row.language) for row in rows)])

    def interval(low: float | None, high: float | None) -> str:
        return "" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"

    def number(value: float | None, sign: str = "") -> str:
        return "-" if value is None else f"{value:{sign}.3f}"

    header = (
        f"  {title:<{width}} {'N':>5} {'labelled':>8} {'judge':>6} {'human only':>23} "
        f"{'estimate':>25} {'bias':>7} {'threshold':>12}  result"
    )
    lines = [header]
    for row in rows:
        detail = row.human or HumanDetail(0, row.n, None, None, None, None, None, None)
        human_only = f"{number(detail.human_only)} {interval(detail.human_only_low, detail.human_only_high)}"
        estimate = f"{number(row.value)} {interval(row.ci_low, row.ci_high)}"
        threshold = f"{row.spec.bound + ' ' if row.spec.bound else ''}{row.spec.op} {row.spec.value:g}"
        result = "pass" if row.passed else ("FAIL" if row.problem is None else "ERROR")
        mark = ">" if row.language == highlight else " "
        lines.append(
            f"{mark} {row.language:<{width}} {detail.n_total:>5} {detail.n_labelled:>8} {number(detail.judge):>6} "
            f"{human_only:>23} {estimate:>25} {number(detail.bias, '+'):>7} {threshold:>12}  {result}"
        )
    return "\n".join(lines)
