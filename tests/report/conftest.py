"""Synthetic report inputs (the generator of ``benchmarks/report_speed.py``)."""

from __future__ import annotations

import importlib.util
import json
import re
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


def _page_cases(page: str) -> list[dict[str, Any]]:
    """The cases an HTML report embeds for its case browser, with shared text resolved."""
    found = re.search(r'<script type="application/json" id="case-data">(.*?)</script>', page, re.S)
    assert found is not None, "the page embeds its cases"
    packed = json.loads(found.group(1))
    shared = ("s", "l", "m", "t", "input", "output", "reference", "judge", "bout")
    return [{k: packed["strings"][v] if k in shared else v for k, v in c.items()} for c in packed["cases"]]


@pytest.fixture(scope="session")
def page_cases() -> Callable[[str], list[dict[str, Any]]]:
    """``page_cases(html)``: the cases an HTML report embeds, with shared text resolved."""
    return _page_cases
