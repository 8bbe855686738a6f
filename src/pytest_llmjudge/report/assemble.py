"""The report document: what a run found, as one typed :class:`ReportDocument` every report renders.

:func:`build_document` turns what a run produced into the versioned document of
``report/document.py`` (``format_version`` :data:`FORMAT_VERSION`, schema generated into
``docs/report.schema.json``); the terminal summary, ``--llmjudge-report=json:PATH`` and
``--llmjudge-report=html:PATH`` all render that same document, so they never disagree. Its
inputs (:class:`RunInputs`), all typed:

* the item records (``records.py``) with ``nodeid`` and ``outcome`` set by the results
  collector; each goes to the section of its type (:class:`CaseRecord` to ``cases``,
  :class:`AggregateRecord` to ``aggregates``, :class:`GateRecord` to ``gates``,
  :class:`RegressionRecord` to ``regressions``, :class:`LeaderboardRecord` to ``rankings``,
  the rest to ``other``); expected failures arrive with the outcome ``xfailed`` (or
  ``xpassed``) rather than pytest's ``skipped`` (``passed``);
* the suite items that ended without a record (skipped for want of a judge, invalid
  suites, setup errors), with their reason (:class:`NotRun`);
* what collection knew of each suite (:class:`SuiteInfo`), the judge-call accounting
  (:class:`~pytest_llmjudge.execution.runner.RunnerStats`), prices, and the run
  (:class:`RunInfo`, with the judge endpoints' failure headlines).

A case judged only for its suite's aggregates (no threshold of its own on the metric) has a
case record too, carried by the aggregate items (:attr:`AggregateRecord.cases`): it goes to
``cases`` once, with ``threshold``, ``passed``, ``nodeid`` and ``outcome`` ``None``; it is
no item, so it counts in no outcome total and in no summary row's case counts (the
aggregates give those rows their numbers).

Every case record keeps the judged text (``input``, ``output``, ``reference``); with a
baseline, a case record also gets ``baseline: {score, output}`` from the regression records
of its suite and metric (their per-case ``cases`` pairs, whose ``baseline_output`` is then
dropped), each output kept once. An aggregate's per-case scores (``case_scores``) are kept
once, on its ``all`` item. Summary rows carry the metric's ``scale`` (:func:`metric_scale`)
for the charts. Fields named ``*_path`` under pytest's rootdir are made relative to it.

Ordering is stable (records sorted by their identifying fields, never by arrival, which
differs under xdist), so two runs' documents diff cleanly; only ``run.timestamp`` and
``run.duration_s`` change between identical runs.

``summary`` has one row per suite x metric x language (plus an ``all`` row when a suite
has several languages): n counts distinct cases (a case asserted under two thresholds
counts once), the mean and its 95% interval (``aggregate.mean_ci``, the one the aggregate
items use) are over the scored numeric cases.

Degenerate cases: no records gives an empty but valid document; categorical scores (a
detected language) have no mean, the row shows the case pass rate instead; a metric only
aggregated (no per-case threshold) takes n, mean and interval from its aggregate row; a
record without an outcome counts as failed; no usage or an unpriced model gives no cost
(``estimated_cost_usd: null`` with the reason in ``cost_note``); several judge models in
one run give no cost either (the accounting sums tokens over models). Secrets (API keys
from the environment, keys the runner sent, base-URL passwords) and credentials in any URL
are replaced by ``***`` in every string of the document, keys included
(:func:`~pytest_llmjudge.util.redaction.redact_value` over its wire form).
"""

from __future__ import annotations

import gc
import hashlib
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pytest_llmjudge.errors import PriceError
from pytest_llmjudge.execution.runner import RunnerStats
from pytest_llmjudge.metrics.scales import reference_scale
from pytest_llmjudge.records import (
    AggregateRecord,
    BaselineCase,
    CaseRecord,
    ConsistencyRecord,
    GateRecord,
    ItemRecord,
    LeaderboardRecord,
    RankingCheckRecord,
    Record,
    RegressionRecord,
    SensitivityRecord,
    SurrogateRecord,
    Threshold,
    UncalibratedRecord,
)
from pytest_llmjudge.regression.verdict import release_verdict
from pytest_llmjudge.report.document import (
    Accounting,
    AggregateBrief,
    GateBrief,
    NotRun,
    ReportDocument,
    RubricUse,
    RunInfo,
    SuiteInfo,
    SummaryRow,
    Totals,
)
from pytest_llmjudge.util.formatting import format_number, format_value, number
from pytest_llmjudge.util.redaction import redact_value

_R = TypeVar("_R", bound=ItemRecord)

ALL = "all"
PASSING = ("passed", "xpassed")
NOT_DECIDED = ("skipped", "xfailed")
"""Item outcomes: pytest's, with expected failures told apart (``xfailed``, ``xpassed``)."""


def is_failure(outcome: str | None) -> bool:
    """True for ``failed``, ``error`` and a missing outcome; False for passes, skips, xfails."""
    return outcome not in PASSING and outcome not in NOT_DECIDED


# USD per 1M tokens (input, output): providers' list prices when this table was written
# (2025). Not kept current; override or extend with the ini option ``llmjudge_prices``.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}

# A dated snapshot or alias of a priced model: gpt-4o-mini-2024-07-18, claude-opus-4-20250514.
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def parse_prices(lines: Iterable[str]) -> dict[str, tuple[float, float]]:
    """``MODEL = INPUT OUTPUT`` lines (USD per 1M tokens) over :data:`DEFAULT_PRICES`."""
    prices = dict(DEFAULT_PRICES)
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        model, sep, rest = line.partition("=")
        parts = rest.replace(",", " ").split()
        if not sep or not model.strip() or len(parts) != 2:
            raise PriceError(f"llmjudge_prices: expected 'MODEL = INPUT OUTPUT' (USD per 1M tokens), got {raw!r}")
        try:
            values = (float(parts[0]), float(parts[1]))
        except ValueError:
            raise PriceError(f"llmjudge_prices: prices must be numbers, got {raw!r}") from None
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise PriceError(f"llmjudge_prices: prices must be finite and >= 0, got {raw!r}")
        prices[model.strip()] = values
    return prices


def price_for(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[str, tuple[float, float]] | None:
    """The price entry for ``model`` (``provider:model`` or ``model``), or None when unknown.

    Exact names first; then a dated snapshot of a priced name (``gpt-4o-2024-08-06``).
    """
    candidates = [model]
    if ":" in model:
        candidates.append(model.split(":", 1)[1])
    for name in candidates:
        if name in prices:
            return name, prices[name]
    for name in candidates:
        base = _SNAPSHOT.sub("", name)
        if base != name and base in prices:
            return base, prices[base]
    return None


def metric_scale(metric: str, suite: SuiteInfo | None) -> tuple[float, float] | None:
    """The range a metric's scores lie in: the suite's rubric scale, a built-in reference
    metric's range (``metrics/scales.py``), or None when unknown."""
    scale = None if suite is None else suite.scales.get(metric)
    if scale is not None and len(scale) == 2 and all(number(v) is not None for v in scale):
        return float(scale[0]), float(scale[1])
    return reference_scale(metric)


def threshold_text(threshold: Threshold | None) -> str:
    """``>= 1.5``, ``== 'hi'`` (a category); empty without a threshold."""
    if threshold is None:
        return ""
    value = threshold.value
    shown = format_value(value) if isinstance(value, str) else format_number(value)
    return f"{threshold.op} {shown}".strip()


# -- summary rows --------------------------------------------------------------------------


@dataclass
class _Group:
    scores: dict[str, float | str | None] = field(default_factory=dict)
    """case id -> score (first seen; a case under two thresholds is one case)."""
    unscored: set[str] = field(default_factory=set)
    thresholds: list[Threshold] = field(default_factory=list)
    items_passed: int = 0
    items_failed: int = 0
    items_skipped: int = 0
    judged: set[str] = field(default_factory=set)
    cached: set[str] = field(default_factory=set)
    aggregates: list[AggregateBrief] = field(default_factory=list)


def _mean_ci(
    values: Sequence[float], scale: tuple[float, float] | None = None
) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    from pytest_llmjudge.suite.aggregate import mean_ci

    # The aggregates' interval (betting on a known scale, else the bootstrap), so a summary row
    # agrees with its aggregate item; it may have none (a single value), which the row shows as "-".
    ci = mean_ci(values, scale=scale)
    low, high = ci if ci is not None else (None, None)
    return statistics.fmean(values), low, high


def _stat_of(label: str) -> str:
    return label.split("(", 1)[0] if "(" in label else label


def _aggregate_brief(record: AggregateRecord) -> AggregateBrief:
    row = record.row()
    # The item's verdict as pytest saw it (an expected failure is not a pass); before the
    # collector set an outcome, the item's own.
    passed = record.outcome in PASSING if record.outcome is not None else record.passed
    return AggregateBrief(
        label=record.aggregate,
        stat=_stat_of(record.aggregate),
        value=None if row is None else row.value,
        ci_low=None if row is None else row.ci_low,
        ci_high=None if row is None else row.ci_high,
        n_scored=None if row is None else row.n_scored,
        n_unscored=None if row is None else row.n_unscored,
        threshold=None if row is None else row.threshold,
        passed=passed,
        problem=None if row is None else row.problem,
        nodeid=record.nodeid,
    )


def _gate_brief(gate: GateRecord) -> GateBrief:
    return GateBrief(
        f1=gate.f1,
        ci_low=gate.ci.low,
        ci_high=gate.ci.high,
        ceiling=gate.ceiling,
        threshold=gate.threshold,
        passed=gate.passed,
        source=gate.suite,
        nodeid=gate.nodeid,
    )


def _count_outcome(group: _Group, outcome: str | None) -> None:
    if outcome in PASSING:
        group.items_passed += 1
    elif outcome in NOT_DECIDED:
        group.items_skipped += 1
    else:
        group.items_failed += 1


def build_summary(
    cases: Sequence[CaseRecord],
    aggregates: Sequence[AggregateRecord],
    gates: Sequence[GateRecord],
    blocked: Sequence[UncalibratedRecord] = (),
    judges_of: Mapping[str, Iterable[str]] | None = None,
    scale_of: Callable[[str, str], tuple[float, float] | None] | None = None,
) -> list[SummaryRow]:
    """Rows per suite x metric x language (``all`` last), sorted.

    ``scale_of``: (suite, metric) -> the metric's range, for the mean's interval (the one
    the aggregates use); without it, ranges of the built-in reference metrics only.

    ``blocked``: suite items stopped before scoring because their judge is not calibrated;
    they count as failed or skipped items of their row, without a score.

    A row shows the agreement gate of its metric and language run for the same suite, or
    else for a judge the suite's scores came from (``judges_of``: suite -> judge labels,
    live and recorded); a gate of another judge says nothing about these scores.
    """
    judges: dict[str, set[str]] = {name: set(labels) for name, labels in (judges_of or {}).items()}
    for record in cases:
        if record.judge:
            judges.setdefault(record.suite, set()).add(record.judge)
    groups, languages_of = _groups(cases, aggregates, blocked)
    gate_of = _gate_finder(gates)
    rows = [
        _summary_row(
            key,
            group,
            gate_of(key, judges.get(key[0], ())),
            (scale_of or (lambda _suite, metric: reference_scale(metric)))(key[0], key[1]),
        )
        for key, group in groups.items()
        # An ``all`` row repeats a one-language suite's row, unless an aggregate asserts on it.
        if not (key[2] == ALL and len(languages_of[key[0]]) < 2 and not group.aggregates)
    ]
    rows.sort(key=lambda r: (r.suite, r.metric, r.language == ALL, r.language))
    return rows


_Key = tuple[str, str, str]
"""suite, metric, language (``all`` for every language)."""


def _groups(
    cases: Sequence[CaseRecord], aggregates: Sequence[AggregateRecord], blocked: Sequence[UncalibratedRecord]
) -> tuple[dict[_Key, _Group], dict[str, set[str]]]:
    """What each row is made of, and each suite's languages."""
    groups: dict[_Key, _Group] = defaultdict(_Group)
    languages_of: dict[str, set[str]] = defaultdict(set)
    for blocked_record in blocked:
        suite, metric, language = blocked_record.suite, blocked_record.metric, blocked_record.language
        for key in ((suite, metric, language), (suite, metric, ALL)) if language != ALL else ((suite, metric, ALL),):
            if blocked_record.outcome in NOT_DECIDED:
                groups[key].items_skipped += 1
            else:
                groups[key].items_failed += 1
    for record in cases:
        suite, metric, language = record.suite, record.metric, record.language
        case_id = record.case or record.nodeid or ""
        languages_of[suite].add(language)
        for key in ((suite, metric, language), (suite, metric, ALL)):
            group = groups[key]
            if case_id not in group.scores:
                group.scores[case_id] = record.score
                if record.unscored_reason is not None or record.score is None:
                    group.unscored.add(case_id)
                if record.source == "judge":
                    group.judged.add(case_id)
                    if record.cached is True:
                        group.cached.add(case_id)
            if record.threshold is not None and record.threshold not in group.thresholds:
                group.thresholds.append(record.threshold)
            _count_outcome(group, record.outcome)
    for aggregate_record in aggregates:
        if aggregate_record.language != ALL:
            languages_of[aggregate_record.suite].add(aggregate_record.language)
        key = (aggregate_record.suite, aggregate_record.metric, aggregate_record.language)
        groups[key].aggregates.append(_aggregate_brief(aggregate_record))
    return groups, languages_of


def _gate_finder(gates: Sequence[GateRecord]) -> Callable[[_Key, Iterable[str]], GateRecord | None]:
    """The gate a row shows: its suite's, else the first (by name) of its judges'."""
    gate_index: dict[_Key, GateRecord] = {}
    by_judge: dict[_Key, GateRecord] = {}
    for gate_record in gates:
        metric, language = gate_record.metric, gate_record.language
        gate_index.setdefault((gate_record.suite, metric, language), gate_record)
        if gate_record.judge:
            by_judge.setdefault((gate_record.judge, metric, language), gate_record)

    def find(key: _Key, judges: Iterable[str]) -> GateRecord | None:
        suite, metric, language = key
        gate = gate_index.get(key)
        for judge in sorted(judges):
            if gate is None:
                gate = by_judge.get((judge, metric, language))
        return gate

    return find


def _summary_row(
    key: _Key, group: _Group, gate: GateRecord | None, scale: tuple[float, float] | None = None
) -> SummaryRow:
    """One row: n, mean and interval over the scored numeric cases (or the aggregate's when
    only aggregates assert the metric), the case pass rate (or the ``pass_rate`` aggregate's),
    item counts, checks, gate and status."""
    suite, metric, language = key
    numeric = [
        float(v) for case_id, v in group.scores.items() if case_id not in group.unscored and isinstance(v, (int, float))
    ]
    categorical = len(group.scores) - len(group.unscored) - len(numeric) > 0
    mean, ci_low, ci_high = (None, None, None) if categorical else _mean_ci(numeric, scale)
    n, n_unscored = len(group.scores), len(group.unscored)
    mean_check = next((a for a in group.aggregates if a.stat == "mean"), None)
    if not group.scores and group.aggregates:
        first = mean_check or group.aggregates[0]
        n = (first.n_scored or 0) + (first.n_unscored or 0)
        n_unscored = first.n_unscored or 0
        if mean_check is not None:
            mean, ci_low, ci_high = mean_check.value, mean_check.ci_low, mean_check.ci_high
    decided = group.items_passed + group.items_failed
    pass_rate = group.items_passed / decided if decided else None
    rate_check = next((a for a in group.aggregates if a.stat == "pass_rate"), None)
    rate_ci: tuple[float | None, float | None] = (None, None)
    if pass_rate is None and rate_check is not None:
        pass_rate = rate_check.value
        rate_ci = (rate_check.ci_low, rate_check.ci_high)  # Clopper-Pearson
    failed_checks = [a for a in group.aggregates if not a.passed]
    return SummaryRow(
        suite=suite,
        metric=metric,
        language=language,
        n=n,
        n_unscored=n_unscored,
        mean=mean,
        ci_low=ci_low,
        ci_high=ci_high,
        pass_rate=pass_rate,
        pass_rate_ci_low=rate_ci[0],
        pass_rate_ci_high=rate_ci[1],
        case_thresholds=group.thresholds,
        items_passed=group.items_passed,
        items_failed=group.items_failed,
        items_skipped=group.items_skipped,
        judged=len(group.judged),
        cached=len(group.cached),
        aggregates=sorted(group.aggregates, key=lambda a: (a.label, a.nodeid or "")),
        gate=None if gate is None else _gate_brief(gate),
        passed=group.items_failed == 0 and not failed_checks,
        status=_row_status(group, failed_checks),
    )


RowStatus = Literal["pass", "warn", "fail", "error", "skip", "none"]


def _row_status(group: _Group, failed_checks: Sequence[AggregateBrief]) -> RowStatus:
    """``error`` (an aggregate could not be decided), ``fail`` (an aggregate fails, or a metric
    without aggregates has failing cases), ``warn`` (the aggregates hold but some cases fail),
    ``pass``, ``skip`` (only skipped items) or ``none`` (nothing decided)."""
    if any(check.problem for check in failed_checks):
        return "error"
    if failed_checks or (group.items_failed and not group.aggregates):
        return "fail"
    if group.items_failed:
        return "warn"
    if group.items_passed or group.aggregates:
        return "pass"
    return "skip" if group.items_skipped else "none"


# -- the document --------------------------------------------------------------------------


@dataclass
class RunInputs:
    """Everything :func:`build_document` needs."""

    records: Sequence[ItemRecord] = ()
    not_run: Sequence[NotRun] = ()
    suites: Sequence[SuiteInfo] = ()
    stats: RunnerStats | None = None
    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    run: RunInfo = field(default_factory=RunInfo)
    """The run as the plugin knows it; :func:`build_document` adds the judges and rubrics."""
    secrets: Sequence[str] = ()
    root: str | None = None
    """pytest's rootdir: record fields named ``*_path`` under it are made relative to it."""


def estimate_cost(
    stats: RunnerStats | None, judge_models: Sequence[str], prices: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    """``estimated_cost_usd`` (or None), the priced model, the prices used and a note why not."""
    result: dict[str, Any] = {"estimated_cost_usd": None, "cost_model": None, "prices_per_1m": None, "cost_note": None}
    if stats is None or (stats.input_tokens == 0 and stats.output_tokens == 0):
        result["cost_note"] = "no token usage reported"
        return result
    models = sorted(set(judge_models))
    if len(models) != 1:
        result["cost_note"] = (
            "no judge model known" if not models else f"{len(models)} judge models; tokens are not split per model"
        )
        return result
    found = price_for(models[0], prices)
    if found is None:
        result["cost_note"] = f"no price for {models[0]} (set llmjudge_prices)"
        return result
    name, (price_in, price_out) = found
    result["estimated_cost_usd"] = round((stats.input_tokens * price_in + stats.output_tokens * price_out) / 1e6, 6)
    result["cost_model"] = name
    result["prices_per_1m"] = {"input": price_in, "output": price_out}
    return result


def rubric_hash(rubrics: Iterable[tuple[str, str]]) -> str | None:
    """One short hash of every (rubric name, version) pair used, or None when there are none."""
    pairs = sorted(set(rubrics))
    if not pairs:
        return None
    return hashlib.sha256("\n".join(f"{n}:{v}" for n, v in pairs).encode()).hexdigest()[:12]


def clean_url(url: str | None) -> str | None:
    """A base URL without user info, query or fragment (they can hold credentials)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _relative_paths(record: _R, root: str | None) -> _R:
    """``record``, its absolute ``*_path`` values under ``root`` made relative (POSIX) in place, so
    that reports of one checkout made in two places diff cleanly."""
    if not root:
        return record
    prefix = root.replace("\\", "/").rstrip("/") + "/"
    # In place, not a copy: the copy of every record lived with the document to the end of the run
    # (docs/scale.md). Idempotent, so a document built twice (summary, then reports) gives the same paths.
    for name in type(record).model_fields:
        if name.endswith("_path"):
            value = getattr(record, name)
            if isinstance(value, str) and value.replace("\\", "/").startswith(prefix):
                setattr(record, name, value.replace("\\", "/")[len(prefix) :])
    return record


def _drop_repeated_case_scores(aggregates: list[AggregateRecord]) -> list[AggregateRecord]:
    """Keep an aggregate's per-case scores (``case_scores``) once, on its ``all`` item.

    Each per-language item of an aggregate carries the scores of its language, which the
    ``all`` item of the same aggregate carries too; when that item ran, the copies go.
    """
    complete = {(r.suite, r.aggregate) for r in aggregates if r.language == ALL and r.case_scores is not None}
    return [
        r.model_copy(update={"case_scores": None})
        if r.language != ALL and r.case_scores is not None and (r.suite, r.aggregate) in complete
        else r
        for r in aggregates
    ]


def _lift_unasserted_cases(aggregates: list[AggregateRecord], root: str | None) -> list[CaseRecord]:
    """The case records the aggregate items carry (cases with no threshold of their own on
    the metric), once each by suite, case and metric; the aggregates keep them no more."""
    lifted: dict[tuple[str, str, str], CaseRecord] = {}
    for index, record in enumerate(aggregates):
        if not record.cases:
            continue
        for case in record.cases:
            relative = _relative_paths(case, root)  # in place: keyed after, as a second sighting of it is
            key = (relative.suite_path, relative.case, relative.metric)
            if key not in lifted:
                lifted[key] = relative
        aggregates[index] = record.model_copy(update={"cases": None})
    return list(lifted.values())


def _attach_baselines(
    cases: list[CaseRecord], regressions: list[RegressionRecord]
) -> tuple[list[CaseRecord], list[RegressionRecord]]:
    """Give each case record its baseline score and output (``baseline: {score, output}``) from
    the regression records of its suite and metric; the regression records keep the scores
    and drop the output copies, so the document holds each output once."""
    paired: dict[tuple[str, str, str], BaselineCase] = {}
    moved: list[RegressionRecord] = []
    for record in regressions:
        for entry in record.cases:
            key = (record.suite, record.metric, entry.case)
            paired.setdefault(key, BaselineCase(score=entry.baseline, output=entry.baseline_output))
        if not any(entry.baseline_output is not None for entry in record.cases):
            moved.append(record)  # a baseline saved without outputs: its scores are all there is
            continue
        kept = [entry.model_copy(update={"baseline_output": None}) for entry in record.cases]
        moved.append(record.model_copy(update={"cases": kept}))
    if not paired:
        return cases, moved
    joined = []
    for case in cases:
        found = paired.get((case.suite, case.metric, case.case))
        joined.append(case if found is None else case.model_copy(update={"baseline": found}))
    return joined, moved


def _suite_judges(suite: SuiteInfo) -> list[str]:
    """Judge labels a suite's scores come from: its live judge and its recorded judges."""
    labels = list(suite.recorded_judges)
    if suite.live_judge and suite.judge is not None and suite.judge.label:
        labels.append(suite.judge.label)
    return labels


def _nodeid(record: ItemRecord | NotRun) -> str:
    return record.nodeid or ""


def _other_key(record: ItemRecord) -> tuple[str, ...]:
    """Kind, then the file's name (suite, calibration set or ranking), metric, language, node id."""
    if isinstance(record, UncalibratedRecord):
        return (record.kind, record.suite, record.metric, record.language, _nodeid(record))
    if isinstance(record, (ConsistencyRecord, SensitivityRecord)):
        return (record.kind, record.calibration, record.metric, record.language, _nodeid(record))
    if isinstance(record, (SurrogateRecord, RankingCheckRecord)):
        return (record.kind, record.ranking, record.source or "", record.language, _nodeid(record))
    return (record.kind, _nodeid(record))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a while (back on afterwards if it was on).

    Building a 10,000-case document (or its wire form for the JSON report) allocates some
    100,000 objects and no reference cycle; each full collection those allocations trigger
    walks the whole heap of the pytest run (a large share of the document's and the JSON
    report's build time, docs/scale.md).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_document(inputs: RunInputs) -> ReportDocument:
    """The report document (see the module docstring and ``docs/report.schema.json``)."""
    with collector_paused():
        return _build_document(inputs)


def _build_document(inputs: RunInputs) -> ReportDocument:
    cases: list[CaseRecord] = []
    aggregates: list[AggregateRecord] = []
    gates: list[GateRecord] = []
    regressions: list[RegressionRecord] = []
    rankings: list[LeaderboardRecord] = []
    other: list[ItemRecord] = []
    for raw in inputs.records:
        record = _relative_paths(raw, inputs.root)
        if isinstance(record, CaseRecord):
            cases.append(record)
        elif isinstance(record, AggregateRecord):
            aggregates.append(record)
        elif isinstance(record, GateRecord):
            gates.append(record)
        elif isinstance(record, RegressionRecord):
            regressions.append(record)
        elif isinstance(record, LeaderboardRecord):
            rankings.append(record)
        else:
            other.append(record)
    cases.extend(_lift_unasserted_cases(aggregates, inputs.root))
    aggregates = _drop_repeated_case_scores(aggregates)
    cases, regressions = _attach_baselines(cases, regressions)
    cases.sort(key=lambda r: (r.suite, r.case, r.metric, _nodeid(r)))
    asserted = [record for record in cases if record.threshold is not None]  # the case items' records
    aggregates.sort(key=lambda r: (r.suite, r.aggregate, r.language, _nodeid(r)))
    gates.sort(key=lambda r: (r.suite, r.calibration, r.metric, r.language, _nodeid(r)))
    regressions.sort(key=lambda r: (r.suite, r.metric, r.language, _nodeid(r)))
    rankings.sort(key=lambda r: (r.suite, r.metric, _nodeid(r)))
    other.sort(key=_other_key)
    not_run = sorted(inputs.not_run, key=_nodeid)
    suites = sorted(inputs.suites, key=lambda s: (s.name, s.path))

    rubric_pairs = [(name, version) for suite in suites for name, version in sorted(suite.rubrics.items())]
    live_models = sorted(
        {suite.judge.label for suite in suites if suite.live_judge and suite.judge is not None and suite.judge.label}
    )
    accounting = None
    if inputs.stats is not None:
        accounting = Accounting(**asdict(inputs.stats), **estimate_cost(inputs.stats, live_models, inputs.prices))

    totals = Totals()
    # A case record without a threshold of its own is no item: it has no outcome to count.
    outcomes = [r.outcome for r in (*asserted, *aggregates, *gates, *regressions, *rankings, *other)]
    for outcome in [*outcomes, *(r.outcome for r in not_run)]:
        name = outcome or "failed"
        setattr(totals, name, getattr(totals, name) + 1)
    totals.items = len(outcomes) + len(not_run)
    totals.cases = len(cases)

    run = inputs.run.model_copy(
        update={
            "judge_models": live_models,
            "judge_labels": sorted({r.judge for r in cases if r.judge}),
            "rubric_hash": rubric_hash(rubric_pairs),
            "rubrics": [
                RubricUse(
                    name=name,
                    version=version,
                    suites=sorted({s.name for s in suites if s.rubrics.get(name) == version}),
                )
                for name, version in sorted(set(rubric_pairs))
            ],
            "judge_seeds": sorted({s.judge.seed for s in suites if s.judge is not None and s.judge.seed is not None}),
        }
    )

    suite_of = {suite.name: suite for suite in suites}
    summary = build_summary(
        asserted,
        aggregates,
        gates,
        [r for r in other if isinstance(r, UncalibratedRecord)],
        {suite.name: _suite_judges(suite) for suite in suites},
        lambda suite, metric: metric_scale(metric, suite_of.get(suite)),
    )
    for row in summary:
        scale = metric_scale(row.metric, suite_of.get(row.suite))
        row.scale = None if scale is None else list(scale)
    document = ReportDocument(
        run=run,
        accounting=accounting,
        totals=totals,
        suites=suites,
        summary=summary,
        cases=cases,
        aggregates=aggregates,
        gates=gates,
        regressions=regressions,
        release=release_verdict(regressions, [a for a in aggregates if isinstance(a, AggregateRecord)], gates),
        rankings=rankings,
        other=other,
        not_run=not_run,
    )
    return _redacted(document, inputs.secrets)


_REDACTED_AT_ONCE = 1000
"""Records redacted per pass: their wire forms are all that is held at once, and each pass
leaves one small reference cycle (``redact_value``'s recursive closure) for the cyclic
collector, which is paused while the document is built."""


def _redacted(document: ReportDocument, secrets: Sequence[str]) -> ReportDocument:
    """``document`` with every string (keys included) redacted, whatever field it sits in.

    Redaction runs over the wire form, :data:`_REDACTED_AT_ONCE` records at a time (the
    wire form of the whole document and its redacted copy, held at once, were the peak of a
    run's memory, docs/scale.md); only the records it changed are parsed back (parsing a
    large document again is slow, and usually nothing holds a secret).
    """
    updates: dict[str, Any] = {}
    for name, value in document:
        parts = value if isinstance(value, list) else [value]
        cleaned = [
            part
            for start in range(0, len(parts), _REDACTED_AT_ONCE)
            for part in _redacted_parts(parts[start : start + _REDACTED_AT_ONCE], secrets)
        ]
        if any(new is not old for new, old in zip(cleaned, parts, strict=True)):
            updates[name] = cleaned if isinstance(value, list) else cleaned[0]
    return document.model_copy(update=updates) if updates else document


def _redacted_parts(parts: list[Any], secrets: Sequence[str]) -> list[Any]:
    """Records of the document redacted: each one itself when nothing in it changed (or it is no record)."""
    wire = [part.to_wire() if isinstance(part, Record) else None for part in parts]
    clean = redact_value(wire, secrets)
    return [
        part if before == after or not isinstance(part, Record) else type(part).model_validate(after)
        for part, before, after in zip(parts, wire, clean, strict=True)
    ]
