"""Suite file -> validated :class:`~pytest_llmjudge.suite.model.Suite`, or a located error.

Validation order: YAML syntax, schema (pydantic), side files (``cases_file``,
``outputs.file``), threshold expressions, metric names against the registry, recorded
scores against rubric scales. Every problem raises :class:`SuiteError` rendered as
``file:line: field: message`` plus a hint where one helps (a close match for a misspelt
field or metric, the install extra for a missing package).

Degenerate cases: a suite whose language filter leaves no cases is an error (it would pass
vacuously); duplicate case ids are an error (node ids must be unique); a case without an
output is an error unless an output target will produce it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from pytest_llmjudge.errors import LLMJudgeError, MetricError, MissingDependencyError, SuiteError
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.stats.grouping import Group
from pytest_llmjudge.suite import schema
from pytest_llmjudge.suite.expressions import (
    ExpressionError,
    Threshold,
    parse_aggregate,
    parse_override,
    parse_threshold,
)
from pytest_llmjudge.suite.loader import LocatedDocument, iter_jsonl, line_for, load_yaml
from pytest_llmjudge.suite.model import AggregateCheck, Case, MetricKind, RecordedValue, Suite
from pytest_llmjudge.suite.schema import AggregateConfig, CaseConfig, CasesFileConfig, RubricConfig, SuiteConfig
from pytest_llmjudge.suite.tabular import table_format, table_records


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
    fmt = table_format(path, entry.format)
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
    rows = table_records(path, fmt, columns=entry.columns, case_fields=_CASE_FIELDS, encoding=entry.encoding)
    for number, record, _unit in rows:
        if all(_table_matches(record, key, value) for key, value in entry.where.items()):
            yield number, record


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
    )


def _recorded(raw: Mapping[str, Any]) -> dict[str, RecordedValue]:
    values: dict[str, RecordedValue] = {}
    for name, entry in raw.items():
        if isinstance(entry, (int, float)):
            values[name] = RecordedValue(score=float(entry))
        else:
            values[name] = RecordedValue(
                score=None if entry.score is None else float(entry.score),
                justification=entry.justification,
                judge=entry.judge,
            )
    return values


def _parse_thresholds(
    texts: Iterable[str], path: Path, lines: Mapping[tuple[Any, ...], int], at: tuple[Any, ...]
) -> list[Threshold]:
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
    return "is a directory, not a file" if path.is_dir() else "not found"


def target_search_paths(suite_path: Path) -> list[Path]:
    """Where a suite's ``module:function`` target is looked for besides ``sys.path``."""
    return [suite_path.parent.resolve(), Path.cwd()]


def build_suite(path: Path, registry: Registry, *, document: LocatedDocument | None = None) -> Suite:
    """Load and validate the suite at ``path``."""
    doc = document or load_yaml(path)
    if not isinstance(doc.data, dict):
        raise SuiteError("a suite file must be a YAML mapping with a 'suite:' key", path=path, line=1)
    try:
        config = SuiteConfig.model_validate(doc.data)
    except ValidationError as exc:
        # Without 'suite:' the file was collected as suite-like (suite/sniff.py): a misspelt
        # key ('suit:') is then the real problem, not the missing one.
        raise validation_error(exc, path, doc.lines, doc.data, unknown_fields_first="suite" not in doc.data) from None

    base_dir = path.parent
    judge = config.judge
    if judge.calibration is not None:
        calibration_path = (base_dir / judge.calibration).resolve()
        if not calibration_path.is_file():
            what = "is a directory, not a calibration set file" if calibration_path.is_dir() else "not found"
            raise SuiteError(
                f"calibration set {what}: {calibration_path}",
                path=path,
                line=line_for(doc.lines, ("judge", "calibration")),
                field="judge.calibration",
                hint="judge.calibration is resolved relative to the suite file",
            )
        judge = judge.model_copy(update={"calibration": str(calibration_path)})
    # (config, file, line, index in the inline list) for every case, inline or from JSONL.
    case_sources: list[tuple[CaseConfig, Path, int | None, int | None]] = [
        (case, path, line_for(doc.lines, ("cases", index)), index) for index, case in enumerate(config.cases)
    ]
    for index, entry in enumerate(_cases_files(config)):
        at = ("cases_file",) if not isinstance(config.cases_file, list) else ("cases_file", index)
        cases_path = base_dir / entry.path
        if not cases_path.is_file():
            raise SuiteError(
                f"cases file {_missing(cases_path)}: {cases_path}",
                path=path,
                line=line_for(doc.lines, at),
                field=_loc_text(at),
                hint="cases_file is resolved relative to the suite file",
            )
        for number, record in _source_records(cases_path, entry):
            try:
                case_sources.append((CaseConfig.model_validate(record), cases_path, number, None))
            except ValidationError as exc:
                raise validation_error(exc, cases_path, {(): number}, record, root=CaseConfig) from None

    outputs: dict[str, str] = {}
    target: str | None = None
    if config.outputs is not None:
        if config.outputs.file is not None:
            outputs_path = base_dir / config.outputs.file
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
                outputs[record["id"]] = record["output"]
        else:
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

    rubrics: dict[str, Rubric] = {}
    for name, rubric_config in config.rubrics.items():
        rubrics[name] = _rubric_from_config(name, rubric_config)

    suite_thresholds = _parse_thresholds(config.assert_, path, doc.lines, ("assert",))
    cases: list[Case] = []
    seen: dict[str, tuple[Path, int | None]] = {}
    for case_config, source, line, inline_index in case_sources:
        if config.languages is not None and case_config.language not in config.languages:
            continue
        if case_config.id in seen:
            first_path, first_line = seen[case_config.id]
            raise SuiteError(
                f"duplicate case id {case_config.id!r} (first defined at {first_path}:{first_line})",
                path=source,
                line=line,
                field="id",
            )
        seen[case_config.id] = (source, line)
        output = case_config.output if case_config.output is not None else outputs.get(case_config.id)
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
                input=case_config.input,
                output=output,
                reference=case_config.reference,
                context=(context,) if isinstance(context, str) else tuple(context or ()),
                metadata=dict(case_config.metadata),
                recorded=_recorded(case_config.recorded),
                thresholds=tuple(suite_thresholds + own),
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
        )
        _check_group_names(group_overrides, check.groups(cases), path, doc.lines, (*at, "per_group"))
        aggregates.append(check)

    # Every metric named anywhere must be something we can score.
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
        elif registry.has_metric(name):
            try:
                registry.metric(name, config.metric_options.get(name))
            except MissingDependencyError as exc:
                raise SuiteError(str(exc), path=where, line=line, field=name) from None
            except (MetricError, LLMJudgeError) as exc:
                raise SuiteError(str(exc), path=where, line=line, field=name) from None
            kinds[name] = "metric"
        elif name in recorded_names:
            kinds[name] = "recorded"
        else:
            close = difflib.get_close_matches(name, registry.known_names() + list(rubrics), n=1)
            raise SuiteError(
                f"threshold on undefined metric {name!r}",
                path=where,
                line=line,
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + "define it under 'rubrics:', use a built-in rubric or metric, or record scores for it",
            )

    if "rubric" in kinds.values():
        try:
            registry.provider(config.judge.provider)
        except LLMJudgeError as exc:
            raise SuiteError(
                str(exc), path=path, line=line_for(doc.lines, ("judge", "provider")), field="judge.provider"
            ) from None

    for case in cases:
        for name, value in case.recorded.items():
            rubric = rubrics.get(name)
            if rubric is not None and value.score is not None and value.score not in rubric.scale:
                raise SuiteError(
                    f"recorded {name} score {value.score:g} of case {case.id!r} is not on the scale {list(rubric.scale)}",
                    path=case.path,
                    line=case.line,
                    field=f"recorded.{name}",
                )

    if config.regression is not None and config.regression.per_group:
        regression_fields = config.regression.group_by or config.group_by
        _check_group_names(
            config.regression.per_group,
            {case.group(regression_fields) for case in cases},
            path,
            doc.lines,
            ("regression", "per_group"),
        )

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
        tags=tuple(config.tags),
    )


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
