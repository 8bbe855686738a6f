"""Suite file -> validated :class:`~pytest_llmjudge.suite.model.Suite`, or a located error.

Validation order: YAML syntax, schema (pydantic), side files (``cases_file``,
``outputs.file``), threshold expressions, metric names against the registry, recorded
scores against rubric scales. Every problem raises :class:`SuiteError` rendered as
``file:line: field: message`` plus a hint where one helps (a close match for a misspelt
field or metric, the install extra for a missing package).

Degenerate cases: a suite whose language filter leaves no cases is an error (it would pass
vacuously); duplicate case ids are an error (node ids must be unique), compared in Unicode
NFC (``suite/identity.py``: ids that print alike are one id); a case without an output is an
error unless an output target will produce it.
"""

from __future__ import annotations

import difflib
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pytest_llmjudge.errors import ExpressionError, LLMJudgeError, MetricError, MissingDependencyError, SuiteError
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.metrics import resolve_metric
from pytest_llmjudge.metrics.rag import JUDGED_METRICS
from pytest_llmjudge.metrics.scales import reference_scale
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.stats.grouping import Group
from pytest_llmjudge.suite import schema
from pytest_llmjudge.suite.expressions import (
    PASS_K_STATS,
    MetricThreshold,
    parse_aggregate,
    parse_override,
    parse_threshold,
)
from pytest_llmjudge.suite.identity import normalized
from pytest_llmjudge.suite.loader import LocatedDocument, iter_jsonl, line_for, load_yaml
from pytest_llmjudge.suite.model import AggregateCheck, Case, Message, MetricKind, RecordedValue, Suite
from pytest_llmjudge.suite.schema import (
    AggregateConfig,
    CaseConfig,
    CasesFileConfig,
    RubricConfig,
    SequentialConfig,
    SuiteConfig,
)
from pytest_llmjudge.suite.tabular import is_hf_dataset, table_format, table_records


def _field_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


def _loc_text(loc: Iterable[Any]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


SUITE_MODELS: dict[str, type[BaseModel]] = {}
"""The schema model of each suite section, for 'did you mean' hints (filled below)."""


def _model_for_loc(
    loc: tuple[Any, ...], root: type[BaseModel], models: Mapping[str, type[BaseModel]]
) -> type[BaseModel]:
    """The schema model that owns the last key of ``loc`` (for 'did you mean' hints)."""
    model = root
    for part in loc[:-1]:
        if isinstance(part, str) and part in models:
            model = models[part]
    return model


def _data_loc(data: Any, loc: tuple[Any, ...], keep_last: bool) -> tuple[Any, ...]:
    """``loc`` without pydantic's union tags (``str``, ``list[str]``, model names ...).

    A part is kept when it names a key or index that exists in the data at that depth; the
    last part is kept regardless when ``keep_last`` (a missing field doesn't exist yet).
    """
    kept: list[Any] = []
    current = data
    for position, part in enumerate(loc):
        name = "assert" if part == "assert_" else part
        if isinstance(current, dict) and name in current:
            kept.append(name)
            current = current[name]
        elif isinstance(current, list) and isinstance(name, int) and 0 <= name < len(current):
            kept.append(name)
            current = current[name]
        elif keep_last and position == len(loc) - 1:
            kept.append(name)
    return tuple(kept)


def validation_error(
    exc: ValidationError,
    path: Path,
    lines: Mapping[tuple[Any, ...], int],
    data: Any,
    *,
    root: type[BaseModel] = SuiteConfig,
    models: Mapping[str, type[BaseModel]] | None = None,
    unknown_fields_first: bool = False,
) -> SuiteError:
    """The first schema error as a located :class:`SuiteError`.

    ``models`` maps section keys to their schema models for hints (the suite's by
    default); ``unknown_fields_first`` reports a misspelt key before the "missing" error
    the same typo causes.
    """
    problems = exc.errors()
    if unknown_fields_first:
        problems = sorted(problems, key=lambda error: error["type"] != "extra_forbidden")
    # A value that fails every branch of a union (``RecordedScore | Number``) gets one error
    # per branch, the first being "should be a valid dictionary"; a NaN, an infinity or a
    # boolean where a number belongs says more.
    problems = sorted(problems, key=lambda error: not _is_bad_number(error))
    first = problems[0]
    missing = first["type"] == "missing"
    loc = _data_loc(data, tuple(first["loc"]), keep_last=missing)
    line = line_for(lines, loc)
    message = first["msg"]
    hint = None
    field_loc = loc
    if first["type"] == "extra_forbidden" and loc:
        known = _field_names(_model_for_loc(loc, root, SUITE_MODELS if models is None else models))
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        message = f"unknown field {loc[-1]!r}"
        hint = f"did you mean {close[0]!r}?" if close else f"allowed fields: {', '.join(sorted(known))}"
        field_loc = loc[:-1]
    elif missing and loc:
        message = f"missing required field {loc[-1]!r}"
        field_loc = loc[:-1]
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return SuiteError(message, path=path, line=line, field=_loc_text(field_loc) or None, hint=hint)


def _is_bad_number(error: Any) -> bool:
    return bool(error["type"] == "finite_number" or (error["type"] == "value_error" and "boolean" in error["msg"]))


_CASE_FIELDS = frozenset(_field_names(CaseConfig))

SUITE_MODELS.update(
    {
        "judge": schema.JudgeConfig,
        "rubrics": schema.RubricConfig,
        "cases": schema.CaseConfig,
        "cases_file": schema.CasesFileConfig,
        "outputs": schema.OutputsConfig,
        "aggregate": schema.AggregateConfig,
        "recorded": schema.RecordedScore,
    }
)


def read_records(
    path: Path, where: Mapping[str, Any], extra_fields: str, known_fields: frozenset[str]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """JSONL records that match ``where``, with unknown keys moved into ``metadata``
    when ``extra_fields == "metadata"`` (a JSONL export often carries more than a case)."""
    for number, record in iter_jsonl(path):
        if any(record.get(key) != value for key, value in where.items()):
            continue
        if extra_fields == "metadata":
            own_metadata = record.get("metadata", {})
            if not isinstance(own_metadata, dict):
                raise SuiteError("metadata must be an object", path=path, line=number, field="metadata")
            extra = {key: record.pop(key) for key in list(record) if key not in known_fields}
            record["metadata"] = {**extra, **own_metadata}
        yield number, record


def _source_records(path: Path, entry: CasesFileConfig) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of one ``cases_file`` entry: JSONL lines or table rows (suite/tabular.py)."""
    fmt = "hf" if is_hf_dataset(path, entry.path, entry.format) else table_format(path, entry.format)
    if fmt is None:
        if entry.columns or entry.encoding:
            raise SuiteError(
                "'columns' and 'encoding' apply to CSV, TSV and Parquet cases files",
                path=path,
                field="cases_file",
                hint="set 'format:' if the file is a table with another suffix",
            )
        yield from read_records(path, entry.where, entry.extra_fields, _CASE_FIELDS)
        return
    rows = table_records(
        path,
        fmt,
        columns=entry.columns,
        case_fields=_CASE_FIELDS,
        encoding=entry.encoding,
        source=entry.path if entry.path.startswith("hf://") else str(path),
    )
    for number, record, _unit in rows:
        if all(_table_matches(record, key, value) for key, value in entry.where.items()):
            yield number, record


def _stratified_sample(
    records: list[tuple[int, dict[str, Any]]], size: int, seed: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``size`` records drawn without replacement, each language getting its share of ``size``
    (largest remainder; every language present keeps at least one), in file order.

    Per language the draw is ``random.Random(f"{seed}:{language}")``: adding cases of one
    language leaves the others' samples as they were."""
    import random

    if size >= len(records):
        yield from records
        return
    by_language: dict[str, list[int]] = {}
    for position, (_, record) in enumerate(records):
        by_language.setdefault(str(record.get("language")), []).append(position)
    total = len(records)
    quotas = {language: size * len(found) / total for language, found in by_language.items()}
    shares = {language: max(1, int(quota)) for language, quota in quotas.items()}
    for language in sorted(quotas, key=lambda name: (-(quotas[name] - int(quotas[name])), name)):
        if sum(shares.values()) >= size:
            break
        if shares[language] < len(by_language[language]):
            shares[language] += 1
    chosen: set[int] = set()
    for language, positions in by_language.items():
        draw = random.Random(f"{seed}:{language}")
        chosen.update(draw.sample(positions, min(shares[language], len(positions))))
    yield from (records[position] for position in sorted(chosen))


def _table_matches(record: Mapping[str, Any], key: str, wanted: Any) -> bool:
    # A table's cells are text, and an unmapped column sits in metadata: `where: {year: 2024}`
    # matches the cell "2024" of a column 'year' wherever the row put it.
    value = record[key] if key in record else record.get("metadata", {}).get(key)
    return bool(value == wanted or (isinstance(value, str) and not isinstance(wanted, str) and value == str(wanted)))


def _cases_files(config: SuiteConfig) -> list[CasesFileConfig]:
    entries = config.cases_file
    if entries is None:
        return []
    if not isinstance(entries, list):
        entries = [entries]
    return [CasesFileConfig(path=entry) if isinstance(entry, str) else entry for entry in entries]


def _rubric_from_config(name: str, config: RubricConfig) -> Rubric:
    scoring = "; ".join(f"{score}: {text}" for score, text in sorted(config.scores.items())) or (
        f"an integer from {config.scale[0]} (worst) to {config.scale[-1]} (best)"
        if config.higher_is_better
        else f"an integer from {config.scale[0]} (best) to {config.scale[-1]} (worst)"
    )
    return Rubric(
        name=name,
        description=config.description,
        scale=tuple(config.scale),
        scoring=scoring,
        score_descriptions=dict(config.scores),
        higher_is_better=config.higher_is_better,
        needs=frozenset(config.needs),
        per_language=dict(config.per_language),
        score_mode=config.scoring,
        target=config.target,
    )


def _recorded(raw: Mapping[str, Any], how: str = "mean") -> dict[str, RecordedValue]:
    values: dict[str, RecordedValue] = {}
    for name, entry in raw.items():
        if isinstance(entry, (int, float)):
            values[name] = RecordedValue(score=float(entry))
        elif entry.samples is not None:
            samples = tuple(None if sample is None else float(sample) for sample in entry.samples)
            values[name] = RecordedValue(
                score=_combined(samples, how),
                justification=entry.justification,
                judge=entry.judge,
                samples=samples,
            )
        else:
            values[name] = RecordedValue(
                score=None if entry.score is None else float(entry.score),
                justification=entry.justification,
                judge=entry.judge,
            )
    return values


def _combined(samples: tuple[float | None, ...], how: str) -> float | None:
    """Recorded samples' score by the scorer's rule for repeats (``execution.scorer.combine_samples``,
    which this layer can't import: the scorer imports it): the mean, or the most common
    sample with ties to the lower; None when a sample is null (the case is unscored)."""
    numbers = [sample for sample in samples if sample is not None]
    if len(numbers) < len(samples):
        return None
    if how == "mean":
        return statistics.fmean(numbers)
    counts = Counter(numbers)
    best = max(counts.values())
    return min(value for value, count in counts.items() if count == best)


def _label_files(
    config: SuiteConfig, path: Path, lines: Mapping[Any, int], known: set[str]
) -> Iterator[tuple[str, str, list[float] | dict[str, float], tuple[Path, int | None]]]:
    """(case id, metric, labels, (file, line)) from the suite's ``human_labels`` files.

    JSONL: records with ``id`` and ``human: {metric: [labels] or {annotator: label}}`` (other keys
    are ignored, so calibration items files load). CSV: a header with ``id``, ``metric``,
    ``label`` and optionally ``annotator``; one row per label.
    """
    entries = config.human_labels
    if entries is None:
        return
    for index, entry in enumerate([entries] if isinstance(entries, str) else entries):
        at = ("human_labels",) if isinstance(entries, str) else ("human_labels", index)
        labels_path = path.parent / entry
        if not labels_path.is_file():
            raise SuiteError(
                f"labels file {_missing(labels_path)}: {labels_path}",
                path=path,
                line=line_for(lines, at),
                field=_loc_text(at),
                hint="human_labels is resolved relative to the suite file",
            )
        rows: list[tuple[int | None, str, str, list[float] | dict[str, float]]] = []
        if labels_path.suffix.lower() == ".csv":
            import csv

            with labels_path.open(encoding="utf-8-sig", newline="") as handle:
                reader = csv.DictReader(handle)
                missing = {"id", "metric", "label"} - set(reader.fieldnames or ())
                if missing:
                    raise SuiteError(
                        f"a CSV labels file needs the columns id, metric, label (missing: {', '.join(sorted(missing))})",
                        path=labels_path,
                        line=1,
                    )
                grouped: dict[tuple[str, str], tuple[int, list[float] | dict[str, float]]] = {}
                for number, row in enumerate(reader, start=2):
                    try:
                        label = float(str(row["label"]).strip())
                    except ValueError:
                        label = math.nan
                    if not math.isfinite(label):
                        raise SuiteError(
                            f"label {row['label']!r} is not a finite number",
                            path=labels_path,
                            line=number,
                            field="label",
                        )
                    key = (str(row["id"]).strip(), str(row["metric"]).strip())
                    first, bucket = grouped.setdefault(key, (number, [] if not row.get("annotator") else {}))
                    if isinstance(bucket, dict):
                        annotator = str(row.get("annotator") or "").strip()
                        if not annotator or annotator in bucket:
                            raise SuiteError(
                                f"annotator {annotator!r} labels case {key[0]!r} {key[1]} twice, or without an id",
                                path=labels_path,
                                line=number,
                                field="annotator",
                            )
                        bucket[annotator] = label
                    else:
                        bucket.append(label)
                rows = [(number, case_id, metric, bucket) for (case_id, metric), (number, bucket) in grouped.items()]
        else:
            for number, record in iter_jsonl(labels_path):
                human = record.get("human")
                if not isinstance(record.get("id"), str) or not isinstance(human, dict):
                    raise SuiteError(
                        "each labels line needs a string 'id' and a 'human' object", path=labels_path, line=number
                    )
                try:
                    parsed = CaseConfig.model_validate({"id": record["id"], "language": "xx", "human": human}).human
                except ValidationError as exc:
                    raise validation_error(exc, labels_path, {(): number}, record, root=CaseConfig) from None
                rows.extend((number, record["id"], metric, labels) for metric, labels in parsed.items())
        for line_number, case_id, metric, labels in rows:
            if case_id not in known:
                raise SuiteError(
                    f"labels for case {case_id!r}, which the suite does not have",
                    path=labels_path,
                    line=line_number,
                    field="id",
                )
            yield case_id, metric, labels, (labels_path, line_number)


def _on_scale(label: float, scale: Sequence[int]) -> bool:
    """A whole-number label must be a scale point; a fractional one (an average) must lie between the ends."""
    if float(label).is_integer():
        return label in scale
    return min(scale) < label < max(scale)


def aggregate_human_labels(
    labelled: Sequence[tuple[str, Mapping[str, list[float] | dict[str, float]]]],
) -> dict[str, dict[str, float]]:
    """Case id -> metric -> one human label per case, from its annotators' labels.

    Whole-number labels (a rubric's 0/1/2): the calibration gate's rule (``stats/annotators.py``,
    METAL sec. 3.2), the majority label, else the mean rounded half up; labels given by
    annotator id are taken in id order (the rule does not depend on the order). A case with a
    fractional label (already an average, or a continuous scale): the plain mean of its labels.
    One matrix per metric, so one aggregation call per metric.
    """
    if not labelled:
        return {}
    import numpy as np  # only suites with human labels pay for numpy here

    from pytest_llmjudge.stats.annotators import aggregate_labels

    result: dict[str, dict[str, float]] = {}
    metrics = sorted({metric for _, human in labelled for metric in human})
    for metric in metrics:
        rows = [
            (case_id, list(labels) if isinstance(labels, list) else [labels[k] for k in sorted(labels)])
            for case_id, human in labelled
            if (labels := human.get(metric)) is not None
        ]
        whole = [(case_id, labels) for case_id, labels in rows if all(float(v).is_integer() for v in labels)]
        for case_id, labels in rows:
            if not all(float(v).is_integer() for v in labels):
                result.setdefault(case_id, {})[metric] = math.fsum(labels) / len(labels)
        if not whole:
            continue
        matrix = np.full((len(whole), max(len(labels) for _, labels in whole)), np.nan)
        for index, (_, labels) in enumerate(whole):
            matrix[index, : len(labels)] = labels
        aggregated = aggregate_labels(matrix)
        for (case_id, _), label in zip(whole, aggregated.labels, strict=True):
            result.setdefault(case_id, {})[metric] = float(label)
    return result


def _parse_thresholds(
    texts: Iterable[str], path: Path, lines: Mapping[tuple[Any, ...], int], at: tuple[Any, ...]
) -> list[MetricThreshold]:
    parsed = []
    for index, text in enumerate(texts):
        try:
            threshold = parse_threshold(text)
        except ExpressionError as exc:
            raise SuiteError(
                str(exc), path=path, line=line_for(lines, (*at, index)), field=_loc_text((*at, index))
            ) from None
        parsed.append(replace(threshold, line=line_for(lines, (*at, index))))
    return parsed


def _missing(path: Path) -> str:
    """Why a side file that is not a regular file can't be read (for its error message)."""
    if path.is_dir():
        return "is a directory, not a file"
    return "is not a regular file (a FIFO, socket or device)" if path.exists() else "not found"


def target_search_paths(suite_path: Path) -> list[Path]:
    """Where a suite's ``module:function`` target is looked for besides ``sys.path``."""
    return [suite_path.parent.resolve(), Path.cwd()]


CaseSource = tuple[CaseConfig, Path, int | None, int | None]
"""A case's config, the file it came from, its line there, and its index in the inline list."""


def build_suite(path: Path, registry: Registry, *, document: LocatedDocument | None = None) -> Suite:
    """Load and validate the suite at ``path``: schema -> side files -> cases -> checks -> Suite.

    Each step raises its own located :class:`SuiteError`; they run in the order of the
    module docstring, so a file with several problems always reports the same one first.
    """
    doc, config = _read_suite(path, document)
    judge = _resolved_judge(config, path, doc)
    sources = _case_sources(config, path, doc)
    outputs, target = _outputs(config, registry, path, doc)
    rubrics = {name: _rubric_from_config(name, rubric_config) for name, rubric_config in config.rubrics.items()}
    suite_thresholds = _parse_thresholds(config.assert_, path, doc.lines, ("assert",))
    labelled = _labelled(config, path, doc, sources)
    cases = _cases(config, path, doc, sources, outputs, target, suite_thresholds, labelled)
    aggregates = _aggregates(config, path, doc, cases)
    kinds = _metric_kinds(config, registry, path, cases, suite_thresholds, aggregates, rubrics)
    for check in aggregates:
        _check_pass_k(check, cases, kinds.get(check.spec.metric), judge.repeats, path)
    _check_scales(aggregates, kinds, rubrics, path, doc)
    if "rubric" in kinds.values() or "judged" in kinds.values():
        try:
            registry.provider(config.judge.provider)
        except LLMJudgeError as exc:
            raise SuiteError(
                str(exc), path=path, line=line_for(doc.lines, ("judge", "provider")), field="judge.provider"
            ) from None
    _check_on_scale(cases, labelled, rubrics)
    if config.regression is not None and config.regression.per_group:
        regression_fields = config.regression.group_by or config.group_by
        _check_group_names(
            config.regression.per_group,
            {case.group(regression_fields) for case in cases},
            path,
            doc.lines,
            ("regression", "per_group"),
        )
    _check_calibration_metrics(judge, kinds, path, doc)

    base_dir = path.parent
    return Suite(
        name=config.suite,
        path=path,
        cases=tuple(cases),
        judge=judge,
        rubrics=rubrics,
        metric_kinds=kinds,
        metric_options={name: dict(options) for name, options in config.metric_options.items()},
        aggregates=tuple(aggregates),
        task=config.task,
        description=config.description,
        output_target=target,
        target_timeout=config.outputs.timeout if config.outputs is not None else None,
        regression=config.regression,
        group_by=tuple(config.group_by),
        sequential=_sequential(config.sequential),
        tags=tuple(config.tags),
        sources=tuple(dict.fromkeys(base_dir / entry.path for entry in _cases_files(config)))
        + ((base_dir / config.outputs.file,) if config.outputs is not None and config.outputs.file else ()),
    )


# -- the steps of build_suite, in order ------------------------------------------------------


def _read_suite(path: Path, document: LocatedDocument | None) -> tuple[LocatedDocument, SuiteConfig]:
    """The YAML (with line numbers) and its validated schema."""
    doc = document or load_yaml(path)
    if not isinstance(doc.data, dict):
        raise SuiteError("a suite file must be a YAML mapping with a 'suite:' key", path=path, line=1)
    try:
        return doc, SuiteConfig.model_validate(doc.data)
    except ValidationError as exc:
        # Without 'suite:' the file was collected as suite-like (suite/sniff.py): a misspelt
        # key ('suit:') is then the real problem, not the missing one.
        raise validation_error(exc, path, doc.lines, doc.data, unknown_fields_first="suite" not in doc.data) from None


def _resolved_judge(config: SuiteConfig, path: Path, doc: LocatedDocument) -> schema.JudgeConfig:
    """The judge, its calibration set (if any) resolved relative to the suite file and present."""
    judge = config.judge
    if judge.calibration is None:
        return judge
    calibration_path = (path.parent / judge.calibration).resolve()
    if not calibration_path.is_file():
        what = "is a directory, not a calibration set file" if calibration_path.is_dir() else _missing(calibration_path)
        raise SuiteError(
            f"calibration set {what}: {calibration_path}",
            path=path,
            line=line_for(doc.lines, ("judge", "calibration")),
            field="judge.calibration",
            hint="judge.calibration is resolved relative to the suite file",
        )
    return judge.model_copy(update={"calibration": str(calibration_path)})


def _case_sources(config: SuiteConfig, path: Path, doc: LocatedDocument) -> list[CaseSource]:
    """Every case, inline then from each ``cases_file`` (sampled if asked), validated and located."""
    sources: list[CaseSource] = [
        (case, path, line_for(doc.lines, ("cases", index)), index) for index, case in enumerate(config.cases)
    ]
    for index, entry in enumerate(_cases_files(config)):
        at = ("cases_file",) if not isinstance(config.cases_file, list) else ("cases_file", index)
        cases_path = path.parent / entry.path
        if not cases_path.is_file() and not is_hf_dataset(cases_path, entry.path, entry.format):
            raise SuiteError(
                f"cases file {_missing(cases_path)}: {cases_path}",
                path=path,
                line=line_for(doc.lines, at),
                field=_loc_text(at),
                hint="cases_file is resolved relative to the suite file",
            )
        records = _source_records(cases_path, entry)
        if entry.sample is not None:
            records = _stratified_sample(list(records), entry.sample, entry.seed)
        for number, record in records:
            if not entry.human:
                record.pop("human", None)
            try:
                sources.append((CaseConfig.model_validate(record), cases_path, number, None))
            except ValidationError as exc:
                raise validation_error(exc, cases_path, {(): number}, record, root=CaseConfig) from None
    return sources


def _outputs(
    config: SuiteConfig, registry: Registry, path: Path, doc: LocatedDocument
) -> tuple[dict[str, str], str | None]:
    """The outputs file's outputs by case id, or the output target's name (checked to resolve)."""
    outputs: dict[str, str] = {}
    if config.outputs is None:
        return outputs, None
    if config.outputs.file is not None:
        outputs_path = path.parent / config.outputs.file
        if not outputs_path.is_file():
            raise SuiteError(
                f"outputs file {_missing(outputs_path)}: {outputs_path}",
                path=path,
                line=line_for(doc.lines, ("outputs", "file")),
                field="outputs.file",
                hint="outputs.file is resolved relative to the suite file",
            )
        for number, record in iter_jsonl(outputs_path):
            if not isinstance(record.get("id"), str) or not isinstance(record.get("output"), str):
                raise SuiteError("each outputs line needs string 'id' and 'output'", path=outputs_path, line=number)
            outputs[normalized(record["id"])] = record["output"]  # matched as case ids are: in NFC
        return outputs, None
    target = config.outputs.target
    assert target is not None
    try:
        registry.target(target, target_search_paths(path))
    except LLMJudgeError as exc:
        raise SuiteError(
            str(exc),
            path=path,
            line=line_for(doc.lines, ("outputs", "target")),
            field="outputs.target",
            hint="use 'module:function' (importable, or a module next to the suite) or a registered target name",
        ) from None
    return outputs, target


def _labelled(
    config: SuiteConfig, path: Path, doc: LocatedDocument, sources: Sequence[CaseSource]
) -> dict[str, dict[str, Any]]:
    """case id -> metric -> human labels, from the cases and the labels files (each given once)."""
    labelled = {case_config.id: dict(case_config.human) for case_config, *_ in sources if case_config.human}
    for metric_labels in _label_files(config, path, doc.lines, {case_config.id for case_config, *_ in sources}):
        case_id, metric, labels, origin = metric_labels
        given = labelled.setdefault(case_id, {})
        if metric in given:
            raise SuiteError(
                f"case {case_id!r} has {metric} labels twice (on the case, or twice in the labels files)",
                path=origin[0],
                line=origin[1],
                field="human_labels",
            )
        given[metric] = labels
    return labelled


def _cases(
    config: SuiteConfig,
    path: Path,
    doc: LocatedDocument,
    sources: Sequence[CaseSource],
    outputs: Mapping[str, str],
    target: str | None,
    suite_thresholds: list[MetricThreshold],
    labelled: Mapping[str, Mapping[str, Any]],
) -> list[Case]:
    """The cases of the suite's languages: ids unique, each with an output (or a target), its
    thresholds (the suite's, then its own) and its aggregated human labels."""
    human_labels = aggregate_human_labels(list(labelled.items()))
    cases: list[Case] = []
    seen: dict[str, tuple[Path, int | None]] = {}
    for case_config, source, line, inline_index in sources:
        if config.languages is not None and case_config.language not in config.languages:
            continue
        if case_config.id in seen:
            first_path, first_line = seen[case_config.id]
            raise SuiteError(
                f"duplicate case id {case_config.id!r} (first defined at {first_path}:{first_line})",
                path=source,
                line=line,
                field="id",
                hint=None
                if case_config.id.isascii()
                else "case ids are compared in Unicode NFC (docs/suite-format.md)",
            )
        seen[case_config.id] = (source, line)
        output = case_config.output if case_config.output is not None else outputs.get(case_config.id)
        messages, output, case_input = _conversation(case_config, output, source, line)
        if output is None and target is None:
            raise SuiteError(
                f"case {case_config.id!r} has no output",
                path=source,
                line=line,
                hint="give it an 'output', list it in outputs.file, or set outputs.target",
            )
        if inline_index is not None:
            own = _parse_thresholds(case_config.assert_, path, doc.lines, ("cases", inline_index, "assert"))
        else:
            own = _parse_thresholds(case_config.assert_, source, {(): line} if line else {}, ("assert",))
        context = case_config.context
        cases.append(
            Case(
                suite=config.suite,
                id=case_config.id,
                language=case_config.language,
                input=case_input,
                output=output,
                reference=case_config.reference,
                context=(context,) if isinstance(context, str) else tuple(context or ()),
                messages=messages,
                metadata=dict(case_config.metadata),
                recorded=_recorded(case_config.recorded, config.judge.repeat_aggregate),
                thresholds=tuple(suite_thresholds + own),
                human=human_labels.get(case_config.id, {}),
                path=source,
                line=line,
                tags=tuple(dict.fromkeys([*config.tags, *case_config.tags])),
            )
        )
    if not cases:
        raise SuiteError(
            "no cases left after the language filter" if config.languages is not None else "the suite has no cases",
            path=path,
            line=line_for(doc.lines, ("languages",)) or 1,
        )
    return cases


def _aggregates(config: SuiteConfig, path: Path, doc: LocatedDocument, cases: Sequence[Case]) -> list[AggregateCheck]:
    """The ``aggregate:`` checks, parsed, their groups and xfail rows checked against the cases."""
    aggregates: list[AggregateCheck] = []
    for index, aggregate_entry in enumerate(config.aggregate):
        at = ("aggregate", index)
        aggregate_config = (
            aggregate_entry if isinstance(aggregate_entry, AggregateConfig) else AggregateConfig(expr=aggregate_entry)
        )
        try:
            spec = parse_aggregate(aggregate_config.expr)
            overrides = {
                language: parse_override(value, spec.op) for language, value in aggregate_config.per_language.items()
            }
            group_overrides = {
                group: parse_override(value, spec.op) for group, value in aggregate_config.per_group.items()
            }
        except ExpressionError as exc:
            raise SuiteError(str(exc), path=path, line=line_for(doc.lines, at), field=_loc_text(at)) from None
        check = AggregateCheck(
            spec=spec,
            overrides=overrides,
            min_cases=aggregate_config.min_cases,
            max_unscored_rate=aggregate_config.max_unscored_rate,
            line=line_for(doc.lines, at),
            group_by=tuple(aggregate_config.group_by or config.group_by),
            group_overrides=group_overrides,
            min_labels=aggregate_config.min_labels,
            xfail=dict(aggregate_config.xfail),
            scale=None
            if aggregate_config.scale is None
            else (float(aggregate_config.scale[0]), float(aggregate_config.scale[1])),
            family=aggregate_config.family,
        )
        if check.family is not None and not check.joinable:
            raise SuiteError(
                f"family: release needs a bound check on a mean, lower(mean(m)) >= t or upper(mean(m)) <= t; "
                f"{aggregate_config.expr!r} has no p-value to correct",
                path=path,
                line=line_for(doc.lines, (*at, "family")) or line_for(doc.lines, at),
                field=f"{_loc_text(at)}.family",
            )
        _check_group_names(group_overrides, check.groups(cases), path, doc.lines, (*at, "per_group"))
        known_rows = {group.name for group in check.groups(cases)} | {case.language for case in cases} | {"all"}
        unknown_rows = sorted(set(check.xfail) - known_rows)
        if unknown_rows:
            raise SuiteError(
                f"xfail names {', '.join(map(repr, unknown_rows))}, not a group, language or 'all' of this suite",
                path=path,
                line=line_for(doc.lines, (*at, "xfail")),
                field=f"{_loc_text(at)}.xfail",
            )
        aggregates.append(check)
    return aggregates


def _metric_kinds(
    config: SuiteConfig,
    registry: Registry,
    path: Path,
    cases: Sequence[Case],
    suite_thresholds: Sequence[MetricThreshold],
    aggregates: Sequence[AggregateCheck],
    rubrics: dict[str, Rubric],
) -> dict[str, MetricKind]:
    """What each metric named anywhere is (rubric, judged, metric, recorded), located at its
    first use; a name that is none of them is an error. Rubrics named by alias join ``rubrics``."""
    used: dict[str, tuple[Path, int | None]] = {}
    for threshold in suite_thresholds:
        used.setdefault(threshold.metric, (path, threshold.line))
    for case in cases:
        for threshold in case.thresholds[len(suite_thresholds) :]:
            used.setdefault(threshold.metric, (case.path, threshold.line or case.line))
    for check in aggregates:
        used.setdefault(check.spec.metric, (path, check.line))
    recorded_names = {name for case in cases for name in case.recorded}
    kinds: dict[str, MetricKind] = {}
    for name, (where, line) in used.items():
        rubric = rubrics.get(name) or registry.rubric(name)
        if rubric is not None:
            # An alias (``la``) names its rubric in prompts and results the way the suite does.
            rubrics[name] = rubric if rubric.name == name else replace(rubric, name=name)
            kinds[name] = "rubric"
        elif name in JUDGED_METRICS:
            kinds[name] = "judged"
        elif registry.has_metric(name):
            try:
                resolve_metric(name, config.metric_options.get(name), registry.metrics)
            except MissingDependencyError as exc:
                raise SuiteError(str(exc), path=where, line=line, field=name) from None
            except (MetricError, LLMJudgeError) as exc:
                raise SuiteError(str(exc), path=where, line=line, field=name) from None
            kinds[name] = "metric"
        elif name in recorded_names:
            kinds[name] = "recorded"
        else:
            close = difflib.get_close_matches(name, registry.known_names() + list(rubrics) + list(JUDGED_METRICS), n=1)
            raise SuiteError(
                f"threshold on undefined metric {name!r}",
                path=where,
                line=line,
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + "define it under 'rubrics:', use a built-in rubric or metric, or record scores for it",
            )
    return kinds


def _check_scales(
    aggregates: Sequence[AggregateCheck],
    kinds: Mapping[str, MetricKind],
    rubrics: Mapping[str, Rubric],
    path: Path,
    doc: LocatedDocument,
) -> None:
    """An aggregate's ``scale`` is one per metric, and only for metrics without a known one."""
    declared: dict[str, tuple[float, float]] = {}
    for index, check in enumerate(aggregates):
        if check.scale is not None and declared.setdefault(check.spec.metric, check.scale) != check.scale:
            raise SuiteError(
                f"{check.spec.metric} is given two scales, {list(declared[check.spec.metric])} and {list(check.scale)}",
                path=path,
                line=line_for(doc.lines, ("aggregate", index, "scale")) or check.line,
                field=_loc_text(("aggregate", index, "scale")),
            )
        known = rubrics[check.spec.metric].scale if kinds.get(check.spec.metric) == "rubric" else None
        if check.scale is not None and (
            known
            or (kinds.get(check.spec.metric) == "metric" and reference_scale(check.spec.metric))
            or kinds.get(check.spec.metric) == "judged"
        ):
            raise SuiteError(
                f"{check.spec.metric} has a known scale; 'scale' is for metrics without one (scores recorded under a free name)",
                path=path,
                line=line_for(doc.lines, ("aggregate", index, "scale")) or check.line,
                field=_loc_text(("aggregate", index, "scale")),
            )


def _check_on_scale(
    cases: Sequence[Case], labelled: Mapping[str, Mapping[str, Any]], rubrics: Mapping[str, Rubric]
) -> None:
    """Human labels and recorded scores of rubric metrics lie on the rubric's scale."""
    for case in cases:
        for name, given_labels in labelled.get(case.id, {}).items():
            rubric = rubrics.get(name)
            raw = list(given_labels.values()) if isinstance(given_labels, dict) else list(given_labels)
            off = [label for label in raw if rubric is not None and not _on_scale(label, rubric.scale)]
            if rubric is not None and off:
                raise SuiteError(
                    f"human {name} label {off[0]:g} of case {case.id!r} is not on the scale {list(rubric.scale)}",
                    path=case.path,
                    line=case.line,
                    field=f"human.{name}",
                )
        for name, value in case.recorded.items():
            rubric = rubrics.get(name)
            scale = rubric.scale if rubric is not None else None
            off_samples = [s for s in value.samples if scale is not None and s is not None and s not in scale]
            if off_samples:
                raise SuiteError(
                    f"recorded {name} sample {off_samples[0]:g} of case {case.id!r} is not on the scale {list(scale or ())}",
                    path=case.path,
                    line=case.line,
                    field=f"recorded.{name}.samples",
                )
            # A mean of samples lies between scale points; the samples themselves were checked above.
            if rubric is not None and value.score is not None and value.score not in rubric.scale and not value.samples:
                raise SuiteError(
                    f"recorded {name} score {value.score:g} of case {case.id!r} is not on the scale {list(rubric.scale)}",
                    path=case.path,
                    line=case.line,
                    field=f"recorded.{name}",
                )


def _check_calibration_metrics(
    judge: schema.JudgeConfig, kinds: Mapping[str, MetricKind], path: Path, doc: LocatedDocument
) -> None:
    """Each metric the judge's calibration covers is one the judge scores in this suite."""
    covered_at: tuple[str, ...] = ("judge", "calibration_metrics")
    if covered_at not in doc.lines:
        covered_at = ("judge", "calibration", "metrics")
    for index, metric in enumerate(judge.calibration_metrics or ()):
        if kinds.get(metric) != "rubric":
            judged = sorted(name for name, kind in kinds.items() if kind == "rubric")
            close = difflib.get_close_matches(metric, judged, n=1)
            raise SuiteError(
                f"calibration covers {metric!r}, which no assertion of this suite has the judge score",
                path=path,
                line=line_for(doc.lines, (*covered_at, index)),
                field=_loc_text(covered_at),
                hint=f"did you mean {close[0]!r}?" if close else f"judge-scored metrics: {', '.join(judged) or 'none'}",
            )


def _check_pass_k(
    check: AggregateCheck, cases: Sequence[Case], kind: MetricKind | None, repeats: int, path: Path
) -> None:
    """``pass_at_k(..., k=N)`` with N above what the cases will have is an error when the suite
    loads, before any judge call: a judged case has ``judge.repeats`` samples, a computed
    metric one, a recorded score one (its ``samples``, if recorded, as many as listed)."""
    k = check.spec.k
    if k is None or check.spec.stat not in PASS_K_STATS:
        return
    for case in cases:
        recorded = case.recorded.get(check.spec.metric)
        if recorded is not None:
            n = max(1, len(recorded.samples))
        else:
            n = repeats if kind == "rubric" else 1
        if k > n:
            where = (
                "judge.repeats"
                if recorded is None and kind == "rubric"
                else ("its recorded samples" if recorded is not None and recorded.samples else "one score")
            )
            raise SuiteError(
                f"{check.spec.label} needs k = {k} samples per case; case {case.id!r} has {n} ({where})",
                path=path,
                line=check.line,
                hint="set judge.repeats (or record samples) to at least k, or lower k",
            )


def _conversation(
    case: CaseConfig, output: str | None, source: Path, line: int | None
) -> tuple[tuple[Message, ...], str | None, str | None]:
    """A case's conversation so far, its output under test and its input.

    Without an output given (inline or in ``outputs.file``), a last assistant turn is the
    output under test and leaves the conversation; otherwise the output (or the target's)
    answers every turn. The input, when not given, is the last user turn of what is left,
    so rubrics written for one-turn cases rate the last reply against the last request.
    """
    if case.messages is None:
        return (), output, case.input
    if not case.messages:
        raise SuiteError(
            f"case {case.id!r} has an empty 'messages' list",
            path=source,
            line=line,
            field="messages",
            hint="give at least one turn, or drop 'messages'",
        )
    turns = [Message(turn.role, turn.content) for turn in case.messages]
    if output is None and turns[-1].role == "assistant":
        output = turns.pop().content
    case_input = case.input
    if case_input is None:
        case_input = next((turn.content for turn in reversed(turns) if turn.role == "user"), None)
    return tuple(turns), output, case_input


def _sequential(setting: bool | SequentialConfig | None) -> tuple[bool, int | None, int | None] | None:
    """A suite's ``sequential:`` as (on, round, seed); None when the suite leaves it to the run."""
    if setting is None:
        return None
    if isinstance(setting, bool):
        return (setting, None, None)
    return (True, setting.round, setting.seed)


def _check_group_names(
    named: Iterable[str], groups: Iterable[Group], path: Path, lines: Mapping[Any, int], at: tuple[Any, ...]
) -> None:
    """A ``per_group`` key that names no group of the cases is an error: a typo must not silently do nothing."""
    known = sorted(group.name for group in groups)
    for name in named:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            raise SuiteError(
                f"no case is in group {name!r}; the groups are: {', '.join(known)}",
                path=path,
                line=line_for(lines, (*at, name)),
                field=_loc_text((*at, name)),
                hint=f"did you mean {close[0]!r}?" if close else None,
            )
