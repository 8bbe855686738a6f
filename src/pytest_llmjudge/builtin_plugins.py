"""The built-in providers, rubrics and metrics, registered through the plugin's own hooks.

This module is registered as a plugin by ``pytest_llmjudge.plugin`` before conftest files
load, so third-party registrations made through the same hooks can replace anything here.
Providers are constructed lazily: nothing imports an SDK until a judge is actually used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_llmjudge.judges.answer_relevance import ANSWER_RELEVANCE
from pytest_llmjudge.judges.base import JudgeProvider
from pytest_llmjudge.judges.conversation_rubrics import CONVERSATION_RUBRICS
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS, Rubric
from pytest_llmjudge.registry import ProviderFactory


def _openai(api_key: str | None, base_url: str | None, timeout: float) -> JudgeProvider:
    from pytest_llmjudge.judges.openai import OpenAIProvider

    return OpenAIProvider(api_key=api_key, base_url=base_url, timeout=timeout)


def _openai_compatible(api_key: str | None, base_url: str | None, timeout: float) -> JudgeProvider:
    from pytest_llmjudge.judges.openai import OpenAIProvider

    return OpenAIProvider(api_key=api_key, base_url=base_url, timeout=timeout, name="openai-compatible")


def _anthropic(api_key: str | None, base_url: str | None, timeout: float) -> JudgeProvider:
    from pytest_llmjudge.judges.anthropic import AnthropicProvider

    return AnthropicProvider(api_key=api_key, base_url=base_url, timeout=timeout)


def pytest_llmjudge_providers() -> Mapping[str, ProviderFactory]:
    return {
        "openai": ProviderFactory("openai", _openai, api_key_env="OPENAI_API_KEY"),
        "anthropic": ProviderFactory("anthropic", _anthropic, api_key_env="ANTHROPIC_API_KEY"),
        "openai-compatible": ProviderFactory(
            "openai-compatible", _openai_compatible, api_key_env="OPENAI_API_KEY", requires_base_url=True
        ),
    }


def pytest_llmjudge_rubrics() -> Mapping[str, Rubric]:
    return {**BUILTIN_RUBRICS, **CONVERSATION_RUBRICS, ANSWER_RELEVANCE.name: ANSWER_RELEVANCE}


def pytest_llmjudge_metrics() -> Mapping[str, Callable[..., Any]]:
    from pytest_llmjudge.metrics import BUILTIN_METRICS

    return dict(BUILTIN_METRICS)


def pytest_llmjudge_targets() -> Mapping[str, Callable[..., Any]]:
    return {}
