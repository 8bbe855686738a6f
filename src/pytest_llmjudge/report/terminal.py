"""The end-of-run terminal summary, rendered from the report document (``report/model.py``).

Layout, at most :data:`WIDTH` (100) columns whatever the data (suite and metric heading
lines take the terminal's width when it is wider, so they are not cut on a wide terminal)::

    suite pariksha-release-gate: 160 case(s), 8 language(s); recorded: gpt-4 (PARIKSHA release)
        lang          n  unsc     mean 95% CI            threshold             cases    F1/human result
      task_quality: mean(task_quality) >= 1.80
        hi           20     0     1.95 [1.85, 2.05]      mean >= 1.80              -   0.59/0.63 pass

One block per suite, one sub-block per metric (its thresholds on the heading line), one
row per language, so eight or more languages read down a column instead of across; the
``F1/human`` column appears only when an agreement gate ran. Then, when a run has them: a
count of agreement gates with the failing ones, the regression comparisons that warn or
fail, one line per pairwise ranking, a count of other result kinds, the suite items that
didn't run grouped by reason, and the judge-call accounting line (with the estimated cost
when the provider reported usage and the model has a price).

Degenerate cases: no rows and no accounting give no lines (the caller prints no section);
a single case has no interval (``-``); a categorical metric shows its pass rate in the
mean column; a row whose every case is unscored shows ``n/a`` there (never ``0%``); values wider than their column are cut with ``~``; long lists (failing gates,
regressions) stop after :data:`MAX_DETAIL_LINES` with a count of the rest.

``-q`` prints only the accounting line. Lines come with a markup name (``red``,
``yellow``, ``bold``) that the caller passes to pytest's terminal writer, which drops
colour when the output is not a terminal (or with ``--color=no`` / ``NO_COLOR``); the text
itself never holds escape codes.
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_llmjudge.report.model import (
    ALL,
    NOT_DECIDED,
    format_number,
    gate_threshold,
    interval,
    is_failure,
    number,
    record_group,
    regression_status,
    threshold_text,
)

WIDTH = 100
MAX_DETAIL_LINES = 10
STATUS_TEXT = {"pass": "pass", "warn": "warn", "fail": "FAIL", "error": "ERROR", "skip": "skip", "none": "-"}
STATUS_STYLE = {"warn": "yellow", "fail": "red", "error": "red"}
StyledLine = tuple[str, str | None]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "~"


def _ci(low: Any, high: Any, n: Any = None) -> str:
    """``[low, high]``; ``-`` without an interval or for a single case (its interval is the point)."""
    if number(low) is None or number(high) is None or (isinstance(n, int) and n - 0 < 2):
        return "-"
    return f"[{format_number(low)}, {format_number(high)}]"


def _row_threshold(row: Mapping[str, Any]) -> str:
    checks = row.get("aggregates") or []
    if checks:
        first = checks[0]
        text = f"{first.get('stat')} {threshold_text(first.get('threshold'))}"
        return text + (f" +{len(checks) - 1}" if len(checks) > 1 else "")
    thresholds = row.get("case_thresholds") or []
    if not thresholds:
        return "-"
    more = f" +{len(thresholds) - 1}" if len(thresholds) > 1 else ""
    return "each " + threshold_text(thresholds[0]) + more


def _row_result(row: Mapping[str, Any]) -> str:
    return STATUS_TEXT.get(str(row.get("status")), "-")


def _agreement(gate: Mapping[str, Any] | None) -> str:
    if not gate or number(gate.get("f1")) is None:
        return ""
    ceiling = format_number(gate.get("ceiling")) if number(gate.get("ceiling")) is not None else "-"
    return f"{format_number(gate.get('f1'))}/{ceiling}"


def _suite_lines(
    suite: Mapping[str, Any] | None, name: str, rows: Sequence[Mapping[str, Any]], width: int = WIDTH
) -> list[str]:
    languages = sorted({r["language"] for r in rows if r["language"] != ALL})
    cases = {r["metric"]: r["n"] for r in rows if r["language"] == ALL}
    n_cases = max(cases.values()) if cases else max((r["n"] for r in rows), default=0)
    parts = [f"suite {name}: {n_cases} case(s), {len(languages)} language(s)"]
    judged = sum(r.get("judged", 0) for r in rows if r["language"] != ALL)
    cached = sum(r.get("cached", 0) for r in rows if r["language"] != ALL)
    if suite is not None:
        judge = suite.get("judge") or {}
        if suite.get("live_judge"):
            parts.append(f"judge {judge.get('label')} ({judged} scores, {cached} cached)")
        elif suite.get("recorded_judges"):
            parts.append("recorded: " + ", ".join(suite["recorded_judges"]))
    return [_cut("; ".join(parts), width)]


# (title, width, right-aligned); the agreement column is left out when no gate ran.
Column = tuple[str, int, bool]
COLUMNS: tuple[Column, ...] = (
    ("lang", 9, False),
    ("n", 5, True),
    ("unsc", 5, True),
    ("mean", 8, True),
    ("95% CI", 17, False),
    ("threshold", 17, False),
    ("cases", 9, True),
    ("F1/human", 11, True),
    ("result", 6, False),
)
REGRESSION_COLUMNS: tuple[Column, ...] = (
    ("suite", 22, False),
    ("metric", 24, False),
    ("lang", 6, False),
    ("n", 5, True),
    ("delta", 7, True),
    ("95% CI", 16, False),
    ("p", 5, True),
    ("gate", 5, False),
)


def _columns(columns: Sequence[Column], cells: Sequence[str], indent: str = "    ", skip: str = "") -> str:
    """Cells cut and padded to their columns (``skip``: a column title to leave out)."""
    parts = []
    for (title, width, right), cell in zip(columns, cells, strict=True):
        if title == skip:
            continue
        cell = _cut(cell, width)
        parts.append(cell.rjust(width) if right else cell.ljust(width))
    return (indent + " ".join(parts)).rstrip()


def _join(cells: Sequence[str], with_agreement: bool) -> str:
    return _columns(COLUMNS, cells, skip="" if with_agreement else "F1/human")


def _header(with_agreement: bool) -> str:
    return _join([title for title, _, _ in COLUMNS], with_agreement)


def _table_row(row: Mapping[str, Any], with_agreement: bool) -> str:
    mean = row.get("mean")
    interval = _ci(row.get("ci_low"), row.get("ci_high"), int(row["n"]) - int(row["n_unscored"]))
    if every_case_unscored(row):
        shown_mean = "n/a"  # no score at all: a 0% pass rate would read as a measured result
    elif number(mean) is None and number(row.get("pass_rate")) is not None:
        shown_mean = f"{row['pass_rate']:.0%}"
        low, high = number(row.get("pass_rate_ci_low")), number(row.get("pass_rate_ci_high"))
        if low is not None and high is not None:  # the pass_rate aggregate's Wilson interval
            interval = f"[{low:.0%}, {high:.0%}]"
    else:
        shown_mean = format_number(mean)
    decided = row.get("items_passed", 0) + row.get("items_failed", 0)
    cases = f"{row.get('items_passed', 0)}/{decided}" if decided else "-"
    cells = [
        str(row["language"]),
        str(row["n"]),
        str(row["n_unscored"]),
        shown_mean,
        interval,
        _row_threshold(row),
        cases,
        _agreement(row.get("gate")),
        _row_result(row),
    ]
    return _join(cells, with_agreement)


def every_case_unscored(row: Mapping[str, Any]) -> bool:
    """True for a summary row whose cases all ended without a score."""
    n = number(row.get("n"))
    return bool(n) and number(row.get("n_unscored")) == n


def _metric_heading(metric: str, rows: Sequence[Mapping[str, Any]], width: int = WIDTH) -> str:
    thresholds: list[Mapping[str, Any]] = []
    overrides: dict[str, list[str]] = defaultdict(list)
    checks: dict[str, str] = {}
    for row in rows:
        for threshold in row.get("case_thresholds") or []:
            if threshold not in thresholds:
                thresholds.append(threshold)
        for check in row.get("aggregates") or []:
            text = threshold_text(check.get("threshold"))
            if row["language"] == ALL:
                checks[check["label"]] = text
            else:
                overrides[check["label"]].append(f"{row['language']} {text}")
    parts = _case_threshold_parts(thresholds)
    for label in sorted(set(checks) | set(overrides)):
        default = checks.get(label)
        if default is None:
            counted = Counter(t.split(" ", 1)[1] for t in overrides[label])
            default = counted.most_common(1)[0][0]
        odd = [t for t in overrides[label] if t.split(" ", 1)[1] != default]
        parts.append(f"{label} {default}" + (f" ({', '.join(odd)})" if odd else ""))
    return _cut(f"  {metric}: " + "; ".join(parts), width)


def _case_threshold_parts(thresholds: Sequence[Mapping[str, Any]]) -> list[str]:
    """``each >= 1``; one operator with a value per language reads ``each == (per language)``."""
    if len(thresholds) <= 2:
        return [f"each {threshold_text(t)}" for t in thresholds]
    ops = {str(t.get("op")) for t in thresholds}
    if len(ops) == 1:
        return [f"each {ops.pop()} (per-language value)"]
    return [f"each {threshold_text(t)}" for t in thresholds[:2]] + [f"+{len(thresholds) - 2} more"]


def _gate_lines(gates: Sequence[Mapping[str, Any]]) -> list[StyledLine]:
    """A count line, then each failing gate (at most :data:`MAX_DETAIL_LINES`).

    The per-language F1 is in the table's ``F1/human`` column; the calibration plugin
    prints the full gate table in its own section.
    """
    failing = [g for g in gates if g.get("passed") is False]
    expected = sum(1 for g in failing if g.get("outcome") in NOT_DECIDED)
    head = f"agreement gates (judge vs human, weighted F1): {len(gates) - len(failing)} of {len(gates)} pass"
    if expected:
        head += f", {expected} failure(s) expected (xfail)"
    lines: list[StyledLine] = [(head, "bold")]
    for gate in failing[:MAX_DETAIL_LINES]:
        low, high = interval(gate)
        xfail = gate.get("outcome") in NOT_DECIDED
        text = (
            f"  {'xfail' if xfail else 'FAIL '} {record_group(gate) or '-'} {gate.get('language')} "
            f"{gate.get('metric')}: F1 {format_number(gate.get('f1'))} {_ci(low, high)} < "
            f"{format_number(gate_threshold(gate))}, human {format_number(gate.get('ceiling'))}"
        )
        if gate.get("problem"):
            text += f" ({gate['problem']})"
        lines.append((_cut(text, WIDTH), None if xfail else "red"))
    if len(failing) > MAX_DETAIL_LINES:
        lines.append((f"  ... {len(failing) - MAX_DETAIL_LINES} more", None))
    return lines


def _regression_lines(regressions: Sequence[Mapping[str, Any]]) -> list[StyledLine]:
    """A count line, then every comparison that did not pass (at most :data:`MAX_DETAIL_LINES`)."""
    statuses = Counter(regression_status(r) for r in regressions)
    head = (
        f"regression against the baseline: {len(regressions)} comparison(s), {statuses['fail']} fail, "
        f"{statuses['warn']} warn, {statuses['improved']} improved"
    )
    lines: list[StyledLine] = [(head, "bold")]
    notable = [r for r in regressions if regression_status(r) in ("fail", "warn")]
    if notable:
        lines.append((_columns(REGRESSION_COLUMNS, [c[0] for c in REGRESSION_COLUMNS], "  "), None))
    for record in notable[:MAX_DETAIL_LINES]:
        low, high = interval(record)
        delta = record.get("mean_difference", record.get("delta"))
        p = number(record.get("p_value"))
        cells = [
            record_group(record) or "-",
            str(record.get("metric") or "-"),
            str(record.get("language") or "-"),
            format_number(record.get("n")),
            format_number(delta, 3),
            _ci(low, high),
            "-" if p is None else f"{p:.3f}",
            str(record.get("gate") or record.get("verdict") or regression_status(record)),
        ]
        style = "red" if regression_status(record) == "fail" else "yellow"
        lines.append((_columns(REGRESSION_COLUMNS, cells, "  "), style))
    if len(notable) > MAX_DETAIL_LINES:
        lines.append((f"  ... {len(notable) - MAX_DETAIL_LINES} more", None))
    return lines


def ranking_entries(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ranking's systems as ``{name, strength, ci_low, ci_high, rank}``, strongest first."""
    raw = record.get("items") or record.get("systems") or record.get("strengths") or []
    entries: list[dict[str, Any]] = []
    if isinstance(raw, Mapping):
        raw = [{"name": name, "strength": value} for name, value in raw.items()]
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        low, high = interval(item)
        entries.append(
            {
                "name": str(item.get("name", item.get("system", "?"))),
                "strength": number(item.get("strength", item.get("score"))),
                "ci_low": low,
                "ci_high": high,
                "rank": item.get("rank"),
            }
        )
    entries.sort(key=lambda e: (-(e["strength"] if e["strength"] is not None else float("-inf")), e["name"]))
    return entries


def _ranking_lines(rankings: Sequence[Mapping[str, Any]]) -> list[StyledLine]:
    """One line per ranking: its name and the three strongest systems."""
    lines: list[StyledLine] = [("pairwise rankings (Bradley-Terry strength), strongest first", "bold")]
    for record in rankings:
        entries = ranking_entries(record)
        name = " ".join(str(v) for v in (record_group(record) or record.get("ranking"), record.get("metric")) if v)
        leaders = ", ".join(f"{e['name']} {format_number(e['strength'])}" for e in entries[:3])
        more = f" (+{len(entries) - 3})" if len(entries) > 3 else ""
        lines.append((_cut(f"  {name or '-'}: {leaders}{more}", WIDTH), None))
    return lines


def _not_run_lines(not_run: Sequence[Mapping[str, Any]]) -> list[StyledLine]:
    """Items without a result, grouped by reason (wrapped, at most three lines per reason)."""
    reasons = Counter((str(r.get("outcome")), " ".join(str(r.get("reason") or "").split())) for r in not_run)
    lines: list[StyledLine] = []
    for (outcome, reason), count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        style = "red" if is_failure(outcome) else None
        text = f"{count} item(s) {outcome}: {reason or '(no reason given)'}"
        wrapped = textwrap.wrap(text, WIDTH, subsequent_indent="    ", max_lines=3, placeholder=" ~")
        lines.extend((line, style) for line in wrapped)
    return lines


def accounting_line(accounting: Mapping[str, Any] | None) -> str | None:
    """The one-line judge-call accounting, or None when no judge call was made."""
    if not accounting:
        return None
    keys = ("provider_calls", "cache_hits", "shared_hits", "failed_calls")
    if not any(int(accounting.get(k, 0)) for k in keys):
        return None
    parts = [
        f"judge calls: {accounting.get('provider_calls', 0)} provider requests",
        f"{accounting.get('cache_hits', 0)} cache hits",
    ]
    for key, label in (
        ("shared_hits", "shared between workers"),
        ("cache_rejected", "cache entries rejected (re-asked)"),
        ("cache_unparseable", "unparseable cache hits re-asked"),
        ("retries", "retries"),
        ("failed_calls", "failed"),
        ("unscored", "unscored"),
    ):
        if int(accounting.get(key, 0)):
            parts.append(f"{accounting[key]} {label}")
    line = ", ".join(parts)
    line += f"; tokens in/out {_tokens(accounting.get('input_tokens'))}/{_tokens(accounting.get('output_tokens'))}"
    cost = number(accounting.get("estimated_cost_usd"))
    if cost is not None:
        line += f"; est. ${cost:.4f} ({accounting.get('cost_model')})"
    return line


def _tokens(value: Any) -> str:
    count = int(value or 0)
    if count >= 10_000_000:
        return f"{count / 1e6:.0f}M"
    if count >= 100_000:
        return f"{count / 1e3:.0f}k"
    return str(count)


def summary_lines(document: Mapping[str, Any], *, quiet: bool = False, width: int = WIDTH) -> list[StyledLine]:
    """The summary as (text, markup) lines; see the module docstring.

    ``width``: the terminal's width; suite and metric heading lines use it when it is wider
    than :data:`WIDTH` (the table columns keep their fixed layout)."""
    width = max(width, WIDTH)
    lines: list[StyledLine] = []
    if not quiet:
        suites = {str(s.get("name")): s for s in document.get("suites") or []}
        by_suite: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for row in document.get("summary") or []:
            by_suite[str(row["suite"])].append(row)
        with_agreement = bool(document.get("gates"))
        for name in sorted(by_suite):
            rows = by_suite[name]
            if lines:
                lines.append(("", None))
            lines.extend((text, "bold") for text in _suite_lines(suites.get(name), name, rows, width))
            lines.append((_header(with_agreement), None))
            by_metric: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
            for row in rows:
                by_metric[str(row["metric"])].append(row)
            for metric in sorted(by_metric):
                lines.append((_metric_heading(metric, by_metric[metric], width), None))
                for row in by_metric[metric]:
                    text = _table_row(row, with_agreement)
                    style = STATUS_STYLE.get(str(row.get("status")))
                    lines.append((_cut(text, WIDTH), style))
        for section, render in (
            ("gates", _gate_lines),
            ("regressions", _regression_lines),
            ("rankings", _ranking_lines),
        ):
            records = document.get(section) or []
            if records:
                lines.append(("", None))
                lines.extend(render(records))
        other = Counter(str(r.get("kind")) for r in document.get("other") or [])
        if other:
            lines.append(("", None))
            lines.append(
                (_cut("other results: " + ", ".join(f"{k} x{v}" for k, v in sorted(other.items())), WIDTH), None)
            )
        not_run = document.get("not_run") or []
        if not_run:
            lines.append(("", None))
            lines.extend(_not_run_lines(not_run))
    line = accounting_line(document.get("accounting"))
    if line is not None:
        if lines:
            lines.append(("", None))
        lines.extend((part, None) for part in wrap_accounting(line))
    return lines


def wrap_accounting(line: str) -> list[str]:
    """The accounting line, broken after a ``;`` when it is wider than :data:`WIDTH`."""
    if len(line) <= WIDTH:
        return [line]
    out: list[str] = []
    for piece in line.split("; "):
        if out and len(out[-1]) + 2 + len(piece) <= WIDTH:
            out[-1] += "; " + piece
        else:
            out.append(piece if not out else "    " + piece)
    return [_cut(text, WIDTH) for text in out]


def render_summary(document: Mapping[str, Any], *, quiet: bool = False) -> list[str]:
    """The summary as plain text lines."""
    return [text for text, _ in summary_lines(document, quiet=quiet)]
