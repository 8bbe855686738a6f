"""The multilingual sanity cases in data/metric_cases.jsonl, with their expected values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.metrics import MetricInput, matches, resolve_metric

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "metric_cases.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


def _item(case: dict[str, Any]) -> MetricInput:
    return MetricInput(
        output=case["output"],
        reference=case["reference"],
        input=case["input"],
        context=tuple(case["context"]),
        language=case["language"],
        metadata=case["metadata"],
    )


def test_cases_have_the_documented_fields() -> None:
    assert 8 <= len(CASES) <= 12
    assert len({case["id"] for case in CASES}) == len(CASES)
    for case in CASES:
        assert set(case) == {"id", "language", "input", "output", "reference", "context", "metadata"}
        assert isinstance(case["context"], list)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_expected_values(case: dict[str, Any]) -> None:
    item = _item(case)
    for name, expected in case["metadata"]["expected"].items():
        params = {"decimal_comma": True} if name == "numeric_fidelity" and case["language"] == "de" else {}
        value = resolve_metric(name, params).compute(item).value
        if name == "language":
            assert matches(case["language"], value), (name, value)
            assert value == expected
        else:
            assert value == pytest.approx(expected, abs=1e-4), name


@pytest.mark.parametrize("name", ["chrf++", "bleu", "rouge_l", "lrm2qas"])
def test_every_case_scores_within_range(name: str) -> None:
    upper = 100.0 if name in ("chrf++", "bleu") else 1.0
    metric = resolve_metric(name)
    for value in (metric.compute(_item(case)) for case in CASES):
        assert isinstance(value.value, float) and 0.0 <= value.value <= upper
