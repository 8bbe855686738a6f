"""Annotation tables -> a calibration file: ``python -m pytest_llmjudge.calibration.convert``.

Input: one or more *label tables* in long format, one row per item and annotator (CSV,
TSV or JSONL, told apart by the file suffix), and optionally a *judge-score table* with one
row per item. Output: a calibration YAML file (``-o cal.yaml``) and its items as JSONL beside
it (``cal.jsonl``, referenced by ``items_file``), which ``pytest --llmjudge cal.yaml`` gates.

How rows become items:

* an item is identified by the values of ``--item-cols`` (e.g. ``prompt_id,model``); its id
  is those values joined with ``-`` (or the value of ``--id-col``);
* each ``--label-col`` (repeatable, paired in order with ``--metric``) holds one
  annotator's label on that metric; the annotator is ``--annotator-col``. ``--label-values
  True=1,False=0`` maps label text before it is read as a whole number; an empty cell (or
  one of ``--missing``) is no label. An annotator labelling one item twice is an error;
* judge scores are joined on ``--join`` columns (default: the item columns), one
  ``--score-col`` per metric (default: the metric name); a judge row matching no labelled
  item is counted and reported; an item without a judge row or score is kept *unscored*
  (``--unmatched keep``, the gate then counts it as unscored, never as a pass) or dropped
  (``--unmatched drop``);
* the language is ``--language`` (one code for every item) or the value of
  ``--language-from COLUMN`` in the item's label rows or, failing that, its judge row,
  mapped through ``--language-map bengali=bn,...``. Release tables often take the language
  from elsewhere than the label file (PARIKSHA's gujarati and punjabi label files are
  swapped, so the language comes from the judge-score table);
* ``--text-col``/``--input-col`` give the judged text and its prompt (needed only for a live
  judge, ``scores: judge``), ``--metadata-cols`` columns kept in ``metadata`` (usable by
  ``group_by``).

The written file is loaded back with the plugin's own validation before the command
reports success, so labels off the rubric scale or an unknown metric fail here with the
file and line. Degenerate inputs that are errors: no label rows, a label that is not a
whole number after ``--label-values``, duplicate judge rows for one join key, an item
without a language. Standard library only besides the plugin.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_llmjudge.calibration.schema import GateConfig
from pytest_llmjudge.errors import ConversionError, LLMJudgeError

_MIN_ITEMS: int = GateConfig.model_fields["min_items"].default
"""The gate's own default (calibration/schema.py), written into converted files."""

__all__ = ["ConversionError", "ConvertOptions", "Conversion", "convert", "main", "read_table"]

Row = dict[str, Any]


def read_table(path: Path) -> list[Row]:
    """Rows of a CSV (``.csv``), TSV (``.tsv``, ``.tab``) or JSONL (``.jsonl``, ``.ndjson``) file."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConversionError(f"{path}:{number}: not JSON: {exc.msg}") from None
                if not isinstance(record, dict):
                    raise ConversionError(f"{path}:{number}: a JSONL row must be an object")
                rows.append(record)
        return rows
    if suffix not in (".csv", ".tsv", ".tab"):
        raise ConversionError(f"{path}: unknown table format {suffix!r} (use .csv, .tsv or .jsonl)")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="," if suffix == ".csv" else "\t"))


@dataclass(frozen=True)
class ConvertOptions:
    """Everything the command line sets (see :func:`main` for the flags)."""

    labels: tuple[Path, ...]
    item_cols: tuple[str, ...]
    annotator_col: str
    label_cols: tuple[str, ...]
    metrics: tuple[str, ...]
    output: Path
    name: str = "converted"
    language: str | None = None
    language_from: str | None = None
    language_map: Mapping[str, str] = field(default_factory=dict)
    label_values: Mapping[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ("", "none", "null", "nan", "NA")
    judge_scores: Path | None = None
    join: tuple[str, ...] = ()
    score_cols: tuple[str, ...] = ()
    judge_name: str | None = None
    unmatched: str = "keep"
    id_col: str | None = None
    text_col: str | None = None
    input_col: str | None = None
    metadata_cols: tuple[str, ...] = ()
    threshold: float = 0.6
    min_items: int = _MIN_ITEMS


@dataclass
class Conversion:
    """What was written and counted."""

    yaml_path: Path
    items_path: Path
    items: int = 0
    per_language: Counter[str] = field(default_factory=Counter)
    annotators_per_item: Counter[int] = field(default_factory=Counter)
    scored: Counter[str] = field(default_factory=Counter)
    judge_rows_unmatched: int = 0
    dropped_unmatched: int = 0

    def summary(self) -> str:
        languages = ", ".join(f"{code} {n}" for code, n in sorted(self.per_language.items()))
        annotators = ", ".join(f"{n} labels: {count}" for n, count in sorted(self.annotators_per_item.items()))
        scored = ", ".join(f"{metric} {n}" for metric, n in sorted(self.scored.items())) or "none"
        lines = [
            f"wrote {self.yaml_path} and {self.items_path.name}: {self.items} items ({languages})",
            f"  (item, metric) pairs by number of labels: {annotators}",
            f"  items with a judge score: {scored}",
        ]
        if self.judge_rows_unmatched:
            lines.append(f"  judge rows matching no labelled item: {self.judge_rows_unmatched}")
        if self.dropped_unmatched:
            lines.append(f"  items dropped without a judge row (--unmatched drop): {self.dropped_unmatched}")
        return "\n".join(lines)


def _cell(row: Row, column: str, where: str) -> Any:
    if column not in row:
        raise ConversionError(f"{where}: no column {column!r} (columns: {', '.join(map(str, row))})")
    return row[column]


def _number(value: Any, options: ConvertOptions, where: str) -> int | None:
    """A label or score as a whole number, None when missing."""
    if value is None:
        return None
    text = str(value).strip()
    text = options.label_values.get(text, text)
    if text in options.missing:
        return None
    try:
        number = float(text)
    except ValueError:
        raise ConversionError(f"{where}: {value!r} is not a number (map text with --label-values)") from None
    if not number.is_integer():
        raise ConversionError(f"{where}: {value!r} is not a whole number")
    return int(number)


def convert(options: ConvertOptions) -> Conversion:
    """Read the tables, write the calibration file and its items, validate them."""
    if len(options.label_cols) != len(options.metrics):
        raise ConversionError(f"{len(options.label_cols)} --label-col for {len(options.metrics)} --metric")
    score_cols = options.score_cols or options.metrics
    if len(score_cols) != len(options.metrics):
        raise ConversionError(f"{len(score_cols)} --score-col for {len(options.metrics)} --metric")
    if (options.language is None) == (options.language_from is None):
        raise ConversionError("give exactly one of --language and --language-from")
    join = options.join or options.item_cols

    labels: dict[tuple[str, ...], dict[str, dict[str, int]]] = {}
    first_row: dict[tuple[str, ...], Row] = {}
    seen: dict[tuple[tuple[str, ...], str, str], str] = {}
    for path in options.labels:
        for number, row in enumerate(read_table(path), start=2 if path.suffix.lower() != ".jsonl" else 1):
            where = f"{path}:{number}"
            key = tuple(str(_cell(row, column, where)).strip() for column in options.item_cols)
            annotator = str(_cell(row, options.annotator_col, where)).strip()
            item = labels.setdefault(key, {metric: {} for metric in options.metrics})
            first_row.setdefault(key, row)
            for column, metric in zip(options.label_cols, options.metrics, strict=True):
                label = _number(_cell(row, column, where), options, f"{where}: {column}")
                if label is None:
                    continue
                previous = seen.get((key, annotator, metric))
                if previous is not None:
                    raise ConversionError(
                        f"{where}: annotator {annotator} labelled {key} on {metric} twice ({previous})"
                    )
                seen[(key, annotator, metric)] = where
                item[metric][annotator] = label
    if not labels:
        raise ConversionError("the label tables have no rows")

    judge_rows: dict[tuple[str, ...], Row] = {}
    if options.judge_scores is not None:
        for number, row in enumerate(read_table(options.judge_scores), start=1):
            where = f"{options.judge_scores}:{number}"
            key = tuple(str(_cell(row, column, where)).strip() for column in join)
            if key in judge_rows:
                raise ConversionError(f"{where}: a second judge row for {dict(zip(join, key, strict=True))}")
            judge_rows[key] = row

    result = Conversion(yaml_path=options.output, items_path=options.output.with_suffix(".jsonl"))
    records = []
    matched: set[tuple[str, ...]] = set()
    for key, item_labels in labels.items():
        row = first_row[key]
        join_key = tuple(str(_cell(row, column, "labels")).strip() for column in join)
        judge = judge_rows.get(join_key)
        if judge is not None:
            matched.add(join_key)
        elif options.judge_scores is not None and options.unmatched == "drop":
            result.dropped_unmatched += 1
            continue
        language = options.language
        if language is None and options.language_from is not None:
            value = row.get(options.language_from)
            if value in (None, "") and judge is not None:
                value = judge.get(options.language_from)
            if value in (None, ""):
                raise ConversionError(
                    f"item {key}: no {options.language_from!r} in its label rows or judge row"
                    + (" (no judge row; --unmatched drop leaves such items out)" if judge is None else "")
                )
            language = options.language_map.get(str(value), str(value))
        assert language is not None
        human = {metric: dict(values) for metric, values in item_labels.items() if values}
        if not human:
            continue
        recorded: dict[str, Any] = {}
        for column, metric in zip(score_cols, options.metrics, strict=True):
            score = None if judge is None else _number(judge.get(column), options, f"judge row {join_key}: {column}")
            if score is not None:
                recorded[metric] = {"score": score, "judge": options.judge_name} if options.judge_name else score
                result.scored[metric] += 1
        record: dict[str, Any] = {
            "id": str(row[options.id_col]).strip() if options.id_col else "-".join(key),
            "language": language,
            "output": "",
            "human": human,
            "recorded": recorded,
        }
        for text_column, name in ((options.text_col, "output"), (options.input_col, "input")):
            if text_column is not None:
                value = row.get(text_column, judge.get(text_column) if judge is not None else None)
                if value is not None:
                    record[name] = str(value)
        metadata = {column: row.get(column, judge.get(column) if judge else None) for column in options.metadata_cols}
        if metadata:
            record["metadata"] = metadata
        records.append(record)
        result.per_language[language] += 1
        for values in human.values():
            result.annotators_per_item[len(values)] += 1
    result.items = len(records)
    result.judge_rows_unmatched = len(set(judge_rows) - matched)
    if not records:
        raise ConversionError("no item left to write")

    from pytest_llmjudge.write_targets import check_targets

    # Never write into a FIFO or a device, nor over a file being converted.
    inputs = [*options.labels, *([options.judge_scores] if options.judge_scores else [])]
    targets = [("output", options.output), ("items file", result.items_path)]
    problems = check_targets(targets, inputs, yaml_kinds=False)
    if problems:
        raise ConversionError("; ".join(problems))
    options.output.parent.mkdir(parents=True, exist_ok=True)
    with open(result.items_path, "w", encoding="utf-8", newline="\n") as handle:
        for record in sorted(records, key=lambda r: r["id"]):
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    document: dict[str, Any] = {
        "calibration": options.name,
        "description": f"converted from {', '.join(p.name for p in options.labels)}"
        + (f" and {options.judge_scores.name}" if options.judge_scores else ""),
        "recorded_judge": options.judge_name,
        "metrics": list(options.metrics),
        "items_file": result.items_path.name,
        "gate": {"threshold": options.threshold, "min_items": options.min_items},
    }
    if options.judge_name is None:
        del document["recorded_judge"]
    options.output.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    _validate(options.output)
    return result


def _validate(path: Path) -> None:
    """Load the written file with the plugin's own validation."""
    from pytest_llmjudge import builtin_plugins
    from pytest_llmjudge.calibration.build import build_calibration
    from pytest_llmjudge.registry import Registry

    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    build_calibration(path, registry)


def _list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _pairs(text: str) -> dict[str, str]:
    found = {}
    for part in _list(text):
        name, sep, value = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected name=value, got {part!r}")
        found[name.strip()] = value.strip()
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmjudge.calibration.convert",
        description="Turn annotation tables (one row per item and annotator) into a calibration file.",
    )
    parser.add_argument("--labels", type=Path, action="append", required=True, help="label table (repeatable)")
    parser.add_argument(
        "--item-cols", type=_list, required=True, help="columns that identify an item, e.g. prompt_id,model"
    )
    parser.add_argument("--annotator-col", required=True, help="column with the annotator id")
    parser.add_argument(
        "--label-col", action="append", required=True, help="label column (repeatable, one per --metric)"
    )
    parser.add_argument("--metric", action="append", required=True, help="rubric of the matching --label-col")
    parser.add_argument("--label-values", type=_pairs, default={}, help="text -> number, e.g. True=1,False=0")
    language = parser.add_mutually_exclusive_group(required=True)
    language.add_argument("--language", help="one language code for every item")
    language.add_argument("--language-from", help="column (label rows, else judge row) holding the language")
    parser.add_argument("--language-map", type=_pairs, default={}, help="value -> code, e.g. hindi=hi,bengali=bn")
    parser.add_argument("--judge-scores", type=Path, help="table with one row of judge scores per item")
    parser.add_argument(
        "--join", type=_list, default=(), help="columns joining judge rows to items (default: --item-cols)"
    )
    parser.add_argument(
        "--score-col", action="append", default=[], help="judge score column per --metric (default: the metric)"
    )
    parser.add_argument("--judge-name", help="who made the judge scores, e.g. gpt-4")
    parser.add_argument(
        "--unmatched",
        choices=("keep", "drop"),
        default="keep",
        help="items without a judge row: keep them unscored, or drop them",
    )
    parser.add_argument("--id-col", help="column with the item id (default: the item columns joined with '-')")
    parser.add_argument("--text-col", help="column with the judged text (for a live judge)")
    parser.add_argument("--input-col", help="column with the prompt")
    parser.add_argument("--metadata-cols", type=_list, default=(), help="columns kept in metadata (usable by group_by)")
    parser.add_argument("--name", default="converted", help="calibration set name")
    parser.add_argument("--threshold", type=float, default=0.6, help="gate threshold (weighted F1), default 0.6")
    parser.add_argument("--min-items", type=int, default=_MIN_ITEMS, help=f"gate min_items, default {_MIN_ITEMS}")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="calibration YAML to write (items go to .jsonl beside it)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    options = ConvertOptions(
        labels=tuple(args.labels),
        item_cols=args.item_cols,
        annotator_col=args.annotator_col,
        label_cols=tuple(args.label_col),
        metrics=tuple(args.metric),
        output=args.output,
        name=args.name,
        language=args.language,
        language_from=args.language_from,
        language_map=args.language_map,
        label_values=args.label_values,
        judge_scores=args.judge_scores,
        join=args.join,
        score_cols=tuple(args.score_col),
        judge_name=args.judge_name,
        unmatched=args.unmatched,
        id_col=args.id_col,
        text_col=args.text_col,
        input_col=args.input_col,
        metadata_cols=args.metadata_cols,
        threshold=args.threshold,
        min_items=args.min_items,
    )
    try:
        result = convert(options)
    except (LLMJudgeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
