"""Text for calibration results: gate failure messages and the terminal summary.

Plain text, no colour codes. The summary is built only from the structured item records
(``report.llmjudge`` dicts with ``kind`` ``gate``, ``consistency``, ``sensitivity`` or
``uncalibrated``), so it is the same with and without pytest-xdist. Metric names of the
METAL rubrics are abbreviated (LA, OCQ, TQ, PC, H) in tables; others are cut to 12 chars.

"skew" is the judge's mean score minus the humans' (Hada et al. 2024a, sec. 4.2): positive
means the judge scores higher. "best j/h" is the share of items at the scale's best score
(the top for higher-is-better metrics, 0 for hallucinations and problematic content) for
judge and humans: the high-score bias shows as a judge share far above the human one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_llmjudge.calibration.gate import GateResult
from pytest_llmjudge.stats.annotators import AGREEMENT_LEVELS

__all__ = ["ABBREVIATIONS", "ceiling_definition", "gate_message", "render_summary", "short_metric"]

ABBREVIATIONS = {
    "linguistic_acceptability": "LA",
    "output_content_quality": "OCQ",
    "task_quality": "TQ",
    "problematic_content": "PC",
    "hallucinations": "H",
}


def short_metric(metric: str) -> str:
    return ABBREVIATIONS.get(metric, metric[:12])


def _num(value: Any, digits: int = 3) -> str:
    if value is None or isinstance(value, bool):
        return "-"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "-"
    if number != number:
        return "-"
    return f"{number:.{digits}f}"


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
        row("weighted F1", f"{_num(result.f1)} (threshold {result.threshold:.3f}); macro F1 {_num(result.macro_f1)}")
        row(
            f"{100 * opts.confidence:g}% CI",
            f"{_num(result.ci_low)} - {_num(result.ci_high)} (percentile bootstrap, {opts.resamples} resamples, seed {opts.seed})",
        )
    row("human ceiling", f"{_num(result.ceiling)} ({ceiling_definition(result)})")
    row(
        "Fleiss' kappa",
        f"{_num(result.fleiss_kappa)} (annotators among themselves, {result.fleiss_items} items with "
        f"{'exactly 3' if opts.convention == 'metal' else '2 or more'} labels)",
    )
    if result.f1 is not None:
        ratio = result.ceiling_ratio
        row("F1 / ceiling", f"{_num(ratio)}" + ("" if ratio is None else " (the judge's F1 relative to the humans')"))
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
            f"PA {_num(result.percentage_agreement)}, Cohen's kappa {_num(result.cohen_kappa)} (judge vs human aggregate)",
        )
        row("baseline", f"{_num(result.baseline_f1)} (weighted F1 of always answering the humans' most common label)")
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
    return "\n".join(lines)


def _group(record: Mapping[str, Any]) -> str:
    """The row label: the group name, which is the language with the default group_by."""
    return str(record.get("group") or record.get("language"))


def _outcome(record: Mapping[str, Any]) -> str:
    outcome = str(record.get("outcome", ""))
    if outcome == "skipped" and record.get("xfail"):
        return "xfail"
    if outcome in ("passed", "failed") and record.get("xfail") and record.get("passed"):
        return "XPASS"
    if outcome == "failed" and record.get("problem"):
        return "ERROR"
    return {"passed": "pass", "failed": "FAIL", "skipped": "skip"}.get(outcome, outcome)


def render_summary(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per calibration set: the gate table, the distribution by agreement, sanity, uncalibrated."""
    gates: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    sanity: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    uncalibrated: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        kind = record.get("kind")
        if kind == "gate":
            gates[(str(record.get("calibration")), str(record.get("judge")))].append(record)
        elif kind in ("consistency", "sensitivity"):
            sanity[str(record.get("calibration"))].append(record)
        elif kind == "uncalibrated":
            key = (str(record.get("suite")), str(record.get("judge")), str(record.get("policy")))
            uncalibrated[key].append(record)
    lines: list[str] = []
    for (name, judge), rows in sorted(gates.items()):
        rows = sorted(rows, key=lambda r: (_group(r), str(r.get("metric"))))
        first = rows[0]
        width = max([6] + [len(_group(r)) + 1 for r in rows])
        confidence = (first.get("ci") or {}).get("confidence", 0.95)
        if lines:
            lines.append("")
        lines.append(f"{name}: judge {judge} vs human aggregate (weighted F1, {100 * float(confidence):g}% CI)")
        lines.append(
            f"{'lang' if width == 6 else 'group':<{width}}{'metric':<7}{'n':>4} {'F1':>6} {'CI':<11} {'need':>5} {'ceil':>5} {'kappa':>6} "
            f"{'skew':>6} {'best j/h':>9} {'corr':>7}  result"
        )
        for r in rows:
            skew = r.get("skew") or {}
            ci = r.get("ci") or {}
            correction = r.get("correction") or {}
            best = f"{_num(skew.get('judge_best_share'), 2)}/{_num(skew.get('human_best_share'), 2)}" if skew else "-"
            # A degenerate correction shows its gain in brackets: measured, never applied.
            gain = correction.get("gain")
            shown_gain = "-" if gain is None else format(gain, "+.2f")
            if correction and not correction.get("usable", True):
                shown_gain = f"({shown_gain})"
            lines.append(
                f"{_group(r):<{width}}{short_metric(str(r.get('metric'))):<7}{r.get('n', 0):>4} "
                f"{_num(r.get('f1')):>6} {_num(ci.get('low'), 2) + '-' + _num(ci.get('high'), 2):<11} "
                f"{_num(r.get('threshold'), 2):>5} {_num(r.get('ceiling'), 2):>5} {_num(r.get('kappa'), 2):>6} "
                f"{'-' if skew.get('skew') is None else format(skew['skew'], '+.2f'):>6} {best:>9} "
                f"{shown_gain:>7}  {_outcome(r)}"
            )
        lines.append("best-score share by annotator agreement, judge/human (items):")
        for r in rows:
            distribution = r.get("distribution") or {}
            labels = list(r.get("labels") or [])
            best_label = (r.get("skew") or {}).get("best_label")
            if not distribution or best_label not in labels:
                continue
            index = labels.index(best_label)
            parts = []
            for level in AGREEMENT_LEVELS:
                group = distribution.get(level)
                if group:
                    parts.append(
                        f"{level} {_num(group['judge_share'][index], 2)}/{_num(group['human_share'][index], 2)} ({group['n']})"
                    )
            lines.append(f"  {_group(r):<{width}}{short_metric(str(r.get('metric'))):<5}" + "  ".join(parts))
    for name, rows in sorted(sanity.items()):
        if lines:
            lines.append("")
        lines.append(f"{name}: judge sanity checks")
        for r in sorted(rows, key=lambda r: (str(r.get("kind")), str(r.get("language")), str(r.get("metric")))):
            result = r.get("result") or {}
            rate = _num(result.get("rate"), 2)
            if r.get("kind") == "consistency":
                detail = (
                    f"{result.get('n_consistent', 0)}/{result.get('n_items', 0)} items gave the same score "
                    f"{result.get('repeats')} times (rate {rate}, need {_num(result.get('min_agreement'), 2)})"
                )
            else:
                detail = (
                    f"{result.get('n_worse', 0)} of {result.get('n_worse', 0) + result.get('n_same', 0) + result.get('n_better', 0) + result.get('n_unscored', 0)} "
                    f"rated worse after shuffling {_pct(result.get('fraction'))} of words "
                    f"(rate {rate}, need {_num(result.get('min_lowered'), 2)})"
                )
            lines.append(
                f"  {str(r.get('kind')):<12}{str(r.get('language'))[:5]:<6}{short_metric(str(r.get('metric'))):<5}"
                f"{detail}  {_outcome(r)}"
            )
    for (suite, judge, policy), rows in sorted(uncalibrated.items()):
        if lines:
            lines.append("")
        by_language: dict[str, int] = defaultdict(int)
        for r in rows:
            for language in sorted({str(check.get("language")) for check in r.get("checks") or ()}):
                by_language[language] += 1
        counts = ", ".join(f"{language} {count}" for language, count in sorted(by_language.items()))
        lines.append(f"{suite}: judge {judge} not calibrated, {len(rows)} judge-scored item(s) {policy}: {counts}")
    return lines
