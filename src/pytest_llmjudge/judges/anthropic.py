"""Anthropic Messages judge provider.

Uses the real ``anthropic`` SDK (``AsyncAnthropic``) with the SDK's retries off (the runner
retries for every provider alike). Structured output:

* ``tool`` (what ``auto`` picks on Anthropic's own API): the reply schema is the
  ``input_schema`` of one tool, :data:`JUDGMENT_TOOL`, which ``tool_choice: {type: tool}``
  forces, with parallel tool use off. The reply's ``tool_use`` block ``input`` is the
  judgment; it is passed on as its JSON text, so the parser sees one object and no prose.
  A reply without a ``tool_use`` block (a proxy that dropped the tool) falls back to its
  text blocks and the free-text parser; several ``tool_use`` blocks are all passed on, so
  disagreeing ones are unscored by the parser.
* ``json_schema``: the schema as ``output_config.format`` (structured outputs);
* ``none``: the format is stated in the prompt and checked by the parser.
 The Messages API of SDK 2.x takes neither ``seed`` nor
``temperature``: repeated judgments differ through the cache key only (see
``judges.prompts``), and the configured temperature is recorded in the key but not sent.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_llmjudge.errors import ProviderCallError
from pytest_llmjudge.judges.base import (
    ProviderReply,
    ProviderRequest,
    Usage,
    import_sdk,
    post_through_sdk,
    sdk_response_class,
)
from pytest_llmjudge.judges.connection_pool import sdk_http_client

JUDGMENT_TOOL = "record_judgment"
"""The tool a ``structured_output: tool`` request forces; its input is the judgment."""

_TOOL_DESCRIPTION = "Record your judgment of the framed texts: the JSON object the reply format describes."


class AnthropicProvider:
    """A judge reached through ``anthropic.AsyncAnthropic``."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 60.0,
        name: str = "anthropic",
    ) -> None:
        anthropic = import_sdk("anthropic", "The Anthropic judge")
        self.name = name
        self._anthropic = anthropic
        self._response_class = sdk_response_class()
        # Our connection pool (judges/connection_pool.py); None keeps the SDK's own client.
        self.http_client = sdk_http_client(anthropic, timeout=timeout)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=self.http_client,
        )

    @property
    def client(self) -> Any:
        """The SDK client (``anthropic.AsyncAnthropic``), e.g. for the Message Batches API."""
        return self._client

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The Messages body for ``request`` (online and as batch ``params`` alike)."""
        kwargs: dict[str, Any] = {
            "model": request.model,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "max_tokens": request.max_tokens,
        }
        if request.structured_output == "json_schema" and request.json_schema is not None:
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": dict(request.json_schema)}}
        elif request.structured_output == "tool" and request.json_schema is not None:
            kwargs["tools"] = [
                {"name": JUDGMENT_TOOL, "description": _TOOL_DESCRIPTION, "input_schema": dict(request.json_schema)}
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": JUDGMENT_TOOL, "disable_parallel_tool_use": True}
        return kwargs

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        body = await post_through_sdk(
            self._anthropic, self._client, "/v1/messages", self.request_body(request), self._response_class
        )
        return self.parse_body(body, request)

    @staticmethod
    def parse_body(body: Any, request: ProviderRequest) -> ProviderReply:
        """A ``message`` body as a reply; :class:`ProviderCallError` when malformed."""
        blocks = body.get("content") if isinstance(body, dict) else None
        if not isinstance(blocks, list):
            raise ProviderCallError("malformed response: no content blocks", retryable=True)
        tool_inputs = [
            block.get("input")
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == JUDGMENT_TOOL
        ]
        if tool_inputs:
            text = "\n".join(json.dumps(value, ensure_ascii=False) for value in tool_inputs)
        else:
            text = "".join(
                str(block.get("text", ""))
                for block in blocks
                if isinstance(block, dict) and block.get("type") == "text"
            )
        usage = body.get("usage") or {}
        return ProviderReply(
            text=text,
            model=str(body.get("model") or request.model),
            usage=Usage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
            ),
        )

    async def aclose(self) -> None:
        await self._client.close()
