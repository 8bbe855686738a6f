"""Against the real providers: run only with a key (and LLMJUDGE_LIVE_TESTS=1), else skipped.

LLMJUDGE_LIVE_TESTS=1 OPENAI_API_KEY=... ANTHROPIC_API_KEY=... pytest -m live
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.runner import JudgeRunner
from pytest_llmjudge.judges.parsing import Verdict
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import LINGUISTIC_ACCEPTABILITY

pytestmark = pytest.mark.live


def _require(variable: str) -> str:
    if os.environ.get("LLMJUDGE_LIVE_TESTS") != "1" or not os.environ.get(variable):
        pytest.skip(f"live test: set LLMJUDGE_LIVE_TESTS=1 and {variable} to run it")
    return os.environ[variable]


@pytest.mark.parametrize(
    ("provider", "variable", "model"),
    [("openai", "OPENAI_API_KEY", "gpt-4o-mini"), ("anthropic", "ANTHROPIC_API_KEY", "claude-haiku-4-5")],
)
def test_real_judge_scores_a_natural_french_sentence(tmp_path: Path, provider: str, variable: str, model: str) -> None:
    key = _require(variable)
    if provider == "openai":
        from pytest_llmjudge.judges.openai import OpenAIProvider

        client = OpenAIProvider(api_key=key)
    else:
        from pytest_llmjudge.judges.anthropic import AnthropicProvider

        client = AnthropicProvider(api_key=key)  # type: ignore[assignment]
    runner = JudgeRunner(JudgeCache(tmp_path), concurrency=2)
    runner.track_provider(client)
    try:
        request = build_request(
            (LINGUISTIC_ACCEPTABILITY,),
            JudgedText(language="fr", output="Je vous remercie de votre patience ; votre commande arrive demain."),
            JudgeSettings(provider=provider, model=model),
        )
        outcome = runner.submit_judgment(client, request, (LINGUISTIC_ACCEPTABILITY,)).result(timeout=120)
    finally:
        runner.close()
    verdict = outcome.results["linguistic_acceptability"]
    assert isinstance(verdict, Verdict), outcome
    assert verdict.score >= 1
    assert key not in "".join(p.read_text() for p in tmp_path.rglob("*.json"))
