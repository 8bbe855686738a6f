"""The shared suite builders (``tests/builders.py``) write YAML that reads back as what they were given."""

from __future__ import annotations

import pytest
import yaml
from builders import flow, judged, recorded_rows, rows, suite_text


@pytest.mark.parametrize(
    "value",
    ["sw", "q 0", "Bonjour 0 !", "yes", "No", "null", "a: b", "# x", "नमस्ते", "http://h:1/v1", "1", " x", True, 3, 0.5,
     None, {"a": [1, "on"], "b": {"c": "d"}}],
)  # fmt: skip
def test_a_flow_value_reads_back_as_itself(value: object) -> None:
    assert yaml.safe_load(f"k: {flow(value)}")["k"] == value


def test_a_suite_reads_back_as_its_parts() -> None:
    text = suite_text(
        "s",
        rows(3, languages=("hi", "fr")) + recorded_rows({"de": [2]}, "task_quality"),
        judge=judged("http://127.0.0.1:9/v1", provider="openai", mode="batch"),
        aggregate=["expr: mean(linguistic_acceptability) >= 1"],
        head="group_by: [language]",
    )
    assert yaml.safe_load(text) == {
        "suite": "s",
        "judge": {
            "provider": "openai",
            "model": "loopback-judge",
            "base_url": "http://127.0.0.1:9/v1",
            "mode": "batch",
        },
        "group_by": ["language"],
        "cases": [
            {"id": "c00", "language": "hi", "input": "q 0", "output": "answer 0"},
            {"id": "c01", "language": "fr", "input": "q 1", "output": "answer 1"},
            {"id": "c02", "language": "hi", "input": "q 2", "output": "answer 2"},
            {"id": "de-0", "language": "de", "output": "x", "recorded": {"task_quality": 2}},
        ],
        "assert": ["linguistic_acceptability >= 1"],
        "aggregate": [{"expr": "mean(linguistic_acceptability) >= 1"}],
    }
