"""The report document: summary rows, ordering, cost, redaction, unknown kinds."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from pytest_llmjudge.aggregate import mean_ci
from pytest_llmjudge.redaction import redact_value, secrets_from_environment
from pytest_llmjudge.report.json_report import dumps
from pytest_llmjudge.report.model import (
    DEFAULT_PRICES,
    FORMAT_VERSION,
    PriceError,
    RunInputs,
    build_document,
    clean_url,
    estimate_cost,
    parse_prices,
    price_for,
    regression_status,
    rubric_hash,
)


def case(
    case_id: str,
    language: str,
    score: Any,
    *,
    metric: str = "linguistic_acceptability",
    suite: str = "s",
    op: str = ">=",
    value: Any = 1,
    outcome: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    passed = outcome == "passed" if outcome else (score is not None and score >= value)
    return {
        "kind": "case",
        "suite": suite,
        "case": case_id,
        "language": language,
        "metric": metric,
        "threshold": {"op": op, "value": value},
        "score": score,
        "source": "judge",
        "judge": "openai:gpt-4o-mini",
        "cached": False,
        "justification": f"why {case_id}",
        "unscored_reason": None if score is not None else "no verdict",
        "passed": passed,
        "nodeid": f"{suite}.yaml::{case_id}[{metric}]",
        "outcome": outcome or ("passed" if passed else "failed"),
        **extra,
    }


def aggregate(
    language: str, rows: list[dict[str, Any]], *, label: str = "mean(linguistic_acceptability)"
) -> dict[str, Any]:
    row = next(r for r in rows if r["language"] == language)
    return {
        "kind": "aggregate",
        "suite": "s",
        "aggregate": label,
        "metric": "linguistic_acceptability",
        "language": language,
        "passed": row["passed"],
        "rows": rows,
        "nodeid": f"s.yaml::{label}[{language}]",
        "outcome": "passed" if row["passed"] else "failed",
    }


def row(language: str, value: float, passed: bool, n: int = 2) -> dict[str, Any]:
    return {
        "language": language,
        "n_scored": n,
        "n_unscored": 0,
        "value": value,
        "ci_low": value - 0.5,
        "ci_high": value + 0.5,
        "threshold": {"op": ">=", "value": 1.5},
        "passed": passed,
        "problem": None,
    }


def summary_row(document: dict[str, Any], metric: str, language: str, suite: str = "s") -> dict[str, Any]:
    (found,) = [r for r in document["summary"] if (r["suite"], r["metric"], r["language"]) == (suite, metric, language)]
    return dict(found)


def test_summary_counts_cases_once_and_gives_mean_ci_per_language_and_all() -> None:
    records = [
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
    assert hi["n"] == 3 and hi["n_unscored"] == 1
    assert hi["mean"] == pytest.approx(1.5)
    assert hi["ci_low"] < 1.5 < hi["ci_high"]
    assert hi["items_passed"] == 3 and hi["items_failed"] == 1
    assert not hi["passed"], "an unscored case fails its row"
    assert [a["label"] for a in hi["aggregates"]] == ["mean(linguistic_acceptability)"]
    assert {"op": ">", "value": 0} in hi["case_thresholds"]
    ta = summary_row(document, "linguistic_acceptability", "ta")
    single = mean_ci([0.0])  # one case: the aggregates' interval of a single value, if any
    assert ta["mean"] == 0 and ta["ci_low"] == (None if single is None else single[0]) and not ta["passed"]
    everything = summary_row(document, "linguistic_acceptability", "all")
    assert everything["n"] == 4
    languages = [r["language"] for r in document["summary"]]
    assert languages == ["hi", "ta", "all"], "languages sorted, 'all' last"


def test_categorical_metric_has_pass_rate_not_mean() -> None:
    records = [
        case("hi-1", "hi", "hi", metric="language", op="==", value="hi", outcome="passed"),
        case("hi-2", "hi", "mr", metric="language", op="==", value="hi", outcome="failed"),
    ]
    document = build_document(RunInputs(records=records))
    hi = summary_row(document, "language", "hi")
    assert hi["mean"] is None and hi["ci_low"] is None
    assert hi["pass_rate"] == 0.5


def test_aggregate_only_metric_takes_n_and_mean_from_the_aggregate_row() -> None:
    rows = [row("hi", 1.8, True, 50), row("all", 1.8, True, 50)]
    document = build_document(RunInputs(records=[aggregate("hi", rows), aggregate("all", rows)]))
    hi = summary_row(document, "linguistic_acceptability", "hi")
    assert hi["n"] == 50 and hi["mean"] == 1.8 and hi["ci_low"] == 1.3 and hi["passed"]


def test_order_is_stable_whatever_the_arrival_order() -> None:
    records = [case(f"{lang}-{i}", lang, i % 3) for lang in ("hi", "ta", "bn") for i in range(5)]
    rows = [row("hi", 1.0, False), row("all", 1.0, False)]
    records += [aggregate("hi", rows), aggregate("all", rows)]
    first = dumps(build_document(RunInputs(records=records)))
    shuffled = records[:]
    random.Random(1).shuffle(shuffled)
    assert dumps(build_document(RunInputs(records=shuffled))) == first
    document = json.loads(first)
    assert document["format"] == "pytest-llmjudge-report" and document["format_version"] == FORMAT_VERSION
    assert [c["case"] for c in document["cases"]] == sorted(c["case"] for c in document["cases"])


def test_unknown_kinds_are_kept_whole_and_counted() -> None:
    strange = {"kind": "novelty", "nodeid": "x.yaml::n", "outcome": "passed", "payload": {"a": [1, 2]}}
    document = build_document(RunInputs(records=[strange]))
    assert document["other"] == [strange]
    assert document["totals"]["passed"] == 1 and document["totals"]["items"] == 1


def test_non_finite_numbers_become_null() -> None:
    document = build_document(RunInputs(records=[case("a", "hi", 1, spread=float("nan"))]))
    assert document["cases"][0]["spread"] is None
    dumps(document)  # allow_nan=False would raise


def test_gate_records_feed_the_agreement_column() -> None:
    gate = {
        "kind": "gate",
        "calibration": "metal",
        "language": "hi",
        "metric": "linguistic_acceptability",
        "f1": 0.71,
        "ci": {"low": 0.65, "high": 0.77},
        "threshold": 0.6,
        "ceiling": 0.8,
        "passed": True,
        "nodeid": "cal.yaml::gate[hi]",
        "outcome": "passed",
    }
    other_judge = {**gate, "judge": "anthropic:claude-haiku-4-5", "nodeid": "cal.yaml::other"}
    document = build_document(RunInputs(records=[case("hi-1", "hi", 2), other_judge]))
    assert summary_row(document, "linguistic_acceptability", "hi")["gate"] is None, "another judge's gate"
    gate["judge"] = "openai:gpt-4o-mini"
    document = build_document(RunInputs(records=[case("hi-1", "hi", 2), gate, other_judge]))
    brief = summary_row(document, "linguistic_acceptability", "hi")["gate"]
    assert brief == {
        "f1": 0.71,
        "ci_low": 0.65,
        "ci_high": 0.77,
        "ceiling": 0.8,
        "threshold": 0.6,
        "passed": True,
        "source": "metal",
        "nodeid": "cal.yaml::gate[hi]",
    }


def test_regression_status_reads_gate_and_verdict() -> None:
    assert regression_status({"gate": "fail", "verdict": "regressed"}) == "fail"
    assert regression_status({"gate": "warn"}) == "warn"
    assert regression_status({"gate": "pass", "verdict": "improved"}) == "improved"
    assert regression_status({"gate": "pass", "verdict": "no significant change"}) == "pass"
    assert regression_status({"verdict": "regressed"}) == "fail"
    assert regression_status({"passed": False}) == "fail"


def test_repeated_case_scores_are_kept_once_on_the_all_item() -> None:
    rows = [row("hi", 1.5, True), row("all", 1.5, True)]
    with_scores = [dict(aggregate(lang, rows), case_scores=[{"case": "hi-1", "score": 2}]) for lang in ("hi", "all")]
    document = build_document(RunInputs(records=with_scores))
    kept = {r["language"]: "case_scores" in r for r in document["aggregates"]}
    assert kept == {"hi": False, "all": True}


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
    stats = {"input_tokens": 1_000_000, "output_tokens": 500_000}
    cost = estimate_cost(stats, ["openai:gpt-4o-mini"], DEFAULT_PRICES)
    assert cost["estimated_cost_usd"] == pytest.approx(0.15 + 0.30)
    assert cost["cost_model"] == "gpt-4o-mini" and cost["prices_per_1m"] == {"input": 0.15, "output": 0.6}
    assert (
        estimate_cost({"input_tokens": 0, "output_tokens": 0}, ["openai:gpt-4o"], DEFAULT_PRICES)["cost_note"]
        == "no token usage reported"
    )
    unknown = estimate_cost(stats, ["openai:unknown-model"], DEFAULT_PRICES)
    assert unknown["estimated_cost_usd"] is None and "no price for openai:unknown-model" in unknown["cost_note"]
    several = estimate_cost(stats, ["openai:gpt-4o", "openai:gpt-4o-mini"], DEFAULT_PRICES)
    assert several["estimated_cost_usd"] is None and "2 judge models" in several["cost_note"]


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
    document = build_document(
        RunInputs(records=[case("a", "hi", 1, justification="key sk-secret-123456")], secrets=secrets)
    )
    assert "sk-secret-123456" not in dumps(document)


def test_urls_with_credentials_are_redacted_in_the_document_without_known_secrets() -> None:
    document = build_document(
        RunInputs(
            records=[case("a", "hi", 1, justification="see https://bob:hunter22@proxy.example/v1?api_key=k-123")],
            run={"pytest_args": ["--llmjudge-base-url=http://user:pass@127.0.0.1:9/v1"]},
        )
    )
    text = dumps(document)
    assert "hunter22" not in text and "k-123" not in text and "user:pass" not in text
    assert "https://***@proxy.example/v1?api_key=***" in text
    assert "--llmjudge-base-url=http://***@127.0.0.1:9/v1" in text


def test_paths_under_the_rootdir_become_relative() -> None:
    record = case("a", "hi", 2, suite_path="/repo/suites/x.yaml", other_path="/elsewhere/y.yaml")
    (found,) = build_document(RunInputs(records=[record], root="/repo"))["cases"]
    assert found["suite_path"] == "suites/x.yaml" and found["other_path"] == "/elsewhere/y.yaml"


def test_schema_lists_the_document_fields(synthetic_document: dict[str, Any]) -> None:
    """Without jsonschema installed, at least the schema's field lists must match the document."""
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "report.schema.json").read_text("utf-8"))
    assert set(schema["required"]) == set(synthetic_document) == set(schema["properties"])
    assert schema["properties"]["format_version"]["const"] == FORMAT_VERSION
    definitions = schema["$defs"]
    for row in synthetic_document["summary"]:
        assert set(definitions["summaryRow"]["required"]) <= set(row)
    assert set(definitions["run"]["required"]) <= set(synthetic_document["run"])
    assert set(definitions["accounting"]["required"]) <= set(synthetic_document["accounting"])
    for section, definition in (("cases", "caseRecord"), ("aggregates", "aggregateRecord"), ("gates", "gateRecord")):
        for record in synthetic_document[section]:
            assert set(definitions[definition]["required"]) <= set(record), section
