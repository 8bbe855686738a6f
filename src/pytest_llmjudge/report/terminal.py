"""The end-of-run terminal summary: one row per suite x language x metric, then judge accounting.

Built only from item results (report ``user_properties``), so it is the same with or
without pytest-xdist. Mean scores are over scored cases; ``unscored`` counts cases without
a score (errors, unparseable replies), which are also counted as failures by their items.
Plain text, no colour codes, trimmed to the terminal width; ``-q`` prints only the judge
accounting line.
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


def render_summary(
    results: Iterable[Mapping[str, Any]], stats: RunnerStats | None, *, width: int = 100, quiet: bool = False
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
            header = f"{'suite':<24} {'lang':<6} {'metric':<26} {'n':>5} {'mean':>7} {'pass':>5} {'fail':>5} {'unsc.':>5} {'skip':>5}"
            lines.append(header[:width])
            for (suite, language, metric), rows in sorted(groups.items()):
                values = [v for v in (_number(r.get("score")) for r in rows) if v is not None]
                mean = f"{statistics.fmean(values):.3f}" if values else "-"
                passed = sum(r["outcome"] == "passed" for r in rows)
                skipped = sum(r["outcome"] == "skipped" for r in rows)
                unscored = sum("unscored_reason" in r for r in rows)
                failed = len(rows) - passed - skipped
                line = (
                    f"{suite[:24]:<24} {language[:6]:<6} {metric[:26]:<26} {len(rows):>5} {mean:>7} "
                    f"{passed:>5} {failed:>5} {unscored:>5} {skipped:>5}"
                )
                lines.append(line[:width])
        if aggregates:
            lines.append("")
            lines.append(f"{'suite':<24} {'aggregate':<34} {'lang':<6} {'value':>7} {'threshold':>10}  result"[:width])
            for result in sorted(
                aggregates, key=lambda r: (str(r.get("suite")), str(r.get("aggregate")), str(r.get("language")))
            ):
                value = _number(result.get("score"))
                shown = f"{value:.3f}" if value is not None else "-"
                outcome = {"passed": "pass", "skipped": "skip"}.get(str(result["outcome"]), "FAIL")
                line = (
                    f"{str(result.get('suite'))[:24]:<24} {str(result.get('aggregate'))[:34]:<34} "
                    f"{str(result.get('language'))[:6]:<6} {shown:>7} {str(result.get('threshold', '')):>10}  {outcome}"
                )
                lines.append(line[:width])
    if stats is not None:
        lines.append(
            f"judge calls: {stats.submitted} planned, {stats.provider_calls} provider requests, "
            f"{stats.cache_hits} cache hits, {stats.retries} retries, {stats.failed_calls} failed, "
            f"{stats.unscored} unscored; tokens in/out {stats.input_tokens}/{stats.output_tokens}"
        )
    return lines
