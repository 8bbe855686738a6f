"""The compact Markdown verdict: what a reviewer reads in a CI job summary or a merge request.

``--llmjudge-report=md:PATH`` writes it; under GitHub Actions it is also appended to the
file ``$GITHUB_STEP_SUMMARY`` names (the job's summary page), unless
``--llmjudge-step-summary=no`` (ini ``llmjudge_step_summary = false``). Rendered from the
same typed document as the terminal summary and the HTML report, so the numbers agree.

Layout::

    ## pytest-llmjudge: FAIL
    **12 items**: 10 passed, 2 failed · exit status 1
    > judge headlines (a dead judge, a rejected key), one quoted line each

    | suite | metric | lang | n | mean | 95% CI | threshold | result |
    ...                                   (one row per suite x metric x language)

    ### What failed (N)
    - `node id`: why, in one line                      (at most MAX_FAILURES, then a count)

    judge calls: ... (the accounting line) · full report: reports/run.html

Degenerate cases: a run with no records gives the headline and the totals only; every
text from the run (ids, reasons, justifications) is escaped so it can neither open Markdown
or HTML markup nor break a table row (``|``, newlines, backticks, ``<``); long reasons are
cut at :data:`MAX_REASON` characters; the whole text stays under GitHub's 1 MiB step-summary
limit because rows and failures are capped (:data:`MAX_ROWS`, :data:`MAX_FAILURES`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_llmjudge.records import CaseRecord, ItemRecord, RegressionRecord
from pytest_llmjudge.report.assemble import ALL, is_failure, threshold_text
from pytest_llmjudge.report.document import ReportDocument, SummaryRow
from pytest_llmjudge.report.terminal import STATUS_TEXT, accounting_line
from pytest_llmjudge.util.atomic import write_atomic
from pytest_llmjudge.util.formatting import format_number

MAX_ROWS = 400
MAX_FAILURES = 50
MAX_REASON = 300

# Inline markup only: escaped text never starts a line, so '#', '>', '-' and '+' are inert.
_SPECIAL = re.compile(r"([\\`*_\[\]!|~])")


def escape(text: str) -> str:
    """``text`` as inert Markdown on one line: markup characters backslashed, HTML tags and
    newlines neutralised."""
    one_line = " ".join(str(text).split())
    escaped = _SPECIAL.sub(r"\\\1", one_line)
    return escaped.replace("&", "&amp;").replace("<", "&lt;")


def _code(text: str) -> str:
    """``text`` as inline code: a fence longer than any backtick run inside it."""
    one_line = " ".join(str(text).split())
    longest = max((len(run) for run in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def _cut(text: str, limit: int = MAX_REASON) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: float | None) -> str:
    return "–" if value is None else format_number(value)


def _interval(row: SummaryRow) -> str:
    if row.ci_low is None or row.ci_high is None or row.n < 2:
        return "–"
    return f"[{format_number(row.ci_low)}, {format_number(row.ci_high)}]"


def _threshold(row: SummaryRow) -> str:
    if row.aggregates:
        first = row.aggregates[0]
        more = f" +{len(row.aggregates) - 1}" if len(row.aggregates) > 1 else ""
        return f"{first.stat} {threshold_text(first.threshold)}{more}"
    if row.case_thresholds:
        more = f" +{len(row.case_thresholds) - 1}" if len(row.case_thresholds) > 1 else ""
        return f"each {threshold_text(row.case_thresholds[0])}{more}"
    return "–"


def _result(row: SummaryRow) -> str:
    text = STATUS_TEXT.get(row.status, row.status)
    return f"**{text}**" if row.status in ("fail", "error") else text


def _table(rows: Sequence[SummaryRow]) -> list[str]:
    lines = [
        "| suite | metric | lang | n | mean | 95% CI | threshold | result |",
        "|---|---|---|--:|--:|---|---|---|",
    ]
    ordered = sorted(rows, key=lambda r: (r.suite, r.metric, r.language == ALL, r.language))
    for row in ordered[:MAX_ROWS]:
        mean = _number(row.mean) if row.mean is not None or row.pass_rate is None else f"{row.pass_rate:.0%} pass"
        cells = [
            escape(row.suite),
            escape(row.metric),
            escape(row.language),
            str(row.n) + (f" ({row.n_unscored} unscored)" if row.n_unscored else ""),
            mean,
            _interval(row),
            escape(_threshold(row)),
            _result(row),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(ordered) > MAX_ROWS:
        lines.append(f"\n… and {len(ordered) - MAX_ROWS} more rows (see the JSON or HTML report)")
    return lines


def _why(record: ItemRecord) -> str:
    """One line on why an item failed, from its record."""
    if isinstance(record, CaseRecord):
        if record.score is None:
            return "unscored: " + (record.unscored_reason or "no score")
        shown = format_number(record.score) if isinstance(record.score, float) else str(record.score)
        return f"{record.metric} = {shown}, needs {threshold_text(record.threshold)}"
    if isinstance(record, RegressionRecord):
        return record.problem or record.verdict
    for attribute in ("problem", "verdict", "message", "reason"):
        value = getattr(record, attribute, None)
        if isinstance(value, str) and value:
            return value
    row = getattr(record, "row", None)
    own = row() if callable(row) else None
    if own is not None:
        return f"{getattr(record, 'aggregate', '')} = {_number(own.value)}, needs {threshold_text(own.threshold)}"
    return "failed"


def _failures(document: ReportDocument) -> list[tuple[str, str]]:
    sections: Iterable[Iterable[ItemRecord]] = (
        document.cases,
        document.aggregates,
        document.gates,
        document.regressions,
        document.rankings,
        document.other,
    )
    found = [
        (record.nodeid, _why(record))
        for section in sections
        for record in section
        if record.nodeid and record.outcome is not None and is_failure(record.outcome)
    ]
    found.extend(
        (entry.nodeid, f"{entry.outcome}: {entry.reason or 'no reason given'}")
        for entry in document.not_run
        if is_failure(entry.outcome)
    )
    return found


def render_markdown(document: ReportDocument, *, links: Sequence[tuple[str, str]] = ()) -> str:
    """The Markdown verdict; ``links`` are (label, path or URL) of the run's other reports."""
    totals = document.totals
    failed = totals.failed + totals.error
    verdict = "FAIL" if failed or (document.run.exit_status not in (None, 0)) else "PASS"
    parts = [
        f"{count} {label}"
        for count, label in (
            (totals.passed, "passed"),
            (totals.failed, "failed"),
            (totals.error, "errors"),
            (totals.skipped, "skipped"),
            (totals.xfailed, "xfailed"),
            (totals.xpassed, "xpassed"),
        )
        if count
    ]
    status = "" if document.run.exit_status is None else f" · exit status {document.run.exit_status}"
    lines = [f"## pytest-llmjudge: {verdict}", "", f"**{totals.items} items**: {', '.join(parts) or 'none'}{status}"]
    for headline in document.run.judge_headlines:
        lines += ["", f"> {escape(_cut(headline))}"]
    if document.summary:
        lines += ["", *_table(document.summary)]
    failures = _failures(document)
    if failures:
        lines += ["", f"### What failed ({len(failures)})", ""]
        lines += [f"- {_code(nodeid)}: {escape(_cut(why))}" for nodeid, why in failures[:MAX_FAILURES]]
        if len(failures) > MAX_FAILURES:
            lines.append(f"- … and {len(failures) - MAX_FAILURES} more (see the JSON or HTML report)")
    tail = []
    accounting = accounting_line(document.accounting)
    if accounting is not None:
        tail.append(escape(accounting))
    tail += [f"{escape(label)}: {_code(target)}" for label, target in links]
    if tail:
        lines += ["", " · ".join(tail)]
    return "\n".join(lines) + "\n"


def write_markdown(document: ReportDocument, path: Path, *, links: Sequence[tuple[str, str]] = ()) -> None:
    write_atomic(path, render_markdown(document, links=links), fsync=False, private=False)  # as the JSON report


def append_step_summary(document: ReportDocument, path: Path, *, links: Sequence[tuple[str, str]] = ()) -> None:
    """Append the verdict to a GitHub step-summary file (appended, as GitHub expects: other
    steps write there too)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(render_markdown(document, links=links) + "\n")
