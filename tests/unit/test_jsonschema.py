"""The shipped JSON Schema of suite files: current, and in agreement with the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from pytest_llmjudge.suite import jsonschema as suite_jsonschema
from pytest_llmjudge.suite.schema import SuiteConfig

REPO = Path(__file__).resolve().parents[2]
# Suites only (subdirectories included): other YAML files there (calibration sets, with a
# `calibration:` key) have their own format.
EXAMPLES = sorted(
    path
    for path in (REPO / "example_suites").rglob("*.yaml")
    if any(line.startswith("suite:") for line in path.read_text(encoding="utf-8").splitlines())
)
SHIPPED = REPO / "src" / "pytest_llmjudge" / "schema" / "suite.schema.json"


def as_json(document: Any) -> Any:
    """What an editor validates: YAML data as JSON (integer mapping keys become strings)."""
    return json.loads(json.dumps(document, default=str))


@pytest.fixture(scope="module")
def validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SHIPPED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_shipped_file_is_the_generated_schema() -> None:
    assert SHIPPED.read_text(encoding="utf-8") == suite_jsonschema.render(suite_jsonschema.suite_json_schema()), (
        "suite.schema.json is stale: run python -m pytest_llmjudge.suite.jsonschema"
    )


def test_default_path_is_the_shipped_file() -> None:
    assert suite_jsonschema.DEFAULT_PATH == SHIPPED


def test_header() -> None:
    schema = suite_jsonschema.suite_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == suite_jsonschema.SCHEMA_ID
    assert schema["title"] and schema["description"]
    assert schema["required"] == ["suite"]
    assert "assert" in schema["properties"] and "assert_" not in schema["properties"]


def test_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "suite.schema.json"
    assert suite_jsonschema.main(["--check", str(target)]) == 1
    assert "missing" in capsys.readouterr().err
    assert suite_jsonschema.main([str(target)]) == 0
    assert suite_jsonschema.main(["--check", str(target)]) == 0
    target.write_text(target.read_text(encoding="utf-8").replace('"single"', '"sungle"'), encoding="utf-8")
    assert suite_jsonschema.main(["--check", str(target)]) == 1
    assert "stale" in capsys.readouterr().err


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_suites_validate(validator: Any, path: Path) -> None:
    document = as_json(yaml.safe_load(path.read_text(encoding="utf-8")))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []


def test_unknown_field_fails(validator: Any) -> None:
    document = {"suite": "s", "cases": [{"id": "a", "language": "hi", "output": "x"}], "judge": {"modle": "gpt-4o"}}
    errors = list(validator.iter_errors(document))
    assert errors
    assert any("modle" in error.message for error in errors)


def _pydantic_accepts(document: dict[str, Any]) -> bool:
    try:
        SuiteConfig.model_validate(document)
    except pydantic.ValidationError:
        return False
    return True


CASE = {"id": "hi-1", "language": "hi", "output": "नमस्ते"}
RUBRIC = {"description": "polite?", "scale": [1, 2, 3]}


@pytest.mark.parametrize(
    "document",
    [
        {"suite": "ok", "cases": [CASE]},
        {"suite": "ok", "cases_file": "cases.jsonl"},
        {"suite": "ok", "cases_file": [{"path": "a.jsonl", "where": {"model": "x"}}, "b.jsonl"]},
        {"suite": "no cases"},
        {"suite": "empty cases", "cases": []},
        {"suite": "null cases_file", "cases_file": None},
        {"suite": "ok", "cases": [CASE], "outputs": {"file": "out.jsonl"}},
        {"suite": "ok", "cases": [CASE], "outputs": {"target": "pkg.mod:generate"}},
        {"suite": "both", "cases": [CASE], "outputs": {"file": "out.jsonl", "target": "pkg.mod:generate"}},
        {"suite": "neither", "cases": [CASE], "outputs": {}},
        {"suite": "ok", "cases": [CASE], "rubrics": {"r": RUBRIC}},
        {"suite": "ok", "cases": [CASE], "rubrics": {"r": {**RUBRIC, "scores": {1: "rude", 3: "polite"}}}},
        {"suite": "one-point scale", "cases": [CASE], "rubrics": {"r": {**RUBRIC, "scale": [1]}}},
        {"suite": "text score key", "cases": [CASE], "rubrics": {"r": {**RUBRIC, "scores": {"high": "x"}}}},
        {"suite": "ok", "cases": [{**CASE, "id": "pt-BR.case 7"}]},
        {"suite": "slash", "cases": [{**CASE, "id": "a/b"}]},
        {"suite": "bracket", "cases": [{**CASE, "id": "a[1]"}]},
        {"suite": "colon", "cases": [{**CASE, "id": "a:b"}]},
        {"suite": "edge space", "cases": [{**CASE, "id": " a"}]},
        {"suite": "newline", "cases": [{**CASE, "id": "a\nb"}]},
        {"suite": "ok", "cases": [{**CASE, "id": "x"}]},
        {"suite": "bad mode", "cases": [CASE], "judge": {"mode": "batch"}},
        {"suite": "repeats 0", "cases": [CASE], "judge": {"repeats": 0}},
        {"suite": "ok", "cases": [{**CASE, "recorded": {"la": 2, "h": {"score": None, "judge": "gpt-4"}}}]},
        {"suite": "ok", "cases": [CASE], "aggregate": ["mean(chrf) >= 40", {"expr": "mean(la) >= 1", "min_cases": 3}]},
        {"suite": "bad rate", "cases": [CASE], "aggregate": [{"expr": "mean(la) >= 1", "max_unscored_rate": 2}]},
        {"suite": "ok", "cases": [CASE], "judge": {"calibration": "cal.yaml", "correction": True}},
        {"suite": "ok", "cases": [CASE], "judge": {"correction": False}},
        {"suite": "correction alone", "cases": [CASE], "judge": {"correction": True}},
        {"suite": "ok", "cases": [CASE], "regression": {"baseline": "prod", "per_language": {"hi": 0.1}}},
        {"suite": "negative margin", "cases": [CASE], "regression": {"per_metric": {"la": -0.1}}},
        {"suite": "bad alpha", "cases": [CASE], "regression": {"alpha": 1.5}},
    ],
    ids=lambda d: str(d["suite"]),
)
def test_schema_agrees_with_the_models(validator: Any, document: dict[str, Any]) -> None:
    assert validator.is_valid(as_json(document)) == _pydantic_accepts(document)
