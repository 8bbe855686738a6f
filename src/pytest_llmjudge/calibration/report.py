"""Text for calibration results: gate failure messages and the terminal summary.

Plain text, no colour codes (a summary line carries its style name beside it). The
summary part (:func:`calibration_lines`, printed inside the one ``llmjudge summary``
section by ``report/terminal.py``) is built only from the typed item records
(:class:`~pytest_llmjudge.records.GateRecord`, ``ConsistencyRecord``, ``SensitivityRecord``,
``UncalibratedRecord``), so it is the same with and without pytest-xdist. Metric names of the
METAL rubrics are abbreviated (LA, OCQ, TQ, PC, H) in tables; others are cut to 12 chars.

"skew" is the judge's mean score minus the humans' (Hada et al. 2024a, sec. 4.2): positive
means the judge scores higher. "best j/h" is the share of items at the scale's best score
(the top for higher-is-better metrics, 0 for hallucinations and problematic content) for
judge and humans: the high-score bias shows as a judge share far above the human one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pytest_llmjudge.calibration.agreement_gate import GateResult
from pytest_llmjudge.records import (
    ConsistencyRecord,
    GateRecord,
    ItemRecord,
    SensitivityRecord,
    UncalibratedRecord,
)
from pytest_llmjudge.stats.annotators import AGREEMENT_LEVELS
from pytest_llmjudge.util.formatting import format_fixed

__all__ = ["ABBREVIATIONS", "StyledLine", "calibration_lines", "ceiling_definition", "gate_message", "short_metric"]

StyledLine = tuple[str, str | None]
"""A line of the terminal summary and its style (``red``, or None for plain)."""

ABBREVIATIONS = {
    "linguistic_acceptability": "LA",
    "output_content_quality": "OCQ",
    "task_quality": "TQ",
    "problematic_content": "PC",
    "hallucinations": "H",
}


def short_metric(metric: str) -> str:
    return ABBREVIATIONS.get(metric, metric[:12])


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _confusion_lines(labels: Sequence[int], matrix: Sequence[Sequence[int]]) -> list[str]:
    width = max([len(str(label)) for label in labels] + [len(str(x)) for row in matrix for x in row] + [3])
    header = " " * (width + 2) + " ".join(f"{label:>{width}}" for label in labels)
    rows = [
        f"{label:>{width}}  " + " ".join(f"{x:>{width}}" for x in row)
        for label, row in zip(labels, matrix, strict=True)
    ]
    return [header, *rows]


def ceiling_definition(result: GateResult) -> str:
    """Which ceiling definition was used, on how many items and pairs."""
    opts = result.options
    pairing = "label slots ordered by annotator id" if opts.ceiling == "slots" else "annotator ids"
    if opts.convention == "metal":
        how = "METAL: items with exactly 3 labels, A1-A2, A2-A3, A3-A1 with the first as reference, plain mean"
    else:
        how = "all_pairs: items with 2 or more labels, both directions, pairs weighted by shared items"
    return (
        f"mean pairwise annotator F1, {result.ceiling_pairs} pairs of {pairing} on {result.ceiling_items} items; {how}"
    )


def gate_message(result: GateResult, *, calibration: str, judge: str) -> str:
    """The failure text of a gate item: verdict line, then every diagnostic."""
    opts = result.options
    target = f"{calibration}: judge {judge} vs native speakers, {result.group or result.language} {result.metric}"
    if result.problem is not None:
        head = f"ERROR: {target}: {result.problem}"
    else:
        head = f"FAILED: {target}: " + "; ".join(result.failed_criteria)
    lines = [head]

    def row(name: str, text: str) -> None:
        lines.append(f"  {name:<15} {text}")

    row(
        "n",
        f"{result.n_scored} scored of {result.n_items} labelled items (min_items {opts.min_items}); "
        f"aggregation {opts.aggregation}",
    )
    for reason in result.unscored_reasons:
        row("unscored", reason)
    if result.f1 is not None:
        row(
            "weighted F1",
            f"{format_fixed(result.f1)} (threshold {result.threshold:.3f}); macro F1 {format_fixed(result.macro_f1)}",
        )
        row(
            f"{100 * opts.confidence:g}% CI",
            f"{format_fixed(result.ci_low)} - {format_fixed(result.ci_high)} (Dirichlet posterior, {opts.resamples} draws, seed {opts.seed})",
        )
    row("human ceiling", f"{format_fixed(result.ceiling)} ({ceiling_definition(result)})")
    row(
        "Fleiss' kappa",
        f"{format_fixed(result.fleiss_kappa)} (annotators among themselves, {result.fleiss_items} items with "
        f"{'exactly 3' if opts.convention == 'metal' else '2 or more'} labels)",
    )
    if result.f1 is not None:
        ratio = result.ceiling_ratio
        row(
            "F1 / ceiling",
            f"{format_fixed(ratio)}" + ("" if ratio is None else " (the judge's F1 relative to the humans')"),
        )
    criteria = [
        f"{name} {value:g}"
        for name, value in (
            ("min_kappa", opts.min_kappa),
            ("min_ceiling_ratio", opts.min_ceiling_ratio),
            ("max_abs_skew", opts.max_abs_skew),
        )
        if value is not None
    ]
    if criteria:
        row("criteria", f"threshold {opts.threshold:g}, " + ", ".join(criteria))
    if result.f1 is not None:
        row(
            "agreement",
            f"PA {format_fixed(result.percentage_agreement)}, Cohen's kappa {format_fixed(result.cohen_kappa)} (judge vs human aggregate)",
        )
        row(
            "baseline",
            f"{format_fixed(result.baseline_f1)} (weighted F1 of always answering the humans' most common label)",
        )
    overall = result.overall
    if overall is not None:
        top = max(result.labels)
        best = result.best_label
        skew = (
            f"judge mean {overall['judge_mean']:.2f} vs human mean {overall['human_mean']:.2f}: {overall['skew']:+.2f}; "
            f"top score {top}: judge {_pct(overall['judge_top_share'])}, human {_pct(overall['human_top_share'])}"
        )
        if best != top:
            skew += (
                f"; best score {best}: judge {_pct(result.share_of(best, 'judge'))}, "
                f"human {_pct(result.share_of(best, 'human'))}"
            )
        row("skew", skew)
    levels = ", ".join(f"{level} {result.levels.get(level, 0)}" for level in AGREEMENT_LEVELS)
    row("annotators", f"{levels} (single = items with one annotator, usable but reported)")
    if result.confusion is not None:
        row("confusion", "rows = human aggregate, columns = judge")
        for text in _confusion_lines(result.labels, result.confusion):
            lines.append(" " * 18 + text)
    if result.distribution is not None:
        best = result.best_label
        parts = []
        for level in AGREEMENT_LEVELS:
            group = result.distribution.get(level)
            if group is None:
                continue
            parts.append(
                f"{level} ({group['n']}): judge {_pct(result.share_of(best, 'judge', level))} / "
                f"human {_pct(result.share_of(best, 'human', level))}"
            )
        row(f"at score {best}", "; ".join(parts) + " (by annotator agreement)")
    if result.correction is not None:
        corr = result.correction
        row(
            "correction",
            f"{corr.correction.describe()}: held-out F1 {corr.f1_before:.3f} -> {corr.f1_after:.3f}, "
            f"gain {corr.gain:+.3f} ({100 * corr.confidence:g}% CI {_signed(corr.gain_low)} to {_signed(corr.gain_high)}; "
            f"{corr.n_fit} fitted, {corr.n_test} held out, seed {corr.seed}; "
            + (
                "applied only with judge.correction)"
                if corr.usable
                else "never applied: " + "; ".join(corr.problems) + ")"
            ),
        )
    steps = next_steps(result)
    if steps:
        lines.append("  next steps:")
        lines.extend(f"    - {step}" for step in steps)
    return "\n".join(lines)


# A gate is a diagnosis, so its failure says what would change the verdict, from the cause:
# too few labels, annotators who disagree among themselves, or a judge whose scores lean
# one way; then how to live with a known failure meanwhile.
_SKEW_WORTH_A_RUBRIC = 0.25
"""|judge mean - human mean| on the rubric scale above which the judge's lean is named."""


def next_steps(result: GateResult) -> list[str]:
    """What would change a failing gate's verdict, from its diagnostics (empty when it passed)."""
    if result.passed:
        return []
    opts = result.options
    language, metric = result.group or result.language, result.metric
    steps: list[str] = []
    if result.n_items < opts.min_items:
        steps.append(
            f"label more {language} items for {metric}: {result.n_items} labelled, the gate needs at least "
            f"{opts.min_items} (python -m pytest_llmjudge.calibration.convert turns an annotation table into items)"
        )
    if result.n_unscored:
        steps.append("fix the unscored items first (their reasons are listed above): an unscored item is a miss")
    if result.ceiling is not None and result.ceiling < opts.threshold:
        steps.append(
            f"the annotators agree with each other only at {result.ceiling:.2f} (human ceiling): sharpen the rubric's "
            "score descriptions or add annotators before blaming the judge"
        )
    overall = result.overall
    if overall is not None and abs(overall["skew"]) >= _SKEW_WORTH_A_RUBRIC:
        lean = "higher" if overall["skew"] > 0 else "lower"
        steps.append(
            f"the judge scores {lean} than native speakers by {abs(overall['skew']):.2f}: add {language} guidance "
            f"to the rubric (a rubric's per_language text, docs/suite-format.md) or try another judge for {language}"
        )
    if result.f1 is not None and not steps:
        steps.append(f"try another judge model for {language}, or per-language rubric guidance for {metric}")
    steps.append(
        f"until then, mark it known: gate.xfail: {{{language}: {{{metric}: 'why'}}}} in the calibration set, "
        "and judge.uncalibrated: xfail in suites that rely on it"
    )
    return steps


def _group(record: GateRecord) -> str:
    """The row label: the group name, which is the language with the default group_by."""
    return record.group or record.language


def _outcome(record: GateRecord | ConsistencyRecord | SensitivityRecord) -> str:
    """The result column: pytest's outcome, with expected failures and gate errors told apart.

    The outcome is pytest's (``skipped`` for an expected failure, as the collector sets it)
    or the report's (``xfailed``, ``xpassed``), whichever the records carry.
    """
    outcome = record.outcome or ""
    xfail = isinstance(record, GateRecord) and bool(record.xfail)
    if outcome == "xfailed" or (outcome == "skipped" and xfail):
        return "xfail"
    if outcome == "xpassed" or (outcome in ("passed", "failed") and xfail and record.passed):
        return "XPASS"
    if outcome == "failed" and isinstance(record, GateRecord) and record.problem:
        return "ERROR"
    return {"passed": "pass", "failed": "FAIL", "skipped": "skip"}.get(outcome, outcome)


def _styled(text: str, outcome: str) -> StyledLine:
    return text, "red" if outcome in ("FAIL", "ERROR", "XPASS") else None


GATE_LEGEND = (
    "  F1: judge vs the humans' aggregate label, weighted F1; need: the gate's threshold; ceil: the human",
    "  ceiling (one annotator vs the others); kappa: Cohen's, judge vs aggregate; skew: judge mean minus",
    "  human mean; best j/h: share of items at the best score, judge/human; corr: held-out F1 gain of the",
    "  score correction (in brackets: measured, never applied)",
)
"""Printed under each gate table: what its columns mean, where a newcomer first meets them."""


def _gate_table(name: str, judge: str, rows: list[GateRecord]) -> list[StyledLine]:
    rows = sorted(rows, key=lambda r: (_group(r), r.metric))
    width = max([6] + [len(_group(r)) + 1 for r in rows])
    confidence = rows[0].ci.confidence
    lines: list[StyledLine] = [
        # The count line above says "judge vs human, weighted F1": the heading names the set, the judge, the CIs.
        (f"{name}: judge {judge}; {100 * (confidence or 0.95):g}% CIs", None),
        (
            f"{'lang' if width == 6 else 'group':<{width}}{'metric':<7}{'n':>4} {'F1':>6} {'CI':<11} {'need':>5} "
            f"{'ceil':>5} {'kappa':>6} {'skew':>6} {'best j/h':>9} {'corr':>7}  result",
            None,
        ),
    ]
    for r in rows:
        skew = r.skew
        best = (
            "-"
            if skew is None
            else f"{format_fixed(skew.judge_best_share, 2)}/{format_fixed(skew.human_best_share, 2)}"
        )
        # A degenerate correction shows its gain in brackets: measured, never applied.
        correction = r.correction or {}
        gain = correction.get("gain")
        shown_gain = "-" if gain is None else format(gain, "+.2f")
        if correction and not correction.get("usable", True):
            shown_gain = f"({shown_gain})"
        shown_skew = "-" if skew is None or skew.skew is None else format(skew.skew, "+.2f")
        outcome = _outcome(r)
        lines.append(
            _styled(
                f"{_group(r):<{width}}{short_metric(r.metric):<7}{r.n:>4} "
                f"{format_fixed(r.f1):>6} {format_fixed(r.ci.low, 2) + '-' + format_fixed(r.ci.high, 2):<11} "
                f"{format_fixed(r.threshold, 2):>5} {format_fixed(r.ceiling, 2):>5} {format_fixed(r.kappa, 2):>6} "
                f"{shown_skew:>6} {best:>9} {shown_gain:>7}  {outcome}",
                outcome,
            )
        )
    lines.extend((text, None) for text in GATE_LEGEND)
    lines.append(("best-score share by annotator agreement, judge/human (items):", None))
    for r in rows:
        distribution = r.distribution or {}
        best_label = None if r.skew is None else r.skew.best_label
        if not distribution or best_label not in r.labels:
            continue
        index = r.labels.index(best_label)
        parts = []
        for level in AGREEMENT_LEVELS:
            group = distribution.get(level)
            if group:
                parts.append(
                    f"{level} {format_fixed(group['judge_share'][index], 2)}/"
                    f"{format_fixed(group['human_share'][index], 2)} ({group['n']})"
                )
        lines.append((f"  {_group(r):<{width}}{short_metric(r.metric):<5}" + "  ".join(parts), None))
    return lines


def _sanity_line(r: ConsistencyRecord | SensitivityRecord) -> StyledLine:
    result = r.result
    rate = format_fixed(result.rate, 2)
    if isinstance(r, ConsistencyRecord):
        c = r.result
        detail = (
            f"{c.n_consistent}/{c.n_items} items gave the same score "
            f"{c.repeats} times (rate {rate}, need {format_fixed(c.min_agreement, 2)})"
        )
    else:
        s = r.result
        detail = (
            f"{s.n_worse} of {s.n_worse + s.n_same + s.n_better + s.n_unscored} "
            f"worse with {_pct(s.fraction)} of words shuffled "
            f"(rate {rate}, need {format_fixed(s.min_lowered, 2)})"
        )
    outcome = _outcome(r)
    # The result before the detail: the summary cuts lines at its width, and the verdict must survive.
    return _styled(f"  {r.kind:<12}{r.language[:5]:<6}{short_metric(r.metric):<5}{outcome:<6}{detail}", outcome)


def calibration_lines(records: Sequence[ItemRecord]) -> list[StyledLine]:
    """Per calibration set: the gate table, the best-score share by agreement, sanity checks, uncalibrated items.

    ``(text, style)`` lines (style ``red`` for a failing, erroring or unexpectedly passing
    row, else None) for the one ``llmjudge summary`` section; records of other kinds are
    ignored, and a run without calibration records gives no line. The text is not redacted
    or escaped: the summary writer does that for every line it prints.
    """
    gates: dict[tuple[str, str], list[GateRecord]] = defaultdict(list)
    sanity: dict[str, list[ConsistencyRecord | SensitivityRecord]] = defaultdict(list)
    uncalibrated: dict[tuple[str, str, str], list[UncalibratedRecord]] = defaultdict(list)
    for record in records:
        if isinstance(record, GateRecord):
            gates[(record.calibration, record.judge)].append(record)
        elif isinstance(record, (ConsistencyRecord, SensitivityRecord)):
            sanity[record.calibration].append(record)
        elif isinstance(record, UncalibratedRecord):
            uncalibrated[(record.suite, str(record.judge), record.policy)].append(record)
    blocks: list[list[StyledLine]] = [_gate_table(name, judge, rows) for (name, judge), rows in sorted(gates.items())]
    for name, checks in sorted(sanity.items()):
        ordered = sorted(checks, key=lambda r: (r.kind, r.language, r.metric))
        blocks.append([(f"{name}: judge sanity checks", None), *(_sanity_line(r) for r in ordered)])
    for (suite, judge, policy), stopped in sorted(uncalibrated.items()):
        by_language: dict[str, int] = defaultdict(int)
        for r in stopped:
            for language in sorted({str(check.get("language")) for check in r.checks}):
                by_language[language] += 1
        counts = ", ".join(f"{language} {count}" for language, count in sorted(by_language.items()))
        text = f"{suite}: judge {judge} not calibrated, {len(stopped)} judge-scored item(s) {policy}: {counts}"
        blocks.append([(text, "red" if policy == "failed" else None)])
    lines: list[StyledLine] = []
    for block in blocks:
        if lines:
            lines.append(("", None))
        lines.extend(block)
    return lines
