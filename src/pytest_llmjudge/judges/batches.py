"""Provider batch APIs behind one small interface, for ``--llmjudge-batch`` (``execution/batch.py``).

* :class:`OpenAIBatchAdapter`: the OpenAI Batch API through the SDK's own methods. The
  requests become a JSONL file (``{"custom_id", "method": "POST", "url":
  "/v1/chat/completions", "body"}`` per line, the body built exactly as online by
  :meth:`OpenAIProvider.request_body`), uploaded with ``client.files.create(purpose="batch")``
  and submitted with ``client.batches.create(completion_window="24h")``; progress is
  ``client.batches.retrieve``; results are the output and error files read with
  ``client.files.content``.
* :class:`AnthropicBatchAdapter`: the Message Batches API,
  ``client.messages.batches.create(requests=[{"custom_id", "params"}])``, ``retrieve`` and
  ``results`` (JSONL streamed from the batch's ``results_url``).

Each request's ``custom_id`` is its cache key (64 hex characters, which both APIs accept),
so results map straight back into the cache. Replies are read by the same
``parse_body`` as online replies, so a batch reply and an online reply to the same request
are the same cached entry.

The SDK clients are the providers' own, with the SDK's retries turned on for these few
control-plane calls (``max_retries=5``: 429, 5xx and dropped connections back off and retry).

Degenerate cases: a result line whose status is not 200, an ``errored``/``canceled``/
``expired`` result, or a reply body the parser rejects is an *error* for that key (the key
stays uncached); a line whose ``custom_id`` was not submitted is ignored; a batch that ended
without an output file has no replies. Providers other than these two have no adapter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_llmjudge.errors import ProviderCallError
from pytest_llmjudge.judges.base import JudgeProvider, ProviderReply, ProviderRequest, provider_error_text

OPENAI_MAX_REQUESTS = 50_000
OPENAI_MAX_BYTES = 190 * 1024 * 1024  # the API takes files up to 200 MB
ANTHROPIC_MAX_REQUESTS = 100_000
ANTHROPIC_MAX_BYTES = 240 * 1024 * 1024  # the API takes batches up to 256 MB
CONTROL_RETRIES = 5


@dataclass(frozen=True)
class BatchRequest:
    key: str
    """The request's cache key, sent as ``custom_id``."""
    request: ProviderRequest


@dataclass(frozen=True)
class BatchProgress:
    batch_id: str
    status: str
    """The provider's own word (``in_progress``, ``completed``, ``ended``, ...)."""
    done: int
    total: int
    ended: bool
    problems: tuple[str, ...] = ()
    """Batch-level errors the provider reported (a failed validation, say)."""


@dataclass
class BatchResults:
    replies: dict[str, ProviderReply] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


class BatchAdapter(Protocol):
    """One provider's batch API."""

    name: str
    max_requests: int
    max_bytes: int

    def line_size(self, item: BatchRequest) -> int:
        """Bytes ``item`` adds to a batch (to split batches under the provider's size limit)."""
        ...

    async def submit(self, items: Sequence[BatchRequest]) -> str:
        """Create a batch of ``items``; returns its id."""
        ...

    async def progress(self, batch_id: str) -> BatchProgress: ...

    async def results(self, batch_id: str, requests: Mapping[str, ProviderRequest]) -> BatchResults:
        """Replies (and per-key errors) of an ended batch; ``requests`` gives fallback models."""
        ...


def adapter_for(provider: JudgeProvider) -> BatchAdapter | None:
    """The batch adapter of a (resolved) provider, or None when it has no batch API.

    A provider class can offer its own through a ``batch_adapter()`` method.
    """
    custom = getattr(provider, "batch_adapter", None)
    if callable(custom):
        adapter: BatchAdapter | None = custom()
        return adapter
    from pytest_llmjudge.judges.anthropic import AnthropicProvider
    from pytest_llmjudge.judges.openai import OpenAIProvider

    if isinstance(provider, OpenAIProvider):
        return OpenAIBatchAdapter(provider)
    if isinstance(provider, AnthropicProvider):
        return AnthropicBatchAdapter(provider)
    return None


def _fallback(requests: Mapping[str, ProviderRequest], key: str, provider: str) -> ProviderRequest:
    known = requests.get(key)
    return known if known is not None else ProviderRequest(provider=provider, model="", system="", user="")


def _error_text(body: Any, status: int | None) -> str:
    message = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            nested = inner.get("error")
            if isinstance(nested, dict):
                inner = nested
            message = str(inner.get("message") or inner.get("type") or "")
    prefix = f"HTTP {status}: " if status is not None else ""
    return prefix + (message or "the batch request failed")


class OpenAIBatchAdapter:
    name = "openai"
    max_requests = OPENAI_MAX_REQUESTS
    max_bytes = OPENAI_MAX_BYTES
    endpoint = "/v1/chat/completions"

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._client = provider.client.with_options(max_retries=CONTROL_RETRIES)

    def _line(self, item: BatchRequest) -> str:
        body = self._provider.request_body(item.request)
        return json.dumps(
            {"custom_id": item.key, "method": "POST", "url": self.endpoint, "body": body}, ensure_ascii=False
        )

    def line_size(self, item: BatchRequest) -> int:
        return len(self._line(item).encode("utf-8")) + 1

    async def submit(self, items: Sequence[BatchRequest]) -> str:
        data = ("\n".join(self._line(item) for item in items) + "\n").encode("utf-8")
        uploaded = await self._client.files.create(
            file=("pytest-llmjudge-batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
        batch = await self._client.batches.create(
            input_file_id=uploaded.id,
            endpoint=self.endpoint,
            completion_window="24h",
            metadata={"created_by": "pytest-llmjudge"},
        )
        return str(batch.id)

    async def progress(self, batch_id: str) -> BatchProgress:
        batch = await self._client.batches.retrieve(batch_id)
        counts = batch.request_counts
        done = (counts.completed + counts.failed) if counts is not None else 0
        total = counts.total if counts is not None else 0
        problems = tuple(
            f"line {error.line}: {error.message}" if error.line is not None else str(error.message)
            for error in ((batch.errors.data or []) if batch.errors is not None else [])
        )
        ended = batch.status in ("completed", "failed", "expired", "cancelled")
        return BatchProgress(batch_id, str(batch.status), done, total, ended, problems)

    async def results(self, batch_id: str, requests: Mapping[str, ProviderRequest]) -> BatchResults:
        batch = await self._client.batches.retrieve(batch_id)
        results = BatchResults()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self._client.files.content(file_id)
            for raw in content.text.splitlines():
                self._read_line(raw, requests, results)
        return results

    def _read_line(self, raw: str, requests: Mapping[str, ProviderRequest], results: BatchResults) -> None:
        try:
            line = json.loads(raw)
        except ValueError:
            return
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            return
        key = line["custom_id"]
        response = line.get("response")
        if not isinstance(response, dict):
            results.errors[key] = _error_text(line.get("error"), None)
            return
        status = response.get("status_code")
        body = response.get("body")
        if status != 200:
            results.errors[key] = _error_text(body, status if isinstance(status, int) else None)
            return
        try:
            results.replies[key] = self._provider.parse_body(body, _fallback(requests, key, self.name))
        except ProviderCallError as exc:
            results.errors[key] = str(exc)


class AnthropicBatchAdapter:
    name = "anthropic"
    max_requests = ANTHROPIC_MAX_REQUESTS
    max_bytes = ANTHROPIC_MAX_BYTES

    def __init__(self, provider: Any) -> None:
        self._provider = provider
        self._client = provider.client.with_options(max_retries=CONTROL_RETRIES)

    def _entry(self, item: BatchRequest) -> dict[str, Any]:
        return {"custom_id": item.key, "params": self._provider.request_body(item.request)}

    def line_size(self, item: BatchRequest) -> int:
        return len(json.dumps(self._entry(item), ensure_ascii=False).encode("utf-8")) + 1

    async def submit(self, items: Sequence[BatchRequest]) -> str:
        batch = await self._client.messages.batches.create(requests=[self._entry(item) for item in items])
        return str(batch.id)

    async def progress(self, batch_id: str) -> BatchProgress:
        batch = await self._client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        finished = counts.succeeded + counts.errored + counts.canceled + counts.expired
        return BatchProgress(
            batch_id,
            str(batch.processing_status),
            finished,
            finished + counts.processing,
            batch.processing_status == "ended",
        )

    async def results(self, batch_id: str, requests: Mapping[str, ProviderRequest]) -> BatchResults:
        results = BatchResults()
        decoder = await self._client.messages.batches.results(batch_id)
        async for line in decoder:
            key = line.custom_id
            result = line.result
            if result.type == "succeeded":
                body = result.message.model_dump(mode="json")
                try:
                    results.replies[key] = self._provider.parse_body(body, _fallback(requests, key, self.name))
                except ProviderCallError as exc:
                    results.errors[key] = str(exc)
            elif result.type == "errored":
                results.errors[key] = _error_text(result.error.model_dump(mode="json"), None)
            else:
                results.errors[key] = f"the batch request was {result.type}"
        return results


def describe_error(exc: BaseException) -> str:
    """A short message for an SDK exception raised by a batch call (no request dump)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return f"HTTP {status}: {provider_error_text(exc)}"
    return f"{exc.__class__.__name__}: {exc}"
