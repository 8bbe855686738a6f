"""pytest-llmjudge: multilingual LLM evaluation suites as pytest items.

The public API is small; everything not listed in ``__all__`` is private. Heavy names
(the judge object, scores) are imported on first use so that merely having the plugin
installed costs pytest's start-up almost nothing.

PYTEST_DONT_REWRITE: the package holds no test assertions. Without this marker, a script that
imports it before calling ``pytest.main()`` (docs/judges.md) gets pytest's "Module already
imported so cannot be rewritten" warning on every run.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from pytest_llmjudge.errors import (
    ConfigError,
    LLMJudgeError,
    MetricError,
    MissingCredentialsError,
    MissingDependencyError,
    ProviderError,
    StatisticsError,
    SuiteError,
    UnscoredError,
)
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS, Rubric

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scoreboard import Score
    from pytest_llmjudge.fixture_judge import Judge
    from pytest_llmjudge.judges.base import JudgeProvider, ProviderReply, ProviderRequest
    from pytest_llmjudge.registry import ProviderFactory
    from pytest_llmjudge.suite.model import Case, Message

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_RUBRICS",
    "Case",
    "ConfigError",
    "Judge",
    "JudgeProvider",
    "LLMJudgeError",
    "Message",
    "MetricError",
    "MissingCredentialsError",
    "MissingDependencyError",
    "ProviderError",
    "ProviderFactory",
    "ProviderReply",
    "ProviderRequest",
    "Rubric",
    "Score",
    "StatisticsError",
    "SuiteError",
    "UnscoredError",
    "__version__",
]

_LAZY = {
    "Case": "pytest_llmjudge.suite.model",
    "Judge": "pytest_llmjudge.fixture_judge",
    "JudgeProvider": "pytest_llmjudge.judges.base",
    "Message": "pytest_llmjudge.suite.model",
    "ProviderFactory": "pytest_llmjudge.registry",
    "ProviderReply": "pytest_llmjudge.judges.base",
    "ProviderRequest": "pytest_llmjudge.judges.base",
    "Score": "pytest_llmjudge.execution.scoreboard",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_llmjudge' has no attribute {name!r}")
    return getattr(import_module(module), name)
