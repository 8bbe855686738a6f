"""The report document: summary rows, sections by record type, ordering, cost, redaction, the schema."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_llmjudge.errors import PriceError
from pytest_llmjudge.execution.runner import RunnerStats
from pytest_llmjudge.records import (
    AggregateRecord,
    AggregateRow,
    BaselineCase,
    CaseRecord,
    CaseScore,
    GateRecord,
    Interval,
    ItemRecord,
    LeaderboardRecord,
    RegressionRecord,
    Threshold,
)
from pytest_llmjudge.report.assemble import (
    DEFAULT_PRICES,
    RunInputs,
    build_document,
    clean_url,
    estimate_cost,
    parse_prices,
    price_for,
    rubric_hash,
)
from pytest_llmjudge.report.document import (
    FORMAT_VERSION,
    JudgeInfo,
    ReportDocument,
    RunInfo,
    SuiteInfo,
    SummaryRow,
    json_schema,
    schema_text,
)
from pytest_llmjudge.report.json_report import dumps
from pytest_llmjudge.suite.aggregate import mean_ci
from pytest_llmjudge.util.redaction import redact_value, secrets_from_environment

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "report.schema.json"


def case(
    case_id: str,
    language: str,
    score: float | str | None,
    *,
    metric: str = "linguistic_acceptability",
    suite: str = "s",
    op: str = ">=",
    value: float | str = 1,
    outcome: str | None = None,
    **extra: Any,
) -> CaseRecord:
    if outcome is None:
        holds = isinstance(score, (int, float)) and isinstance(value, (int, float)) and score >= value
        outcome = "passed" if holds else "failed"
    fields: dict[str, Any] = {
        "suite": suite,
        "suite_path": f"{suite}.yaml",
        "case": case_id,
        "language": language,
        "metric": metric,
        "threshold": Threshold(op=op, value=value),
        "score": score,
        "source": "judge",
        "judge": "openai:gpt-4o-mini",
        "cached": False,
        "justification": f"why {case_id}",
        "unscored_reason": None if score is not None else "no verdict",
        "passed": outcome == "passed",
        "nodeid": f"{suite}.yaml::{case_id}[{metric}]",
        "outcome": outcome,
    }
    return CaseRecord(**{**fields, **extra})


def row(language: str, value: float, passed: bool, n: int = 2) -> AggregateRow:
    return AggregateRow(
        language=language,
        n_scored=n,
        n_unscored=0,
        value=value,
        ci_low=value - 0.5,
        ci_high=value + 0.5,
        threshold=Threshold(op=">=", value=1.5),
        passed=passed,
    )


def aggregate(
    language: str, rows: list[AggregateRow], *, label: str = "mean(linguistic_acceptability)", **extra: Any
) -> AggregateRecord:
    own = next(r for r in rows if r.language == language)
    return AggregateRecord(
        suite="s",
        suite_path="s.yaml",
        aggregate=label,
        metric="linguistic_acceptability",
        language=language,
        passed=own.passed,
        rows=rows,
        nodeid=f"s.yaml::{label}[{language}]",
        outcome="passed" if own.passed else "failed",
        **extra,
    )


def gate(judge: str, nodeid: str) -> GateRecord:
    return GateRecord(
        suite="metal",
        calibration="metal",
        calibration_path="/elsewhere/metal.yaml",
        judge=judge,
        language="hi",
        group="hi",
        metric="linguistic_acceptability",
        labels=[0, 1, 2],
        f1=0.71,
        ci=Interval(low=0.65, high=0.77, confidence=0.95),
        threshold=0.6,
        ceiling=0.8,
        compared="f1",
        n=40,
        n_items=40,
        n_unscored=0,
        passed=True,
        nodeid=nodeid,
        outcome="passed",
    )


def summary_row(document: ReportDocument, metric: str, language: str, suite: str = "s") -> SummaryRow:
    (found,) = [r for r in document.summary if (r.suite, r.metric, r.language) == (suite, metric, language)]
    return found


def test_summary_rows_use_the_aggregates_betting_interval_on_a_known_scale() -> None:
    from pytest_llmjudge.report.assemble import build_summary

    records = [case(f"hi-{i}", "hi", 2) for i in range(10)]
    (known,) = build_summary(records, [], [], scale_of=lambda suite, metric: (0.0, 2.0))
    # The interval an aggregate over the same scores shows and decides on: never the point.
    assert (known.ci_low, known.ci_high) == mean_ci([2.0] * 10, scale=(0.0, 2.0))
    assert known.ci_low == pytest.approx(1.254, abs=1e-3) and known.ci_high == 2.0
    (unknown,) = build_summary(records, [], [], scale_of=lambda suite, metric: None)
    assert (unknown.ci_low, unknown.ci_high) == (2.0, 2.0)  # the bootstrap, without a scale


def test_summary_counts_cases_once_and_gives_mean_ci_per_language_and_all() -> None:
    records: list[ItemRecord] = [
        case("hi-1", "hi", 2),
        case("hi-1", "hi", 2, op=">", value=0, nodeid="s.yaml::hi-1[la > 0]"),
        case("hi-2", "hi", 1),
        case("hi-3", "hi", None),
        case("ta-1", "ta", 0),
    ]
    rows = [row("hi", 1.5, True), row("ta", 0.0, False, 1), row("all", 1.0, False, 3)]
    records += [aggregate(lang, rows) for lang in ("hi", "ta", "all")]
    document = build_document(RunInputs(records=records))
    hi = summary_row(document, "linguistic_acceptability", "hi")
    assert hi.n == 3 and hi.n_unscored == 1
    assert hi.mean == pytest.approx(1.5)
    assert hi.ci_low is not None and hi.ci_high is not None and hi.ci_low < 1.5 < hi.ci_high
    assert hi.items_passed == 3 and hi.items_failed == 1
    assert not hi.passed, "an unscored case fails its row"
    assert [a.label for a in hi.aggregates] == ["mean(linguistic_acceptability)"]
    assert Threshold(op=">", value=0) in hi.case_thresholds
    ta = summary_row(document, "linguistic_acceptability", "ta")
    single = mean_ci([0.0])  # one case: the aggregates' interval of a single value, if any
    assert ta.mean == 0 and ta.ci_low == (None if single is None else single[0]) and not ta.passed
    everything = summary_row(document, "linguistic_acceptability", "all")
    assert everything.n == 4
    assert [r.language for r in document.summary] == ["hi", "ta", "all"], "languages sorted, 'all' last"


def test_categorical_metric_has_pass_rate_not_mean() -> None:
    records = [
        case("hi-1", "hi", "hi", metric="language", op="==", value="hi", outcome="passed"),
        case("hi-2", "hi", "mr", metric="language", op="==", value="hi", outcome="failed"),
    ]
    hi = summary_row(build_document(RunInputs(records=records)), "language", "hi")
    assert hi.mean is None and hi.ci_low is None
    assert hi.pass_rate == 0.5


def test_aggregate_only_metric_takes_n_and_mean_from_the_aggregate_row() -> None:
    rows = [row("hi", 1.8, True, 50), row("all", 1.8, True, 50)]
    document = build_document(RunInputs(records=[aggregate("hi", rows), aggregate("all", rows)]))
    hi = summary_row(document, "linguistic_acceptability", "hi")
    assert hi.n == 50 and hi.mean == 1.8 and hi.ci_low == 1.3 and hi.passed


def test_an_expected_failure_of_an_aggregate_is_not_a_failing_check() -> None:
    rows = [row("hi", 1.0, False), row("all", 1.0, False)]
    records = [aggregate("hi", rows).model_copy(update={"outcome": "xfailed"})]
    (brief,) = summary_row(build_document(RunInputs(records=records)), "linguistic_acceptability", "hi").aggregates
    assert not brief.passed, "the item's own verdict stays a fail"
    records = [aggregate("hi", rows).model_copy(update={"outcome": "xpassed"})]
    (brief,) = summary_row(build_document(RunInputs(records=records)), "linguistic_acceptability", "hi").aggregates
    assert brief.passed, "pytest's outcome decides once the collector set it"


def test_order_is_stable_whatever_the_arrival_order() -> None:
    records: list[ItemRecord] = [case(f"{lang}-{i}", lang, i % 3) for lang in ("hi", "ta", "bn") for i in range(5)]
    rows = [row("hi", 1.0, False), row("all", 1.0, False)]
    records += [aggregate("hi", rows), aggregate("all", rows)]
    first = dumps(build_document(RunInputs(records=records)))
    shuffled = records[:]
    random.Random(1).shuffle(shuffled)
    assert dumps(build_document(RunInputs(records=shuffled))) == first
    document = json.loads(first)
    assert document["format"] == "pytest-llmjudge-report" and document["format_version"] == FORMAT_VERSION
    assert [c["case"] for c in document["cases"]] == sorted(c["case"] for c in document["cases"])


def test_a_real_runs_records_land_in_the_section_of_their_type(real_document: ReportDocument) -> None:
    document = real_document
    sections: dict[str, list[Any]] = {
        "cases": document.cases,
        "aggregates": document.aggregates,
        "gates": document.gates,
        "regressions": document.regressions,
        "rankings": document.rankings,
    }
    types = {"cases": CaseRecord, "aggregates": AggregateRecord, "gates": GateRecord}
    types |= {"regressions": RegressionRecord, "rankings": LeaderboardRecord}
    for name, records in sections.items():
        assert records, f"the example suites produce {name}"
        assert all(type(r) is types[name] for r in records), name
    assert {r.kind for r in document.other} == {"ranking_check", "ranking_surrogate"}
    assert document.not_run and all(r.outcome == "skipped" for r in document.not_run), "the keyless Anthropic suite"
    case_items = [r for r in document.cases if r.threshold is not None]
    every = [*case_items, *document.aggregates, *document.gates, *document.regressions, *document.rankings]
    outcomes = [r.outcome for r in [*every, *document.other]] + [r.outcome for r in document.not_run]
    totals = document.totals
    assert totals.items == len(outcomes) and totals.cases == len(document.cases)
    assert (totals.passed, totals.xfailed, totals.skipped) == tuple(
        outcomes.count(o) for o in ("passed", "xfailed", "skipped")
    )
    assert totals.xfailed > 0, "the calibration set's known failures count as xfailed, not skipped"
    assert [(r.suite, r.case, r.metric) for r in document.cases] == sorted(
        (r.suite, r.case, r.metric) for r in document.cases
    )
    assert all(not r.suite_path.startswith("/") for r in document.cases), "paths relative to the rootdir"
    judged = [r for r in document.cases if r.source == "judge"]
    assert judged and all(r.justification == f"scripted verdict ({r.metric})" for r in judged), "the loopback judge"
    assert document.accounting is not None and document.accounting.provider_calls > 0


def test_cases_judged_only_for_aggregates_are_in_the_report_once(real_document: ReportDocument) -> None:
    """The release-gate suite asserts only aggregates: its 160 cases x 3 metrics are still listed, with
    what was judged, once each (not once per aggregate item), counted in no item total, paired with the
    baseline's score, and the aggregates no longer carry them."""
    gate_cases = [r for r in real_document.cases if r.suite == "pariksha-release-gate"]
    assert len(gate_cases) == 160 * 3
    assert len({(r.case, r.metric) for r in gate_cases}) == len(gate_cases)
    assert {r.metric for r in gate_cases} == {"linguistic_acceptability", "task_quality", "hallucinations"}
    for record in gate_cases:
        assert record.threshold is None and record.passed is None
        assert record.nodeid is None and record.outcome is None
        assert record.input and record.output and record.score is not None and record.source == "recorded"
        assert record.baseline is not None and record.baseline.score is not None
    by_metric = {r.metric: r.aggregates for r in gate_cases}
    assert by_metric["hallucinations"] == ["pass_rate(hallucinations <= 0)"]
    assert by_metric["task_quality"] == ["mean(task_quality)"]
    assert all(a.cases is None for a in real_document.aggregates)
    asserted = [r for r in real_document.cases if r.threshold is not None]
    assert real_document.totals.items - len(real_document.not_run) == len(asserted) + sum(
        len(section)
        for section in (
            real_document.aggregates,
            real_document.gates,
            real_document.regressions,
            real_document.rankings,
            real_document.other,
        )
    )


def test_repeated_case_scores_are_kept_once_on_the_all_item() -> None:
    rows = [row("hi", 1.5, True), row("all", 1.5, True)]
    scores = [CaseScore(case="hi-1", language="hi", score=2, source="judge")]
    with_scores = [aggregate(lang, rows, case_scores=scores) for lang in ("hi", "all")]
    document = build_document(RunInputs(records=with_scores))
    kept = {r.language: r.case_scores is not None for r in document.aggregates}
    assert kept == {"hi": False, "all": True}
    assert with_scores[0].case_scores == scores, "the collector's records are not changed"


def test_a_case_gets_its_baseline_score_and_output_once(regressed: Callable[[str, str, str], RegressionRecord]) -> None:
    regression = regressed("linguistic_acceptability", "hi", "s.yaml::regression[la-hi]")
    records = [case("c1", "hi", 0), case("c2", "hi", 2), case("c3", "hi", 2), regression]
    document = build_document(RunInputs(records=records))
    assert [c.baseline for c in document.cases] == [
        BaselineCase(score=2, output="alt"),
        BaselineCase(score=2, output="gleich"),
        None,
    ]
    assert [p.baseline_output for p in document.regressions[0].cases] == [None, None], "each output once"
    assert regression.cases[0].baseline_output == "alt", "the collector's record is not changed"


def test_gate_records_feed_the_agreement_column() -> None:
    other_judge = gate("anthropic:claude-haiku-4-5", "cal.yaml::other")
    document = build_document(RunInputs(records=[case("hi-1", "hi", 2), other_judge]))
    assert summary_row(document, "linguistic_acceptability", "hi").gate is None, "another judge's gate"
    same_judge = gate("openai:gpt-4o-mini", "cal.yaml::gate[hi]")
    document = build_document(RunInputs(records=[case("hi-1", "hi", 2), same_judge, other_judge]))
    brief = summary_row(document, "linguistic_acceptability", "hi").gate
    assert brief is not None and brief.to_wire() == {
        "f1": 0.71,
        "ci_low": 0.65,
        "ci_high": 0.77,
        "ceiling": 0.8,
        "threshold": 0.6,
        "passed": True,
        "source": "metal",
        "nodeid": "cal.yaml::gate[hi]",
    }


# -- cost ---------------------------------------------------------------------------------------


def test_prices_parse_and_override_defaults() -> None:
    prices = parse_prices(["gpt-4o-mini = 1 2", "# comment", "", "local-judge = 0, 0  # free"])
    assert prices["gpt-4o-mini"] == (1.0, 2.0) and prices["local-judge"] == (0.0, 0.0)
    assert prices["gpt-4o"] == DEFAULT_PRICES["gpt-4o"]
    for bad in ("gpt-4o 1 2", "gpt-4o = 1", "gpt-4o = a b", "gpt-4o = -1 2", "= 1 2"):
        with pytest.raises(PriceError):
            parse_prices([bad])


def test_price_lookup_by_provider_label_and_dated_snapshot_only() -> None:
    assert price_for("openai:gpt-4o-mini", DEFAULT_PRICES) == ("gpt-4o-mini", DEFAULT_PRICES["gpt-4o-mini"])
    assert price_for("gpt-4o-2024-08-06", DEFAULT_PRICES) == ("gpt-4o", DEFAULT_PRICES["gpt-4o"])
    assert price_for("claude-opus-4-20250514", DEFAULT_PRICES) is not None
    assert price_for("gpt-4o-audio-preview", DEFAULT_PRICES) is None, "not a snapshot of gpt-4o"
    assert price_for("openai:my-finetune", DEFAULT_PRICES) is None


def test_cost_needs_usage_one_model_and_a_price() -> None:
    stats = RunnerStats(input_tokens=1_000_000, output_tokens=500_000)
    cost = estimate_cost(stats, ["openai:gpt-4o-mini"], DEFAULT_PRICES)
    assert cost["estimated_cost_usd"] == pytest.approx(0.15 + 0.30)
    assert cost["cost_model"] == "gpt-4o-mini" and cost["prices_per_1m"] == {"input": 0.15, "output": 0.6}
    assert estimate_cost(RunnerStats(), ["openai:gpt-4o"], DEFAULT_PRICES)["cost_note"] == "no token usage reported"
    unknown = estimate_cost(stats, ["openai:unknown-model"], DEFAULT_PRICES)
    assert unknown["estimated_cost_usd"] is None and "no price for openai:unknown-model" in unknown["cost_note"]
    several = estimate_cost(stats, ["openai:gpt-4o", "openai:gpt-4o-mini"], DEFAULT_PRICES)
    assert several["estimated_cost_usd"] is None and "2 judge models" in several["cost_note"]


def test_the_accounting_prices_the_live_judge_of_the_suites() -> None:
    suite = SuiteInfo(name="s", path="s.yaml", live_judge=True, judge=JudgeInfo(label="openai:gpt-4o-mini", seed=7))
    stats = RunnerStats(provider_calls=3, input_tokens=1_000_000, output_tokens=0)
    document = build_document(RunInputs(suites=[suite], stats=stats))
    assert document.accounting is not None and document.accounting.provider_calls == 3
    assert document.accounting.estimated_cost_usd == pytest.approx(0.15)
    assert document.run.judge_models == ["openai:gpt-4o-mini"] and document.run.judge_seeds == [7]


# -- metadata and secrets -----------------------------------------------------------------------


def test_rubric_hash_is_order_independent_and_changes_with_a_version() -> None:
    assert rubric_hash([("a", "1"), ("b", "2")]) == rubric_hash([("b", "2"), ("a", "1"), ("a", "1")])
    assert rubric_hash([("a", "1")]) != rubric_hash([("a", "2")])
    assert rubric_hash([]) is None


def test_urls_lose_credentials() -> None:
    assert clean_url("https://user:pw@host.example:8443/v1?key=abc#x") == "https://host.example:8443/v1"
    assert clean_url(None) is None


def test_secrets_are_found_and_redacted_everywhere() -> None:
    environ = {
        "OPENAI_API_KEY": "sk-secret-123456",
        "MY_TOKEN": "tok-abcdefgh",
        "HOME": "/root",
        "SHORT_API_KEY": "abc",
    }
    environ["JUDGE_KEY_VAR"] = "custom-key-value"
    assert "custom-key-value" not in secrets_from_environment(environ)
    secrets = secrets_from_environment(environ, ["JUDGE_KEY_VAR"])
    assert set(secrets) == {"sk-secret-123456", "tok-abcdefgh", "custom-key-value"}
    cleaned = redact_value({"a": ["x sk-secret-123456 y"], "tok-abcdefgh": 1, "n": 3}, secrets)
    assert cleaned == {"a": ["x *** y"], "***": 1, "n": 3}
    leaky = case(
        "a",
        "hi",
        1,
        suite="suite-tok-abcdefgh",
        justification="key sk-secret-123456",
        detail={"custom-key-value": ["sk-secret-123456"]},
    )
    run = RunInfo(judge_headlines=["judge http://x/v1: 401 for key sk-secret-123456"], pytest_args=["tok-abcdefgh"])
    document = build_document(RunInputs(records=[leaky], run=run, secrets=secrets))
    text = dumps(document)
    assert not [s for s in secrets if s in text]
    assert document.run.judge_headlines == ["judge http://x/v1: 401 for key ***"]
    assert document.cases[0].detail == {"***": ["***"]} and document.summary[0].suite == "suite-***"
    assert leaky.justification == "key sk-secret-123456", "the collector's record is not changed"


def test_urls_with_credentials_are_redacted_in_the_document_without_known_secrets() -> None:
    document = build_document(
        RunInputs(
            records=[case("a", "hi", 1, justification="see https://bob:hunter22@proxy.example/v1?api_key=k-123")],
            run=RunInfo(pytest_args=["--llmjudge-base-url=http://user:pass@127.0.0.1:9/v1"]),
        )
    )
    text = dumps(document)
    assert "hunter22" not in text and "k-123" not in text and "user:pass" not in text
    assert "https://***@proxy.example/v1?api_key=***" in text
    assert "--llmjudge-base-url=http://***@127.0.0.1:9/v1" in text


def test_paths_under_the_rootdir_become_relative() -> None:
    records = [case("a", "hi", 2, suite_path="/repo/suites/x.yaml"), gate("j", "cal.yaml::g")]
    document = build_document(RunInputs(records=records, root="/repo"))
    assert document.cases[0].suite_path == "suites/x.yaml"
    assert document.gates[0].calibration_path == "/elsewhere/metal.yaml", "outside the rootdir: kept"


def test_an_empty_run_is_a_valid_document() -> None:
    document = build_document(RunInputs())
    assert document.summary == [] and document.totals.items == 0 and document.accounting is None
    assert ReportDocument.model_validate_json(dumps(document)) == document


# -- the JSON schema ----------------------------------------------------------------------------


def test_the_checked_in_schema_is_the_generated_one() -> None:
    """Regenerate with ``python -m pytest_llmjudge.report.document`` when this fails."""
    assert SCHEMA.read_text(encoding="utf-8") == schema_text()
    schema = json_schema()
    assert schema["properties"]["format_version"]["const"] == FORMAT_VERSION
    assert "ignore fields" in schema["description"]


def test_a_real_runs_json_report_validates_against_the_schema_and_parses_back(real_run: Any) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    wire = json.loads(real_run.json_text)
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in jsonschema.Draft202012Validator(schema).iter_errors(wire)
    ]
    assert not errors, errors[:5]
    assert dumps(real_run.document) == real_run.json_text, "the file is the document's wire form"
    # A small document is enough to show the schema lets a reader ignore a field added later.
    newer = {**json.loads(dumps(ReportDocument())), "added_later": {"x": 1}}
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(newer)), "readers ignore unknown fields"


def test_a_case_without_a_threshold_is_lifted_from_the_aggregates_once() -> None:
    """Each aggregate item carries the records of its row's unasserted cases: the ``hi`` row's case sits on
    the ``hi`` item and on the ``all`` item, and under two aggregates of the same metric; the document
    lists it once, with its path made relative, and no item total or summary count includes it."""
    lifted = case("hi-1", "hi", 2.0, threshold=None, passed=None, aggregates=["mean(m)", "lower(mean(m))"])
    lifted.suite_path = "/root/s.yaml"
    other = case("ta-1", "ta", None, threshold=None, passed=None, unscored_reason="judge reply is not JSON")
    lifted.nodeid = lifted.outcome = other.nodeid = other.outcome = None
    rows = [row("hi", 2.0, True), row("all", 2.0, True)]
    records: list[ItemRecord] = [
        aggregate("hi", rows, cases=[lifted]),
        aggregate("all", rows, cases=[lifted, other]),
        aggregate("all", rows, label="lower(mean(linguistic_acceptability))", cases=[lifted, other]),
    ]
    document = build_document(RunInputs(records=records, root="/root"))
    assert [(r.case, r.suite_path, r.score) for r in document.cases] == [
        ("hi-1", "s.yaml", 2.0),
        ("ta-1", "s.yaml", None),
    ]
    assert all(a.cases is None for a in document.aggregates)
    assert document.totals.items == 3 and document.totals.passed == 3 and document.totals.cases == 2
    assert {(r.language, r.n) for r in document.summary} == {("hi", 2), ("all", 2)}, "n from the aggregate rows"
