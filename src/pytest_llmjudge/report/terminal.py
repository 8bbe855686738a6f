"""The end-of-run terminal summary, rendered from the typed report document (``report/document.py``).

Layout, at most :data:`WIDTH` (100) columns whatever the data (suite and metric heading
lines take the terminal's width when it is wider, so they are not cut on a wide terminal)::

    suite pariksha-release-gate: 160 case(s), 8 language(s); recorded: gpt-4 (PARIKSHA release)
        lang          n  unsc     mean 95% CI            threshold             cases    F1/human result
      task_quality: mean(task_quality) >= 1.80
        hi           20     0     1.95 [1.85, 2.05]      mean >= 1.80              -   0.59/0.63 pass

One block per suite, one sub-block per metric (its thresholds on the heading line), one
row per language, so eight or more languages read down a column instead of across; the
``F1/human`` column appears only when an agreement gate ran. The judge endpoints' failure
headlines (``run.judge_headlines``: a dead judge, a rejected key) come first. Then, when a
run has them: a count of agreement gates and, per calibration set, its gate table, sanity
checks and the items an uncalibrated judge stopped (``calibration.report.calibration_lines``:
gates print here only), the regression comparisons that warn or fail, one line per pairwise
ranking, a count of the other result kinds, the suite items that didn't run grouped by
reason, and the judge-call accounting line (with the estimated cost when the provider
reported usage and the model has a price). Everything is read from the typed document by
attribute.

Degenerate cases: no rows and no accounting give no lines (the caller prints no section);
a single case has no interval (``-``); a categorical metric shows its pass rate in the
mean column; a row whose every case is unscored shows ``n/a`` there (never ``0%``); values
wider than their column are cut with ``~``; the regression list stops after
:data:`MAX_DETAIL_LINES` with a count of the rest.

``-q`` prints only the headlines and the accounting line. Lines come with a markup name (``red``,
``yellow``, ``bold``) that the caller passes to pytest's terminal writer, which drops
colour when the output is not a terminal (or with ``--color=no`` / ``NO_COLOR``); the text
itself never holds escape codes.
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from pytest_llmjudge.records import LeaderboardRecord, RegressionRecord, ReleaseVerdict, Standing, Threshold
from pytest_llmjudge.report.assemble import ALL, NOT_DECIDED, is_failure, threshold_text
from pytest_llmjudge.report.document import Accounting, GateBrief, NotRun, ReportDocument, SuiteInfo, SummaryRow
from pytest_llmjudge.util.formatting import format_fixed, format_number

WIDTH = 100
MAX_DETAIL_LINES = 10
STATUS_TEXT = {"pass": "pass", "warn": "warn", "fail": "FAIL", "error": "ERROR", "skip": "skip", "none": "-"}
STATUS_STYLE = {"warn": "yellow", "fail": "red", "error": "red"}
StyledLine = tuple[str, str | None]
_CALIBRATION_KINDS = ("consistency", "sensitivity", "uncalibrated")
"""Kinds of the ``other`` section that the calibration lines show one by one."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "~"


def _ci(low: float | None, high: float | None, n: int | None = None) -> str:
    """``[low, high]``; ``-`` without an interval or for a single case (its interval is the point)."""
    if low is None or high is None or (n is not None and n < 2):
        return "-"
    return f"[{format_number(low)}, {format_number(high)}]"


def _row_threshold(row: SummaryRow) -> str:
    checks = row.aggregates
    if checks:
        first = checks[0]
        text = f"{first.stat} {threshold_text(first.threshold)}"
        return text + (f" +{len(checks) - 1}" if len(checks) > 1 else "")
    thresholds = row.case_thresholds
    if not thresholds:
        return "-"
    more = f" +{len(thresholds) - 1}" if len(thresholds) > 1 else ""
    return "each " + threshold_text(thresholds[0]) + more


def _agreement(gate: GateBrief | None) -> str:
    if gate is None or gate.f1 is None:
        return ""
    return f"{format_number(gate.f1)}/{format_number(gate.ceiling)}"


def _suite_lines(suite: SuiteInfo | None, name: str, rows: Sequence[SummaryRow], width: int = WIDTH) -> list[str]:
    languages = sorted({r.language for r in rows if r.language != ALL})
    cases = {r.metric: r.n for r in rows if r.language == ALL}
    n_cases = max(cases.values()) if cases else max((r.n for r in rows), default=0)
    parts = [f"suite {name}: {n_cases} case(s), {len(languages)} language(s)"]
    judged = sum(r.judged for r in rows if r.language != ALL)
    cached = sum(r.cached for r in rows if r.language != ALL)
    if suite is not None:
        if suite.live_judge:
            parts.append(
                f"judge {None if suite.judge is None else suite.judge.label} ({judged} scores, {cached} cached)"
            )
        elif suite.recorded_judges:
            parts.append("recorded: " + ", ".join(suite.recorded_judges))
    lines = [_cut("; ".join(parts), width)]
    if suite is not None and suite.uncalibrated_metrics:
        covered = f"  judged without a calibration check ({suite.calibration} does not cover them): "
        lines.append(_cut(covered + ", ".join(suite.uncalibrated_metrics), width))
    return lines


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
    ("lang", 5, False),
    ("n", 4, True),
    ("delta", 7, True),
    ("95% CI", 15, False),
    ("p adj", 5, True),
    ("gate", 9, False),
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


def _table_row(row: SummaryRow, with_agreement: bool) -> str:
    interval = _ci(row.ci_low, row.ci_high, row.n - row.n_unscored)
    if every_case_unscored(row):
        shown_mean = "n/a"  # no score at all: a 0% pass rate would read as a measured result
    elif row.mean is None and row.pass_rate is not None:
        shown_mean = f"{row.pass_rate:.0%}"
        low, high = row.pass_rate_ci_low, row.pass_rate_ci_high
        if low is not None and high is not None:  # the pass_rate aggregate's Wilson interval
            interval = f"[{low:.0%}, {high:.0%}]"
    else:
        shown_mean = format_number(row.mean)
    decided = row.items_passed + row.items_failed
    cases = f"{row.items_passed}/{decided}" if decided else "-"
    cells = [
        row.language,
        str(row.n),
        str(row.n_unscored),
        shown_mean,
        interval,
        _row_threshold(row),
        cases,
        _agreement(row.gate),
        STATUS_TEXT.get(row.status, "-"),
    ]
    return _join(cells, with_agreement)


def every_case_unscored(row: SummaryRow) -> bool:
    """True for a summary row whose cases all ended without a score."""
    return row.n > 0 and row.n_unscored == row.n


def _metric_heading(metric: str, rows: Sequence[SummaryRow], width: int = WIDTH) -> list[str]:
    thresholds: list[Threshold] = []
    overrides: dict[str, list[str]] = defaultdict(list)
    checks: dict[str, str] = {}
    for row in rows:
        for threshold in row.case_thresholds:
            if threshold not in thresholds:
                thresholds.append(threshold)
        for check in row.aggregates:
            text = threshold_text(check.threshold)
            if row.language == ALL:
                checks[check.label] = text
            else:
                overrides[check.label].append(f"{row.language} {text}")
    parts = _case_threshold_parts(thresholds)
    for label in sorted(set(checks) | set(overrides)):
        default = checks.get(label)
        if default is None:
            counted = Counter(t.split(" ", 1)[1] for t in overrides[label])
            default = counted.most_common(1)[0][0]
        odd = [t for t in overrides[label] if t.split(" ", 1)[1] != default]
        parts.append(f"{label} {default}" + (f" ({', '.join(odd)})" if odd else ""))
    # Several thresholds wrap onto indented lines at a "; " rather than being cut.
    lines = textwrap.wrap(f"  {metric}: " + "; ".join(parts), width, subsequent_indent="      ", break_on_hyphens=False)
    return [_cut(line, width) for line in lines] or [f"  {metric}:"]


def _case_threshold_parts(thresholds: Sequence[Threshold]) -> list[str]:
    """``each >= 1``; one operator with a value per language reads ``each == (per language)``."""
    if len(thresholds) <= 2:
        return [f"each {threshold_text(t)}" for t in thresholds]
    ops = {t.op for t in thresholds}
    if len(ops) == 1:
        return [f"each {ops.pop()} (per-language value)"]
    return [f"each {threshold_text(t)}" for t in thresholds[:2]] + [f"+{len(thresholds) - 2} more"]


def _gate_lines(document: ReportDocument, width: int) -> list[StyledLine]:
    """A count line, then per calibration set its gate table, sanity checks and the items its
    judge's failures stopped (``calibration.report.calibration_lines``, the one place they print)."""
    from pytest_llmjudge.calibration.report import calibration_lines

    gates = document.gates
    failing = [g for g in gates if not g.passed]
    expected = sum(1 for g in failing if g.outcome in NOT_DECIDED)
    head = f"agreement gates (judge vs human, weighted F1): {len(gates) - len(failing)} of {len(gates)} pass"
    if expected:
        head += f", {expected} failure(s) expected (xfail)"
    lines: list[StyledLine] = [(head, "bold")] if gates else []
    # Their headings name a calibration set and a judge: cut like the suite headings.
    return lines + [(_cut(text, width), style) for text, style in calibration_lines([*gates, *document.other])]


def _verdict_lines(verdict: ReleaseVerdict | None, width: int = WIDTH) -> list[StyledLine]:
    """The release verdict, wrapped to the terminal's width (at least :data:`WIDTH`); green or red."""
    if verdict is None:
        return []
    style = {"pass": "green", "undecided": "yellow"}.get(verdict.status, "red")
    return [(text, style) for text in textwrap.wrap(verdict.text, max(width, WIDTH), subsequent_indent="  ")]


def _regression_lines(
    regressions: Sequence[RegressionRecord], verdict: ReleaseVerdict | None, width: int = WIDTH
) -> list[StyledLine]:
    """A count line, the release verdict, then every comparison that did not pass (at most :data:`MAX_DETAIL_LINES`)."""
    statuses = Counter(r.status for r in regressions)
    head = (
        f"regression against the baseline: {len(regressions)} comparison(s), {statuses['fail']} fail, "
        f"{statuses['warn']} warn, {statuses['undecided']} undecided, {statuses['improved']} improved"
    )
    lines: list[StyledLine] = [(head, "bold"), *_verdict_lines(verdict, width)]
    notable = [r for r in regressions if r.status in ("fail", "warn", "undecided")]
    if notable:
        lines.append((_columns(REGRESSION_COLUMNS, [c[0] for c in REGRESSION_COLUMNS], "  "), None))
    for record in notable[:MAX_DETAIL_LINES]:
        cells = [
            record.suite or "-",
            record.metric or "-",
            record.language or "-",
            format_number(record.n),
            format_number(record.mean_difference, 3),
            _ci(record.ci_low, record.ci_high),
            format_fixed(record.p_adjusted if record.p_adjusted is not None else record.p_value),
            record.gate,
        ]
        style = "red" if record.status == "fail" else "yellow"
        lines.append((_columns(REGRESSION_COLUMNS, cells, "  "), style))
    if len(notable) > MAX_DETAIL_LINES:
        lines.append((f"  ... {len(notable) - MAX_DETAIL_LINES} more", None))
    return lines


def ranking_entries(record: LeaderboardRecord) -> list[Standing]:
    """A leaderboard's systems, strongest first (no strength last), ties by name."""
    return sorted(record.systems, key=lambda s: (-(s.strength if s.strength is not None else float("-inf")), s.name))


def _ranking_lines(rankings: Sequence[LeaderboardRecord]) -> list[StyledLine]:
    """One line per ranking: its name and the strongest systems (three, or as many as fit whole)."""
    lines: list[StyledLine] = [("pairwise rankings (Bradley-Terry strength), strongest first", "bold")]
    for record in rankings:
        entries = ranking_entries(record)
        name = " ".join(v for v in (record.suite or record.ranking, record.metric) if v)
        head = f"  {name or '-'}: "
        shown: list[str] = []
        for entry in entries[:3]:
            # As many leaders as fit whole; the rest is counted, not cut mid-name.
            text = f"{entry.name} {format_number(entry.strength)}"
            rest = len(entries) - len(shown) - 1
            if shown and len(head + ", ".join([*shown, text]) + (f" (+{rest})" if rest else "")) > WIDTH:
                break
            shown.append(text)
        more = f" (+{len(entries) - len(shown)})" if len(entries) > len(shown) else ""
        lines.append((_cut(head + ", ".join(shown) + more, WIDTH), None))
    return lines


def _not_run_lines(not_run: Sequence[NotRun]) -> list[StyledLine]:
    """Items without a result, grouped by reason (wrapped, at most three lines per reason)."""
    reasons = Counter((r.outcome, " ".join((r.reason or "").split())) for r in not_run)
    lines: list[StyledLine] = []
    for (outcome, reason), count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        style = "red" if is_failure(outcome) else None
        text = f"{count} item(s) {outcome}: {reason or '(no reason given)'}"
        wrapped = textwrap.wrap(text, WIDTH, subsequent_indent="    ", max_lines=3, placeholder=" ~")
        lines.extend((line, style) for line in wrapped)
    return lines


def accounting_line(accounting: Accounting | None) -> str | None:
    """The one-line judge-call accounting, or None when no judge call was made."""
    if accounting is None:
        return None
    if not (accounting.provider_calls or accounting.cache_hits or accounting.shared_hits or accounting.failed_calls):
        return None
    parts = [
        f"judge calls: {accounting.provider_calls} provider requests",
        f"{accounting.cache_hits} cache hits",
    ]
    for count, label in (
        (accounting.shared_hits, "shared between workers"),
        (accounting.cache_rejected, "cache entries rejected (re-asked)"),
        (accounting.cache_unparseable, "unparseable cache hits re-asked"),
        (accounting.retries, "retries"),
        (accounting.failed_calls, "failed"),
        (accounting.unscored, "unscored"),
    ):
        if count:
            parts.append(f"{count} {label}")
    line = ", ".join(parts)
    line += f"; tokens in/out {_tokens(accounting.input_tokens)}/{_tokens(accounting.output_tokens)}"
    if accounting.estimated_cost_usd is not None:
        line += f"; est. ${accounting.estimated_cost_usd:.4f} ({accounting.cost_model})"
    if accounting.not_needed:
        line += f"; {accounting.not_needed} calls not needed (sequential)"
        if accounting.estimated_cost_usd is not None and accounting.provider_calls:
            # Priced at this run's mean cost per request: the calls not made are the same kind.
            per_call = accounting.estimated_cost_usd / accounting.provider_calls
            line += f", about ${accounting.not_needed * per_call:.4f} saved"
    return line


def _tokens(count: int) -> str:
    if count >= 10_000_000:
        return f"{count / 1e6:.0f}M"
    if count >= 100_000:
        return f"{count / 1e3:.0f}k"
    return str(count)


def summary_lines(document: ReportDocument, *, quiet: bool = False, width: int = WIDTH) -> list[StyledLine]:
    """The summary as (text, markup) lines; see the module docstring.

    ``width``: the terminal's width; suite and metric heading lines use it when it is wider
    than :data:`WIDTH` (the table columns keep their fixed layout). The judge endpoints'
    failure headlines (``run.judge_headlines``) come first, in red, also with ``quiet``."""
    width = max(width, WIDTH)
    lines: list[StyledLine] = [(headline, "red") for headline in document.run.judge_headlines]
    if not quiet:
        suites = {s.name: s for s in document.suites}
        by_suite: dict[str, list[SummaryRow]] = defaultdict(list)
        for row in document.summary:
            by_suite[row.suite].append(row)
        with_agreement = bool(document.gates)
        for index, name in enumerate(sorted(by_suite)):
            rows = by_suite[name]
            if index:
                lines.append(("", None))
            lines.extend((text, "bold") for text in _suite_lines(suites.get(name), name, rows, width))
            lines.append((_header(with_agreement), None))
            by_metric: dict[str, list[SummaryRow]] = defaultdict(list)
            for row in rows:
                by_metric[row.metric].append(row)
            for metric in sorted(by_metric):
                lines.extend((text, None) for text in _metric_heading(metric, by_metric[metric], width))
                for row in by_metric[metric]:
                    text = _table_row(row, with_agreement)
                    lines.append((_cut(text, WIDTH), STATUS_STYLE.get(row.status)))
        for section in (
            _gate_lines(document, width),
            # Without regression items a verdict comes from aggregate rows that joined a family (family: release).
            _regression_lines(document.regressions, document.release, width)
            if document.regressions
            else _verdict_lines(document.release, width),
            _ranking_lines(document.rankings) if document.rankings else [],
        ):
            if section:
                lines.append(("", None))
                lines.extend(section)
        other = Counter(r.kind for r in document.other if r.kind not in _CALIBRATION_KINDS)
        if other:
            lines.append(("", None))
            lines.append(
                (_cut("other results: " + ", ".join(f"{k} x{v}" for k, v in sorted(other.items())), WIDTH), None)
            )
        if document.not_run:
            lines.append(("", None))
            lines.extend(_not_run_lines(document.not_run))
    line = accounting_line(document.accounting)
    if line is not None:
        if lines:
            lines.append(("", None))
        lines.extend((part, None) for part in wrap_accounting(line))
    if quiet:  # the release verdict is the one line a quiet run still owes its reader
        lines.extend(_verdict_lines(document.release, width))
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


def render_summary(document: ReportDocument, *, quiet: bool = False) -> list[str]:
    """The summary as plain text lines."""
    return [text for text, _ in summary_lines(document, quiet=quiet)]


SUMMARY_HINT = "tables per language and metric: -v or --llmjudge-summary=full; a page: --llmjudge-report=html:PATH"


def _failing_check_unexpected(row: SummaryRow, outcomes: Mapping[str, str | None]) -> bool:
    """Whether a failing aggregate check of the row failed its item (not an expected failure)."""
    return any(not brief.passed and outcomes.get(brief.nodeid or "") not in NOT_DECIDED for brief in row.aggregates)


def _why_row_failed(row: SummaryRow) -> str:
    """The failing check of a row: an aggregate's value against its threshold, else the cases'."""
    check = next((brief for brief in row.aggregates if not brief.passed), None)
    if check is not None:
        if check.problem:
            return f"{check.label}: {check.problem}"
        return f"{check.label} = {format_number(check.value)}, needs {threshold_text(check.threshold)}"
    failed = f"{row.items_failed} case item(s) failed"
    return f"{failed}, {_row_threshold(row)}" if row.case_thresholds else failed


def short_summary_lines(document: ReportDocument, *, width: int = WIDTH) -> list[StyledLine]:
    """The default summary a first run prints: the judge headlines, one line per suite (with
    its failing rows under it), one line per kind of gate, the items that did not run, the
    accounting, and where the tables are (``-v``, ``--llmjudge-summary=full``, the HTML report)."""
    width = max(width, WIDTH)
    lines: list[StyledLine] = [(headline, "red") for headline in document.run.judge_headlines]
    by_suite: dict[str, list[SummaryRow]] = defaultdict(list)
    for row in document.summary:
        by_suite[row.suite].append(row)
    outcomes = {record.nodeid: record.outcome for record in document.aggregates if record.nodeid}
    for name in sorted(by_suite):
        rows = by_suite[name]
        languages = {r.language for r in rows if r.language != ALL}
        metrics = {r.metric for r in rows}
        cases = max((r.n for r in rows if r.language == ALL), default=max((r.n for r in rows), default=0))
        decided = [r for r in rows if r.status in ("pass", "warn", "fail", "error")]
        missed = [r for r in decided if r.status in ("fail", "error")]
        # A row whose failing items are all expected failures (xfail) is known, not news.
        failing = [r for r in missed if r.items_failed or _failing_check_unexpected(r, outcomes)]
        known = len(missed) - len(failing)
        verdict = f"{len(decided) - len(missed)}/{len(decided)} rows pass" if decided else "nothing asserted"
        if known:
            verdict += f", {known} known failures"
        text = f"suite {name}: {cases} cases, {len(languages)} languages, {len(metrics)} metrics: {verdict}"
        lines.append((_cut(text, width), "red" if failing else None))
        for row in failing[:MAX_DETAIL_LINES]:
            detail = f"  {STATUS_TEXT[row.status]} {row.metric} [{row.language}]: {_why_row_failed(row)}"
            lines.append((_cut(detail, width), "red"))
        if len(failing) > MAX_DETAIL_LINES:
            lines.append((f"  ... and {len(failing) - MAX_DETAIL_LINES} more failing row(s)", "red"))
    gates = document.gates
    if gates:
        failing_gates = [g for g in gates if not g.passed]
        expected = sum(1 for g in failing_gates if g.outcome in NOT_DECIDED)
        unexpected = len(failing_gates) - expected
        text = f"agreement gates (judge vs native speakers): {len(gates) - len(failing_gates)} of {len(gates)} pass"
        if expected:
            text += f", {expected} known failure(s) (xfail)"
        lines.append((text, "red" if unexpected else None))
    if document.regressions:
        statuses = Counter(r.status for r in document.regressions)
        text = (
            f"regression against the baseline: {len(document.regressions)} comparison(s), {statuses['fail']} fail, "
            f"{statuses['warn']} warn, {statuses['undecided']} undecided, {statuses['improved']} improved"
        )
        lines.append((text, "red" if statuses["fail"] else None))
    lines.extend(_verdict_lines(document.release, width))
    if document.rankings:
        lines.append((f"rankings: {len(document.rankings)} leaderboard(s)", None))
    # Skips for want of a judge have their own block after the summary; failures that left no record belong here.
    broken = [entry for entry in document.not_run if is_failure(entry.outcome)]
    if broken:
        lines.extend(_not_run_lines(broken))
    if lines:
        lines.append((SUMMARY_HINT, None))
    accounting = accounting_line(document.accounting)
    if accounting is not None:
        lines.extend((part, None) for part in wrap_accounting(accounting))
    return lines
