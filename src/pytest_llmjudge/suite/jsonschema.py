"""The JSON Schema of suite files, for editors and external validators.

``src/pytest_llmjudge/schema/suite.schema.json`` (shipped inside the package) is generated
from the pydantic models in :mod:`pytest_llmjudge.suite.schema`; never edit it by hand.
Regenerate it after changing those models, from the repository root::

    python -m pytest_llmjudge.suite.jsonschema          # write the shipped file
    python -m pytest_llmjudge.suite.jsonschema --check  # exit 1 if it is stale
    python -m pytest_llmjudge.suite.jsonschema PATH     # write (or check) another file

``tests/unit/test_jsonschema.py`` fails when the shipped file differs from what this module
generates, so a stale schema can't be released.

The generated schema is ``SuiteConfig.model_json_schema(by_alias=True)`` (so the YAML key
is ``assert``, not ``assert_``) plus the draft 2020-12 ``$schema``, an ``$id``, a title and
a description. pydantic can't express the models' ``model_validator`` / ``field_validator``
rules in JSON Schema, so the ones an editor can check are added by hand here:

* a suite needs a non-empty ``cases`` list or a ``cases_file`` (``SuiteConfig._has_cases``);
* ``outputs`` needs exactly one of ``file`` and ``target`` (``OutputsConfig._exactly_one``);
* a rubric ``scale`` needs at least two entries (the model also requires them distinct);
* rubric ``scores`` keys are integers (JSON object keys are strings, so a pattern);
* a case ``id`` has no ``[ ] / :``, newline, or leading/trailing whitespace;
* ``judge.correction: true`` needs ``judge.calibration`` (``JudgeConfig``);
* ``regression.per_metric``, ``per_language`` and ``per_group`` margins are not negative;
* every ``group_by`` list starts with ``language`` and has no repeated field.

Degenerate cases: the schema is a necessary check, not a sufficient one. What needs more
than the file itself (threshold expressions, metric names, side files, recorded scores
against rubric scales, duplicate ids) is checked only when pytest loads the suite.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_llmjudge.suite.schema import SuiteConfig

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "urn:pytest-llmjudge:suite.schema.json"
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "schema" / "suite.schema.json"

# JSON Schema (ECMA-262) form of CaseConfig._id_is_node_safe: no '[', ']', '/', ':' or
# newline anywhere, and no whitespace at either end.
_CASE_ID_PATTERN = r"^[^\s\[\]/:](?:[^\[\]/:\n]*[^\s\[\]/:])?$"


def _add_validator_rules(schema: dict[str, Any]) -> None:
    """Add the model validators' rules that JSON Schema can express (see module docstring).

    Indexing (not ``.get``) on purpose: if a model is renamed, this fails loudly in the
    tests instead of silently dropping a rule.
    """
    defs = schema["$defs"]
    schema["anyOf"] = [
        {"required": ["cases"], "properties": {"cases": {"minItems": 1}}},
        {"required": ["cases_file"], "properties": {"cases_file": {"not": {"type": "null"}}}},
    ]
    defs["OutputsConfig"]["oneOf"] = [
        {"required": ["file"], "properties": {"file": {"type": "string"}}},
        {"required": ["target"], "properties": {"target": {"type": "string"}}},
    ]
    rubric = defs["RubricConfig"]["properties"]
    rubric["scale"]["minItems"] = 2
    rubric["scores"]["propertyNames"] = {"pattern": r"^-?[0-9]+$"}
    defs["CaseConfig"]["properties"]["id"]["pattern"] = _CASE_ID_PATTERN
    defs["JudgeConfig"]["if"] = {"required": ["correction"], "properties": {"correction": {"const": True}}}
    defs["JudgeConfig"]["then"] = {"required": ["calibration"], "properties": {"calibration": {"type": "string"}}}
    regression = defs["RegressionConfig"]["properties"]
    for name in ("per_metric", "per_language", "per_group"):
        regression[name]["additionalProperties"]["minimum"] = 0
    group_by = {"prefixItems": [{"const": "language"}], "minItems": 1, "uniqueItems": True}
    schema["properties"]["group_by"].update(group_by)
    for model in ("AggregateConfig", "RegressionConfig"):
        defs[model]["properties"]["group_by"]["anyOf"][0].update(group_by)


def suite_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a suite file."""
    generated = copy.deepcopy(SuiteConfig.model_json_schema(by_alias=True))
    _add_validator_rules(generated)
    header: dict[str, Any] = {
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
        "title": "pytest-llmjudge suite",
        "description": (
            "A YAML evaluation suite for pytest-llmjudge (a mapping with a top-level 'suite:' key). "
            "Generated from pytest_llmjudge.suite.schema by python -m pytest_llmjudge.suite.jsonschema; "
            "do not edit. Threshold expressions, metric names and side files are checked when pytest "
            "loads the suite."
        ),
    }
    generated.pop("title", None)
    generated.pop("description", None)
    definitions = generated.pop("$defs")
    # The header first and the definitions last, so the file reads top-down.
    return {**header, **generated, "$defs": definitions}


def render(schema: dict[str, Any]) -> str:
    """The schema as the shipped file holds it: model field order, two-space indent, final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmjudge.suite.jsonschema",
        description="Write (or check) the JSON Schema of pytest-llmjudge suite files.",
    )
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=DEFAULT_PATH,
        help="where the schema goes (default: the copy shipped in the package)",
    )
    parser.add_argument("--check", action="store_true", help="don't write; exit 1 if PATH is missing or stale")
    args = parser.parse_args(argv)
    expected = render(suite_json_schema())
    path: Path = args.path
    if args.check:
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != expected:
            print(
                f"{path} is {'missing' if current is None else 'stale'}; "
                "regenerate it with: python -m pytest_llmjudge.suite.jsonschema",
                file=sys.stderr,
            )
            return 1
        print(f"{path} is up to date")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(expected, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
