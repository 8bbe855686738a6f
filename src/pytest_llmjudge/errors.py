"""The exception tree of pytest-llmjudge.

Every error the plugin raises on purpose derives from :class:`LLMJudgeError`, so a
caller can catch them all at once::

    LLMJudgeError
    ├── SuiteError                 a suite file is invalid (file, line, field, hint)
    ├── ConfigError                an option, ini value or environment variable is invalid
    │   └── MissingCredentialsError  a judge needs an API key that is not set
    ├── MissingDependencyError     an optional package is not installed (names the extra)
    ├── ProviderError              a judge provider failed after all retries
    │   └── SpendCapReached          a request was not sent: it would pass --llmjudge-max-calls/-cost/-tokens
    ├── UnscoredError              a judge reply could not be turned into a valid score
    ├── TargetTimeoutError         an output target call ran past its timeout
    ├── MetricError                a reference metric could not be computed
    ├── StatisticsError            a statistic is undefined for the data (too few items, ...)
    └── ItemFailure                an item's check failed or could not be decided (its message is the report)

Messages never contain API keys: provider errors are built from status codes and the
provider's error text, not from request headers.
"""

from __future__ import annotations

from pathlib import Path


class LLMJudgeError(Exception):
    """Base class of every error raised by pytest-llmjudge."""


class SuiteError(LLMJudgeError):
    """A suite file is invalid. Renders as ``file:line: message (hint: ...)``."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        location = ""
        if self.path is not None:
            location = str(self.path)
            if self.line is not None:
                location += f":{self.line}"
            location += ": "
        where = f"{self.field}: " if self.field else ""
        text = f"{location}{where}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ConfigError(LLMJudgeError):
    """An option, ini value or environment variable is invalid."""


class StoreUnavailableError(ConfigError):
    """The remote cache store (``--llmjudge-cache-url``) failed its start-up probe; the message names
    the URL (credentials masked), the operation and the cause."""


class MissingCredentialsError(ConfigError):
    """A judge needs an API key that is not set; the message names the variable."""


class MissingDependencyError(LLMJudgeError):
    """An optional package is missing; the message says which extra installs it."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{purpose} needs the '{package}' package: pip install \"pytest-llmjudge[{extra}]\"")


class TargetTimeoutError(LLMJudgeError):
    """An output target call ran past its timeout, or was not started because earlier calls still hang."""


class ProviderError(LLMJudgeError):
    """A judge provider call failed after all retries."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(message)


class SpendCapReached(ProviderError):
    """A judge request was not sent: it would pass a spend cap (``execution/spend.py``)."""


class UnscoredError(LLMJudgeError):
    """A judge reply could not be parsed into a valid score (no JSON, NaN, out of scale)."""

    def __init__(self, message: str, *, raw_reply: str | None = None) -> None:
        self.raw_reply = raw_reply
        super().__init__(message)


class MetricError(LLMJudgeError):
    """A reference metric could not be computed for a case."""


class StatisticsError(LLMJudgeError):
    """A statistic is undefined for the given data (for example too few items)."""


class ItemFailure(LLMJudgeError):
    """An item's check failed, or could not be decided; the message is the whole failure report.

    Raised by the items' ``runtest`` (``session/items.py``), which print it without a traceback.
    """
