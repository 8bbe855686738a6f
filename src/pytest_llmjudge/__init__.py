"""pytest-llmjudge: multilingual LLM evaluation suites as pytest items.

The public API is small; everything not listed in ``__all__`` is private. It holds what a suite
author and a plugin author need (docs/extending.md): the hooks' return types (``Rubric``,
``ProviderFactory``, ``Case``), the provider interface (``JudgeProvider``, ``ProviderRequest``,
``ProviderReply``, ``Usage``, ``ProviderCallError`` with ``parse_retry_after`` and
``RETRYABLE_STATUS``) and the metric interface (``Metric``, ``MetricInput``, ``MetricValue``,
``check_required``, ``MetricError``); the test doubles are in ``pytest_llmjudge.testing``. Heavy names
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
    from pytest_llmjudge.execution.judge import Judge
    from pytest_llmjudge.execution.scorer import Score
    from pytest_llmjudge.judges.base import (
        RETRYABLE_STATUS,
        JudgeProvider,
        ProviderCallError,
        ProviderReply,
        ProviderRequest,
        Usage,
        parse_retry_after,
    )
    from pytest_llmjudge.metrics.base import Metric, MetricInput, MetricValue, check_required
    from pytest_llmjudge.registry import ProviderFactory
    from pytest_llmjudge.suite.model import Case, Message

__version__ = "0.1.0"

__all__: list[str] = [
    "BUILTIN_RUBRICS",
    "RETRYABLE_STATUS",
    "Case",
    "ConfigError",
    "Judge",
    "JudgeProvider",
    "LLMJudgeError",
    "Message",
    "Metric",
    "MetricError",
    "MetricInput",
    "MetricValue",
    "MissingCredentialsError",
    "MissingDependencyError",
    "ProviderCallError",
    "ProviderError",
    "ProviderFactory",
    "ProviderReply",
    "ProviderRequest",
    "Rubric",
    "Score",
    "StatisticsError",
    "SuiteError",
    "UnscoredError",
    "Usage",
    "__version__",
    "check_required",
    "parse_retry_after",
]

_LAZY: dict[str, str] = {
    "Case": "pytest_llmjudge.suite.model",
    "Metric": "pytest_llmjudge.metrics.base",
    "MetricInput": "pytest_llmjudge.metrics.base",
    "MetricValue": "pytest_llmjudge.metrics.base",
    "ProviderCallError": "pytest_llmjudge.judges.base",
    "RETRYABLE_STATUS": "pytest_llmjudge.judges.base",
    "Usage": "pytest_llmjudge.judges.base",
    "check_required": "pytest_llmjudge.metrics.base",
    "parse_retry_after": "pytest_llmjudge.judges.base",
    "Judge": "pytest_llmjudge.execution.judge",
    "JudgeProvider": "pytest_llmjudge.judges.base",
    "Message": "pytest_llmjudge.suite.model",
    "ProviderFactory": "pytest_llmjudge.registry",
    "ProviderReply": "pytest_llmjudge.judges.base",
    "ProviderRequest": "pytest_llmjudge.judges.base",
    "Score": "pytest_llmjudge.execution.scorer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_llmjudge' has no attribute {name!r}")
    return getattr(import_module(module), name)
