"""OpenAI Chat Completions judge provider (also any OpenAI-compatible server via ``base_url``).

Uses the real ``openai`` SDK (``AsyncOpenAI``) with the SDK's own retries turned off: the
runner retries with one policy for every provider and honours ``Retry-After`` itself.
Requests go through the client's ``post`` (its transport, auth, timeouts and error types)
with a plain JSON body, and the reply fields are read from the JSON body.
Structured output: ``json_schema`` sends a strict JSON schema (models that support it),
``json_object`` asks for JSON mode, ``none`` relies on the prompt alone (the safe choice
for servers whose support varies, such as older vLLM or Ollama builds).

Official OpenAI endpoints get ``max_completion_tokens`` (newer models reject ``max_tokens``);
OpenAI-compatible servers get ``max_tokens``, which they all understand.
"""

from __future__ import annotations

import re
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
from pytest_llmjudge.judges.logprobs import digit_tokens

_REJECTED_SETTING = re.compile(r"'?\b(logprobs|top_logprobs|temperature)\b'?", re.IGNORECASE)


class OpenAIProvider:
    """A judge reached through ``openai.AsyncOpenAI``."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 60.0,
        name: str = "openai",
    ) -> None:
        openai = import_sdk("openai", "The OpenAI judge")
        self.name = name
        self._openai = openai
        self._official = base_url is None
        self._response_class = sdk_response_class()
        # Our connection pool (judges/connection_pool.py); None keeps the SDK's own client.
        self.http_client = sdk_http_client(openai, timeout=timeout)
        # Local OpenAI-compatible servers often need no key, but the SDK insists on one.
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "not-needed",
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=self.http_client,
        )

    @property
    def client(self) -> Any:
        """The SDK client (``openai.AsyncOpenAI``), e.g. for the batch API."""
        return self._client

    def request_body(self, request: ProviderRequest) -> dict[str, Any]:
        """The Chat Completions body for ``request`` (online and in batch files alike)."""
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "temperature": request.temperature,
        }
        kwargs["max_completion_tokens" if self._official else "max_tokens"] = request.max_tokens
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.structured_output == "json_schema" and request.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "strict": True, "schema": dict(request.json_schema)},
            }
        elif request.structured_output == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        if request.top_logprobs is not None:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = request.top_logprobs
        return kwargs

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        try:
            body = await post_through_sdk(
                self._openai, self._client, "/chat/completions", self.request_body(request), self._response_class
            )
        except ProviderCallError as exc:
            raise rejected_setting(exc, request) from None
        return self.parse_body(body, request)

    @staticmethod
    def parse_body(body: Any, request: ProviderRequest) -> ProviderReply:
        """A ``chat.completion`` body as a reply; :class:`ProviderCallError` when malformed."""
        try:
            if not isinstance(body, dict):
                raise TypeError("body is not an object")
            text = body["choices"][0]["message"]["content"] or ""
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (KeyError, IndexError, TypeError):
            raise ProviderCallError("malformed response: no message content", retryable=True) from None
        usage = body.get("usage") or {}
        fingerprint = body.get("system_fingerprint")
        logprobs = body["choices"][0].get("logprobs")
        tokens = digit_tokens(logprobs.get("content")) if isinstance(logprobs, dict) else None
        return ProviderReply(
            text=text,
            model=str(body.get("model") or request.model),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
            ),
            fingerprint=fingerprint if isinstance(fingerprint, str) and fingerprint else None,
            digit_tokens=tokens if request.top_logprobs is not None else None,
        )

    async def aclose(self) -> None:
        await self._client.close()


def rejected_setting(exc: ProviderCallError, request: ProviderRequest) -> ProviderCallError:
    """A 400 that refuses ``temperature`` or ``logprobs`` (reasoning models do), said with the setting to change.

    Not retryable: the same request gets the same refusal. Other failures pass unchanged.
    """
    if exc.status != 400:
        return exc
    found = _REJECTED_SETTING.search(str(exc))
    if found is None:
        return exc
    setting = found[1].lower()
    if setting == "temperature":
        hint = f"model {request.model} does not accept temperature {request.temperature:g}: set judge.temperature to 1"
    else:
        hint = (
            f"model {request.model} does not return token log-probabilities ({setting}): "
            "scoring: expected needs them; use scoring: sampled for this judge"
        )
    return ProviderCallError(f"{hint} ({exc})", retryable=False, status=400)
