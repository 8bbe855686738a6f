"""Suite-level aggregates of case scores, per language and overall.

Statistics: ``mean``, ``median``, ``min``, ``max`` over the *scored* cases, and
``pass_rate`` = cases meeting the inner case threshold / all cases (an unscored case counts
as not passing). The mean comes with a 95% confidence interval from Student's t
(mean +- t_{0.975, n-1} * s / sqrt(n)); with one scored case the interval is the point.

A NaN or infinite score (which the loaders reject, but a metric plugin could return) makes
its row an error rather than an infinite mean or a crash in ``statistics.stdev``.

Unscored cases never disappear silently: every row reports ``n_scored`` and
``n_unscored``, and a row fails when fewer than ``min_cases`` cases are scored or when the
unscored share exceeds ``max_unscored_rate`` (default 0: any unscored case fails the row).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_llmjudge.suite.expressions import AggregateSpec

ALL_LANGUAGES = "all"


@dataclass(frozen=True)
class ScoredValue:
    """What an aggregate needs of one case's score."""

    language: str
    value: float | str | None
    scored: bool
    group: str | None = None
    """The name of the case's group (``stats/grouping.py``) when rows are not per language."""


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

    @property
    def n(self) -> int:
        return self.n_scored + self.n_unscored


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval for the mean; the point itself when n == 1 or all values agree.

    NaN for both ends when a value is NaN or infinite (``statistics.stdev`` raises on them).
    """
    n = len(values)
    if not all(math.isfinite(value) for value in values):
        return math.nan, math.nan
    mean = statistics.fmean(values)
    if n < 2:
        return mean, mean
    sd = statistics.stdev(values)
    if sd == 0:
        return mean, mean
    from scipy import stats as scipy_stats

    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


def compute_row(
    language: str,
    spec: AggregateSpec,
    values: Sequence[ScoredValue],
    *,
    min_cases: int = 1,
    max_unscored_rate: float = 0.0,
) -> AggregateRow:
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
    elif len(numbers) != len(scored):
        problem = f"{spec.stat}() needs numeric scores; {spec.metric} is categorical"
    elif not all(math.isfinite(number) for number in numbers):
        bad = sum(1 for number in numbers if not math.isfinite(number))
        problem = f"{bad} score(s) of {spec.metric} in {language} are not finite numbers (NaN or infinite)"
    elif numbers:
        if spec.stat == "mean":
            value = statistics.fmean(numbers)
            ci = mean_ci(numbers)
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
    passed = problem is None and spec.holds(value)
    return AggregateRow(language, spec, len(scored), n_unscored, value, ci[0], ci[1], passed, problem)


def compute_rows(
    spec_for: Mapping[str, AggregateSpec],
    default_spec: AggregateSpec,
    values: Sequence[ScoredValue],
    *,
    min_cases: int = 1,
    max_unscored_rate: float = 0.0,
) -> list[AggregateRow]:
    """One row per group (sorted; a value's group is its language unless it names one) plus the ``all`` row.

    ``spec_for`` is keyed by the same names; a row's ``language`` holds its group's name.
    """
    languages = sorted({v.group or v.language for v in values})
    rows = [
        compute_row(
            language,
            spec_for.get(language, default_spec),
            [v for v in values if (v.group or v.language) == language],
            min_cases=min_cases,
            max_unscored_rate=max_unscored_rate,
        )
        for language in languages
    ]
    rows.append(
        compute_row(ALL_LANGUAGES, default_spec, values, min_cases=min_cases, max_unscored_rate=max_unscored_rate)
    )
    return rows


def render_table(rows: Sequence[AggregateRow], highlight: str | None = None) -> str:
    """A plain-text table of rows, marking the row being asserted with ``>``."""
    header = f"  {'language':<10} {'n':>5} {'unscored':>8} {'value':>8} {'95% CI':>17} {'threshold':>12}  result"
    lines = [header]
    for row in rows:
        value = "-" if row.value is None else f"{row.value:.3f}"
        ci = "" if row.ci_low is None or row.ci_high is None else f"[{row.ci_low:.3f}, {row.ci_high:.3f}]"
        threshold = f"{row.spec.op} {row.spec.value:g}"
        result = "pass" if row.passed else ("FAIL" if row.problem is None else "ERROR")
        mark = ">" if row.language == highlight else " "
        lines.append(
            f"{mark} {row.language:<10} {row.n:>5} {row.n_unscored:>8} {value:>8} {ci:>17} {threshold:>12}  {result}"
        )
    return "\n".join(lines)
