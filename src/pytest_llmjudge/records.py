"""Typed result records: what each kind of item found, in one shape every reader shares.

An item builds one record when it runs (``item.llmjudge_result``); the Run attaches
its wire form (:meth:`ItemRecord.to_wire`, plain JSON types, so it travels with the report
under pytest-xdist) and the results collector turns it back into a record
(:func:`record_from_wire`) with the item's ``nodeid`` and ``outcome``. The terminal summary,
the JSON and HTML reports, JUnit properties and saved baselines all read these records by
attribute; the JSON report's schema is generated from them (``report/document.py``).

The kinds, told apart by ``kind``:

=====================  =========================================  ==========================
record                 item                                       section of the report
=====================  =========================================  ==========================
:class:`CaseRecord`        one case against one threshold         ``cases``
:class:`AggregateRecord`   one suite aggregate for one group      ``aggregates``
:class:`GateRecord`        judge-vs-human agreement gate          ``gates``
:class:`RegressionRecord`  candidate vs baseline, one group       ``regressions``
:class:`LeaderboardRecord` one source's leaderboard, one language ``rankings``
:class:`ConsistencyRecord` repeated requests give one score       ``other``
:class:`SensitivityRecord` shuffled words lower the score         ``other``
:class:`UncalibratedRecord` a suite item stopped: judge not       ``other``
                           calibrated for its language
:class:`SurrogateRecord`   surrogate ranking model, one language  ``other``
:class:`RankingCheckRecord` one ranking assertion, one language   ``other``
=====================  =========================================  ==========================

Field names are the JSON report's (format version 1), so a reader of an older report and
a reader of a record agree. Each record also names what JUnit shows of it
(:meth:`ItemRecord.junit_properties`: ordered ``(name, value)`` pairs, ``None`` values left
out by the recorder), the same names and values for every reader of the XML. Degenerate values: every number is finite or ``None`` (NaN and
infinities become ``None`` when a record is built: "not defined", never a score); a score
is a number, a category (a detected language) or ``None`` (unscored, ``unscored_reason``
says why); ``nodeid`` and ``outcome`` are ``None`` until the collector sets them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter

from pytest_llmjudge.util.formatting import format_fixed, format_value


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


Real = Annotated[float | None, BeforeValidator(_finite_or_none)]
"""A finite number, or ``None`` where it is not defined (NaN and infinities included)."""

ScoreValue = Annotated[int | float | str | None, BeforeValidator(_finite_or_none)]
"""A score: a number, a category (a detected language), or ``None`` (unscored). An integer
stays an integer (a threshold written ``1`` reads ``1`` in JUnit, not ``1.0``)."""

Json: TypeAlias = Any
"""Diagnostic detail kept as the domain computed it (plain JSON types), shown verbatim."""

Outcome = Literal["passed", "failed", "skipped", "xfailed", "xpassed", "error"]
"""pytest's outcome of the item, with expected failures told apart."""


class Record(BaseModel):
    """Base of every record: strict field names, numbers finite or None."""

    # defer_build: a model's validator is built when it is first used, not at import. Every
    # pytest run with --llmjudge imports this module, so its import time is every run's: the
    # union of every record kind is also built on first use (_any_record); docs/scale.md.
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False, defer_build=True)

    def model_post_init(self, context: Any, /) -> None:
        # pydantic keeps, per instance, the set of fields the caller gave: more memory than a case
        # record's values (docs/scale.md), and 100,000 of them live to the end of a run. A record's
        # shape is all of its fields (to_wire dumps every one; nothing reads model_fields_set),
        # so every record of a kind shares one set naming them all.
        object.__setattr__(self, "__pydantic_fields_set__", _all_fields(type(self)))

    def to_wire(self) -> dict[str, Any]:
        """Plain JSON types (what xdist carries and the JSON report holds)."""
        return self.model_dump(mode="json")


_ALL_FIELDS: dict[type[Record], set[str]] = {}


def _all_fields(kind: type[Record]) -> set[str]:
    """The field names of ``kind``, one set per kind (see ``Record.model_post_init``)."""
    found = _ALL_FIELDS.get(kind)
    if found is None:
        found = _ALL_FIELDS[kind] = set(kind.model_fields)
    return found


class Threshold(Record):
    """``op value`` a score or statistic is asserted against (``>= 3``, ``== 'hi'``)."""

    op: str
    value: ScoreValue


class ItemRecord(Record):
    """Fields every item record has."""

    kind: str
    passed: bool
    """The item's own verdict (``outcome`` can differ: an expected failure, a policy skip)."""
    nodeid: str | None = None
    outcome: Outcome | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        """What JUnit records of this item, in order (``docs/junit.md`` names them)."""
        raise NotImplementedError(f"{type(self).__name__} names no JUnit properties")


def _rounded(pairs: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Calibration numbers to 6 decimals: a JUnit value reads as a statistic, not float noise."""
    return [(name, round(value, 6) if isinstance(value, float) else value) for name, value in pairs]


# -- suites ---------------------------------------------------------------------------------


class BaselineCase(Record):
    """A case's score and output in the baseline it is compared with (added to the report)."""

    score: ScoreValue = None
    output: str | None = None


class Turn(Record):
    """One turn of a conversation case's transcript."""

    role: str
    content: str


class CaseRecord(ItemRecord):
    """One case checked against one threshold: its score, how it was got and what was judged.

    A case with no threshold of its own on a metric is still judged, for its suite's
    aggregates: its record has ``threshold``, ``passed``, ``nodeid`` and ``outcome`` all
    ``None`` and ``aggregates`` naming the aggregates it counts in. The aggregate items carry
    such records (:attr:`AggregateRecord.cases`) and the report lists them with the others.
    """

    kind: Literal["case"] = "case"
    suite: str
    suite_path: str
    case: str
    language: str
    metric: str
    threshold: Threshold | None
    passed: bool | None  # type: ignore[assignment]  # None: no threshold of its own, no verdict
    aggregates: list[str] = Field(default_factory=list)
    """For a case without a threshold of its own: the aggregates (``mean(metric)``) it counts in."""
    score: ScoreValue
    samples: list[ScoreValue] = Field(default_factory=list)
    spread: Real = None
    source: str
    """``judge``, ``recorded``, ``reference`` (a reference metric) or ``unscored``."""
    judge: str | None = None
    cached: bool | None = None
    justification: str | None = None
    unscored_reason: str | None = None
    raw_reply: str | None = None
    """The judge's reply when it could not be read as a score."""
    detail: dict[str, Json] = Field(default_factory=dict)
    judge_identity: dict[str, str] | None = None
    """Who served the judge score: ``served_model``, ``system_fingerprint`` (when given), ``rubric_version``."""
    higher_is_better: bool | None = None
    input: str | None = None
    output: str | None = None
    reference: str | None = None
    transcript: list[Turn] | None = None
    """A conversation case's whole conversation, the judged output as its last (assistant) turn."""
    baseline: BaselineCase | None = None
    """Set in the report when a regression record of the same suite and metric pairs this case."""
    human: Real = None
    """The case's human label on the metric (its annotators aggregated), when it has one; baselines save it."""

    def junit_properties(self) -> list[tuple[str, Any]]:
        return [
            ("suite", self.suite),
            ("case", self.case),
            ("metric", self.metric),
            ("language", self.language),
            ("score", self.score),
            (
                "threshold",
                None if self.threshold is None else f"{self.threshold.op} {format_value(self.threshold.value)}",
            ),
            ("source", self.source),
            ("judge", self.judge),
            ("served", _served(self.judge_identity)),
            ("cached", None if self.cached is None else str(self.cached).lower()),
            ("spread", self.spread),
            ("unscored_reason", self.unscored_reason),
        ]


def _served(identity: Mapping[str, str] | None) -> str | None:
    """``model (fingerprint), rubric <hash>``: a judge score's served identity on one line."""
    if not identity:
        return None
    text = identity.get("served_model") or "?"
    if identity.get("system_fingerprint"):
        text += f" ({identity['system_fingerprint']})"
    return text + f", rubric {identity.get('rubric_version', '?')}"


class CaseScore(Record):
    """One case's score inside an aggregate (what baselines save)."""

    case: str
    language: str
    score: ScoreValue
    source: str
    judge: str | None = None
    higher_is_better: bool | None = None
    human: Real = None
    """The case's human label on the metric (annotators aggregated), when it has one."""


class HumanEstimate(Record):
    """What a ``human_mean``/``human_pass_rate`` row's prediction-powered estimate rests on."""

    n_labelled: int
    n_total: int
    judge: Real = None
    """The judge's own mean (or pass rate) over the row's scored cases."""
    human_only: Real = None
    human_only_low: Real = None
    human_only_high: Real = None
    bias: Real = None
    """Judge minus the estimate."""
    lam: Real = None
    """PPI++'s power-tuning weight (None for a stratified ``all`` row)."""


class AggregateRow(Record):
    """One group's row of an aggregate: the statistic, its interval and its verdict."""

    language: str
    """The group's name (``hi``, ``hi-task=qa``) or ``all``."""
    n_scored: int
    n_unscored: int
    value: Real
    ci_low: Real = None
    ci_high: Real = None
    threshold: Threshold
    passed: bool
    problem: str | None = None
    human: HumanEstimate | None = None
    """``human_mean``/``human_pass_rate`` rows: n labelled, N, the judge's value, the human-only estimate, the bias."""


class ReleaseMember(Record):
    """An aggregate row or agreement gate decided in the release family (``family: release``; ``regression/items.py``)."""

    family: str
    """The family's scope: run, suite or metric."""
    correction: str
    alpha: float
    p_value: float | None
    """The betting test's p-value of the bound check (None: the row is an error and is not counted)."""
    p_adjusted: float | None
    design_level: float
    """The one-sided level the test's bets were tuned to (``alpha / k``)."""
    size: int
    """Comparisons in the family (regression items and joined rows)."""


class AggregateRecord(ItemRecord):
    """One suite aggregate asserted for one group; ``rows`` holds every group of the aggregate."""

    kind: Literal["aggregate"] = "aggregate"
    suite: str
    suite_path: str
    aggregate: str
    """The label, ``mean(faithfulness)``."""
    metric: str
    language: str
    case_scores: list[CaseScore] | None = None
    """The row's per-case scores; the report keeps them once, on the ``all`` item."""
    rows: list[AggregateRow]
    cases: list[CaseRecord] | None = None
    """The full records of cases that have no threshold of their own on ``metric`` (what was
    judged, so the reports show it), each carried by one selected aggregate item of its suite
    and metric; the report moves them to its ``cases``."""
    release: ReleaseMember | None = None
    """Set when the row joined the release family: its raw and adjusted p decide it."""

    def row(self) -> AggregateRow | None:
        """This item's own row (the one of its ``language``)."""
        return next((row for row in self.rows if row.language == self.language), None)

    @property
    def judges(self) -> str | None:
        """The judges that scored the row's cases, comma-separated (None when none did)."""
        judges = sorted({score.judge for score in self.case_scores or () if score.judge})
        return ", ".join(judges) or None

    def junit_properties(self) -> list[tuple[str, Any]]:
        row = self.row()
        threshold = None if row is None else f"{row.threshold.op} {row.threshold.value:g}"
        return [
            ("suite", self.suite),
            ("metric", self.metric),
            ("aggregate", self.aggregate),
            ("language", self.language),
            ("judge", self.judges),
            ("score", None if row is None else row.value),
            ("threshold", threshold),
            ("ci_low", None if row is None else row.ci_low),
            ("ci_high", None if row is None else row.ci_high),
            ("n_scored", None if row is None else row.n_scored),
            ("n_unscored", None if row is None else row.n_unscored),
        ] + (
            [] if self.release is None else [("p_value", self.release.p_value), ("p_adjusted", self.release.p_adjusted)]
        )


class UncalibratedRecord(ItemRecord):
    """A suite item stopped because its judge failed calibration for a language it scores."""

    kind: Literal["uncalibrated"] = "uncalibrated"
    suite: str
    suite_path: str
    case: str | None = None
    language: str
    metric: str
    judge: str | None = None
    policy: Literal["failed", "xfailed", "skipped"]
    checks: list[dict[str, Json]]
    """Each failing calibration check (``CalibrationCheck.to_dict``)."""
    untrusted: str | None = None
    """What the judge said anyway (score, justification, output), shown but not trusted."""

    @property
    def message(self) -> str:
        """Why the item stopped: each failing check's message, one per line."""
        return "\n".join(str(check.get("message")) for check in self.checks)

    def junit_properties(self) -> list[tuple[str, Any]]:
        return [
            ("suite", self.suite),
            ("metric", self.metric),
            ("language", self.language),
            ("judge", self.judge),
            ("calibration", self.checks[0].get("calibration") if self.checks else None),
            ("uncalibrated", self.message),
            ("case", self.case),
        ]


# -- calibration ------------------------------------------------------------------------------


class Interval(Record):
    low: Real = None
    high: Real = None
    confidence: Real = None
    resamples: int | None = None
    seed: int | None = None


class Confusion(Record):
    """Counts of (human label, judge label) pairs."""

    labels: list[ScoreValue]
    rows: str = "human"
    columns: str = "judge"
    matrix: list[list[int]]


class Skew(Record):
    """Judge vs human label distribution at the top of the scale."""

    judge_mean: Real = None
    human_mean: Real = None
    skew: Real = None
    top_label: ScoreValue = None
    judge_top_share: Real = None
    human_top_share: Real = None
    best_label: ScoreValue = None
    judge_best_share: Real = None
    human_best_share: Real = None


class GateRecord(ItemRecord):
    """Judge-vs-human weighted F1 of one language x metric against its threshold."""

    kind: Literal["gate"] = "gate"
    suite: str
    """The calibration set's name (what the summary groups gates under)."""
    calibration: str
    calibration_path: str
    judge: str
    judge_identity: dict[str, str] | None = None
    """Who served the scores the gate certified (live judges): ``served_model``, ``system_fingerprint``,
    ``rubric_version``."""
    scores: str | None = None
    """The suite whose scores the calibration set holds, when it names one."""
    xfail: str | bool | None = None
    language: str
    group: str
    metric: str
    labels: list[ScoreValue]
    higher_is_better: bool | None = None
    f1: Real = None
    macro_f1: Real = None
    ci: Interval
    threshold: Real = None
    compared: str
    n: int
    n_items: int
    n_unscored: int
    unscored_reasons: list[Json] = Field(default_factory=list)
    min_items: int | None = None
    max_unscored_rate: Real = None
    ceiling: Real = None
    ceiling_mode: str | None = None
    ceiling_pairs: int | None = None
    ceiling_items: int | None = None
    ceiling_ratio: Real = None
    convention: str | None = None
    fleiss_items: int | None = None
    criteria: dict[str, Real] = Field(default_factory=dict)
    failed_criteria: list[str] = Field(default_factory=list)
    pa: Real = None
    kappa: Real = None
    fleiss: Real = None
    baseline_f1: Real = None
    confusion: Confusion | None = None
    aggregation: str | None = None
    agreement_levels: dict[str, int] = Field(default_factory=dict)
    single_annotator: int | None = None
    """How many scored items had one annotator (usable, but reported)."""
    release: ReleaseMember | None = None
    """Set when the gate joined the release family: its posterior p and adjusted p decide the F1 criterion."""
    distribution: dict[str, Json] | None = None
    """Per agreement level (and ``all``): each side's label counts, shares and means."""
    skew: Skew | None = None
    correction: dict[str, Json] | None = None
    """The held-out score correction (``CorrectionEvaluation.to_dict``), when asked for."""
    problem: str | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        skew = self.skew or Skew()
        return _rounded(
            [
                ("calibration", self.calibration),
                ("language", self.language),
                ("group", self.group if self.group != self.language else None),
                ("metric", self.metric),
                ("judge", self.judge),
                ("served", _served(self.judge_identity)),
                ("f1", self.f1),
                ("threshold", self.threshold),
                ("compared", self.compared),
                ("ceiling", self.ceiling),
                ("n", self.n),
                ("n_items", self.n_items),
                ("ci_low", self.ci.low),
                ("ci_high", self.ci.high),
                ("pa", self.pa),
                ("kappa", self.kappa),
                ("ceiling_ratio", self.ceiling_ratio),
                ("convention", self.convention),
                ("fleiss", self.fleiss),
                ("skew", skew.skew),
                ("judge_top_share", skew.judge_top_share),
                ("human_top_share", skew.human_top_share),
                ("single_annotator", self.single_annotator),
                ("problem", self.problem),
            ]
        )


class _SanityRecord(ItemRecord):
    calibration: str
    calibration_path: str
    judge: str
    language: str
    metric: str

    def _sanity_properties(self, rate: float | None, threshold: float, n: int) -> list[tuple[str, Any]]:
        return [
            ("calibration", self.calibration),
            ("language", self.language),
            ("metric", self.metric),
            ("judge", self.judge),
            ("check", self.kind),
            ("rate", rate),
            ("threshold", threshold),
            ("n", n),
        ]


class ConsistencyResult(Record):
    n_items: int
    n_consistent: int
    n_unscored: int
    rate: Real = None
    min_agreement: float
    repeats: int
    samples: list[list[ScoreValue]]
    problem: str | None = None
    passed: bool


class ConsistencyRecord(_SanityRecord):
    """k repeated requests per item gave the same score (Hada et al. 2024a, sec. 4.2.1)."""

    kind: Literal["consistency"] = "consistency"
    result: ConsistencyResult

    def junit_properties(self) -> list[tuple[str, Any]]:
        r = self.result
        return _rounded([*self._sanity_properties(r.rate, r.min_agreement, r.n_items), ("repeats", r.repeats)])


class SensitivityResult(Record):
    n_items: int
    n_worse: int
    n_same: int
    n_better: int
    n_unscored: int
    n_at_worst: int
    n_unperturbable: int
    rate: Real = None
    min_lowered: float
    fraction: float
    pairs: list[list[ScoreValue] | None]
    problem: str | None = None
    passed: bool


class Perturbation(Record):
    id: str
    seed: int
    unit: str
    n_units: int
    positions: list[int]


class SensitivityRecord(_SanityRecord):
    """Shuffled words lowered the score on most items (Hada et al. 2024a, sec. 4.3)."""

    kind: Literal["sensitivity"] = "sensitivity"
    result: SensitivityResult
    perturbations: list[Perturbation | None] = Field(default_factory=list)

    def junit_properties(self) -> list[tuple[str, Any]]:
        r = self.result
        n = r.n_worse + r.n_same + r.n_better + r.n_unscored
        return _rounded([*self._sanity_properties(r.rate, r.min_lowered, n), ("worse", r.n_worse)])


# -- regression ----------------------------------------------------------------------------


class UnscoredCase(Record):
    """A candidate case without a score, and why."""

    case: str
    reason: str


class CaseDrop(Record):
    case: str
    baseline: ScoreValue
    candidate: ScoreValue


class PairedCase(Record):
    """A case's baseline and candidate score (and the baseline's output, until the report
    moves it onto the case record)."""

    case: str
    baseline: ScoreValue = None
    candidate: ScoreValue = None
    baseline_output: str | None = None


class RegressionRecord(ItemRecord):
    """A suite group's candidate scores against the baseline's, paired per case."""

    kind: Literal["regression"] = "regression"
    suite: str
    suite_path: str
    metric: str
    language: str
    """The group's name (``hi``, ``all``)."""
    group_by: list[str]
    baseline: str
    baseline_path: str | None = None
    baseline_suite: str
    baseline_created: str | None = None
    largest_drops: list[CaseDrop] = Field(default_factory=list)
    cases: list[PairedCase] = Field(default_factory=list)
    gate: Literal["pass", "warn", "fail", "error", "undecided"]
    """``undecided``: too few cases to decide (a warning, reported as UNDECIDED)."""
    verdict: str
    n: int
    higher_is_better: bool
    mean_candidate: Real = None
    mean_baseline: Real = None
    mean_difference: Real = None
    ci_low: Real = None
    ci_high: Real = None
    confidence: Real = None
    p_value: Real = None
    """Raw one-sided p-value of a drop beyond the margin."""
    p_non_inferiority: Real = None
    """Raw one-sided p-value of "worse by at least the margin" (small: shown not worse)."""
    p_adjusted: Real = None
    """The p-value the family decided on (of ``p_value``, or of ``p_non_inferiority`` in that mode), adjusted."""
    correction: str | None = None
    family: str | None = None
    family_size: int | None = None
    family_testable: int | None = None
    """Tarone's K: the family's comparisons that could reach significance, which the correction counts."""
    level: Real = None
    """Per-item level: alpha / family_testable (alpha without correction)."""
    min_p: Real = None
    n_nonzero: int | None = None
    drop_upper: Real = None
    """Upper confidence bound of the drop at ``1 - level`` (null: no drop ruled out)."""
    mde: Real = None
    """Smallest drop detectable with 80% power at this n and level (null: none)."""
    cases_needed: int | None = None
    mode: str | None = None
    fail_on: str | None = None
    method: str
    method_detail: str | None = None
    margin: Real = None
    alpha: Real = None
    resamples: int | None = None
    seed: int | None = None
    missing_in_baseline: list[str] = Field(default_factory=list)
    """The first ``MAX_LISTED`` (100) of them, sorted; ``missing_in_baseline_count`` has how many."""
    missing_in_candidate: list[str] = Field(default_factory=list)
    """The first ``MAX_LISTED`` (100) of them, sorted; ``missing_in_candidate_count`` has how many."""
    baseline_unscored: list[str] = Field(default_factory=list)
    """The first ``MAX_LISTED`` (100) of them, sorted; ``baseline_unscored_count`` has how many."""
    missing_in_baseline_count: int = 0
    missing_in_candidate_count: int = 0
    baseline_unscored_count: int = 0
    candidate_unscored: list[UnscoredCase] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    problem: str | None = None
    human_delta: Real = None
    """PPI++ estimate of the mean human-score change (candidate - baseline) over the ``n`` paired
    cases, from the judge's change on all of them and the ``human_n`` pairs labelled on both sides
    (``regression/human.py``); null when fewer than 5 such pairs. Information: it does not decide."""
    human_delta_low: Real = None
    human_delta_high: Real = None
    human_n: int | None = None
    """Pairs with a human label on both sides (null: none at all)."""
    human_lambda: Real = None

    @property
    def status(self) -> Literal["fail", "warn", "undecided", "improved", "pass"]:
        """What the report shows: ``fail`` (gate fail/error), ``warn``, ``undecided``, ``improved`` or ``pass``."""
        if self.gate in ("fail", "error") or not self.passed or self.outcome == "failed":
            return "fail"
        if self.gate in ("warn", "undecided"):
            return self.gate
        if "improv" in self.verdict.lower():
            return "improved"
        return "pass"

    def junit_properties(self) -> list[tuple[str, Any]]:
        return [
            ("suite", self.suite),
            ("metric", self.metric),
            ("language", self.language),
            ("baseline", self.baseline),
            ("score", self.mean_difference),
            ("mean_candidate", self.mean_candidate),
            ("mean_baseline", self.mean_baseline),
            ("ci_low", self.ci_low),
            ("ci_high", self.ci_high),
            ("p_value", self.p_value),
            ("p_adjusted", self.p_adjusted),
            ("correction", self.correction),
            ("family_size", self.family_size),
            ("drop_upper", self.drop_upper),
            ("mde", self.mde),
            ("n_paired", self.n),
            ("margin", self.margin),
            ("method", self.method),
            ("gate", self.gate),
            ("verdict", self.verdict),
            ("n_missing_in_baseline", len(self.missing_in_baseline)),
            ("n_missing_in_candidate", len(self.missing_in_candidate)),
            ("n_baseline_unscored", len(self.baseline_unscored)),
            ("n_unscored", len(self.candidate_unscored)),
        ]


class ReleaseVerdict(Record):
    """The one line a run's regression comparisons add up to (``regression/verdict.py``)."""

    passed: bool
    """No comparison fails the run (the exit status); an undecided release passes too."""
    status: Literal["pass", "undecided", "fail"] = "pass"
    """``fail``: a comparison fails; ``undecided``: none fails but some had too few cases to decide."""
    comparisons: int
    """Regression items that ran (every family together)."""
    families: int
    correction: str
    """How the families were corrected ("Holm", or several names joined by ", ")."""
    failed: list[str] = Field(default_factory=list)
    """``suite metric [group]`` of each failing comparison."""
    inconclusive: int = 0
    undecided: int = 0
    errors: int = 0
    text: str


# -- rankings ------------------------------------------------------------------------------


class Standing(Record):
    """One system's place on a leaderboard."""

    name: str
    rank: int
    strength: Real
    ci_low: Real = None
    ci_high: Real = None
    rank_ci: list[int]
    wins: float
    losses: float
    ties: float
    games: int


class PositionBias(Record):
    requests: int
    decisive: int
    first_slot: int
    first_slot_rate: Real = None
    binomial_p: Real = None
    position_bias_rate: Real = None
    measured: bool | None = None
    battles_both_orders: int
    inconsistent: int
    inconsistent_rate: Real = None
    note: str | None = None
    ci_low: Real = None
    ci_high: Real = None


class Battle(Record):
    """One judged battle as the judge saw it (both presentations when asked in both orders)."""

    case: str
    system_1: str
    system_2: str
    shown_first: list[str]
    slot_verdicts: list[str | None]
    outcome: str | None = None
    inconsistent: bool
    error: str | None = None
    cached: bool | None = None


class LeaderboardRecord(ItemRecord):
    """One source's Bradley-Terry leaderboard in one language."""

    kind: Literal["ranking"] = "ranking"
    suite: str
    """The ranking file's name (what the summary groups rankings under)."""
    metric: str
    """``<source> [<language>]``."""
    ranking: str
    ranking_path: str
    source: str
    language: str
    judge: str | None = None
    order: str | None = None
    order_seed: int | None = None
    position_bias: PositionBias | None = None
    unjudged_examples: list[str] = Field(default_factory=list)
    battles: list[Battle] = Field(default_factory=list)
    battles_truncated: bool = False
    systems: list[Standing]
    n_cases: int
    n_battles: int
    n_unjudged: int
    resamples: int | None = None
    confidence: Real = None
    seed: int | None = None
    error: str | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        bias = self.position_bias
        return [
            ("ranking", self.ranking),
            ("source", self.source),
            ("language", self.language),
            ("n_cases", self.n_cases),
            ("n_battles", self.n_battles),
            ("n_unjudged", self.n_unjudged or None),
            ("resamples", self.resamples or None),
            ("position_bias_rate", None if bias is None else bias.position_bias_rate),
            ("first_slot_rate", None if bias is None else bias.first_slot_rate),
            *(
                (
                    f"rank_{s.rank}",
                    f"{s.name} {format_fixed(s.strength)} [{format_fixed(s.ci_low)}, {format_fixed(s.ci_high)}]",
                )
                for s in self.systems
            ),
        ]


class SurrogateRecord(ItemRecord):
    """How well a surrogate model of cheap features reproduces a source's ranking."""

    kind: Literal["ranking_surrogate"] = "ranking_surrogate"
    ranking: str
    language: str
    source: str
    features: list[str]
    hold_out: str
    model: str
    kendall_tau: Real = None
    kendall_p: Real = None
    r2: Real = None
    n_systems: int
    n_train_cases: int
    n_holdout_cases: int
    tournaments: int
    skipped_tournaments: int
    weights: dict[str, Real] = Field(default_factory=dict)
    predicted: dict[str, Real] = Field(default_factory=dict)
    judged: dict[str, Real] = Field(default_factory=dict)
    error: str | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        return [
            ("ranking", self.ranking),
            ("source", self.source),
            ("language", self.language),
            ("kendall_tau", self.kendall_tau),
            ("kendall_p", self.kendall_p),
            ("r2", self.r2),
            ("n_systems", self.n_systems),
            ("n_holdout_cases", self.n_holdout_cases),
        ]


class RankingCheckRecord(ItemRecord):
    """One ranking assertion (``rank(gpt-4, judge) <= 2``) in one language."""

    kind: Literal["ranking_check"] = "ranking_check"
    ranking: str
    check: str
    expr: str
    source: str | None = None
    language: str
    value: Real = None
    """The observed statistic (None when it could not be computed: ``problem`` says why)."""
    threshold: Threshold
    problem: str | None = None
    detail: dict[str, Json] = Field(default_factory=dict)
    """The statistic's working, named by the assertion kind (``agree``, ``n``, ``ci_low``, ...)."""

    def junit_properties(self) -> list[tuple[str, Any]]:
        # The working's plain numbers and words (not booleans, lists or tables), then the problem.
        working = [
            (name, value)
            for name, value in self.detail.items()
            if isinstance(value, (int, float, str)) and not isinstance(value, bool)
        ]
        return [
            ("ranking", self.ranking),
            ("check", self.check),
            ("source", self.source),
            ("language", self.language),
            ("score", self.value),
            ("threshold", f"{self.threshold.op} {self.threshold.value:g}"),
            *working,
            ("problem", self.problem),
        ]


class DriftRecord(ItemRecord):
    """The drift sentinel of one calibrated judge in one language x metric (``calibration/drift/``)."""

    kind: Literal["drift"] = "drift"
    suite: str
    calibration: str
    judge: str
    language: str
    metric: str
    certified: dict[str, str] | None = None
    """The certified served identity (``served_model``, ``system_fingerprint``, ``rubric_version``)."""
    served: dict[str, str] | None = None
    """The identity that served this run's uncached sample."""
    gate_served: dict[str, str] | None = None
    """The identity behind the gate's (possibly cached) scores this run."""
    before: Real = None
    """Weighted F1 on the sample when the identity was certified."""
    after: Real = None
    """Weighted F1 on the same sample now, uncached."""
    ci_low: Real = None
    ci_high: Real = None
    n: int = 0
    tolerance: Real = None
    certified_now: bool = False
    certified_path: str | None = None
    problem: str | None = None
    warning: str | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        return _rounded(
            [
                ("suite", self.suite),
                ("calibration", self.calibration),
                ("language", self.language),
                ("metric", self.metric),
                ("judge", self.judge),
                ("certified", _served(self.certified)),
                ("served", _served(self.served)),
                ("before", self.before),
                ("after", self.after),
                ("ci_low", self.ci_low),
                ("ci_high", self.ci_high),
                ("n", self.n),
                ("problem", self.problem),
                ("warning", self.warning),
            ]
        )


class JuryRecord(ItemRecord):
    """Several judges on one calibration group x metric: each one's agreement, theirs among themselves, the choice."""

    kind: Literal["jury"] = "jury"
    calibration: str
    calibration_path: str
    language: str
    group: str
    metric: str
    judges: list[dict[str, Json]] = Field(default_factory=list)
    """Per judge: ``judge``, ``f1``, ``passed``, ``calls``, ``cached``."""
    alpha: Real = None
    level: str
    error_correlation: dict[str, Real] = Field(default_factory=dict)
    effective_committee_size: Real = None
    combined_f1: dict[str, Real] = Field(default_factory=dict)
    combine: str
    chosen: str | None = None
    problem: str | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        shown = "; ".join(
            f"{j.get('judge')}: F1 {format_value(j.get('f1'))} {'pass' if j.get('passed') else 'fail'}, "
            f"{j.get('calls')} calls ({j.get('cached')} cached)"
            for j in self.judges
        )
        return _rounded(
            [
                ("calibration", self.calibration),
                ("language", self.language),
                ("group", self.group if self.group != self.language else None),
                ("metric", self.metric),
                ("judges", shown or None),
                ("alpha", self.alpha),
                ("effective_committee_size", self.effective_committee_size),
                ("chosen", self.chosen),
                ("problem", self.problem),
            ]
        )


class CanaryRecord(ItemRecord):
    """One injection canary (``judge.canaries``): the judge's scores of a clean and an attacked twin."""

    kind: Literal["canary"] = "canary"
    suite: str
    judge: str
    language: str
    attack: str
    scores: dict[str, dict[str, ScoreValue]] = Field(default_factory=dict)
    """Per rubric: ``clean`` and ``attacked`` scores (None: unscored)."""
    problem: str | None = None

    def junit_properties(self) -> list[tuple[str, Any]]:
        shown = "; ".join(
            f"{metric}: clean {format_value(pair.get('clean'))}, attacked {format_value(pair.get('attacked'))}"
            for metric, pair in self.scores.items()
        )
        return [
            ("suite", self.suite),
            ("language", self.language),
            ("attack", self.attack),
            ("judge", self.judge),
            ("scores", shown or None),
            ("problem", self.problem),
        ]


AnyRecord = Annotated[
    CaseRecord
    | AggregateRecord
    | UncalibratedRecord
    | GateRecord
    | ConsistencyRecord
    | SensitivityRecord
    | RegressionRecord
    | LeaderboardRecord
    | SurrogateRecord
    | RankingCheckRecord
    | DriftRecord
    | CanaryRecord
    | JuryRecord,
    Field(discriminator="kind"),
]
"""Any item record, told apart by ``kind``."""

OtherRecord = Annotated[
    UncalibratedRecord
    | ConsistencyRecord
    | SensitivityRecord
    | SurrogateRecord
    | RankingCheckRecord
    | DriftRecord
    | CanaryRecord
    | JuryRecord,
    Field(discriminator="kind"),
]
"""The records of the report's ``other`` section."""


@functools.cache
def _any_record() -> TypeAdapter[Any]:
    """The validator of :data:`AnyRecord`, built on first use (only runs that parse wire records need it)."""
    return TypeAdapter(AnyRecord)


def record_from_wire(data: Any) -> ItemRecord:
    """A record back from its wire form (what a report carries under xdist).

    Raises :class:`pydantic.ValidationError` when ``data`` is not a record of a known kind.
    """
    record: ItemRecord = _any_record().validate_python(data)
    return record
