"""Command line: how well do reference metrics follow human scores, per language?

Usage::

    python -m pytest_llmjudge.metrics.correlate FILE.jsonl --metric chrf --metric rouge_l \\
        [--param lrm2qas.lambdas=factoid] [--param bleu.tokenize=intl]

``FILE.jsonl`` holds one JSON object per line with ``language``, ``output``, ``reference``
and ``human_score``, and optionally ``input``, ``context`` (a list of passages) and
``metadata``. Each metric is computed for every row, then correlated with the human scores
per language and over all rows (Pearson, Spearman and Kendall, as in LRM2QAS Tables 1, 2
and 10; see :mod:`pytest_llmjudge.stats.correlation`). A parameter value is read as JSON
when it parses (numbers, booleans, objects) and as a string otherwise.

``--fit-lambdas`` also grid-searches the LRM2QAS lambdas against the human scores of the
file (LRM2QAS sec. 3: each lambda over 0.0, 0.1, ..., 1.0; ties broken toward the
``indic_long`` preset) and prints the fitted lambdas with the Pearson, Spearman and
Kendall correlations of the fitted metric; put them in a suite as
``metric_options: {lrm2qas: {lambdas: {...}}}``.

Rows a metric cannot score (for example a blank reference) are left out of that metric's
correlations and counted in the ``skipped`` column. A categorical metric (``language``)
has no correlation and is rejected. The exit status is 0, or 2 for bad arguments or input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_llmjudge.errors import LLMJudgeError, MetricError
from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.lrm2qas import LambdaFit, fit_lambdas
from pytest_llmjudge.stats.correlation import Correlations, correlations_by_language

__all__ = ["Row", "format_table", "load_rows", "main", "metric_correlations"]


@dataclass(frozen=True)
class Row:
    """One scored case: the metric input and its human score."""

    item: MetricInput
    human_score: float


def load_rows(path: Path) -> list[Row]:
    """Read the JSONL file; raises ``ValueError`` naming the line of a bad row."""
    rows: list[Row] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                item = MetricInput(
                    output=str(record["output"]),
                    reference=record.get("reference"),
                    input=record.get("input"),
                    context=tuple(record.get("context") or ()),
                    language=str(record["language"]),
                    metadata=record.get("metadata") or {},
                )
                score = float(record["human_score"])
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}:{number}: {type(exc).__name__}: {exc}") from exc
            rows.append(Row(item, score))
    return rows


def metric_correlations(name: str, params: dict[str, Any], rows: Sequence[Row]) -> tuple[dict[str, Correlations], int]:
    """Per-language correlations of one metric with the human scores, and rows skipped."""
    metric = resolve_metric(name, params)
    scored: list[tuple[str, float, float]] = []
    skipped = 0
    for row in rows:
        try:
            value = metric.compute(row.item).value
        except MetricError:
            skipped += 1
            continue
        if isinstance(value, str):
            raise ValueError(f"{name} is categorical (values like {value!r}); it has no correlation")
        scored.append((row.item.language, value, row.human_score))
    return correlations_by_language(scored), skipped


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:+.3f}"


def format_table(results: dict[str, tuple[dict[str, Correlations], int]]) -> str:
    """One line per metric and language: n, the three coefficients and their p-values."""
    header = ("metric", "language", "n", "pearson", "spearman", "kendall", "p(pearson)", "note")
    lines = [header]
    for metric, (by_language, skipped) in results.items():
        for language, corr in by_language.items():
            note = corr.reason or ""
            if language == "all" and skipped:
                note = f"{note}; {skipped} skipped".lstrip("; ")
            lines.append(
                (
                    metric,
                    language,
                    str(corr.n),
                    _number(corr.pearson),
                    _number(corr.spearman),
                    _number(corr.kendall),
                    "nan" if math.isnan(corr.pearson_p) else f"{corr.pearson_p:.2g}",
                    note,
                )
            )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _parse_params(specs: Sequence[str], metrics: Sequence[str]) -> dict[str, dict[str, Any]]:
    params: dict[str, dict[str, Any]] = {metric: {} for metric in metrics}
    for spec in specs:
        target, sep, value = spec.partition("=")
        metric, dot, key = target.rpartition(".")
        if not sep or not dot or metric not in params:
            raise ValueError(f"--param {spec!r}: expected METRIC.KEY=VALUE for one of the --metric names")
        try:
            params[metric][key] = json.loads(value)
        except json.JSONDecodeError:
            params[metric][key] = value
    return params


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmjudge.metrics.correlate",
        description="Correlate reference metrics with human scores, per language.",
    )
    parser.add_argument("file", type=Path, help="JSONL rows: language, output, reference, human_score, ...")
    parser.add_argument("--metric", action="append", default=[], help="metric name (repeatable)")
    parser.add_argument(
        "--fit-lambdas",
        action="store_true",
        help="grid-search the LRM2QAS lambdas that best follow the human scores (Spearman)",
    )
    parser.add_argument("--param", action="append", default=[], help="METRIC.KEY=VALUE (repeatable)")
    args = parser.parse_args(argv)
    if not args.metric and not args.fit_lambdas:
        parser.error("give at least one --metric, or --fit-lambdas")
    try:
        params = _parse_params(args.param, [*args.metric, "lrm2qas"])
        rows = load_rows(args.file)
        results = {name: metric_correlations(name, params[name], rows) for name in args.metric}
        fit = fit_lrm2qas_lambdas(rows, params["lrm2qas"]) if args.fit_lambdas else None
    except (OSError, ValueError, LLMJudgeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if results:
        print(format_table(results))
    if fit is not None:
        lambdas = ", ".join(f"{key}: {value:g}" for key, value in fit.lambdas.items())
        corr = fit.correlations
        print(
            f"fitted lrm2qas lambdas {{{lambdas}}} over {corr.n} rows ({fit.candidates} settings tried): "
            f"pearson {_number(corr.pearson)}, spearman {_number(corr.spearman)}, kendall {_number(corr.kendall)}"
        )
    return 0


def fit_lrm2qas_lambdas(rows: Sequence[Row], params: dict[str, Any]) -> LambdaFit:
    """Fit the LRM2QAS lambdas to the rows' human scores (rows it can't score are left out)."""
    metric = resolve_metric("lrm2qas", params)
    components: list[dict[str, float]] = []
    humans: list[float] = []
    for row in rows:
        try:
            value = metric.compute(row.item)
        except MetricError:
            continue
        components.append({key: float(v) for key, v in value.detail["components"].items()})
        humans.append(row.human_score)
    return fit_lambdas(components, humans)


if __name__ == "__main__":
    sys.exit(main())
