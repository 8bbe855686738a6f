"""Ranking files: systems ranked per language with Bradley-Terry, and the checks asserted on them.

What it is
    A ranking file (``pairwise.schema``) lists several systems' outputs per case and/or
    recorded pairwise verdicts. For every verdict *source* (the live judge ``judge``, or a
    recorded one such as ``gpt4`` or ``human``) and every language, the battles of that
    language are fitted with a Bradley-Terry model, and the fit is bootstrapped over cases
    (MIRAGE-BENCH sec. 4.2-4.3 and 6.2: 200 resampled tournaments, 95% intervals), with
    :func:`~pytest_llmjudge.pairwise.bootstrap.bootstrap_leaderboard` (the statistic of
    ``stats.bradley_terry.bootstrap_rankings``, refitted by Newton's method). A case is a query:
    all its battles are resampled together. Assertions are then checked per language:

    ``rank(S) <= k`` (or ``S ranks <= k``)
        the rank of system S in the point fit, 1 for the strongest (``<= 2``: top two).
    ``win_rate(S, T) >= x`` (or ``S beats T with win rate >= x``)
        the model probability that S beats T, ``sigmoid(theta_S - theta_T)`` (Bradley-Terry,
        Hunter 2004), with its bootstrap interval; the raw head-to-head record is reported.
    ``agreement(P, Q) >= x``
        share of battles where sources P and Q give the same verdict (A, B or tie), over
        the battles where both have one (a source combined by majority has no verdict on a
        battle without a strict majority: PARIKSHA's convention, Watts et al. 2024), with a
        Wilson score interval. When one source is an annotator majority, the annotators'
        own pairwise agreement is reported beside it as the human ceiling.
    ``kendall_tau(P, Q) >= x``
        Kendall's tau-b between the two sources' Bradley-Terry strengths over the systems
        both rank (MIRAGE-BENCH's agreement measure between leaderboards, sec. 6.2, Table 2).
    ``position_bias <= x``
        the live judge's position-bias rate (``pairwise.pairwise_judge``).
    ``surrogate_tau >= x``
        Kendall's tau of the heuristic surrogate on held-out cases (``pairwise.surrogate``).

Degenerate cases, all failing the item rather than passing it: a system named in an
assertion that has no battle in the language; a comparison graph that is disconnected, in
the data or in a bootstrap resample (Bradley-Terry strengths of separate groups share no
scale); no battle with verdicts from both sources; fewer than three common systems for a
Kendall tau. Unjudged live battles (provider failure, unparseable reply) are left out and
counted; a language with any is reported as such, never silently.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.pairwise.cases import Matchup, RankedCase
from pytest_llmjudge.pairwise.pairwise_judge import (
    Battle,
    BattleResult,
    OrderMode,
    Outcome,
    PositionBias,
    position_bias,
    recorded_position_bias,
)
from pytest_llmjudge.pairwise.schema import (
    LIVE_SOURCE,
    BootstrapConfig,
    PairwiseConfig,
    RankingAssertConfig,
    RankingConfig,
    SurrogateConfig,
    VerdictSourceConfig,
)
from pytest_llmjudge.stats.proportion import wilson_interval
from pytest_llmjudge.suite.build import validation_error
from pytest_llmjudge.suite.loader import iter_jsonl, line_for, load_yaml
from pytest_llmjudge.suite.schema import JudgeConfig

CheckKind = Literal["rank", "win_rate", "agreement", "kendall_tau", "position_bias", "surrogate_tau"]

_VERDICTS: dict[str, Outcome] = {"a": "A", "b": "B", "tie": "tie", "c": "tie", "draw": "tie"}
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: math.isclose(a, b),
}
_NAME = r"(?:'[^']+'|\"[^\"]+\"|[^\s,()'\"]+)"
_OP = r"(?P<op>>=|<=|==|>|<)"
_NUM = r"(?P<value>[-+]?(?:\d+(?:\.\d*)?|\.\d+))"
_PATTERNS: tuple[tuple[CheckKind, re.Pattern[str]], ...] = (
    ("rank", re.compile(rf"^rank\(\s*(?P<a>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("rank", re.compile(rf"^(?P<a>{_NAME})\s+ranks\s*{_OP}\s*{_NUM}$")),
    ("win_rate", re.compile(rf"^win_rate\(\s*(?P<a>{_NAME})\s*,\s*(?P<b>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("win_rate", re.compile(rf"^(?P<a>{_NAME})\s+beats\s+(?P<b>{_NAME})\s+with\s+win\s+rate\s*{_OP}\s*{_NUM}$")),
    ("agreement", re.compile(rf"^agreement\(\s*(?P<a>{_NAME})\s*,\s*(?P<b>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("kendall_tau", re.compile(rf"^kendall_tau\(\s*(?P<a>{_NAME})\s*,\s*(?P<b>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("position_bias", re.compile(rf"^position_bias\s*{_OP}\s*{_NUM}$")),
    ("position_bias", re.compile(rf"^position_bias\(\s*(?P<a>{_NAME})\s*\)\s*{_OP}\s*{_NUM}$")),
    ("surrogate_tau", re.compile(rf"^surrogate_tau\s*{_OP}\s*{_NUM}$")),
)


# -- the loaded file ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedBattle:
    """One recorded battle with each source's verdict (from ``system_a``'s side)."""

    index: int
    case: str
    language: str
    system_a: str
    system_b: str
    verdicts: Mapping[str, Outcome | None]
    votes: Mapping[str, tuple[Outcome, ...]] = field(default_factory=dict)
    battle_id: str | None = None


@dataclass(frozen=True)
class RankingAssertion:
    kind: CheckKind
    op: str
    value: float
    text: str
    a: str | None = None
    b: str | None = None
    source: str | None = None
    languages: tuple[str, ...] | None = None
    xfail: Mapping[str, str] = field(default_factory=dict)
    line: int | None = None

    @property
    def label(self) -> str:
        """Compact form for node ids: ``rank(x)<=2``, ``win_rate(x,y)>=0.5``."""
        args = ",".join(v for v in (self.a, self.b) if v is not None)
        head = f"{self.kind}({args})" if args else self.kind
        return f"{head}{self.op}{self.value:g}"

    def holds(self, observed: float) -> bool:
        return _OPS[self.op](observed, self.value)


@dataclass(frozen=True)
class Ranking:
    name: str
    path: Path
    cases: tuple[RankedCase, ...]
    battles: tuple[RecordedBattle, ...]
    sources: tuple[str, ...]
    recorded_sources: tuple[str, ...]
    majority_sources: frozenset[str]
    primary: str
    assertions: tuple[RankingAssertion, ...]
    bootstrap: BootstrapConfig
    pairwise: PairwiseConfig
    prior: float = 0.1
    judge: JudgeConfig | None = None
    systems: tuple[str, ...] | None = None
    languages: tuple[str, ...] = ()
    surrogate: SurrogateConfig | None = None
    task: str | None = None
    description: str | None = None
    reversed_pairs: tuple[tuple[RecordedBattle, RecordedBattle], ...] = ()
    """Recorded battles shown in both orders (``verdicts.reversed_pair``): position bias only."""

    @property
    def live(self) -> bool:
        return self.judge is not None

    def system_order(self, names: Iterable[str]) -> list[str]:
        """``names`` restricted to ``systems`` (in its order) or sorted."""
        present = set(names)
        if self.systems is not None:
            return [s for s in self.systems if s in present]
        return sorted(present)

    def live_battles(self, language: str) -> list[Battle]:
        """Every pair of systems on every case of ``language``, for the live judge."""
        if not self.live:
            return []
        battles = []
        for case in self.cases:
            if case.language != language:
                continue
            systems = self.system_order(case.outputs)
            for first, second in combinations(systems, 2):
                battles.append(
                    Battle(
                        case=case.id,
                        language=language,
                        system_1=first,
                        system_2=second,
                        output_1=case.outputs[first],
                        output_2=case.outputs[second],
                        input=case.input,
                        reference=case.reference,
                        context=case.context,
                    )
                )
        return battles


def _get(record: Mapping[str, Any], dotted: str) -> Any:
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _unquote(name: str) -> str:
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"" else name


def parse_assertion(text: str) -> tuple[CheckKind, str | None, str | None, str, float]:
    """``(kind, a, b, op, value)`` of an assertion, or ValueError naming the accepted forms."""
    stripped = " ".join(text.split())
    for kind, pattern in _PATTERNS:
        match = pattern.match(stripped)
        if match:
            groups = match.groupdict()
            a = _unquote(groups["a"]) if groups.get("a") else None
            b = _unquote(groups["b"]) if groups.get("b") else None
            return kind, a, b, groups["op"], float(groups["value"])
    raise ValueError(
        f"can't read assertion {text!r}; use rank(S) <= k, S ranks <= k, win_rate(S, T) >= x, "
        "S beats T with win rate >= x, agreement(P, Q) >= x, kendall_tau(P, Q) >= x, "
        "position_bias <= x or surrogate_tau >= x"
    )


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
    """Load and validate the ranking file at ``path``; errors are located :class:`SuiteError`."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise SuiteError("a ranking file must be a YAML mapping with a 'ranking:' key", path=path, line=1)
    try:
        config = RankingConfig.model_validate(doc.data)
    except ValidationError as exc:
        raise validation_error(exc, path, doc.lines, doc.data, root=RankingConfig) from None
    base = path.parent
    wanted_languages = set(config.languages) if config.languages is not None else None

    def keep_language(language: str) -> bool:
        return wanted_languages is None or language in wanted_languages

    # Outputs: wide cases (inline, cases_file) and long responses, merged per (language, case).
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
        from pytest_llmjudge.pairwise.schema import RankingCaseConfig

        for number, record in iter_jsonl(base / name):
            try:
                wide.append((RankingCaseConfig.model_validate(record), base / name, number))
            except ValidationError as exc:
                raise validation_error(exc, base / name, {(): number}, record, root=RankingCaseConfig) from None
    for case_config, _, _ in wide:
        if not keep_language(case_config.language):
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
                if not keep_language(language):
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
    cases = tuple(
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

    # Recorded verdicts.
    battles: list[RecordedBattle] = []
    reversed_records: dict[tuple[str, str], list[tuple[RecordedBattle, Path, int]]] = {}
    recorded: list[str] = []
    majority: set[str] = set()
    if config.verdicts is not None:
        spec_v = config.verdicts
        sources = {
            name: (raw if isinstance(raw, VerdictSourceConfig) else VerdictSourceConfig(field=raw))
            for name, raw in spec_v.sources.items()
        }
        recorded = list(sources)
        majority = {name for name, spec_s in sources.items() if spec_s.combine == "majority"}
        for name in _paths(spec_v.path):
            file = base / name
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
                if not keep_language(language) or first == second:
                    continue
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
                battle_id = _get(record, spec_v.id) if spec_v.id else None
                pair = _get(record, spec_v.reversed_pair) if spec_v.reversed_pair else None
                recorded_battle = RecordedBattle(
                    index=len(battles),
                    case=case_id,
                    language=language,
                    system_a=first,
                    system_b=second,
                    verdicts=verdicts,
                    votes=votes,
                    battle_id=str(battle_id) if battle_id is not None else None,
                )
                if pair is not None:
                    reversed_records.setdefault((language, str(pair)), []).append((recorded_battle, file, number))
                else:
                    battles.append(recorded_battle)
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
    if config.systems is not None:
        wanted = set(config.systems)
        battles = [b for b in battles if b.system_a in wanted and b.system_b in wanted]
        reversed_pairs = [(x, y) for x, y in reversed_pairs if x.system_a in wanted and x.system_b in wanted]

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
        majority_sources=frozenset(majority),
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


def majority_verdict(votes: Sequence[Outcome]) -> Outcome | None:
    """The verdict more than half of the annotators gave, or None (PARIKSHA's rule)."""
    if not votes:
        return None
    label, count = Counter(votes).most_common(1)[0]
    return label if 2 * count > len(votes) else None


# -- statistics --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Standing:
    system: str
    rank: int
    strength: float
    ci_low: float
    ci_high: float
    rank_ci_low: int
    rank_ci_high: int
    wins: float
    losses: float
    ties: float
    games: int


@dataclass
class Leaderboard:
    """Bradley-Terry fit of one source in one language, bootstrapped over cases."""

    source: str
    language: str
    systems: tuple[str, ...] = ()
    standings: tuple[Standing, ...] = ()
    n_cases: int = 0
    n_battles: int = 0
    n_unjudged: int = 0
    resamples: int = 0
    confidence: float = 0.95
    seed: int = 0
    error: str | None = None
    strength_samples: np.ndarray[Any, np.dtype[np.float64]] | None = None
    head_to_head: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    unjudged_examples: tuple[str, ...] = ()

    def standing(self, system: str) -> Standing | None:
        return next((s for s in self.standings if s.system == system), None)

    def win_rate(self, a: str, b: str) -> tuple[float, float, float]:
        """Model probability that ``a`` beats ``b`` with its bootstrap percentile interval."""
        from scipy.special import expit

        first, second = self.standing(a), self.standing(b)
        assert first is not None and second is not None and self.strength_samples is not None
        i, j = self.systems.index(a), self.systems.index(b)
        samples = expit(self.strength_samples[:, i] - self.strength_samples[:, j])
        tail = (1 - self.confidence) / 2
        low, high = np.quantile(samples, [tail, 1 - tail])
        return float(expit(first.strength - second.strength)), float(low), float(high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "systems": [
                {
                    "name": s.system,
                    "rank": s.rank,
                    "strength": s.strength,
                    "ci_low": s.ci_low,
                    "ci_high": s.ci_high,
                    "rank_ci": [s.rank_ci_low, s.rank_ci_high],
                    "wins": s.wins,
                    "losses": s.losses,
                    "ties": s.ties,
                    "games": s.games,
                }
                for s in self.standings
            ],
            "n_cases": self.n_cases,
            "n_battles": self.n_battles,
            "n_unjudged": self.n_unjudged,
            "resamples": self.resamples,
            "confidence": self.confidence,
            "seed": self.seed,
            "error": self.error,
        }


def fit_leaderboard(
    source: str,
    language: str,
    by_case: Mapping[str, Sequence[Matchup]],
    *,
    bootstrap: BootstrapConfig,
    prior: float,
    order: Sequence[str] | None = None,
) -> Leaderboard:
    """Bradley-Terry strengths with bootstrap intervals from matchups grouped by case."""
    from pytest_llmjudge.errors import StatisticsError
    from pytest_llmjudge.pairwise.bootstrap import bootstrap_leaderboard

    cases = [case for case in sorted(by_case) if by_case[case]]
    seen = {s for case in cases for m in by_case[case] for s in m[:2]}
    systems = tuple(s for s in order if s in seen) if order is not None else tuple(sorted(seen))
    board = Leaderboard(source, language, systems, n_cases=len(cases), n_battles=sum(len(by_case[c]) for c in cases))
    if len(systems) < 2:
        board.error = f"fewer than two systems have {source} verdicts in {language}"
        return board
    index = {s: i for i, s in enumerate(systems)}
    record: dict[str, list[float]] = {s: [0.0, 0.0, 0.0] for s in systems}
    head: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for case in cases:
        for first, second, outcome in by_case[case]:
            points = {"A": 1.0, "B": 0.0, "tie": 0.5}[outcome]
            for me, other, mine in ((first, second, points), (second, first, 1 - points)):
                record[me][0 if mine == 1 else 1 if mine == 0 else 2] += 1
                head[(me, other)][0] += mine
                head[(me, other)][1] += 1
    matchups = [[(index[a], index[b], outcome) for a, b, outcome in by_case[case]] for case in cases]
    try:
        result = bootstrap_leaderboard(
            matchups, len(systems), bootstrap.resamples, bootstrap.seed, confidence=bootstrap.confidence, prior=prior
        )
    except StatisticsError as exc:
        board.error = str(exc)
        return board
    ranks = result.point.ranks()
    standings = [
        Standing(
            system=s,
            rank=int(ranks[i]),
            strength=float(result.point.strengths[i]),
            ci_low=float(result.strength_ci_low[i]),
            ci_high=float(result.strength_ci_high[i]),
            rank_ci_low=int(result.rank_ci_low[i]),
            rank_ci_high=int(result.rank_ci_high[i]),
            wins=record[s][0],
            losses=record[s][1],
            ties=record[s][2],
            games=int(sum(record[s])),
        )
        for i, s in enumerate(systems)
    ]
    board.standings = tuple(sorted(standings, key=lambda s: (s.rank, s.system)))
    board.resamples, board.confidence, board.seed = result.resamples, result.confidence, result.seed
    board.strength_samples = result.strength_samples
    board.head_to_head = {pair: (value[0], int(value[1])) for pair, value in head.items()}
    return board


@dataclass(frozen=True)
class AgreementResult:
    n: int
    agree: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    excluded: int
    """Battles where one of the sources has no verdict (e.g. no annotator majority)."""
    human_ceiling: float | None = None
    """Pairwise agreement of the annotators of a majority source, pooled over battles."""
    confusion: Mapping[str, int] = field(default_factory=dict)


def annotator_agreement(votes: Iterable[Sequence[Outcome]]) -> float | None:
    """Share of agreeing annotator pairs, pooled over battles with at least two annotators."""
    agree = pairs = 0
    for battle_votes in votes:
        for x, y in combinations(battle_votes, 2):
            pairs += 1
            agree += x == y
    return agree / pairs if pairs else None


class RankingEvaluator:
    """Fits and checks of one ranking; ``live(language)`` gives the live judge's battle results."""

    def __init__(self, ranking: Ranking, live: Callable[[str], Sequence[BattleResult]] | None = None) -> None:
        self.ranking = ranking
        self.live = live
        self._boards: dict[tuple[str, str], Leaderboard] = {}
        self._surrogates: dict[str, Any] = {}

    def live_results(self, language: str) -> Sequence[BattleResult]:
        if self.live is None:
            return []
        return self.live(language)

    def matchups(self, source: str, language: str) -> dict[str, list[Matchup]]:
        by_case: dict[str, list[Matchup]] = defaultdict(list)
        if source == LIVE_SOURCE:
            for result in self.live_results(language):
                if result.outcome is not None:
                    live = result.battle
                    by_case[live.case].append((live.system_1, live.system_2, result.outcome))
            return dict(by_case)
        for battle in self.ranking.battles:
            verdict = battle.verdicts.get(source)
            if battle.language == language and verdict is not None:
                by_case[battle.case].append((battle.system_a, battle.system_b, verdict))
        return dict(by_case)

    def leaderboard(self, source: str, language: str) -> Leaderboard:
        key = (source, language)
        if key not in self._boards:
            board = fit_leaderboard(
                source,
                language,
                self.matchups(source, language),
                bootstrap=self.ranking.bootstrap,
                prior=self.ranking.prior,
                order=self.ranking.systems,
            )
            if source == LIVE_SOURCE:
                unjudged = [r for r in self.live_results(language) if r.outcome is None]
                board.n_unjudged = len(unjudged)
                board.unjudged_examples = tuple(
                    f"{r.battle.case} {r.battle.system_1} vs {r.battle.system_2}: {r.error}" for r in unjudged[:3]
                )
            self._boards[key] = board
        return self._boards[key]

    def _oriented(self, source: str, language: str) -> dict[tuple[Any, ...], Outcome]:
        """Verdicts keyed by battle; recorded ones by record, live ones by (case, systems)."""
        keyed: dict[tuple[Any, ...], Outcome] = {}
        if source == LIVE_SOURCE:
            for result in self.live_results(language):
                if result.outcome is not None:
                    b = result.battle
                    keyed[("pair", b.case, b.system_1, b.system_2)] = result.outcome
            return keyed
        for battle in self.ranking.battles:
            verdict = battle.verdicts.get(source)
            if battle.language == language and verdict is not None:
                keyed[("record", battle.index)] = verdict
        return keyed

    def agreement(self, first: str, second: str, language: str) -> AgreementResult:
        if LIVE_SOURCE in (first, second) and first != second:
            # Live verdicts are keyed by (case, systems); map recorded battles onto them.
            live = self._oriented(LIVE_SOURCE, language)
            other = second if first == LIVE_SOURCE else first
            pairs: list[tuple[Outcome, Outcome]] = []
            excluded = 0
            for recorded in self.ranking.battles:
                if recorded.language != language:
                    continue
                verdict = recorded.verdicts.get(other)
                forward = live.get(("pair", recorded.case, recorded.system_a, recorded.system_b))
                backward = live.get(("pair", recorded.case, recorded.system_b, recorded.system_a))
                mine = forward if forward is not None else _flip(backward)
                if mine is None:
                    continue
                if verdict is None:
                    excluded += 1
                    continue
                pairs.append((mine, verdict) if first == LIVE_SOURCE else (verdict, mine))
        else:
            a, b = self._oriented(first, language), self._oriented(second, language)
            union = set(a) | set(b)
            pairs = [(a[k], b[k]) for k in sorted(union, key=repr) if k in a and k in b]
            excluded = len(union) - len(pairs)
        agree = sum(x == y for x, y in pairs)
        low, high = wilson_interval(agree, len(pairs))
        ceiling_votes = [
            battle.votes[s]
            for battle in self.ranking.battles
            if battle.language == language
            for s in (first, second)
            if s in self.ranking.majority_sources and s in battle.votes
        ]
        confusion = Counter(f"{x}/{y}" for x, y in pairs)
        return AgreementResult(
            n=len(pairs),
            agree=agree,
            rate=agree / len(pairs) if pairs else None,
            ci_low=low if pairs else None,
            ci_high=high if pairs else None,
            excluded=excluded,
            human_ceiling=annotator_agreement(ceiling_votes),
            confusion=dict(sorted(confusion.items())),
        )

    def position_bias(self, language: str, source: str | None = None) -> PositionBias:
        """The live judge's position bias, or with ``source`` a recorded source's, from the
        reversed pairs (``pairwise.pairwise_judge.recorded_position_bias``)."""
        if source is not None:
            return recorded_position_bias(
                ((x.system_a, x.system_b, x.verdicts.get(source)), (y.system_a, y.system_b, y.verdicts.get(source)))
                for x, y in self.ranking.reversed_pairs
                if x.language == language
            )
        order: OrderMode = self.ranking.pairwise.order
        return position_bias(self.live_results(language), order)

    def surrogate(self, language: str) -> Any:
        from pytest_llmjudge.pairwise.surrogate import run_surrogate

        if language not in self._surrogates:
            assert self.ranking.surrogate is not None
            source = self.ranking.surrogate.source or self.ranking.primary
            self._surrogates[language] = run_surrogate(
                self.ranking.cases,
                language,
                self.matchups(source, language),
                self.ranking.surrogate,
                source=source,
                prior=self.ranking.prior,
                systems=self.ranking.systems,
            )
        return self._surrogates[language]


def _flip(outcome: Outcome | None) -> Outcome | None:
    if outcome is None or outcome == "tie":
        return outcome
    return "B" if outcome == "A" else "A"


def kendall_between(first: Leaderboard, second: Leaderboard) -> tuple[float | None, float | None, int, str | None]:
    """Kendall tau-b (and p) between two leaderboards' strengths over their common systems."""
    from pytest_llmjudge.stats.correlation import correlations

    common = [s for s in first.systems if s in second.systems]
    x = [first.standing(s).strength for s in common]  # type: ignore[union-attr]
    y = [second.standing(s).strength for s in common]  # type: ignore[union-attr]
    result = correlations(x, y)
    if not result.defined:
        return None, None, result.n, result.reason
    return result.kendall, result.kendall_p, result.n, None
