"""The end-of-run terminal summary: one row per suite x language x metric, then judge accounting.

Built only from item results (report ``user_properties``), so it is the same with or
without pytest-xdist. Mean scores are over scored cases; ``unscored`` counts cases without
a score (errors, unparseable replies), which are also counted as failures by their items.
Plain text in under 80 columns, no colour codes; ``-q`` prints only the judge accounting
line.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_llmjudge.execution.runner import RunnerStats


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _shown(value: Any) -> str:
    number = _number(value)
    return "-" if number is None else f"{number:.3f}"


def render_summary(
    results: Iterable[Mapping[str, Any]], stats: RunnerStats | None, *, quiet: bool = False
) -> list[str]:
    lines: list[str] = []
    if not quiet:
        groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
        aggregates: list[Mapping[str, Any]] = []
        for result in results:
            if "aggregate" in result:
                aggregates.append(result)
            else:
                key = (str(result.get("suite")), str(result.get("language")), str(result.get("metric")))
                groups[key].append(result)
        if groups:
            lines.append(
                f"{'suite':<20} {'lang':<5} {'metric':<24} {'n':>4} {'mean':>6} {'pass':>4} {'fail':>4} {'unsc':>4} {'skip':>4}"
            )
            for (suite, language, metric), rows in sorted(groups.items()):
                values = [v for v in (_number(r.get("score")) for r in rows) if v is not None]
                mean = f"{statistics.fmean(values):.2f}" if values else "-"
                passed = sum(r["outcome"] == "passed" for r in rows)
                skipped = sum(r["outcome"] == "skipped" for r in rows)
                unscored = sum("unscored_reason" in r for r in rows)
                failed = len(rows) - passed - skipped
                lines.append(
                    f"{suite[:20]:<20} {language[:5]:<5} {metric[:24]:<24} {len(rows):>4} {mean:>6} "
                    f"{passed:>4} {failed:>4} {unscored:>4} {skipped:>4}"
                )
        by_check: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
        for result in aggregates:
            by_check[(str(result.get("suite")), str(result.get("aggregate")))].append(result)
        if by_check:
            lines.append("")
            for (suite, label), rows in sorted(by_check.items()):
                failing = [r for r in rows if r["outcome"] == "failed"]
                skipped = sum(r["outcome"] == "skipped" for r in rows)
                status = f"{len(rows) - len(failing) - skipped}/{len(rows)} pass"
                if skipped:
                    status += f", {skipped} skipped"
                detail = ", ".join(
                    f"{r.get('language')}={_shown(r.get('score'))} (needs {r.get('threshold')})" for r in failing
                )
                lines.append(f"{suite[:20]:<20} {label}: {status}" + (f"; FAIL {detail}" if detail else ""))
    if stats is not None and (stats.provider_calls or stats.cache_hits or stats.shared_hits or stats.failed_calls):
        lines.append(
            f"judge calls: {stats.provider_calls} provider requests, "
            f"{stats.cache_hits} cache hits, {stats.shared_hits} shared between workers, {stats.retries} retries, {stats.failed_calls} failed, "
            f"{stats.unscored} unscored; tokens in/out {stats.input_tokens}/{stats.output_tokens}"
        )
    return lines
