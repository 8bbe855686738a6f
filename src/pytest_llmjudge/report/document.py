"""The report document as types: every section a report renders, and its JSON schema.

``report/assemble.py`` builds a :class:`ReportDocument` from the run's typed item records
(``records.py``); the terminal summary and the HTML report render it, the JSON report is
its wire form (:meth:`ReportDocument.to_wire`) and ``docs/report.schema.json`` is
generated from it (:func:`json_schema`; ``python -m pytest_llmjudge.report.document``
rewrites the file, and a test fails when the checked-in file differs).

Format version :data:`FORMAT_VERSION`. A reader must ignore fields it does not know; a new
required field or a changed meaning raises the version. Degenerate cases: a run with no
records is a valid document with empty sections; numbers are finite or ``null``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from pytest_llmjudge.records import (
    AggregateRecord,
    CaseRecord,
    GateRecord,
    LeaderboardRecord,
    OtherRecord,
    Real,
    Record,
    RegressionRecord,
    ReleaseVerdict,
    Threshold,
)

FORMAT_NAME: Literal["pytest-llmjudge-report"] = "pytest-llmjudge-report"
FORMAT_VERSION: Literal[1] = 1


class JudgeInfo(Record):
    """A suite's judge as the run called it (overrides applied; base URL without credentials)."""

    provider: str | None = None
    model: str | None = None
    label: str | None = None
    base_url: str | None = None
    temperature: Real = None
    seed: int | None = None
    mode: str | None = None
    instructions: str | None = None
    repeats: int | None = None
    api_key_env: str | None = None


class SuiteInfo(Record):
    """What collection knew of a suite."""

    name: str
    path: str
    languages: list[str] = Field(default_factory=list)
    n_cases: int = 0
    live_judge: bool = False
    judge: JudgeInfo | None = None
    metrics: dict[str, str] = Field(default_factory=dict)
    """metric -> ``rubric``, ``reference`` or ``recorded``."""
    rubrics: dict[str, str] = Field(default_factory=dict)
    """rubric metric -> rubric version hash."""
    scales: dict[str, list[float]] = Field(default_factory=dict)
    recorded_judges: list[str] = Field(default_factory=list)
    calibration: str | None = None
    """The file name of the calibration set the suite's judge must pass (``judge.calibration``)."""
    uncalibrated_metrics: list[str] = Field(default_factory=list)
    """Judge-scored metrics the calibration set does not cover (``judge.calibration_metrics``):
    judged without a human-agreement check."""


class RubricUse(Record):
    name: str
    version: str
    suites: list[str]


class RunInfo(Record):
    """The run: when, with what, and how it ended."""

    timestamp: str | None = None
    duration_s: Real = None
    plugin_version: str | None = None
    pytest_version: str | None = None
    python_version: str | None = None
    pytest_args: list[str] = Field(default_factory=list)
    exit_status: int | None = None
    xdist_workers: int = 0
    pytest_randomly_seed: int | None = None
    cache_mode: str | None = None
    overrides: dict[str, str | None] | None = None
    judge_models: list[str] = Field(default_factory=list)
    """Live judge models of the run's suites."""
    judge_labels: list[str] = Field(default_factory=list)
    """Judges the case scores came from (live and recorded)."""
    judge_headlines: list[str] = Field(default_factory=list)
    """One line per judge endpoint whose calls failed (a dead judge, a rejected key)."""
    rubric_hash: str | None = None
    rubrics: list[RubricUse] = Field(default_factory=list)
    judge_seeds: list[int] = Field(default_factory=list)


class Accounting(Record):
    """Judge calls (summed over xdist workers) and their estimated cost."""

    submitted: int = 0
    finished: int = 0
    provider_calls: int = 0
    cache_hits: int = 0
    cache_rejected: int = 0
    cache_unparseable: int = 0
    shared_hits: int = 0
    not_needed: int = 0
    """Judge calls ``--llmjudge-sequential`` did not make (verdicts settled first)."""
    batched: int = 0
    retries: int = 0
    rate_limited: int = 0
    failed_calls: int = 0
    unscored: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_cost_usd: Real = None
    cost_model: str | None = None
    prices_per_1m: dict[str, float] | None = None
    cost_note: str | None = None


class Totals(Record):
    """Item outcomes over every section and ``not_run`` (``items`` their sum)."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    error: int = 0
    items: int = 0
    cases: int = 0
    """Case records in ``cases``: the case items' and those of cases judged only for aggregates."""


class AggregateBrief(Record):
    """An aggregate check of a summary row."""

    label: str
    stat: str
    value: Real = None
    ci_low: Real = None
    ci_high: Real = None
    n_scored: int | None = None
    n_unscored: int | None = None
    threshold: Threshold | None = None
    passed: bool
    problem: str | None = None
    nodeid: str | None = None


class GateBrief(Record):
    """The agreement gate that speaks for a summary row's judge, metric and language."""

    f1: Real = None
    ci_low: Real = None
    ci_high: Real = None
    ceiling: Real = None
    threshold: Real = None
    passed: bool | None = None
    source: str
    """The calibration set's name."""
    nodeid: str | None = None


class SummaryRow(Record):
    """One suite x metric x language (or ``all``) row of the summary."""

    suite: str
    metric: str
    language: str
    n: int
    n_unscored: int
    mean: Real = None
    ci_low: Real = None
    ci_high: Real = None
    pass_rate: Real = None
    pass_rate_ci_low: Real = None
    pass_rate_ci_high: Real = None
    case_thresholds: list[Threshold] = Field(default_factory=list)
    items_passed: int = 0
    items_failed: int = 0
    items_skipped: int = 0
    judged: int = 0
    cached: int = 0
    aggregates: list[AggregateBrief] = Field(default_factory=list)
    gate: GateBrief | None = None
    passed: bool
    status: Literal["pass", "warn", "fail", "error", "skip", "none"]
    scale: list[float] | None = None
    """The metric's score range (rubric scale or a reference metric's), for the charts."""


class NotRun(Record):
    """A suite item that ended without a record (skipped for want of a judge, invalid, errored)."""

    nodeid: str
    outcome: Literal["passed", "failed", "skipped", "xfailed", "xpassed", "error"]
    when: str
    reason: str | None = None


class TrendPoint(Record):
    """One earlier run's row of a suite x metric x language (``--llmjudge-history``)."""

    suite: str
    metric: str
    language: str
    timestamp: str
    commit: str | None = None
    branch: str | None = None
    n: int = 0
    mean: Real = None
    ci_low: Real = None
    ci_high: Real = None
    pass_rate: Real = None
    status: str | None = None


class ReportDocument(Record):
    """The whole report (``--llmjudge-report=json:PATH`` writes :meth:`to_wire`)."""

    format: Literal["pytest-llmjudge-report"] = FORMAT_NAME
    format_version: Literal[1] = FORMAT_VERSION
    run: RunInfo = Field(default_factory=RunInfo)
    accounting: Accounting | None = None
    totals: Totals = Field(default_factory=Totals)
    suites: list[SuiteInfo] = Field(default_factory=list)
    summary: list[SummaryRow] = Field(default_factory=list)
    cases: list[CaseRecord] = Field(default_factory=list)
    aggregates: list[AggregateRecord] = Field(default_factory=list)
    gates: list[GateRecord] = Field(default_factory=list)
    regressions: list[RegressionRecord] = Field(default_factory=list)
    release: ReleaseVerdict | None = None
    """The one release verdict of the regression comparisons (``regression/verdict.py``)."""
    rankings: list[LeaderboardRecord] = Field(default_factory=list)
    other: list[OtherRecord] = Field(default_factory=list)
    not_run: list[NotRun] = Field(default_factory=list)
    history: list[TrendPoint] = Field(default_factory=list)
    """Earlier runs' rows of this run's summary rows, oldest first (``--llmjudge-history``)."""


SCHEMA_ID = "urn:pytest-llmjudge:report.schema.json"
SCHEMA_DESCRIPTION = (
    "The JSON report of a pytest-llmjudge run (--llmjudge-report=json:PATH), generated from "
    "pytest_llmjudge.report.document.ReportDocument by `python -m pytest_llmjudge.report.document`. "
    "The terminal summary and the HTML report render the same document. Readers must ignore fields "
    "they do not know: new optional fields can appear within a format_version; a new required field "
    "or a changed meaning raises format_version. Numbers are finite or null."
)


def json_schema() -> dict[str, Any]:
    """The JSON schema of the report (draft 2020-12), generated from :class:`ReportDocument`."""
    schema = ReportDocument.model_json_schema(mode="serialization")
    # The models forbid unknown fields (a typo in the plugin fails loudly); the schema does
    # not, since a reader must accept a report with fields added after it was written.
    for definition in [schema, *schema.get("$defs", {}).values()]:
        definition.pop("additionalProperties", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **{key: value for key, value in schema.items() if key not in ("title", "description")},
        "title": f"pytest-llmjudge report, format version {FORMAT_VERSION}",
        "description": SCHEMA_DESCRIPTION,
    }


def schema_text() -> str:
    """The schema as ``docs/report.schema.json`` holds it (sorted keys, two-space indentation)."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m pytest_llmjudge.report.document [PATH]
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/report.schema.json")
    target.write_text(schema_text(), encoding="utf-8")
