"""The report document: one plain, JSON-ready dict that every report renderer reads.

:func:`build_document` turns what a run produced into the versioned document described in
``docs/report.schema.json`` (``format_version`` :data:`FORMAT_VERSION`); the terminal
summary, ``--llmjudge-report=json:PATH`` and ``--llmjudge-report=html:PATH`` all render
that same dict, so they never disagree. Its inputs:

* the structured item records (``report.llmjudge`` plus ``nodeid`` and ``outcome``), of
  the kinds ``case`` and ``aggregate`` (``nodes.py``), ``gate``, ``regression`` and
  ``ranking``; records of any other kind are kept whole under ``other``;
* the suite items that ended without a record (skipped for want of a judge, invalid
  suites, setup errors), with their reason; expected failures arrive with the outcome
  ``xfailed`` (or ``xpassed``) rather than pytest's ``skipped`` (``passed``);
* what collection knew of each suite (judge, rubric versions), the judge-call accounting
  (:class:`~pytest_llmjudge.execution.runner.RunnerStats` as a dict), prices, run metadata.

Every case record keeps the judged text (``input``, ``output``, ``reference``); with a
baseline, a case record also gets ``baseline: {score, output}`` from the regression records
of its suite and metric (their per-case ``cases`` pairs), each output kept once. Summary
rows carry the metric's ``scale`` (:func:`metric_scale`) for the charts.

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
record missing a field shows ``null``; no usage or an unpriced model gives no cost
(``estimated_cost_usd: null`` with the reason in ``cost_note``); several judge models in
one run give no cost either (the accounting sums tokens over models). Secrets (API keys
from the environment, keys the runner sent, base-URL passwords) and credentials in any URL
are replaced by ``***`` everywhere in the document (:func:`~pytest_llmjudge.redaction.redact_value`).
"""

from __future__ import annotations

import hashlib
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pytest_llmjudge.redaction import redact_value

FORMAT_NAME = "pytest-llmjudge-report"
FORMAT_VERSION = 1
ALL = "all"
KNOWN_KINDS = ("case", "aggregate", "gate", "regression", "ranking")
PASSING = ("passed", "xpassed")
NOT_DECIDED = ("skipped", "xfailed")
"""Item outcomes: pytest's, with expected failures told apart (``xfailed``, ``xpassed``)."""


def is_failure(outcome: Any) -> bool:
    """True for ``failed``, ``error`` and anything unknown; False for passes, skips, xfails."""
    return outcome not in PASSING and outcome not in NOT_DECIDED


SECTION_OF_KIND = {
    "case": "cases",
    "aggregate": "aggregates",
    "gate": "gates",
    "regression": "regressions",
    "ranking": "rankings",
}

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


class PriceError(ValueError):
    """A line of ``llmjudge_prices`` that can't be read."""


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


# The built-in reference metrics' ranges (each metric module's docstring gives its scale);
# rubric ranges come from the suites (``suites[].scales``). A metric in neither has no scale.
REFERENCE_SCALES: dict[str, tuple[float, float]] = {
    "bleu": (0.0, 100.0),
    "chrf": (0.0, 100.0),
    "chrf++": (0.0, 100.0),
    "rouge_l": (0.0, 1.0),
    "numeric_fidelity": (0.0, 1.0),
    "lrm2qas": (0.0, 1.0),
}


def metric_scale(metric: str, suite: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """The range a metric's scores lie in: the suite's rubric scale, a built-in reference
    metric's range (``lrm2qas_*`` components share ``lrm2qas``'s), or None when unknown."""
    scale = ((suite or {}).get("scales") or {}).get(metric)
    if isinstance(scale, (list, tuple)) and len(scale) == 2 and all(number(v) is not None for v in scale):
        return float(scale[0]), float(scale[1])
    return REFERENCE_SCALES.get(metric) or REFERENCE_SCALES.get(
        metric.split("_", 1)[0] if metric.startswith("lrm2qas_") else ""
    )


# -- small readers tolerant of missing or odd fields ---------------------------------------


def number(value: Any) -> float | None:
    """``value`` as a finite float, or None (bools, text, NaN and missing are not numbers)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        result = float(value)
        return result if math.isfinite(result) else None
    return None


def interval(record: Mapping[str, Any], prefix: str = "ci") -> tuple[float | None, float | None]:
    """A confidence interval stored as ``ci_low``/``ci_high``, ``ci: [lo, hi]`` or ``ci: {low, high}``."""
    low, high = record.get(f"{prefix}_low"), record.get(f"{prefix}_high")
    if low is None and high is None:
        packed = record.get(prefix)
        if isinstance(packed, (list, tuple)) and len(packed) == 2:
            low, high = packed
        elif isinstance(packed, Mapping):
            low, high = packed.get("low"), packed.get("high")
    return number(low), number(high)


def threshold_text(threshold: Any) -> str:
    """``{op, value}`` (or a number, or text) as ``>= 1.5``."""
    if isinstance(threshold, Mapping):
        op, value = threshold.get("op", ""), threshold.get("value")
        shown = format_number(value) if number(value) is not None else repr(value) if isinstance(value, str) else "-"
        return f"{op} {shown}".strip()
    if number(threshold) is not None:
        return f">= {format_number(threshold)}"
    return "" if threshold is None else str(threshold)


def record_group(record: Mapping[str, Any]) -> str:
    """The suite a record belongs to; gate records name their calibration set instead."""
    return _text(record.get("suite") or record.get("calibration"))


def skew_value(record: Mapping[str, Any]) -> float | None:
    """A gate's skew (judge mean minus human mean), stored as a number or ``{"skew": x, ...}``."""
    skew = record.get("skew")
    if isinstance(skew, Mapping):
        skew = skew.get("skew")
    return number(skew)


def gate_threshold(record: Mapping[str, Any]) -> float | None:
    threshold = record.get("threshold")
    if isinstance(threshold, Mapping):
        threshold = threshold.get("value")
    return number(threshold)


def regression_status(record: Mapping[str, Any]) -> str:
    """``fail``, ``warn``, ``improved`` or ``pass`` for a regression record."""
    gate = _text(record.get("gate")).lower()
    verdict = _text(record.get("verdict")).lower()
    if gate in ("fail", "error") or record.get("passed") is False or record.get("outcome") == "failed":
        return "fail"
    if gate == "warn":
        return "warn"
    if "regress" in verdict:
        return "fail"
    if "improv" in verdict:
        return "improved"
    return "pass"


def format_number(value: Any, digits: int = 2) -> str:
    x = number(value)
    if x is None:
        return "-"
    if x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    if abs(x) >= 1000:
        return f"{x:.4g}"
    return f"{x:.{digits}f}"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# -- summary rows --------------------------------------------------------------------------


@dataclass
class _Group:
    scores: dict[str, Any] = field(default_factory=dict)
    """case id -> score (first seen; a case under two thresholds is one case)."""
    unscored: set[str] = field(default_factory=set)
    thresholds: list[dict[str, Any]] = field(default_factory=list)
    items_passed: int = 0
    items_failed: int = 0
    items_skipped: int = 0
    judged: set[str] = field(default_factory=set)
    cached: set[str] = field(default_factory=set)
    aggregates: list[dict[str, Any]] = field(default_factory=list)


def _mean_ci(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    from pytest_llmjudge.aggregate import mean_ci

    # The aggregates' interval, so a summary row agrees with its aggregate item; it may have
    # none (a single value), which the row shows as "-".
    ci = mean_ci(values)
    low, high = ci if ci is not None else (None, None)
    return statistics.fmean(values), low, high


def _aggregate_row(record: Mapping[str, Any]) -> dict[str, Any] | None:
    language = record.get("language")
    for row in record.get("rows") or ():
        if isinstance(row, Mapping) and row.get("language") == language:
            return dict(row)
    return None


def _stat_of(label: str) -> str:
    return label.split("(", 1)[0] if "(" in label else label


def build_summary(
    cases: Sequence[Mapping[str, Any]],
    aggregates: Sequence[Mapping[str, Any]],
    gates: Sequence[Mapping[str, Any]],
    blocked: Sequence[Mapping[str, Any]] = (),
    judges_of: Mapping[str, Iterable[str]] | None = None,
) -> list[dict[str, Any]]:
    """Rows per suite x metric x language (``all`` last), sorted.

    ``blocked``: suite items stopped before scoring with a record saying why (kind
    ``uncalibrated``); they count as failed or skipped items of their row, without a score.

    A row shows the agreement gate of its metric and language run for the same suite, or
    else for a judge the suite's scores came from (``judges_of``: suite -> judge labels,
    live and recorded); a gate of another judge says nothing about these scores.
    """
    judges: dict[str, set[str]] = {name: set(labels) for name, labels in (judges_of or {}).items()}
    for record in cases:
        if record.get("judge"):
            judges.setdefault(_text(record.get("suite")), set()).add(_text(record.get("judge")))
    groups: dict[tuple[str, str, str], _Group] = defaultdict(_Group)
    languages_of: dict[str, set[str]] = defaultdict(set)
    for record in blocked:
        suite, metric, language = _text(record.get("suite")), _text(record.get("metric")), _text(record.get("language"))
        if not (suite and metric and language):
            continue
        for key in ((suite, metric, language), (suite, metric, ALL)) if language != ALL else ((suite, metric, ALL),):
            if record.get("outcome") in NOT_DECIDED:
                groups[key].items_skipped += 1
            else:
                groups[key].items_failed += 1
    for record in cases:
        suite, metric, language = _text(record.get("suite")), _text(record.get("metric")), _text(record.get("language"))
        case_id = _text(record.get("case")) or _text(record.get("nodeid"))
        languages_of[suite].add(language)
        for key in ((suite, metric, language), (suite, metric, ALL)):
            group = groups[key]
            if case_id not in group.scores:
                group.scores[case_id] = record.get("score")
                if record.get("unscored_reason") is not None or record.get("score") is None:
                    group.unscored.add(case_id)
                if record.get("source") == "judge":
                    group.judged.add(case_id)
                    if record.get("cached") is True:
                        group.cached.add(case_id)
            threshold = record.get("threshold")
            if isinstance(threshold, Mapping) and dict(threshold) not in group.thresholds:
                group.thresholds.append(dict(threshold))
            outcome = record.get("outcome")
            if outcome in PASSING:
                group.items_passed += 1
            elif outcome in NOT_DECIDED:
                group.items_skipped += 1
            else:
                group.items_failed += 1
    for record in aggregates:
        row = _aggregate_row(record)
        suite, metric = _text(record.get("suite")), _text(record.get("metric"))
        language = _text(record.get("language"))
        if language != ALL:
            languages_of[suite].add(language)
        label = _text(record.get("aggregate"))
        passed = record.get("outcome") in PASSING if "outcome" in record else bool(record.get("passed"))
        groups[(suite, metric, language)].aggregates.append(
            {
                "label": label,
                "stat": _stat_of(label),
                "value": None if row is None else row.get("value"),
                "ci_low": None if row is None else row.get("ci_low"),
                "ci_high": None if row is None else row.get("ci_high"),
                "n_scored": None if row is None else row.get("n_scored"),
                "n_unscored": None if row is None else row.get("n_unscored"),
                "threshold": None if row is None else row.get("threshold"),
                "passed": passed,
                "problem": None if row is None else row.get("problem"),
                "nodeid": record.get("nodeid"),
            }
        )
    gate_index: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    by_judge: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for gate_record in gates:
        metric, language = _text(gate_record.get("metric")), _text(gate_record.get("language"))
        gate_index.setdefault((record_group(gate_record), metric, language), gate_record)
        if gate_record.get("judge"):
            by_judge.setdefault((_text(gate_record.get("judge")), metric, language), gate_record)

    rows: list[dict[str, Any]] = []
    for (suite, metric, language), group in groups.items():
        if language == ALL and len(languages_of[suite]) < 2 and not group.aggregates:
            continue
        numeric = [
            float(v) for case_id, v in group.scores.items() if case_id not in group.unscored and number(v) is not None
        ]
        categorical = len(group.scores) - len(group.unscored) - len(numeric) > 0
        mean, ci_low, ci_high = (None, None, None) if categorical else _mean_ci(numeric)
        n, n_unscored = len(group.scores), len(group.unscored)
        mean_check = next((a for a in group.aggregates if a["stat"] == "mean"), None)
        if not group.scores and group.aggregates:
            first = mean_check or group.aggregates[0]
            n = int(number(first.get("n_scored")) or 0) + int(number(first.get("n_unscored")) or 0)
            n_unscored = int(number(first.get("n_unscored")) or 0)
            if mean_check is not None:
                mean, ci_low, ci_high = (
                    number(mean_check["value"]),
                    number(mean_check["ci_low"]),
                    number(mean_check["ci_high"]),
                )
        decided = group.items_passed + group.items_failed
        pass_rate = group.items_passed / decided if decided else None
        rate_check = next((a for a in group.aggregates if a["stat"] == "pass_rate"), None)
        rate_ci: tuple[float | None, float | None] = (None, None)
        if pass_rate is None and rate_check is not None:
            pass_rate = number(rate_check["value"])
            rate_ci = (number(rate_check.get("ci_low")), number(rate_check.get("ci_high")))  # Wilson
        gate: Mapping[str, Any] | None = gate_index.get((suite, metric, language))
        for judge in sorted(judges.get(suite, ())):
            if gate is None:
                gate = by_judge.get((judge, metric, language))
        failed_checks = [a for a in group.aggregates if not a["passed"]]
        rows.append(
            {
                "suite": suite,
                "metric": metric,
                "language": language,
                "n": n,
                "n_unscored": n_unscored,
                "mean": mean,
                "ci_low": ci_low,
                "ci_high": ci_high,
                "pass_rate": pass_rate,
                "pass_rate_ci_low": rate_ci[0],
                "pass_rate_ci_high": rate_ci[1],
                "case_thresholds": group.thresholds,
                "items_passed": group.items_passed,
                "items_failed": group.items_failed,
                "items_skipped": group.items_skipped,
                "judged": len(group.judged),
                "cached": len(group.cached),
                "aggregates": sorted(group.aggregates, key=lambda a: (a["label"], _text(a["nodeid"]))),
                "gate": None if gate is None else _gate_brief(gate),
                "passed": group.items_failed == 0 and not failed_checks,
                "status": _row_status(group, failed_checks),
            }
        )
    rows.sort(key=lambda r: (r["suite"], r["metric"], r["language"] == ALL, r["language"]))
    return rows


def _row_status(group: _Group, failed_checks: Sequence[Mapping[str, Any]]) -> str:
    """``error`` (an aggregate could not be decided), ``fail`` (an aggregate fails, or a metric
    without aggregates has failing cases), ``warn`` (the aggregates hold but some cases fail),
    ``pass``, ``skip`` (only skipped items) or ``none`` (nothing decided)."""
    if any(check.get("problem") for check in failed_checks):
        return "error"
    if failed_checks or (group.items_failed and not group.aggregates):
        return "fail"
    if group.items_failed:
        return "warn"
    if group.items_passed or group.aggregates:
        return "pass"
    return "skip" if group.items_skipped else "none"


def _gate_brief(gate: Mapping[str, Any]) -> dict[str, Any]:
    low, high = interval(gate)
    return {
        "f1": number(gate.get("f1")),
        "ci_low": low,
        "ci_high": high,
        "ceiling": number(gate.get("ceiling")),
        "threshold": gate_threshold(gate),
        "passed": gate.get("passed"),
        "source": record_group(gate),
        "nodeid": gate.get("nodeid"),
    }


# -- the document --------------------------------------------------------------------------


@dataclass
class RunInputs:
    """Everything :func:`build_document` needs; plain data (it also comes from xdist workers)."""

    records: Sequence[Mapping[str, Any]] = ()
    not_run: Sequence[Mapping[str, Any]] = ()
    suites: Sequence[Mapping[str, Any]] = ()
    stats: Mapping[str, int] | None = None
    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    run: Mapping[str, Any] = field(default_factory=dict)
    secrets: Sequence[str] = ()
    root: str | None = None
    """pytest's rootdir: record fields named ``*_path`` under it are made relative to it."""


def _sort_key(record: Mapping[str, Any], *names: str) -> tuple[str, ...]:
    return (*(_text(record.get(name)) for name in names), _text(record.get("nodeid")))


_SORT_FIELDS: dict[str, tuple[str, ...]] = {
    "cases": ("suite", "case", "metric"),
    "aggregates": ("suite", "aggregate", "language"),
    "gates": ("suite", "calibration", "metric", "language"),
    "regressions": ("suite", "metric", "language"),
    "rankings": ("suite", "metric"),
    "other": ("kind", "suite", "calibration", "metric", "language"),
}


def estimate_cost(
    stats: Mapping[str, int] | None, judge_models: Sequence[str], prices: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    """``estimated_cost_usd`` (or None), the priced model, the prices used and a note why not."""
    result: dict[str, Any] = {"estimated_cost_usd": None, "cost_model": None, "prices_per_1m": None, "cost_note": None}
    tokens_in = int((stats or {}).get("input_tokens", 0))
    tokens_out = int((stats or {}).get("output_tokens", 0))
    if stats is None or (tokens_in == 0 and tokens_out == 0):
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
    result["estimated_cost_usd"] = round((tokens_in * price_in + tokens_out * price_out) / 1e6, 6)
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


def _json_ready(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_json_ready(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    return str(value)


def _relative_paths(record: dict[str, Any], root: str | None) -> dict[str, Any]:
    """``record`` with absolute ``*_path`` values under ``root`` made relative (POSIX), so that
    reports of one checkout made in two places diff cleanly."""
    if not root:
        return record
    prefix = root.rstrip("/\\") + "/"
    for key, value in record.items():
        if key.endswith("_path") and isinstance(value, str):
            posix = value.replace("\\", "/")
            if posix.startswith(prefix.replace("\\", "/")):
                record[key] = posix[len(prefix) :]
    return record


def _drop_repeated_case_scores(aggregates: list[dict[str, Any]]) -> None:
    """Keep an aggregate's per-case scores (``case_scores``) once, on its ``all`` item.

    Each per-language item of an aggregate carries the scores of its language, which the
    ``all`` item of the same aggregate carries too; when that item ran, the copies go.
    """
    complete = {
        (r.get("suite"), r.get("aggregate"))
        for r in aggregates
        if r.get("language") == ALL and isinstance(r.get("case_scores"), list)
    }
    for record in aggregates:
        if record.get("language") != ALL and (record.get("suite"), record.get("aggregate")) in complete:
            record.pop("case_scores", None)


def _attach_baselines(cases: list[dict[str, Any]], regressions: list[dict[str, Any]]) -> None:
    """Give each case record its baseline score and output (``baseline: {score, output}``) from
    the regression records of its suite and metric; the regression records keep the scores
    and drop the output copies, so the document holds each output once."""
    paired: dict[tuple[str, str, str], dict[str, Any]] = {}
    for record in regressions:
        for entry in record.get("cases") or []:
            if isinstance(entry, dict):
                output = entry.pop("baseline_output", None)
                key = (_text(record.get("suite")), _text(record.get("metric")), _text(entry.get("case")))
                paired.setdefault(key, {"score": entry.get("baseline"), "output": output})
    if not paired:
        return
    for record in cases:
        found = paired.get((_text(record.get("suite")), _text(record.get("metric")), _text(record.get("case"))))
        if found is not None:
            record["baseline"] = found


def _suite_judges(suite: Mapping[str, Any]) -> list[str]:
    """Judge labels a suite's scores come from: its live judge and its recorded judges."""
    labels = [_text(label) for label in suite.get("recorded_judges") or []]
    live = (suite.get("judge") or {}).get("label")
    if suite.get("live_judge") and live:
        labels.append(_text(live))
    return labels


def build_document(inputs: RunInputs) -> dict[str, Any]:
    """The report document (see the module docstring and ``docs/report.schema.json``)."""
    sections: dict[str, list[dict[str, Any]]] = {name: [] for name in (*SECTION_OF_KIND.values(), "other")}
    for record in inputs.records:
        kind = _text(record.get("kind"))
        sections[SECTION_OF_KIND.get(kind, "other")].append(_relative_paths(_json_ready(dict(record)), inputs.root))
    _drop_repeated_case_scores(sections["aggregates"])
    _attach_baselines(sections["cases"], sections["regressions"])
    for name, items in sections.items():
        fields = _SORT_FIELDS[name]
        items.sort(key=lambda r, f=fields: _sort_key(r, *f))  # type: ignore[misc]
    not_run = sorted((_json_ready(dict(r)) for r in inputs.not_run), key=lambda r: _text(r.get("nodeid")))

    suites = sorted(
        (_json_ready(dict(s)) for s in inputs.suites), key=lambda s: (_text(s.get("name")), _text(s.get("path")))
    )
    rubric_pairs = [
        (name, _text(version)) for suite in suites for name, version in sorted((suite.get("rubrics") or {}).items())
    ]
    live_models = sorted(
        {
            _text((suite.get("judge") or {}).get("label"))
            for suite in suites
            if suite.get("live_judge") and (suite.get("judge") or {}).get("label")
        }
    )
    judge_labels = sorted({_text(r.get("judge")) for r in sections["cases"] if r.get("judge")})

    stats = None if inputs.stats is None else {k: int(v) for k, v in sorted(inputs.stats.items())}
    accounting: dict[str, Any] | None = None
    if stats is not None:
        accounting = {**stats, **estimate_cost(stats, live_models, inputs.prices)}

    outcomes: dict[str, int] = {"passed": 0, "failed": 0, "skipped": 0}
    for items in sections.values():
        for record in items:
            outcome = _text(record.get("outcome")) or "failed"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    for record in not_run:
        outcome = _text(record.get("outcome")) or "failed"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    run = _json_ready(dict(inputs.run))
    run["judge_models"] = live_models
    run["judge_labels"] = judge_labels
    run["rubric_hash"] = rubric_hash(rubric_pairs)
    run["rubrics"] = [
        {
            "name": name,
            "version": version,
            "suites": sorted({s["name"] for s in suites if (s.get("rubrics") or {}).get(name) == version}),
        }
        for name, version in sorted(set(rubric_pairs))
    ]
    run["judge_seeds"] = sorted(
        {int(seed) for s in suites if isinstance(seed := (s.get("judge") or {}).get("seed"), int)}
    )

    summary = build_summary(
        sections["cases"],
        sections["aggregates"],
        sections["gates"],
        [r for r in sections["other"] if r.get("kind") == "uncalibrated"],
        {_text(suite.get("name")): _suite_judges(suite) for suite in suites},
    )
    suite_of = {_text(suite.get("name")): suite for suite in suites}
    for row in summary:
        scale = metric_scale(row["metric"], suite_of.get(row["suite"]))
        row["scale"] = None if scale is None else list(scale)
    document: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "run": run,
        "accounting": accounting,
        "totals": {**outcomes, "items": sum(outcomes.values()), "cases": len(sections["cases"])},
        "suites": suites,
        "summary": _json_ready(summary),
        **sections,
        "not_run": not_run,
    }
    return redact_value(document, inputs.secrets)  # type: ignore[no-any-return]
