"""The exception tree of pytest-llmjudge.

Every error the plugin raises on purpose derives from :class:`LLMJudgeError`, so a
caller can catch them all at once::

    LLMJudgeError
    ├── SuiteError                 a suite file is invalid (file, line, field, hint)
    ├── ConfigError                an option, ini value or environment variable is invalid
    │   ├── StoreUnavailableError    the remote cache store failed its start-up probe
    │   └── MissingCredentialsError  a judge needs an API key that is not set
    ├── MissingDependencyError     an optional package is not installed (names the extra)
    ├── ProviderError              a judge provider failed after all retries
    │   └── SpendCapReached          a request was not sent: it would pass --llmjudge-max-calls/-cost/-tokens
    ├── UnscoredError              a judge reply could not be turned into a valid score
    ├── TargetTimeoutError         an output target call ran past its timeout
    ├── MetricError                a reference metric could not be computed
    ├── StatisticsError            a statistic is undefined for the data (too few items, ...)
    ├── BaselineError              a regression baseline file is missing, unreadable or of another version
    ├── UncalibratedJudgeError     a calibrated judge has no passing calibration for a language and rubric
    ├── ConversionError            an annotation table can't be turned into a calibration file
    ├── BatchPending               provider batches were still pending when --llmjudge-batch-wait ran out
    └── ItemFailure                an item's check failed or could not be decided (its message is the report)
        ├── CaseFailure              a case missed its threshold or has no score
        ├── GateFailure / GateError  a calibration gate failed / could not be decided
        ├── DriftFailure             a calibrated judge drifted
        ├── RankingFailure           a ranking check failed
        ├── RegressionFailure        a regression gate failed
        └── CanaryFailure            an injection canary's attacked twin won

Outside the tree, on purpose (each is caught inside the plugin and turned into one of the
above, or into a report line): ``ProviderCallError``, what a provider raises for one failed
call (plugin providers raise it too; the runner retries it or makes a ``ProviderError``);
``ExpressionError`` and ``PriceError`` (``ValueError`` s of a threshold expression and of a
``llmjudge_prices`` line, located by their callers); ``ProbeFailed``, one step of the remote
store's start-up probe (becomes a ``StoreUnavailableError``).

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

    Raised by the items' ``runtest`` (``session/item_base.py``), which print it without a traceback.
    """


# -- raised by the layers, each caught at the layer above -------------------------------------


class ProviderCallError(Exception):
    """A provider call failed; ``retryable`` says whether trying again can help."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


class ExpressionError(ValueError):
    """A threshold expression does not parse; the message says what was expected."""


class PriceError(ValueError):
    """A line of ``llmjudge_prices`` that can't be read."""


class ProbeFailed(Exception):
    """One step of the remote store's start-up probe failed: ``operation`` (get, put, lease) and
    ``cause`` (the client's error text)."""

    def __init__(self, operation: str, cause: str) -> None:
        super().__init__(f"{operation} failed: {cause}")
        self.operation = operation
        self.cause = cause


# -- files and runs ---------------------------------------------------------------------------


class BaselineError(LLMJudgeError):
    """A baseline file is missing, unreadable, or not a baseline of a version we read."""


class UncalibratedJudgeError(LLMJudgeError):
    """The judge failed (or has no) calibration for the requested language and rubric."""


class ConversionError(LLMJudgeError):
    """An annotation table that can't be turned into a calibration file."""


class BatchPending(LLMJudgeError):
    """Batches were still pending when ``--llmjudge-batch-wait`` ran out."""


# -- item failures, one class per item kind (an xfail names the kind it expects) --------------


class CaseFailure(ItemFailure):
    """A case's score missed its threshold, or there is no score."""


class GateFailure(ItemFailure):
    """A gate (or sanity check) missed its threshold."""


class GateError(ItemFailure):
    """A gate could not be decided (too few items, unscored items): never an expected failure."""


class DriftFailure(ItemFailure):
    """The judge drifted: agreement dropped, or (``on_change: fail``) another identity served it."""


class RankingFailure(ItemFailure):
    """A ranking check failed or could not be computed."""


class RegressionFailure(ItemFailure):
    """A regression item's gate failed, or it could not be checked."""


class CanaryFailure(ItemFailure):
    """The attacked twin scored better than its clean twin, or a twin could not be scored."""
