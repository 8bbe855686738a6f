"""Synthetic report inputs (the generator of ``benchmarks/report_speed.py``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_llmjudge.report.model import RunInputs, build_document

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "report_speed.py"


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("report_speed", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def report_speed() -> ModuleType:
    return load_benchmark()


@pytest.fixture(scope="session")
def synthetic(report_speed: ModuleType) -> Callable[[int], RunInputs]:
    """``synthetic(n)``: a run of n case items with aggregates, gates, regressions, a ranking."""
    return report_speed.synthetic_inputs  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def synthetic_document(report_speed: ModuleType) -> dict[str, Any]:
    return build_document(report_speed.synthetic_inputs(800))
