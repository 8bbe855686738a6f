"""Calibration items read without a model per item (``calibration/plain_items.py``) are what the model makes of them.

Every record ``plain_item`` accepts must be one the pydantic model accepts, with the same
fields; every other record is left to the model (``None``), which accepts it or names the
file, line and field of what is wrong, as before.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_llmjudge.calibration.build import build_calibration
from pytest_llmjudge.calibration.plain_items import item_fields, plain_item
from pytest_llmjudge.calibration.schema import CalibrationItemConfig
from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.registry import Registry

PLAIN: list[dict[str, Any]] = [
    {"id": "i1", "language": "hi", "output": "x", "human": {"task_quality": {"a1": 2, "a2": 1}}},
    {
        "id": "i2",
        "language": "pt-BR",
        "output": "",
        "input": "q",
        "reference": None,
        "context": ["c1", "c2"],
        "metadata": {"task": "qa", "n": 3},
        "human": {"linguistic_acceptability": {"2": 0, "1": 2}, "hallucinations": {"x": 1}},
        "recorded": {
            "linguistic_acceptability": 2,
            "hallucinations": {"score": 1.0, "judge": "gpt-4", "justification": "fine"},
            "task_quality": {"score": None},
        },
    },
    {"id": "i3", "language": "ta", "output": "y", "context": "one", "metric": "task_quality", "labels": {"a": 0}},
]

NOT_PLAIN: list[dict[str, Any]] = [
    # Valid, but the model converts a value: it decides.
    {"id": "i", "language": "hi", "output": "x", "human": {"task_quality": {"a1": 2.0}}},
    {"id": "i", "language": "hi", "output": "x", "human": {"task_quality": {"a1": "2"}}},
    {"id": "i", "language": "hi", "output": "x", "metric": "task_quality", "labels": {"a": 1}, "human": {}},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "recorded": {"m": 10**400}},
    # Invalid: the model names what is wrong.
    {"id": "i", "language": "hi", "output": "x", "human": {"task_quality": {"a1": True}}},
    {"id": "i ", "language": "hi", "output": "x", "human": {"task_quality": {"a1": 2}}},
    {"id": "", "language": "hi", "output": "x", "human": {"task_quality": {"a1": 2}}},
    {"id": "i", "language": "h", "output": "x", "human": {"task_quality": {"a1": 2}}},
    {"id": "i", "language": "hi", "human": {"task_quality": {"a1": 2}}},
    {"id": "i", "language": "hi", "output": 3, "human": {"task_quality": {"a1": 2}}},
    {"id": "i", "language": "hi", "output": "x", "human": {"task_quality": {}}},
    {"id": "i", "language": "hi", "output": "x", "human": {}},
    {"id": "i", "language": "hi", "output": "x"},
    {"id": "i", "language": "hi", "output": "x", "metric": "task_quality"},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "surprise": 1},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "metadata": None},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "context": [1]},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "recorded": {"m": True}},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "recorded": {"m": float("inf")}},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "recorded": {"m": {"judge": "j"}}},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "recorded": {"m": {"score": 1, "x": 2}}},
    {"id": "i", "language": "hi", "output": "x", "human": {"m": {"a": 1}}, "recorded": {"m": {"score": "1"}}},
]


@pytest.mark.parametrize("record", PLAIN, ids=[r["id"] for r in PLAIN])
def test_a_plain_record_gives_the_models_fields(record: dict[str, Any]) -> None:
    assert plain_item(copy.deepcopy(record)) == item_fields(CalibrationItemConfig.model_validate(record))


@pytest.mark.parametrize("record", NOT_PLAIN)
def test_any_other_record_is_left_to_the_model(record: dict[str, Any]) -> None:
    assert plain_item(record) is None


def test_no_record_the_model_refuses_is_accepted() -> None:
    """Each plain record with one field replaced by a value of another JSON type, or removed."""
    replacements: list[Any] = [None, True, 0, 1.5, "", "x", [], ["x"], {}, {"a": 1}]
    tried = 0
    for record in PLAIN:
        for key in record:
            for value in [*replacements, ...]:
                mutated = copy.deepcopy(record)
                if value is ...:
                    del mutated[key]
                else:
                    mutated[key] = value
                fields = plain_item(copy.deepcopy(mutated))
                try:
                    expected = item_fields(CalibrationItemConfig.model_validate(mutated))
                except ValidationError:
                    assert fields is None, mutated
                else:
                    assert fields is None or fields == expected, mutated
                tried += 1
    assert tried == 209


def test_an_invalid_jsonl_item_still_names_file_line_and_field(tmp_path: Path) -> None:
    lines = [
        {"id": f"i{n}", "language": "hi", "output": "x", "human": {"task_quality": {"a1": 2, "a2": 1}}}
        for n in range(3)
    ]
    lines[2]["human"]["task_quality"]["a2"] = "two"
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (tmp_path / "cal.yaml").write_text("calibration: x\nitems_file: items.jsonl\ngate: {threshold: 0.5}\n")
    registry = Registry(providers={}, rubrics=dict(BUILTIN_RUBRICS), metrics={}, targets={})
    with pytest.raises(SuiteError) as excinfo:
        build_calibration(tmp_path / "cal.yaml", registry)
    assert str(excinfo.value).startswith(f"{tmp_path / 'items.jsonl'}:3: human.task_quality.a2: ")
