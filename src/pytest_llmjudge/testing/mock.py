"""An in-process judge provider whose replies come from a function: ``MockProvider(handler)``.

In the spirit of httpx's ``MockTransport``: the provider implements the
:class:`~pytest_llmjudge.judges.base.JudgeProvider` interface that the built-in providers
implement, so everything above it (prompting, the cache, retries, concurrency, parsing,
reporting) runs as in a real run; only the network is gone. ``handler(request)`` receives the
:class:`~pytest_llmjudge.judges.base.ProviderRequest` a real provider would send (provider,
model, system and user prompt, temperature, seed, reply schema, ...) and returns the reply:

- a ``str``: the reply text (the served model is the requested one, usage is zero tokens);
- a :class:`~pytest_llmjudge.judges.base.ProviderReply`: to set the served model, usage,
  fingerprint or log-probabilities;
- or an awaitable of either (an ``async def`` handler runs on the plugin's event loop).

To inject a failure the handler raises
:class:`~pytest_llmjudge.judges.base.ProviderCallError` (``retryable=True`` is retried by the
runner, waiting ``retry_after`` seconds when given; ``retryable=False`` fails the case at
once); anything else it raises is reported on the case as a provider bug, as for a real
provider. :class:`~pytest_llmjudge.testing.ScriptedJudge` is a ready-made handler.

Register it from a ``conftest.py`` with :meth:`MockProvider.factory`; the factory names no key
variable and needs no ``base_url``, so a suite using it is never skipped for credentials.
Wire formats, SDK behaviour, latency and connection faults are what the loopback server
(:class:`~pytest_llmjudge.testing.LoopbackServer`) is for.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from pytest_llmjudge.judges.base import ProviderReply, ProviderRequest
from pytest_llmjudge.registry import ProviderFactory

__all__ = ["Handler", "MockProvider"]

HandlerResult = str | ProviderReply
Handler = Callable[[ProviderRequest], HandlerResult | Awaitable[HandlerResult]]
"""``handler(request)`` -> reply text or :class:`ProviderReply`, or an awaitable of one."""


class MockProvider:
    """A judge provider answering every request with ``handler(request)``, in process.

    ``requests`` lists every request :meth:`complete` received, retries included, in arrival
    order; ``closed`` counts the calls of :meth:`aclose` (the run calls it at its end).
    """

    def __init__(self, handler: Handler, *, name: str = "mock") -> None:
        self.name = name
        self.handler = handler
        self.requests: list[ProviderRequest] = []
        self.closed = 0

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        self.requests.append(request)  # one list append: safe from the runner's loop thread
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, ProviderReply):
            return result
        if isinstance(result, str):
            return ProviderReply(text=result, model=request.model)
        raise TypeError(f"MockProvider handler returned {type(result).__name__}, not str or ProviderReply")

    async def aclose(self) -> None:
        self.closed += 1

    def factory(self, name: str | None = None) -> ProviderFactory:
        """A :class:`ProviderFactory` that hands out this provider, for ``pytest_llmjudge_providers``.

        ``name`` (default: the provider's ``name``) is the key to register it under, the
        ``judge.provider`` of the suites that use it.
        """
        return ProviderFactory(name or self.name, lambda api_key, base_url, timeout: self)
