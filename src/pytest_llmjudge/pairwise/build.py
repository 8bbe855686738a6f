"""Ranking files -> :class:`~pytest_llmjudge.pairwise.ranking.Ranking`, with located errors.

Reads the YAML (``suite.loader``, keeping every key's line), validates it against
``pairwise.schema``, then reads the systems' outputs and the recorded verdicts from the
files it names (JSONL or YAML records, fields by dotted path, filtered by ``where``).
Verdict labels ``a``/``b``/``tie`` (and ``c``/``draw`` for a tie) are read case-blind; a
source of several annotators is combined by strict majority
(:func:`~pytest_llmjudge.pairwise.leaderboard.majority_verdict`). Every error is a
:class:`~pytest_llmjudge.errors.SuiteError` naming the file, line and field.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.pairwise.assertions import parse_assertion
from pytest_llmjudge.pairwise.cases import RankedCase
from pytest_llmjudge.pairwise.leaderboard import majority_verdict
from pytest_llmjudge.pairwise.pairwise_judge import (
    Outcome,
)
from pytest_llmjudge.pairwise.ranking import Ranking, RankingAssertion, RecordedBattle
from pytest_llmjudge.pairwise.schema import (
    LIVE_SOURCE,
    RankingAssertConfig,
    RankingCaseConfig,
    RankingConfig,
    VerdictSourceConfig,
)
from pytest_llmjudge.suite.build import validation_error
from pytest_llmjudge.suite.loader import LocatedDocument, iter_jsonl, line_for, load_yaml

_VERDICTS: dict[str, Outcome] = {"a": "A", "b": "B", "tie": "tie", "c": "tie", "draw": "tie"}


def _get(record: Mapping[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _outcome(raw: Any) -> Outcome | None | str:
    """A verdict label, None for no verdict, or the raw text when it is not a verdict."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return _VERDICTS.get(raw.strip().lower(), raw)
    return str(raw)


def _paths(entries: str | list[str]) -> list[str]:
    return [entries] if isinstance(entries, str) else list(entries)


def load_ranking(path: Path) -> Ranking:
    """Load and validate the ranking file at ``path``: schema -> cases -> verdicts -> assertions -> Ranking.

    Each step raises its own located :class:`SuiteError`, in the order written here.
    """
    doc, config = _read_ranking(path)
    languages_wanted = set(config.languages) if config.languages is not None else None
    cases = _ranked_cases(config, path, doc, languages_wanted)
    verdicts = _recorded_verdicts(config, path, languages_wanted)
    battles, reversed_pairs = verdicts.battles, _reversed_pairs(verdicts.reversed_records)
    if config.systems is not None:
        wanted = set(config.systems)
        battles = [b for b in battles if b.system_a in wanted and b.system_b in wanted]
        reversed_pairs = [(x, y) for x, y in reversed_pairs if x.system_a in wanted and x.system_b in wanted]

    recorded = verdicts.recorded
    sources_all = tuple(recorded + ([LIVE_SOURCE] if config.judge is not None else []))
    primary = config.primary or (LIVE_SOURCE if config.judge is not None else recorded[0])
    if primary not in sources_all:
        raise SuiteError(
            f"primary source {primary!r} is not one of {', '.join(sources_all)}",
            path=path,
            line=line_for(doc.lines, ("primary",)),
            field="primary",
        )
    languages = sorted(
        {c.language for c in cases if config.judge is not None or config.surrogate is not None}
        | {b.language for b in battles}
    )
    if not languages:
        raise SuiteError("the ranking has nothing to rank (no cases or verdicts left)", path=path, line=1)
    assertions = _assertions(config, path, doc, sources_all, recorded)
    if config.surrogate is not None and config.surrogate.source not in (None, *sources_all):
        raise SuiteError(
            f"surrogate source {config.surrogate.source!r} is not one of {', '.join(sources_all)}",
            path=path,
            line=line_for(doc.lines, ("surrogate", "source")),
            field="surrogate.source",
        )
    return Ranking(
        name=config.ranking,
        path=path,
        cases=cases,
        battles=tuple(battles),
        sources=sources_all,
        recorded_sources=tuple(recorded),
        majority_sources=frozenset(verdicts.majority),
        primary=primary,
        assertions=tuple(assertions),
        bootstrap=config.bootstrap,
        pairwise=config.pairwise,
        prior=config.prior,
        judge=config.judge,
        systems=tuple(config.systems) if config.systems is not None else None,
        languages=tuple(languages),
        surrogate=config.surrogate,
        task=config.task,
        description=config.description,
        reversed_pairs=tuple(reversed_pairs),
    )


# -- the steps of load_ranking, in order ------------------------------------------------------


def _read_ranking(path: Path) -> tuple[LocatedDocument, RankingConfig]:
    """The YAML (with line numbers) and its validated schema."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise SuiteError("a ranking file must be a YAML mapping with a 'ranking:' key", path=path, line=1)
    try:
        return doc, RankingConfig.model_validate(doc.data)
    except ValidationError as exc:
        raise validation_error(exc, path, doc.lines, doc.data, root=RankingConfig) from None


def _keep(wanted: set[str] | None, language: str) -> bool:
    return wanted is None or language in wanted


def _ranked_cases(
    config: RankingConfig, path: Path, doc: LocatedDocument, languages: set[str] | None
) -> tuple[RankedCase, ...]:
    """The systems' outputs: wide cases (inline, ``cases_file``) and long ``responses``, merged
    per (language, case), in that order."""
    base = path.parent
    merged: dict[tuple[str, str], dict[str, Any]] = {}

    def add_case(language: str, case_id: str, **parts: Any) -> dict[str, Any]:
        entry = merged.setdefault(
            (language, case_id),
            {"outputs": {}, "features": defaultdict(dict), "input": None, "reference": None, "context": ()},
        )
        for key in ("input", "reference"):
            if entry[key] is None and parts.get(key):
                entry[key] = parts[key]
        if parts.get("context"):
            entry["context"] = parts["context"]
        return entry

    wide = [(case, path, line_for(doc.lines, ("cases", i))) for i, case in enumerate(config.cases)]
    for name in _paths(config.cases_file) if config.cases_file is not None else []:
        for number, record in iter_jsonl(base / name):
            try:
                wide.append((RankingCaseConfig.model_validate(record), base / name, number))
            except ValidationError as exc:
                raise validation_error(exc, base / name, {(): number}, record, root=RankingCaseConfig) from None
    for case_config, _, _ in wide:
        if not _keep(languages, case_config.language):
            continue
        context = case_config.context
        entry = add_case(
            case_config.language,
            case_config.id,
            input=case_config.input,
            reference=case_config.reference,
            context=(context,) if isinstance(context, str) else tuple(context or ()),
        )
        entry["outputs"].update(case_config.outputs)
        for system, values in case_config.features.items():
            entry["features"][system].update(values)
    if config.responses is not None:
        spec = config.responses
        for name in _paths(spec.path):
            for number, record in iter_jsonl(base / name):
                if any(_get(record, key) != value for key, value in spec.where.items()):
                    continue
                case_id, system = _get(record, spec.case), _get(record, spec.system)
                language, output = _get(record, spec.language), _get(record, spec.output)
                if not all(isinstance(v, str) for v in (case_id, system, language, output)):
                    raise SuiteError(
                        f"each response needs string fields {spec.case!r}, {spec.system!r}, {spec.language!r} "
                        f"and {spec.output!r}",
                        path=base / name,
                        line=number,
                    )
                if not _keep(languages, language):
                    continue
                entry = add_case(
                    language,
                    case_id,
                    input=_get(record, spec.input) if spec.input else None,
                    reference=_get(record, spec.reference) if spec.reference else None,
                )
                entry["outputs"][system] = output
                for feature, dotted in spec.features.items():
                    value = _get(record, dotted)
                    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                        entry["features"][system][feature] = float(value)
    return tuple(
        RankedCase(
            id=case_id,
            language=language,
            outputs=dict(entry["outputs"]),
            input=entry["input"],
            reference=entry["reference"],
            context=tuple(entry["context"]),
            features={system: dict(values) for system, values in entry["features"].items()},
        )
        for (language, case_id), entry in sorted(merged.items())
    )


@dataclass
class _Verdicts:
    """What the ``verdicts:`` files recorded."""

    battles: list[RecordedBattle] = field(default_factory=list)
    reversed_records: dict[tuple[str, str], list[tuple[RecordedBattle, Path, int]]] = field(default_factory=dict)
    """(language, pair id) -> the records of one battle shown in both orders."""
    recorded: list[str] = field(default_factory=list)
    """The recorded sources, in the order the file names them."""
    majority: set[str] = field(default_factory=set)
    """The sources combined from several annotators by majority."""


def _recorded_verdicts(config: RankingConfig, path: Path, languages: set[str] | None) -> _Verdicts:
    """The recorded battles, each with one verdict per source (a majority source's votes too)."""
    found = _Verdicts()
    if config.verdicts is None:
        return found
    spec_v = config.verdicts
    sources = {
        name: (raw if isinstance(raw, VerdictSourceConfig) else VerdictSourceConfig(field=raw))
        for name, raw in spec_v.sources.items()
    }
    found.recorded = list(sources)
    found.majority = {name for name, spec_s in sources.items() if spec_s.combine == "majority"}
    for name in _paths(spec_v.path):
        file = path.parent / name
        for number, record in iter_jsonl(file):
            if any(_get(record, key) != value for key, value in spec_v.where.items()):
                continue
            case_id, first, second = (_get(record, k) for k in (spec_v.case, spec_v.system_a, spec_v.system_b))
            language = _get(record, spec_v.language)
            if not all(isinstance(v, str) for v in (case_id, first, second, language)):
                raise SuiteError(
                    f"each verdict record needs string fields {spec_v.case!r}, {spec_v.system_a!r}, "
                    f"{spec_v.system_b!r} and {spec_v.language!r}",
                    path=file,
                    line=number,
                )
            if not _keep(languages, language) or first == second:
                continue
            verdicts, votes = _record_verdicts(record, sources, file, number)
            battle_id = _get(record, spec_v.id) if spec_v.id else None
            pair = _get(record, spec_v.reversed_pair) if spec_v.reversed_pair else None
            recorded_battle = RecordedBattle(
                index=len(found.battles),
                case=case_id,
                language=language,
                system_a=first,
                system_b=second,
                verdicts=verdicts,
                votes=votes,
                battle_id=str(battle_id) if battle_id is not None else None,
            )
            if pair is not None:
                found.reversed_records.setdefault((language, str(pair)), []).append((recorded_battle, file, number))
            else:
                found.battles.append(recorded_battle)
    return found


def _record_verdicts(
    record: Mapping[str, Any], sources: Mapping[str, VerdictSourceConfig], file: Path, number: int
) -> tuple[dict[str, Outcome | None], dict[str, tuple[Outcome, ...]]]:
    """One verdict record's verdict per source, and the annotators' votes of majority sources."""
    verdicts: dict[str, Outcome | None] = {}
    votes: dict[str, tuple[Outcome, ...]] = {}
    for source_name, source_config in sources.items():
        raw = _get(record, source_config.field)
        if source_config.combine == "majority":
            if raw is None:
                verdicts[source_name] = None
                continue
            if not isinstance(raw, Mapping):
                raise SuiteError(
                    f"source {source_name!r}: field {source_config.field!r} must map annotators to verdicts",
                    path=file,
                    line=number,
                )
            labels = [_outcome(v) for v in raw.values()]
            bad = [v for v in labels if v not in ("A", "B", "tie")]
            if bad:
                raise SuiteError(
                    f"source {source_name!r}: verdict {bad[0]!r} is not A, B or tie", path=file, line=number
                )
            cast_votes = tuple(v for v in labels if v in ("A", "B", "tie"))
            votes[source_name] = cast_votes  # type: ignore[assignment]
            verdicts[source_name] = majority_verdict(cast_votes)  # type: ignore[arg-type]
        else:
            label = _outcome(raw)
            if label is not None and label not in ("A", "B", "tie"):
                raise SuiteError(
                    f"source {source_name!r}: verdict {label!r} is not A, B or tie", path=file, line=number
                )
            verdicts[source_name] = label  # type: ignore[assignment]
    return verdicts, votes


def _reversed_pairs(
    reversed_records: Mapping[tuple[str, str], list[tuple[RecordedBattle, Path, int]]],
) -> list[tuple[RecordedBattle, RecordedBattle]]:
    """Each reversed pair's two records (the same case, the systems swapped), in pair-id order."""
    reversed_pairs = []
    for (_, pair_id), members in sorted(reversed_records.items()):
        (one, file, number), *rest = members
        two = rest[0][0] if len(rest) == 1 else None
        if two is None or (two.case, two.system_a, two.system_b) != (one.case, one.system_b, one.system_a):
            raise SuiteError(
                f"reversed pair {pair_id!r} needs exactly two records of the same case with the systems swapped "
                f"(found {len(members)})",
                path=file,
                line=number,
            )
        reversed_pairs.append((one, two))
    return reversed_pairs


def _assertions(
    config: RankingConfig, path: Path, doc: LocatedDocument, sources_all: tuple[str, ...], recorded: list[str]
) -> list[RankingAssertion]:
    """The ``assert:`` checks, parsed, each naming sources and systems the ranking has."""
    assertions: list[RankingAssertion] = []
    for index, raw_assert in enumerate(config.assert_):
        at = ("assert", index)
        assert_config = (
            raw_assert if isinstance(raw_assert, RankingAssertConfig) else RankingAssertConfig(expr=raw_assert)
        )
        line = line_for(doc.lines, at)
        try:
            kind, a, b, op, value = parse_assertion(assert_config.expr)
        except ValueError as exc:
            raise SuiteError(str(exc), path=path, line=line, field=f"assert[{index}]") from None
        source = assert_config.source
        problem = _assertion_problem(config, kind, a, b, source, sources_all, recorded)
        if problem:
            raise SuiteError(problem, path=path, line=line, field=f"assert[{index}]")
        assertions.append(
            RankingAssertion(
                kind=kind,
                op=op,
                value=value,
                text=assert_config.expr,
                a=a,
                b=b,
                source=source,
                languages=tuple(assert_config.languages) if assert_config.languages is not None else None,
                xfail=dict(assert_config.xfail),
                line=line,
            )
        )
    return assertions


def _assertion_problem(
    config: RankingConfig,
    kind: str,
    a: str | None,
    b: str | None,
    source: str | None,
    sources_all: tuple[str, ...],
    recorded: list[str],
) -> str | None:
    """Why a parsed assertion can't be checked on this ranking, or None."""
    problem = None
    if source is not None and source not in sources_all:
        problem = f"source {source!r} is not one of {', '.join(sources_all)}"
    elif kind in ("agreement", "kendall_tau"):
        unknown = [s for s in (a, b) if s not in sources_all]
        if unknown:
            problem = f"{kind} compares verdict sources; {unknown[0]!r} is not one of {', '.join(sources_all)}"
    elif kind == "position_bias" and a is not None:
        if a not in recorded:
            problem = f"position_bias({a}) measures a recorded source; {a!r} is not one of {', '.join(recorded)}"
        elif config.verdicts is None or config.verdicts.reversed_pair is None:
            problem = f"position_bias({a}) needs verdicts.reversed_pair (records shown in both orders)"
    elif kind == "position_bias" and config.judge is None:
        problem = "position_bias needs a live judge (judge:)"
    elif kind == "surrogate_tau" and config.surrogate is None:
        problem = "surrogate_tau needs a surrogate: section"
    elif kind in ("rank", "win_rate") and config.systems is not None:
        unknown = [s for s in (a, b) if s is not None and s not in config.systems]
        if unknown:
            problem = f"system {unknown[0]!r} is not in systems"
    if kind == "win_rate" and a == b:
        problem = "win_rate compares two different systems"
    return problem
