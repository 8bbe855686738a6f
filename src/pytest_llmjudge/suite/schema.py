"""The YAML suite format as pydantic models (``extra="forbid"``: unknown fields are errors).

A suite file is a mapping with a ``suite:`` name; that key is also how the collector tells a
suite from other YAML files. ``docs/suite-format.md`` documents every field with a full
example, and ``src/pytest_llmjudge/schema/suite.schema.json`` is generated from these models
(``python -m pytest_llmjudge.suite.jsonschema``) so editors can validate suites.

Degenerate cases: NaN and infinite numbers are rejected everywhere, and a boolean where a
score belongs; a suite with neither ``cases`` nor ``cases_file`` is an error (it would
collect nothing and silently pass); a case without an output needs ``outputs`` to supply
one; a rubric scale needs at least two distinct values.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pytest_llmjudge.suite.identity import invisible_problem, normalized


def _not_bool(value: Any) -> Any:
    # pydantic reads true as 1.0; a boolean where a score belongs is a mistake, not a 1.
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    return value


Number = Annotated[float, BeforeValidator(_not_bool)]
"""A finite number that is not a boolean (every float field is finite: ``allow_inf_nan=False``)."""


def _group_fields(value: list[str] | None) -> list[str] | None:
    # The first field is the language so that every group belongs to one language (per_language
    # overrides and baselines, which are keyed by language, then still apply), as for calibration sets.
    if value is not None and (not value or value[0] != "language" or len(set(value)) != len(value)):
        raise ValueError("group_by must start with 'language' and name each field once, e.g. [language, task]")
    return value


GroupBy = Annotated[list[str], AfterValidator(_group_fields)]
"""Case fields whose values form one group (``stats/grouping.py``): a case key or a ``metadata`` key."""


# pytest's own markers: a tag with one of these names would skip, xfail or parametrize the item.
RESERVED_TAGS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast"}
)
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_tags(tags: list[str]) -> list[str]:
    """Tags become pytest markers (``-m smoke``): identifier-like, and none of pytest's own markers."""
    for tag in tags:
        if not _TAG.fullmatch(tag):
            raise ValueError(f"tag {tag!r} must be a name like smoke or math_v2 (letters, digits, '_'), usable in -m")
        if tag in RESERVED_TAGS:
            raise ValueError(f"tag {tag!r} is one of pytest's own markers; choose another name")
    return tags


Tags = Annotated[list[str], AfterValidator(check_tags)]


class StrictModel(BaseModel):
    """Base of every file-format model (suites, calibration sets, ranking files): unknown fields
    are errors, aliases and field names both accepted, numbers finite."""

    # NaN/infinity are never meant: `.inf` or 1e999 as a score or rate would pass or crash later.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


class DriftConfig(StrictModel):
    """The drift sentinel of a calibrated judge (``calibration/drift/``, docs/judges.md "Drift")."""

    sample: int = Field(
        50, ge=2, le=10_000, description="Calibration items per language and metric re-asked, uncached, every run."
    )
    on_change: Literal["fail", "warn"] = Field(
        "fail", description="What a served model or fingerprint other than the certified one does: fail or warn."
    )
    tolerance: float = Field(
        0.15, ge=0.0, le=1.0, description="Largest drop of weighted F1 on the sample (certified minus now) that passes."
    )
    seed: int = Field(0, description="Seed of the sample (the same items every run, so before and after compare).")


class JudgeConfig(StrictModel):
    """Which model judges, and how it is asked."""

    provider: str = Field(
        "openai",
        description="Provider name: 'openai', 'anthropic', 'openai-compatible', or one registered by a plugin.",
    )
    model: str = Field("gpt-4o-mini", description="Model name sent to the provider.")
    base_url: str | None = Field(
        None, description="Endpoint of an OpenAI-compatible server (vLLM, Ollama, LiteLLM) or a proxy."
    )
    api_key_env: str | None = Field(
        None, description="Environment variable holding the API key (default per provider)."
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=16)
    seed: int | None = Field(None, description="Sampling seed sent to providers that accept one.")
    mode: Literal["single", "compound"] = Field(
        "single", description="single: one request per metric; compound: all metrics of a case in one request."
    )
    instructions: Literal["simple", "detailed"] = Field(
        "detailed", description="Rubric text: a one-line scale (simple) or a description of every score (detailed)."
    )
    repeats: int = Field(
        1, ge=1, le=50, description="Judgments per case (distinct seeds); assert on their mean or majority."
    )
    repeat_aggregate: Literal["mean", "majority"] = "mean"
    structured_output: Literal["auto", "json_schema", "json_object", "tool", "none", "off"] = Field(
        "auto",
        description="How the JSON reply is requested: json_schema (OpenAI strict schema; Anthropic output_config), "
        "json_object (OpenAI JSON mode), tool (Anthropic forced tool use), none/off (the prompt alone). auto: "
        "json_schema on OpenAI's API, tool on Anthropic's, none with a base_url.",
    )
    max_reasks: int = Field(
        2, ge=0, le=10, description="Re-asks after an unparseable reply before the case is unscored."
    )
    scoring: Literal["sampled", "expected"] = Field(
        "sampled",
        description="sampled: the score the judge wrote; expected: its probability-weighted expected score over "
        "the scale (G-Eval), from token log-probabilities (OpenAI and compatible servers).",
    )
    scoring_fallback: Literal["unscored", "sampled"] = Field(
        "unscored",
        description="With scoring: expected, when the provider gives no log-probabilities (Anthropic): the item "
        "is unscored, or keeps the sampled score with a note saying so.",
    )
    calibration: str | None = Field(
        None,
        description="Calibration set (path relative to the suite) this judge must pass per language; "
        "or {path: ..., metrics: [...]} to name the metrics it covers.",
    )
    calibration_metrics: list[str] | None = Field(
        None,
        description="The metrics the calibration set vouches for (default: every judge-scored metric); "
        "the others are judged without calibration, as the summary says.",
    )
    uncalibrated: Literal["fail", "xfail", "skip"] = Field(
        "fail", description="What judge-scored items do in a language where the judge failed its calibration."
    )
    correction: bool = Field(False, description="Apply the calibration set's per-language score correction.")
    jury: bool = Field(
        False,
        description="Score with the jury of the calibration set (judge.calibration): per language its best-agreeing "
        "judge that passes, or its combination (the set's jury.combine).",
    )
    canaries: bool = Field(
        False,
        description="Injection canaries: per suite language, built-in outputs that try to steer the judge, each "
        "judged with its clean twin; an item fails when the attacked twin scores better (4 calls per language and rubric).",
    )
    drift: DriftConfig | None = Field(
        None,
        description="Drift sentinel: re-ask a seeded sample of the calibration items uncached each run, fail when "
        "agreement dropped beyond tolerance or the served model differs from the certified one.",
    )
    required: bool | None = Field(
        None,
        description="Whether items fail (true) or are skipped (false) when this judge can't be called; "
        "default: fail in CI (env CI), skip elsewhere. --llmjudge-require-judge/--llmjudge-allow-no-judge win.",
    )

    @field_validator("structured_output", mode="before")
    @classmethod
    def _unquoted_off(cls, value: object) -> object:
        # YAML 1.1 reads an unquoted `off` as false: `structured_output: off` means "off".
        return "off" if value is False else value

    @field_validator("structured_output")
    @classmethod
    def _tool_is_anthropic_only(cls, value: str, info: ValidationInfo) -> str:
        if value == "tool" and info.data.get("provider") in ("openai", "openai-compatible"):
            raise ValueError("tool is Anthropic's forced tool use; OpenAI judges use json_schema")
        return value

    @model_validator(mode="before")
    @classmethod
    def _calibration_mapping(cls, data: Any) -> Any:
        # `calibration: {path: cal.yaml, metrics: [task_quality]}` is the same as `calibration:
        # cal.yaml` with `calibration_metrics: [task_quality]`: one place says what is covered.
        if isinstance(data, dict) and isinstance(data.get("calibration"), dict):
            entry = dict(data["calibration"])
            unknown = sorted(set(entry) - {"path", "metrics"})
            if unknown or "path" not in entry:
                raise ValueError(
                    f"calibration takes a path, or {{path: ..., metrics: [...]}}; got keys {sorted(entry)}"
                )
            if "calibration_metrics" in data:
                raise ValueError("give the covered metrics once: calibration.metrics or calibration_metrics")
            data = {**data, "calibration": entry["path"]}
            if "metrics" in entry:
                data["calibration_metrics"] = entry["metrics"]
        return data

    @model_validator(mode="after")
    def _correction_needs_calibration(self) -> JudgeConfig:
        if self.correction and self.calibration is None:
            raise ValueError("correction needs a calibration set: set judge.calibration")
        if self.calibration_metrics is not None and self.calibration is None:
            raise ValueError("calibration_metrics names what a calibration set covers: set judge.calibration")
        if self.drift is not None and self.calibration is None:
            raise ValueError("drift watches a calibrated judge: set judge.calibration")
        if self.jury and self.calibration is None:
            raise ValueError("jury: the judges and their agreement come from a calibration set: set judge.calibration")
        return self

    def calibration_covers(self, metric: str) -> bool:
        """Whether the calibration set vouches for ``metric`` (False without a calibration set)."""
        if self.calibration is None:
            return False
        return self.calibration_metrics is None or metric in self.calibration_metrics


class RubricConfig(StrictModel):
    """A user-defined rubric: what to judge and on which scale."""

    description: str = Field(..., min_length=1)
    scale: list[int] = Field(..., description="Allowed integer scores, e.g. [1, 2, 3, 4, 5].")
    scores: dict[int, str] = Field(default_factory=dict, description="What each score means (detailed form).")
    higher_is_better: bool = True
    needs: list[Literal["input", "reference", "context", "messages"]] = Field(default_factory=list)
    target: Literal["output", "conversation"] = Field(
        "output",
        description="What the judge rates: the output (a conversation's last assistant turn) or the whole "
        "conversation (cases with messages).",
    )
    per_language: dict[str, str] = Field(
        default_factory=dict, description="Extra rubric text for a language, e.g. {ja: 'Keigo must match ...'}."
    )
    scoring: Literal["sampled", "expected"] | None = Field(
        None, description="This rubric's scoring, over judge.scoring: sampled, or expected (probability-weighted)."
    )

    @field_validator("scale")
    @classmethod
    def _scale_is_sorted_and_distinct(cls, value: list[int]) -> list[int]:
        if len(set(value)) < 2:
            raise ValueError("a scale needs at least two distinct scores")
        return sorted(set(value))

    @model_validator(mode="after")
    def _scores_on_scale(self) -> RubricConfig:
        off_scale = sorted(set(self.scores) - set(self.scale))
        if off_scale:
            raise ValueError(f"scores {off_scale} are not on the scale {self.scale}")
        return self


class RecordedScore(StrictModel):
    """A score produced outside this run (a provider batch job, a released dataset).

    ``samples``: the repeated judgments of the case instead of one ``score`` (their mean or
    majority, ``judge.repeat_aggregate``, is the case's score), so ``pass_at_k``/``pass_hat_k``
    can be asserted on recorded data; a null sample leaves the case unscored.
    """

    score: Number | None = None
    samples: list[Number | None] | None = Field(
        None,
        min_length=1,
        description="Repeated judgments of the case, e.g. [2, 1, 2], instead of one score; their mean or majority "
        "(judge.repeat_aggregate) is the score; pass_at_k/pass_hat_k count them. A null sample leaves the case unscored.",
    )
    justification: str | None = None
    judge: str | None = Field(None, description="Who produced it, e.g. 'gpt-4 (PARIKSHA release)'.")

    @model_validator(mode="before")
    @classmethod
    def _score_or_samples(cls, data: Any) -> Any:
        # `score: null` is a recorded failure and stays valid; a mapping with neither key is a mistake.
        if isinstance(data, dict):
            if "score" in data and "samples" in data:
                raise ValueError("give score or samples, not both (the score of samples is their mean or majority)")
            if "score" not in data and "samples" not in data:
                # Worded (and typed) like pydantic's own "missing" error, which it replaces.
                raise PydanticCustomError(
                    "missing_score", "missing required field 'score' (a number or null), or 'samples' (a list of them)"
                )
        return data


def _labels_present(value: Any) -> Any:
    # One bare label is one annotator's: {task_quality: 2} is {task_quality: [2]}.
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [value]
    # An empty label list is a case nobody labelled: leave the metric out instead of [].
    if isinstance(value, (list, dict)) and not value:
        raise ValueError("no labels: give at least one, or leave the metric out of 'human'")
    return value


HumanLabels = Annotated[list[Number] | dict[str, Number], BeforeValidator(_labels_present)]
"""One case's labels on one metric: one per annotator, as a list or by annotator id (finite numbers)."""


class MessageConfig(StrictModel):
    """One turn of a conversation case."""

    role: Literal["user", "assistant", "system"]
    content: str


class CaseConfig(StrictModel):
    """One evaluation case."""

    id: str = Field(..., min_length=1)
    language: str = Field(..., min_length=2, description="ISO 639-1 or BCP-47 code of the case, e.g. 'hi', 'pt-BR'.")
    input: str | None = None
    output: str | None = None
    reference: str | None = None
    context: list[str] | str | None = None
    messages: list[MessageConfig] | None = Field(
        None,
        description="A conversation, [{role: user|assistant|system, content: ...}]: its last assistant turn is "
        "the output under test unless 'output' is given (then 'output' answers the whole list).",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    recorded: dict[str, RecordedScore | Number] = Field(default_factory=dict)
    human: dict[str, HumanLabels] = Field(
        default_factory=dict,
        description="Native-speaker labels per metric: a list [2, 1, 2], {annotator id: label} or one label; "
        "aggregated per case as calibration sets do (majority, else rounded mean). Used by human_mean(...).",
    )
    assert_: list[str] = Field(default_factory=list, alias="assert")
    tags: Tags = Field(
        default_factory=list, description="Names that select the case with `pytest -m` (e.g. [smoke, math])."
    )

    @field_validator("id")
    @classmethod
    def _id_is_node_safe(cls, value: str) -> str:
        if any(ch in value for ch in "[]/:\n") or value != value.strip():
            raise ValueError(
                "case ids can't contain '[', ']', '/', ':', newlines or edge spaces (they become node ids)"
            )
        problem = invisible_problem(value, "case id")
        if problem is not None:
            raise ValueError(problem)
        return normalized(value)


class OutputsConfig(StrictModel):
    """Where outputs come from when cases don't carry them inline."""

    file: str | None = Field(None, description="JSONL next to the suite with {id, output} records.")
    target: str | None = Field(
        None, description="'module:function' (sync or async) called with each case, or a registered target name."
    )
    timeout: float | None = Field(
        None,
        gt=0,
        description="Seconds one target call may take before its case is unscored (default: llmjudge_target_timeout).",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> OutputsConfig:
        if (self.file is None) == (self.target is None):
            raise ValueError("outputs needs exactly one of 'file' or 'target'")
        if self.timeout is not None and self.target is None:
            raise ValueError("outputs.timeout bounds a target call: it needs 'target'")
        return self


class CasesFileConfig(StrictModel):
    """A file of cases next to the suite (JSONL, CSV, TSV or Parquet), optionally filtered."""

    path: str
    format: Literal["jsonl", "csv", "tsv", "parquet", "hf"] | None = Field(
        None,
        description="The file's format (default: from its suffix; .csv, .tsv/.tab, .parquet, hf:// or a "
        "save_to_disk directory for a Hugging Face dataset, else JSONL).",
    )
    sample: int | None = Field(
        None, ge=1, description="Keep a seeded random sample of this many cases, stratified by language."
    )
    seed: int = Field(0, description="Seed of the sample.")
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="Tables only: case field -> column, for headers that don't name the fields "
        "(e.g. {id: qid, input: question}); other columns become metadata.",
    )
    encoding: str | None = Field(
        None, description="Tables only: the text encoding (default: from a byte-order mark, else UTF-8)."
    )
    extra_fields: Literal["error", "metadata"] = Field(
        "error", description="What to do with keys a case doesn't define: reject them, or move them into metadata."
    )
    where: dict[str, Any] = Field(
        default_factory=dict, description="Keep only records whose top-level fields equal these values."
    )
    human: bool = Field(
        True,
        description="Read the records' 'human' labels; false drops them (e.g. to keep only a random sample's "
        "labels, given in human_labels).",
    )


class AggregateConfig(StrictModel):
    """A suite-level threshold with optional per-language and per-group overrides."""

    expr: str = Field(..., description="e.g. 'mean(linguistic_acceptability) >= 1.6'")
    group_by: GroupBy | None = Field(
        None, description="Case fields forming one row, e.g. [language, task] (default: the suite's group_by)."
    )
    per_language: dict[str, str | Number] = Field(default_factory=dict)
    per_group: dict[str, str | Number] = Field(
        default_factory=dict, description="Threshold per group name, e.g. {'hi-task=qa': '>= 1.2'}; beats per_language."
    )
    min_cases: int = Field(1, ge=1, description="Fewer scored cases in a language is an error, not a pass.")
    max_unscored_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="Share of unscored cases tolerated before the aggregate fails (default 0)."
    )
    min_labels: int = Field(
        5,
        ge=2,
        description="human_mean/human_pass_rate: fewer human-labelled cases in a group is an error, not a pass.",
    )
    xfail: dict[str, str] = Field(
        default_factory=dict,
        description="Known failures: group or language (or 'all') -> reason; the row is an xfail (strict: a pass fails).",
    )

    family: Literal["release"] | None = Field(
        None,
        description="release: each row joins the run's release family: its betting p-value (a test of the bound "
        "check) is corrected with the regression items' (Holm by default) and the row passes when its adjusted p "
        "<= alpha. Only lower(mean(m)) >= t and upper(mean(m)) <= t on a metric with a known scale.",
    )
    scale: tuple[Number, Number] | None = Field(
        None,
        description="[low, high] the scores lie in, for a metric without a known scale (scores recorded under a "
        "free name, a metric plugin): the mean's interval is then the betting interval, which holds its level at "
        "every n. One declaration serves every aggregate of the metric. Rubrics and built-in metrics know their scale.",
    )

    @field_validator("scale")
    @classmethod
    def _scale_is_a_range(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not (math.isfinite(value[0]) and math.isfinite(value[1]) and value[0] < value[1]):
            raise ValueError(f"scale must be [low, high] with finite low < high, got {list(value)}")
        return value


class RegressionConfig(StrictModel):
    """Release gating against a stored baseline (``docs/baselines.md``)."""

    baseline: str | None = Field(
        None,
        description="Baseline to compare with: a name in the baseline directory, or a .json path relative to the suite.",
    )
    baseline_suite: str | None = Field(
        None, description="Suite name to look up in the baseline (default: this suite's)."
    )
    metrics: list[str] | None = Field(
        None, description="Metrics to gate (default: all the baseline has for this suite)."
    )
    margin: float = Field(0.0, ge=0.0, description="Tolerated drop in score units; a larger, significant drop fails.")
    per_metric: dict[str, float] = Field(default_factory=dict, description="Margin per metric.")
    per_language: dict[str, float] = Field(
        default_factory=dict, description="Margin per language (wins over per_metric)."
    )
    group_by: GroupBy | None = Field(
        None, description="Case fields forming one comparison, e.g. [language, task] (default: the suite's group_by)."
    )
    per_group: dict[str, float] = Field(
        default_factory=dict, description="Margin per group name, e.g. {'hi-task=qa': 0.1} (wins over per_language)."
    )
    alpha: float = Field(0.05, gt=0.0, lt=1.0, description="Significance level of the one-sided test for a drop.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Level of the reported confidence interval.")
    method: Literal["bootstrap", "permutation"] = Field(
        "permutation",
        description="Paired sign-flip permutation test (exact up to 24 changed pairs, else Monte Carlo), "
        "or the paired bootstrap (opt-in; accurate only with many cases).",
    )
    resamples: int | None = Field(
        None, ge=1, description="Random sign flips / bootstrap resamples (default 10000 permutation, 2000 bootstrap)."
    )
    seed: int = 0
    max_unscored_rate: float = Field(0.0, ge=0.0, le=1.0, description="Share of unscored candidate cases tolerated.")
    fail_on_missing: bool = Field(False, description="Fail (not only report) when cases are missing on either side.")
    missing_suite: Literal["fail", "skip"] = Field(
        "fail",
        description="When the baseline this section names lacks the suite: fail (a renamed suite must not switch "
        "its gate off) or skip (a new suite, not in the baseline yet).",
    )
    correction: Literal["holm", "bh", "bonferroni", "none"] = Field(
        "holm",
        description="Multiple-testing correction of the family's p-values: Holm (family-wise error, default), "
        "Benjamini-Hochberg (false discovery rate), Bonferroni, or none.",
    )
    family: Literal["run", "suite", "metric"] = Field(
        "run",
        description="Which comparisons are corrected together: every regression item of the run (default), "
        "of this suite, or of this suite and metric.",
    )
    fail_on: Literal["fail", "warn"] = Field(
        "fail",
        description="warn: an inconclusive drop or too few cases to decide fails the item too.",
    )
    mode: Literal["regression", "non_inferiority"] = Field(
        "regression",
        description="regression: fail on a drop beyond the margin that is shown; non_inferiority: pass only when "
        "a drop beyond the margin is ruled out.",
    )
    per_metric_mode: dict[str, Literal["regression", "non_inferiority"]] = Field(
        default_factory=dict, description="Mode per metric (wins over mode)."
    )

    @field_validator("per_metric", "per_language", "per_group")
    @classmethod
    def _margins_not_negative(cls, value: dict[str, float]) -> dict[str, float]:
        negative = sorted(key for key, margin in value.items() if margin < 0)
        if negative:
            raise ValueError(f"margins can't be negative: {', '.join(negative)}")
        return value


class SequentialConfig(StrictModel):
    """A suite's ``sequential:`` mapping (``execution/sequential.py``)."""

    round: int = Field(20, ge=1, description="Cases per aggregate row per round (default 20).")
    seed: int = Field(0, ge=0, description="Seed of the case order (default 0).")


def _sequential_kind(value: Any) -> str:
    # One branch per shape, so a bad ``round`` is reported as that, not as "not a boolean" too.
    return "switch" if isinstance(value, bool) else "settings"


SequentialSetting = Annotated[
    Annotated[bool, Tag("switch")] | Annotated[SequentialConfig, Tag("settings")], Discriminator(_sequential_kind)
]


class SuiteConfig(StrictModel):
    """A whole suite file."""

    suite: str = Field(..., min_length=1, description="Suite name; its presence marks the file as a suite.")
    description: str | None = None
    task: str | None = Field(None, description="What the model under test was asked to do, shown to the judge.")
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    rubrics: dict[str, RubricConfig] = Field(default_factory=dict)
    metric_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Parameters per reference metric, e.g. {bleu: {tokenize: char}}."
    )
    outputs: OutputsConfig | None = None
    cases_file: str | CasesFileConfig | list[str | CasesFileConfig] | None = Field(
        None, description="JSONL file(s) next to the suite with one case per line."
    )
    cases: list[CaseConfig] = Field(default_factory=list)
    human_labels: str | list[str] | None = Field(
        None,
        description="Native-speaker labels joined by case id: JSONL records {id, human: {metric: labels}} "
        "(calibration.convert's items files) or CSV rows id,metric,label[,annotator]; paths relative to the suite.",
    )
    assert_: list[str] = Field(
        default_factory=list, alias="assert", description="Case assertions applied to every case."
    )
    aggregate: list[AggregateConfig | str] = Field(default_factory=list)
    languages: list[str] | None = Field(None, description="Only run cases in these languages.")
    group_by: GroupBy = Field(
        default_factory=lambda: ["language"],
        description="Case fields whose values form one aggregate row and one regression comparison: "
        "e.g. [language, task]; a field is a case key or a metadata key. The first must be language.",
    )
    regression: RegressionConfig | None = Field(None, description="Compare with a stored baseline (docs/baselines.md).")
    sequential: SequentialSetting | None = Field(
        None,
        description="Judge the aggregates' cases in seeded rounds and stop a row once an anytime-valid bound "
        "settles its verdict: true, false (never, even with --llmjudge-sequential) or {round, seed} "
        "(docs/scale.md).",
    )
    tags: Tags = Field(
        default_factory=list, description="Tags of every case and aggregate of the suite (selected with `pytest -m`)."
    )

    @field_validator("suite")
    @classmethod
    def _name_is_visible(cls, value: str) -> str:
        # The name keys judge calls, records and baselines: two names that print alike must be one.
        problem = invisible_problem(value, "suite name")
        if problem is not None:
            raise ValueError(problem)
        return normalized(value)

    @model_validator(mode="after")
    def _has_cases(self) -> SuiteConfig:
        if not self.cases and self.cases_file is None:
            raise ValueError("a suite needs 'cases' or 'cases_file'")
        return self
