"""Shared fixtures: a loopback provider server with a scripted judge, and suite writers."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

# pytester's in-process runs restore sys.modules after each run; C extensions (numpy.fft
# under scipy.stats) can't be imported twice per process, so load them once up front.
# The SDKs are slow to import (about 1.3 s for openai), which would otherwise be paid per run,
# and their HTTP stack must not be re-imported: exception classes would stop matching.
import anthropic  # noqa: F401
import numpy  # noqa: F401
import openai  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

import pytest_llmjudge.execution.scoreboard  # noqa: F401
import pytest_llmjudge.judges.anthropic  # noqa: F401
import pytest_llmjudge.judges.openai  # noqa: F401
import pytest_llmjudge.metrics  # noqa: F401
import pytest_llmjudge.nodes  # noqa: F401
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

for _lazy in ("httpcore2", "httpx2", "h11", "anyio._backends._asyncio", "httpcore", "httpx"):
    try:
        importlib.import_module(_lazy)
    except ImportError:
        pass

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see real provider keys, so nothing can reach a real provider by accident."""
    if os.environ.get("LLMJUDGE_LIVE_TESTS") != "1":
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(variable, raising=False)
    for variable in [name for name in os.environ if name.startswith("LLMJUDGE_") and name != "LLMJUDGE_LIVE_TESTS"]:
        monkeypatch.delenv(variable, raising=False)
    # Tests run as on a developer's machine (judge items without a key are skipped) even when
    # the suite itself runs in CI; tests of the CI default set CI themselves.
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def scripted_judge() -> ScriptedJudge:
    """Scores every METAL rubric at its best value unless a test changes ``scores``."""
    return ScriptedJudge(
        {
            "linguistic_acceptability": 2,
            "output_content_quality": 2,
            "task_quality": 2,
            "problematic_content": 0,
            "hallucinations": 0,
        }
    )


@pytest.fixture
def loopback(scripted_judge: ScriptedJudge) -> Iterator[LoopbackServer]:
    with LoopbackServer(responder=scripted_judge) as server:
        yield server
