"""The YAML ranking-file format as pydantic models (``extra="forbid"``: unknown fields are errors).

A ranking file is a mapping with a top-level ``ranking:`` name (that key is how the
collector tells it from a suite, which has ``suite:``). It ranks several systems per
language from pairwise verdicts, which come from a live pairwise judge over the systems'
outputs, from recorded verdicts (a released dataset, human annotators), or both.
``docs/rankings.md`` documents every field with examples.

Degenerate cases: a file with neither outputs (``cases``, ``cases_file``, ``responses``) nor
``verdicts`` is an error (it would rank nothing); a live judge (``judge:``) without outputs
is an error; two verdict sources may not share a name, and ``judge`` is reserved for the
live judge.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from pytest_llmjudge.suite.schema import JudgeConfig, StrictModel

LIVE_SOURCE = "judge"


class RankingCaseConfig(StrictModel):
    """One query with the outputs of several systems (the "wide" form)."""

    id: str = Field(..., min_length=1)
    language: str = Field(..., min_length=2)
    input: str | None = None
    reference: str | None = None
    context: list[str] | str | None = None
    outputs: dict[str, str] = Field(..., description="System name -> that system's output for this case.")
    features: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="Per system, extra numeric features for the surrogate (e.g. recorded scores)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_is_node_safe(cls, value: str) -> str:
        if any(ch in value for ch in "[]\n") or value != value.strip():
            raise ValueError("case ids can't contain '[', ']', newlines or edge spaces")
        return value

    @field_validator("outputs")
    @classmethod
    def _two_systems(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) < 2:
            raise ValueError("a ranking case needs the outputs of at least two systems")
        return value


class ResponsesConfig(StrictModel):
    """Outputs in the "long" form: one JSONL record per (case, system), fields named here."""

    path: str | list[str]
    case: str = Field("case", description="Field naming the case (query) a record answers.")
    system: str = Field("system", description="Field naming the system that produced the output.")
    output: str = "output"
    input: str | None = Field("input", description="Field with the case's input, if any.")
    reference: str | None = None
    language: str = "language"
    features: dict[str, str] = Field(
        default_factory=dict,
        description="Feature name -> dotted path of a number in the record, e.g. recorded.task_quality.score.",
    )
    where: dict[str, Any] = Field(default_factory=dict, description="Keep only records whose fields equal these.")


class VerdictSourceConfig(StrictModel):
    """Where one source's verdict is in a verdict record."""

    field: str = Field(..., description="Dotted path of the verdict in the record.")
    combine: Literal["single", "majority"] = Field(
        "single",
        description="single: the field holds 'A', 'B' or 'tie'; majority: it maps annotators to verdicts and the "
        "strict majority is the verdict (no majority: no verdict).",
    )


class VerdictsConfig(StrictModel):
    """Recorded pairwise verdicts: one JSONL record per battle, fields named here."""

    path: str | list[str]
    case: str = Field("case", description="Field naming the case (query) of the battle.")
    system_a: str = Field("system_a", description="Field naming the system shown as A.")
    system_b: str = Field("system_b", description="Field naming the system shown as B.")
    language: str = "language"
    id: str | None = Field(None, description="Field with the battle's own id, for reports.")
    reversed_pair: str | None = Field(
        None,
        description="Field naming the reversed pair a record belongs to: two records (the same systems on the same "
        "case, shown in both orders) that measure a recorded source's position bias; such records are left out "
        "of leaderboards and agreement.",
    )
    sources: dict[str, str | VerdictSourceConfig] = Field(
        ..., description="Source name -> its verdict field (or {field, combine})."
    )
    where: dict[str, Any] = Field(default_factory=dict)

    @field_validator("sources")
    @classmethod
    def _sources(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            raise ValueError("name at least one verdict source")
        if LIVE_SOURCE in value:
            raise ValueError(f"the source name {LIVE_SOURCE!r} is reserved for the live judge")
        return value


class PairwiseConfig(StrictModel):
    """How a live judge is asked (position-bias control)."""

    order: Literal["random", "both", "fixed"] = Field(
        "random",
        description="random: one request, order from a seeded coin; both: both orders, disagreement = tie; "
        "fixed: first system always shown as A (only to demonstrate the bias).",
    )
    seed: int = Field(0, description="Seed of the order coin (recorded with every verdict).")
    criteria: str | None = Field(None, description="Replaces the default comparison criteria ({language} is filled).")


class BootstrapConfig(StrictModel):
    resamples: int = Field(200, ge=1, description="Bootstrap resamples of the cases (MIRAGE-BENCH: 200).")
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    seed: int = 0


class RankingAssertConfig(StrictModel):
    expr: str = Field(..., description="e.g. 'rank(candidate) <= 2', 'candidate beats baseline with win rate >= 0.5'.")
    source: str | None = Field(None, description="Verdict source of rank/win-rate assertions (default: primary).")
    languages: list[str] | None = Field(None, description="Only assert in these languages.")
    xfail: dict[str, str] = Field(
        default_factory=dict, description="Language -> reason: known to fail there (strict xfail)."
    )


class SurrogateConfig(StrictModel):
    """A cheap regression from heuristic features to Bradley-Terry strengths (MIRAGE-BENCH sec. 4.3)."""

    features: list[str] = Field(
        default_factory=lambda: ["length", "script_share", "latin_share", "input_overlap"],
        description="Built-in text features, 'metric:<name>' or 'recorded:<name>' (from responses.features).",
    )
    source: str | None = Field(None, description="Verdict source whose strengths are the target (default: primary).")
    holdout: float = Field(0.5, gt=0.0, lt=1.0, description="Share of cases held out for the Kendall tau.")
    tournaments: int = Field(30, ge=1, le=2000, description="Bootstrap tournaments of the training cases.")
    ridge: float = Field(1.0, ge=0.0, description="L2 penalty of the standardised linear model.")
    seed: int = 0
    hold_out: Literal["cases", "systems"] = Field(
        "cases",
        description="cases: hold out a share of the cases (prompts); systems: leave each system out in turn and "
        "predict it from its features alone (MIRAGE-BENCH's held-out models).",
    )
    model: Literal["ridge", "random_forest"] = Field(
        "ridge", description="ridge (numpy) or random_forest (MIRAGE-BENCH's model; needs the surrogate extra)."
    )
    trees: int = Field(100, ge=1, le=2000, description="Trees of the random forest.")


class RankingConfig(StrictModel):
    """A whole ranking file."""

    ranking: str = Field(..., min_length=1, description="Ranking name; its presence marks the file as a ranking.")
    description: str | None = None
    task: str | None = Field(None, description="What the systems were asked to do, shown to a live judge.")
    judge: JudgeConfig | None = Field(
        None, description="A live pairwise judge over the outputs (omit: no live judging)."
    )
    pairwise: PairwiseConfig = Field(default_factory=PairwiseConfig)
    systems: list[str] | None = Field(None, description="Only rank these systems (default: every system seen).")
    languages: list[str] | None = Field(None, description="Only rank these languages.")
    cases: list[RankingCaseConfig] = Field(default_factory=list)
    cases_file: str | list[str] | None = Field(None, description="JSONL file(s) of cases in the wide form.")
    responses: ResponsesConfig | None = None
    verdicts: VerdictsConfig | None = None
    primary: str | None = Field(None, description="Default verdict source of assertions (default: judge, else first).")
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    prior: float = Field(0.1, ge=0.0, description="Bradley-Terry prior: tie pseudo-games per compared pair.")
    assert_: list[str | RankingAssertConfig] = Field(default_factory=list, alias="assert")
    surrogate: SurrogateConfig | None = None

    @model_validator(mode="after")
    def _has_data(self) -> RankingConfig:
        has_outputs = bool(self.cases) or self.cases_file is not None or self.responses is not None
        if not has_outputs and self.verdicts is None:
            raise ValueError("a ranking needs outputs to judge (cases, cases_file, responses) or recorded verdicts")
        if self.judge is not None and not has_outputs:
            raise ValueError("a live judge needs the systems' outputs (cases, cases_file or responses)")
        return self
