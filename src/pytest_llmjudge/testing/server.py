"""A loopback HTTP server that speaks the OpenAI and Anthropic wire formats.

``LoopbackServer`` listens on real sockets on ``127.0.0.1`` (an ephemeral port
unless one is given) and answers the two chat APIs that LLM judges call, so
the *real* ``openai`` and ``anthropic`` SDKs -- their HTTP stack, retry and
timeout logic included -- can be exercised offline, deterministically and
fast.  It runs an ``asyncio`` server in a background daemon thread, speaks
HTTP/1.1 with keep-alive and ``Content-Length`` (chunked request bodies and
``Expect: 100-continue`` are tolerated), and answers each request ``latency``
seconds after it arrived (its own parsing and the responder run inside that
time, so the latency is fixed, not latency plus the server's work): N requests
at concurrency C take about ``ceil(N / C) * latency`` and cost the server
little CPU each (hundreds of simultaneous connections and thousands of
requests are fine).  Note that
the SDKs themselves (openai / anthropic on httpx) spend several times more
client CPU per call, which in-process benchmarks add on top of the latency
(both measured in docs/scale.md, "Numbers quoted by the code").

Usage::

    with LoopbackServer(latency=0.2, responder=fn) as srv:
        openai.OpenAI(base_url=srv.openai_base_url, api_key="x")        # .../v1
        anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="x")

Endpoints
---------
``POST /v1/chat/completions``
    OpenAI Chat Completions.  Answers a ``chat.completion`` object: ``id``,
    ``object``, ``created``, ``model`` (the request's model, echoed, or ``Reply.model``),
    ``choices[{index, message{role: "assistant", content, refusal: null},
    finish_reason: "stop", logprobs: null}]`` (``n`` choices when ``n`` is
    given) and ``usage{prompt_tokens, completion_tokens, total_tokens}``.
    When the request asks for ``logprobs: true``, each choice carries
    ``logprobs{content: [{token, logprob, bytes, top_logprobs}], refusal: null}``:
    the reply split into GPT-like tokens (words, single digits, punctuation
    runs), each with logprob -0.01 and ``top_logprobs`` copies of itself (what
    deepeval's G-Eval reads to weight its score); ``Reply.score_logprobs``
    gives the integer token after ``"score":`` a distribution of alternatives.
``POST /v1/messages``
    Anthropic Messages.  Answers a ``message`` object: ``id``,
    ``type: "message"``, ``role: "assistant"``, ``model`` (echoed),
    ``content[{type: "text", text}]``, ``stop_reason: "end_turn"``,
    ``stop_sequence: null``, ``usage{input_tokens, output_tokens}``.
``GET /v1/models``
    A model list that both SDKs parse (OpenAI's and Anthropic's fields merged).
Batch APIs
    OpenAI Files + Batches (``/v1/files``, ``/v1/files/{id}/content``,
    ``/v1/batches``, ``/v1/batches/{id}``, ``.../cancel``) and Anthropic Message
    Batches (``/v1/messages/batches``, ``/{id}``, ``/{id}/results``,
    ``/{id}/cancel``), answered by :mod:`pytest_llmjudge.testing.batch_api` (see
    there for formats).  Batch lines go through the responder like completions but
    are recorded in :attr:`LoopbackServer.batch_requests`; a batch ends when every
    line is answered and ``batch_delay`` seconds (settable while serving) have
    passed since it was created.
``GET /stats`` / ``POST /reset``
    Control endpoints (JSON of :meth:`LoopbackServer.stats`; reset the
    counters).  They are not counted as requests and get no latency.

Any other path answers 404 and a known path with the wrong method 405, in
the error format of the provider the request looks like (``/v1/messages``,
an ``anthropic-version`` or ``x-api-key`` header mean Anthropic; anything
else OpenAI).  Error bodies are ``{"error": {"message", "type", "param",
"code"}}`` for OpenAI and ``{"type": "error", "error": {"type", "message"},
"request_id"}`` for Anthropic.  Responses carry ``x-request-id`` (OpenAI) or
``request-id`` (Anthropic) so the SDKs' ``request_id`` attributes are set.

Token counts are a deterministic estimate: ``ceil(len(text) / 4)`` per text,
plus 4 per message on the prompt side.  ``Reply.usage`` overrides them.

Responders
----------
Each completion request is parsed into a frozen :class:`ReceivedRequest`
(``authorization``, ``x-api-key``, ``api-key`` and ``proxy-authorization``
headers removed; ``api_key_present`` says whether one was sent) and handed to
``responder``, a sync or async
callable returning a :class:`Reply` or a ``str`` (the assistant text).  The
default responder answers ``'{}'``.  Responders run on the server's event
loop thread, one at a time, so a stateful responder needs no lock, but a sync
responder must not block (use ``Reply(latency=...)`` or an async responder to
delay).  A responder that raises produces a 500 ``api_error`` naming the
exception (counted in ``stats()["responder_errors"]``).  A content-level
"malformed judge reply" (valid HTTP, assistant text that is not valid JSON)
is simply a responder returning such text.

For Anthropic, ``ReceivedRequest.response_format`` is ``output_config.format``
(structured outputs) and ``temperature``/``seed`` are read from the body if
present -- anthropic 2.x's ``messages.create`` has no ``temperature``
argument, so they only arrive through ``extra_body``.

Structured outputs
------------------
OpenAI ``response_format`` (``{"type": "json_schema", "json_schema": {"name",
"schema", "strict"}}``, ``{"type": "json_object"}`` or ``{"type": "text"}``) is
checked as the API checks it: another type, or a ``json_schema`` without a
``name`` or an object ``schema``, answers 400 ``invalid_request_error``; the
responder's text is the message content either way.  An Anthropic request that
forces a tool (``tool_choice: {"type": "tool", "name": N}``) must list a tool
``N`` in ``tools`` with an ``input_schema`` (else 400); its answer holds
``content[{type: "tool_use", id, name: N, input}]`` and ``stop_reason:
"tool_use"``, ``input`` being the responder's text parsed as a JSON object (a
JSON list of objects gives one ``tool_use`` block each). A responder text that
is not a JSON object is answered as a ``text`` block, so malformed replies can
still be scripted. ``ReceivedRequest.forced_tool`` names the forced tool.
``LoopbackServer(reject_structured_output=True)`` stands in for an
OpenAI-compatible server without these features: any ``response_format``
(other than ``text``), ``output_config.format``, ``tools`` or ``tool_choice``
answers 400.

Faults
------
Per request (``Reply(fault=...)``), queued (``srv.inject(Fault.X, times=n)``,
applied FIFO to the next n completion requests, before the responder, which
is then not called) or random (``LoopbackServer(fault_rate=0.2, faults=[...],
seed=1)``: the k-th completion request's random fault depends only on
``seed`` and k; the default list is the transient HTTP faults RATE_LIMIT,
SERVER_ERROR and OVERLOADED).  Faults apply to ``/v1/chat/completions`` and
``/v1/messages`` only, and a queued fault wins over a random one.

``RATE_LIMIT``
    429 with ``Retry-After`` (seconds, ``retry_after=``; fractional values
    are written as such, both SDKs accept them) and ``retry-after-ms``.
``SERVER_ERROR``
    500 ``api_error`` / ``server_error``.
``OVERLOADED``
    529 ``overloaded_error`` for Anthropic, 503 for OpenAI.
``TIMEOUT``
    The request is read, then nothing is answered until the client gives up
    (closes the socket) or ``hang_seconds`` (default 30) pass; the connection
    is then closed without a response.
``MALFORMED_JSON``
    200 ``application/json`` whose body is not JSON.
``TRUNCATED``
    200 with a ``Content-Length`` larger than the bytes sent, then close.
``CONNECTION_RESET``
    The socket is closed with ``SO_LINGER`` 0 (a TCP RST), no response.
``EMPTY_CONTENT``
    A valid envelope whose assistant text is ``""``.
``TRICKLE``
    A valid 200 whose head goes out at once and whose body then follows one
    byte every ``trickle_interval`` seconds (default 1.0, settable while
    serving): a server that never stalls long enough for a per-read timeout
    but takes minutes per reply. Stops when the client closes the connection.
``ECHO_HEADERS``
    400 whose error message quotes every request header the server received,
    credentials included (``authorization``, ``x-api-key``), as a misconfigured
    gateway or proxy does.

What the SDKs raise (openai 3.54 / anthropic 2.12, ``max_retries=0``)::

    RATE_LIMIT        openai.RateLimitError           anthropic.RateLimitError
    SERVER_ERROR      openai.InternalServerError      anthropic.InternalServerError
    OVERLOADED        openai.InternalServerError(503) anthropic.OverloadedError(529)
    TIMEOUT           openai.APITimeoutError          anthropic.APITimeoutError
                      (client timeout < hang_seconds; otherwise APIConnectionError)
    TRUNCATED         openai.APIConnectionError       anthropic.APIConnectionError
    CONNECTION_RESET  openai.APIConnectionError       anthropic.APIConnectionError
    MALFORMED_JSON    json.JSONDecodeError, unwrapped and never retried, from both
    EMPTY_CONTENT     no error: content == ""

All but MALFORMED_JSON and EMPTY_CONTENT are retried by the SDKs when
``max_retries > 0`` (a 429 waits ``Retry-After``; the others back off ~0.5 s).

Counters
--------
:meth:`LoopbackServer.stats` (and ``GET /stats``) count completion, model and
unknown-path requests, ``by_path``/``by_provider``/``by_status`` (``no_response``
for TIMEOUT and CONNECTION_RESET)/``by_fault``, ``in_flight`` and
``max_in_flight``, connections, ``first_request_at``/``last_response_at``
(``time.time()``) and ``span_s`` between them, and ``server_cpu_s`` (the server
thread's CPU time where the platform reports it).  A request's counters are
updated *before* its response bytes are written, so a client that has its
answer always sees them.  :meth:`LoopbackServer.reset` clears counters,
recorded requests and queued faults and re-seeds the fault RNG.

Holding answers
---------------
A test that interrupts a client midway (SIGINT, SIGKILL) must not race its signal
against the client's progress: on a loaded machine the run may finish first.
``srv.hold_after(n)`` lets the next ``n`` responder answers go out as usual and
then holds every further one, after its latency, until ``srv.release()``: the
client is then certainly midway, with its held calls in flight, however slow the
machine.  ``srv.wait_held(count, timeout)`` blocks until ``count`` answers are
held (``True``) or ``timeout`` passes (``False``; poll the client meanwhile, it may
have ended early); ``srv.held`` is the number held now.  Only answers the
responder gives to completion requests count and are held: queued and random
faults never reach the responder, batch lines and control endpoints pass.  A held
request stays in ``in_flight``; ``reset()`` leaves the hold as it is, ``hold_after``
again releases what the earlier hold held and counts afresh, and ``stop()`` aborts
held requests like hung ones.

Degenerate cases
----------------
A body that is not a JSON object answers 400 ``invalid_request_error`` (still
recorded, with ``body == {}``); ``stream: true`` answers 400 "streaming not
supported by loopback server"; a missing ``model`` is echoed as ``""``;
content parts that are not text (images, tool calls) flatten to nothing;
OpenAI ``system``/``developer`` messages go to ``ReceivedRequest.system`` and
not to ``messages``; a ``Reply`` with an error status (>= 400) and no fault
answers that status with ``Reply.text`` as the error message; an unparsable
request head answers 400 and closes the connection; idle keep-alive
connections are closed after ``idle_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import inspect
import json
import random
import re
import socket
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from pytest_llmjudge.testing.batch_api import BatchProvider, BatchStore, LineResult, route, route_label

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "DEFAULT_RANDOM_FAULTS",
    "Fault",
    "LoopbackServer",
    "Provider",
    "ReceivedRequest",
    "Reply",
    "Responder",
    "estimate_tokens",
]

Provider = Literal["openai", "anthropic"]

OPENAI_CHAT_PATH = "/v1/chat/completions"
ANTHROPIC_MESSAGES_PATH = "/v1/messages"
MODELS_PATH = "/v1/models"
STATS_PATH = "/stats"
RESET_PATH = "/reset"

_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})
_MAX_HEAD_BYTES = 1 << 20
_SERVER_NAME = "pytest-llmjudge-loopback"


class Fault(str, Enum):
    """Transport- or envelope-level faults the server can inject."""

    RATE_LIMIT = "rate_limit"
    SERVER_ERROR = "server_error"
    OVERLOADED = "overloaded"
    TIMEOUT = "timeout"
    MALFORMED_JSON = "malformed_json"
    TRUNCATED = "truncated"
    CONNECTION_RESET = "connection_reset"
    EMPTY_CONTENT = "empty_content"
    TRICKLE = "trickle"
    ECHO_HEADERS = "echo_headers"


DEFAULT_RANDOM_FAULTS: tuple[Fault, ...] = (
    Fault.RATE_LIMIT,
    Fault.SERVER_ERROR,
    Fault.OVERLOADED,
)


@dataclass(frozen=True)
class ReceivedRequest:
    """One completion request as the server understood it."""

    provider: Provider
    path: str
    model: str
    system: str
    messages: list[tuple[str, str]]
    temperature: float | None
    seed: int | None
    max_tokens: int | None
    response_format: dict[str, Any] | None
    body: dict[str, Any]
    headers: dict[str, str]
    api_key_present: bool
    index: int = 0
    """0-based arrival order among counted requests since the last reset."""
    received_at: float = 0.0
    """``time.time()`` when the request had been read."""

    @property
    def forced_tool(self) -> str | None:
        """The tool an Anthropic request forces (``tool_choice: {type: tool, name}``), if any."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "tool" and isinstance(choice.get("name"), str):
            return str(choice["name"])
        return None

    @property
    def last_user_text(self) -> str:
        """Text of the last ``user`` message (``""`` when there is none)."""
        for role, text in reversed(self.messages):
            if role == "user":
                return text
        return ""


@dataclass(frozen=True)
class Reply:
    """What a responder answers: assistant text plus optional overrides."""

    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    latency: float | None = None
    """Seconds from the request's arrival to the answer; ``None`` means the server's ``latency``."""
    fault: Fault | None = None
    usage: tuple[int, int] | None = None
    """``(input_tokens, output_tokens)`` to report instead of the estimate."""
    model: str | None = None
    """The served model the answer names (``model``); ``None`` echoes the request's (a provider
    that swaps the model behind a name answers another one)."""
    system_fingerprint: str | None = None
    """OpenAI's ``system_fingerprint`` to answer instead of ``fp_loopback`` (Anthropic has none)."""
    score_logprobs: dict[str, float] | None = None
    """With ``logprobs: true``: the alternatives (token -> logprob) of every integer token that follows
    ``"score":`` in the text, as a judge's uncertainty between scores; the written token gets its own entry."""


ResponderResult = Reply | str
Responder = Callable[[ReceivedRequest], ResponderResult | Awaitable[ResponderResult]]


def default_responder(request: ReceivedRequest) -> str:
    """Answer every request with an empty JSON object."""
    del request
    return "{}"


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one token per 4 characters, rounded up."""
    return (len(text) + 3) // 4


# --------------------------------------------------------------------------- parsing


class _BadRequest(Exception):
    """The HTTP request itself could not be parsed."""


@dataclass(frozen=True)
class _Outcome:
    """What the connection loop does with an answered request."""

    status: int  # 0: no HTTP response at all
    data: bytes = b""
    close: bool = False  # close (FIN) after writing ``data``
    rst: bool = False  # abort with SO_LINGER 0 (TCP RST), nothing written
    trickle: bytes = b""  # written one byte per ``trickle_interval`` after ``data``


@dataclass(frozen=True)
class _InjectedFault:
    fault: Fault
    retry_after: float | None
    hang_seconds: float | None


def _flatten_content(content: Any) -> str:
    """Flatten a message ``content`` (str or list of parts) to its text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif kind == "tool_result":
                    inner = _flatten_content(part.get("content"))
                    if inner:
                        texts.append(inner)
        return "\n".join(texts)
    return str(content)


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _build_received(
    *,
    provider: Provider,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str],
    index: int,
    received_at: float,
) -> ReceivedRequest:
    api_key_present = any(headers.get(name, "").strip() not in ("", "Bearer") for name in _SECRET_HEADERS)
    clean_headers = {k: v for k, v in headers.items() if k not in _SECRET_HEADERS}
    system_parts: list[str] = []
    messages: list[tuple[str, str]] = []
    raw_messages = body.get("messages")
    if provider == "anthropic":
        system_text = _flatten_content(body.get("system"))
        if system_text:
            system_parts.append(system_text)
    if isinstance(raw_messages, list):
        for message in raw_messages:
            if not isinstance(message, dict):
                continue
            role = str(message.get("role", ""))
            text = _flatten_content(message.get("content"))
            if provider == "openai" and role in ("system", "developer"):
                system_parts.append(text)
            else:
                messages.append((role, text))
    if provider == "openai":
        max_tokens = _as_int(body.get("max_completion_tokens"))
        if max_tokens is None:
            max_tokens = _as_int(body.get("max_tokens"))
    else:
        max_tokens = _as_int(body.get("max_tokens"))
    response_format = body.get("response_format")
    if provider == "anthropic":
        output_config = body.get("output_config")
        response_format = output_config.get("format") if isinstance(output_config, dict) else None
    model = body.get("model")
    return ReceivedRequest(
        provider=provider,
        path=path,
        model=model if isinstance(model, str) else "",
        system="\n\n".join(system_parts),
        messages=messages,
        temperature=_as_float(body.get("temperature")),
        seed=_as_int(body.get("seed")),
        max_tokens=max_tokens,
        response_format=response_format if isinstance(response_format, dict) else None,
        body=body,
        headers=clean_headers,
        api_key_present=api_key_present,
        index=index,
        received_at=received_at,
    )


# --------------------------------------------------------------------------- wire formats

_OPENAI_ERROR_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", None),
    404: ("invalid_request_error", None),
    405: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}

_ANTHROPIC_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _error_body(provider: Provider, status: int, message: str, request_id: str) -> dict[str, Any]:
    if provider == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status)
        if kind is None:
            kind = "api_error" if status >= 500 else "invalid_request_error"
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": request_id,
        }
    kind_code = _OPENAI_ERROR_TYPES.get(status)
    if kind_code is None:
        kind_code = ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    return {
        "error": {
            "message": message,
            "type": kind_code[0],
            "param": None,
            "code": kind_code[1],
        }
    }


def _success_body(
    request: ReceivedRequest, text: str, usage: tuple[int, int] | None, request_id: str, reply: Reply | None = None
) -> dict[str, Any]:
    served = reply.model if reply is not None and reply.model is not None else request.model
    fingerprint = reply.system_fingerprint if reply is not None and reply.system_fingerprint else "fp_loopback"
    if usage is None:
        prompt = estimate_tokens(request.system) + sum(estimate_tokens(t) + 4 for _, t in request.messages)
        usage = (prompt, estimate_tokens(text))
    if request.provider == "anthropic":
        tool_uses = _tool_use_blocks(request, text)
        return {
            "id": f"msg_loopback{request.index:08d}",
            "type": "message",
            "role": "assistant",
            "model": served,
            "content": tool_uses or [{"type": "text", "text": text}],
            "stop_reason": "tool_use" if tool_uses else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
    n = _as_int(request.body.get("n"))
    n = 1 if n is None else min(max(n, 1), 128)
    logprobs = (
        _logprobs_block(
            text, _as_int(request.body.get("top_logprobs")) or 0, reply.score_logprobs if reply is not None else None
        )
        if request.body.get("logprobs") is True
        else None
    )
    return {
        "id": f"chatcmpl-loopback{request.index:08d}",
        "object": "chat.completion",
        "created": int(request.received_at),
        "model": served,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": logprobs,
            }
            for i in range(n)
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1] * n,
            "total_tokens": usage[0] + usage[1] * n,
        },
        "system_fingerprint": fingerprint,
    }


def _tool_use_blocks(request: ReceivedRequest, text: str) -> list[dict[str, Any]]:
    """The ``tool_use`` blocks answering a request that forces a tool (none: answer ``text`` as text)."""
    name = request.forced_tool
    if name is None:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    inputs = value if isinstance(value, list) else [value]
    if not inputs or not all(isinstance(item, dict) for item in inputs):
        return []
    return [
        {"type": "tool_use", "id": f"toolu_loopback{request.index:08d}{i:02d}", "name": name, "input": item}
        for i, item in enumerate(inputs)
    ]


def _structured_output_problem(request: ReceivedRequest, *, rejected: bool) -> str | None:
    """Why the API would refuse the request's structured-output fields (``None``: it wouldn't).

    ``rejected`` plays a server that knows none of them (see "Structured outputs" above).
    """
    body = request.body
    if request.provider == "openai":
        form = body.get("response_format")
        if form is None:
            return None
        kind = form.get("type") if isinstance(form, dict) else None
        if rejected and kind != "text":
            return "response_format is not supported by this server"
        if kind in ("text", "json_object"):
            return None
        if kind != "json_schema":
            return f"Invalid value for 'response_format.type': {kind!r}"
        spec = form.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            return "Missing required parameter: 'response_format.json_schema.name'."
        if not isinstance(spec.get("schema"), dict):
            return "Invalid 'response_format.json_schema.schema': expected an object."
        return None
    if rejected and any(key in body for key in ("tools", "tool_choice", "output_config")):
        return "tools, tool_choice and output_config are not supported by this server"
    choice = body.get("tool_choice")
    if choice is None:
        return None
    name = request.forced_tool
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: Input tag does not match any of the expected tags"
    if name is None:
        return None if choice.get("type") != "tool" else "tool_choice.name: Field required"
    tools = body.get("tools")
    listed = [tool for tool in tools if isinstance(tool, dict)] if isinstance(tools, list) else []
    match = next((tool for tool in listed if tool.get("name") == name), None)
    if match is None:
        return f"Tool '{name}' not found in provided tools"
    if not isinstance(match.get("input_schema"), dict):
        return "tools.0.input_schema: Field required"
    return None


_GPT_LIKE_TOKEN = re.compile(r"\s?[A-Za-z]+|\d|\s?[^\sA-Za-z\d]+|\s")


_AFTER_SCORE = re.compile(r'"score"\s*:\s*$')


def _logprobs_block(text: str, top: int, score_logprobs: dict[str, float] | None = None) -> dict[str, Any]:
    """A Chat Completions ``logprobs`` block for ``text``: GPT-like tokens, each sure of itself.

    With ``score_logprobs``, an integer token right after ``"score":`` gets those alternatives
    instead (the ``top`` most likely, most likely first) and the logprob they give it.
    """
    content = []
    spelled = ""
    count = min(max(top, 0), 20)
    for token in _GPT_LIKE_TOKEN.findall(text):
        entry = {"token": token, "logprob": -0.01, "bytes": list(token.encode("utf-8"))}
        if score_logprobs and token.strip().isdigit() and _AFTER_SCORE.search(spelled):
            ranked = sorted(score_logprobs.items(), key=lambda item: -item[1])[:count]
            alternatives = [{"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, lp in ranked]
            chosen = score_logprobs.get(token, -9999.0)
            content.append({**entry, "logprob": chosen, "top_logprobs": alternatives})
        else:
            content.append({**entry, "top_logprobs": [dict(entry) for _ in range(count)]})
        spelled += token
    return {"content": content, "refusal": None}


def _models_body(models: Sequence[str]) -> dict[str, Any]:
    data = [
        {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "loopback",
            "type": "model",
            "display_name": name,
            "created_at": "1970-01-01T00:00:00Z",
        }
        for name in models
    ]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def _reason(status: int) -> str:
    if status == 529:
        return "Site Overloaded"
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _format_seconds(seconds: float) -> str:
    if seconds == int(seconds):
        return str(int(seconds))
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def _http_response(
    status: int,
    body: bytes,
    *,
    headers: dict[str, str] | None = None,
    keep_alive: bool = True,
    content_length: int | None = None,
    content_type: str = "application/json",
) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_reason(status)}",
        f"content-type: {content_type}",
        f"content-length: {len(body) if content_length is None else content_length}",
        f"connection: {'keep-alive' if keep_alive else 'close'}",
        f"server: {_SERVER_NAME}",
    ]
    if headers:
        lines.extend(f"{name}: {value}" for name, value in headers.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes everything
        raise _BadRequest("undecodable request head") from exc
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(f"bad request line {lines[0]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(f"bad header line {line!r}")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return method.upper(), target, version, headers


# --------------------------------------------------------------------------- server


class LoopbackServer:
    """OpenAI/Anthropic-compatible HTTP server on 127.0.0.1, in a background thread.

    ``latency``, ``responder``, ``fault_rate``, ``faults``, ``retry_after`` and
    ``hang_seconds`` are read per request and may be changed while serving.
    A server is started once (``start()`` or ``with``) and stopped once.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        responder: Responder | None = None,
        fault_rate: float = 0.0,
        faults: Iterable[Fault] | None = None,
        seed: int | None = None,
        retry_after: float = 1.0,
        hang_seconds: float = 30.0,
        idle_timeout: float = 60.0,
        models: Sequence[str] = ("loopback-judge",),
        batch_delay: float = 0.0,
        reject_structured_output: bool = False,
        trickle_interval: float = 1.0,
    ) -> None:
        if latency < 0:
            raise ValueError("latency must be >= 0")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate must be within [0, 1]")
        if retry_after < 0 or hang_seconds < 0:
            raise ValueError("retry_after and hang_seconds must be >= 0")
        fault_list = tuple(DEFAULT_RANDOM_FAULTS if faults is None else faults)
        if fault_rate > 0 and not fault_list:
            raise ValueError("fault_rate > 0 needs a non-empty faults list")
        self.host = host
        self.latency = latency
        self.responder: Responder = responder if responder is not None else default_responder
        self.fault_rate = fault_rate
        self.faults: tuple[Fault, ...] = fault_list
        self.seed = seed
        self.retry_after = retry_after
        self.hang_seconds = hang_seconds
        self.trickle_interval = trickle_interval
        self.idle_timeout = idle_timeout
        self.models: tuple[str, ...] = tuple(models)
        self.reject_structured_output = reject_structured_output
        self._requested_port = port
        self._port: int | None = None

        self._thread: threading.Thread | None = None
        self._final_cpu: float | None = None
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._queue: deque[_InjectedFault] = deque()
        self._requests: list[ReceivedRequest] = []
        self._fault_log: list[tuple[int, Fault]] = []
        self._connections_total = 0
        self._open_connections = 0
        self._in_flight = 0
        self._reset_counters_locked()
        # The hold (hold_after/release): answers counted since it was armed, answers
        # waiting now, and the event they wait on (set on the server's loop).
        self._hold_at: int | None = None
        self._answered = 0
        self._held = 0
        self._held_changed = threading.Condition(self._lock)
        self._released: asyncio.Event | None = None

        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._conn_tasks: set[asyncio.Task[Any]] = set()
        self._startup_error: BaseException | None = None
        self._stopped = False
        self._batch_requests: list[ReceivedRequest] = []
        self._batches = BatchStore(self._answer_batch_line, lambda: self.url)
        self._batches.batch_delay = batch_delay

    @property
    def batch_delay(self) -> float:
        """Seconds a batch stays pending after its creation, at least (read at each retrieve)."""
        return self._batches.batch_delay

    @batch_delay.setter
    def batch_delay(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("batch_delay must be >= 0")
        self._batches.batch_delay = seconds

    @property
    def batch_requests(self) -> list[ReceivedRequest]:
        """Snapshot of every batch line answered since the last reset (not in :attr:`requests`)."""
        with self._lock:
            return list(self._batch_requests)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind and start serving in a daemon thread; returns ``self``."""
        if self._thread is not None:
            raise RuntimeError("LoopbackServer already started")
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="llmjudge-loopback", daemon=True)
        self._thread.start()
        if not ready.wait(timeout=30):
            raise RuntimeError("LoopbackServer did not start within 30 s")
        if self._startup_error is not None:
            self._thread.join(timeout=5)
            raise RuntimeError(f"LoopbackServer failed to start: {self._startup_error}") from self._startup_error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving, abort open connections (hung ones too) and join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=timeout)

    close = stop

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(
                        self._serve_connection,
                        self.host,
                        self._requested_port,
                        limit=_MAX_HEAD_BYTES,
                        backlog=1024,
                    )
                )
                sockname = self._server.sockets[0].getsockname()
                self._port = int(sockname[1])
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                self._startup_error = exc
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._final_cpu = time.thread_time()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks: list[asyncio.Task[Any]] = list(self._conn_tasks)
        for task in tasks:
            task.cancel()
        tasks.extend(self._batches.cancel_all())
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("LoopbackServer is not started")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``base_url`` for ``openai.OpenAI``: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """``base_url`` for ``anthropic.Anthropic``: ``http://127.0.0.1:PORT``."""
        return self.url

    # ------------------------------------------------------------------ faults, counters

    def inject(
        self,
        fault: Fault,
        times: int = 1,
        *,
        retry_after: float | None = None,
        hang_seconds: float | None = None,
    ) -> None:
        """Queue ``fault`` for the next ``times`` completion requests (FIFO)."""
        if times < 0:
            raise ValueError("times must be >= 0")
        entry = _InjectedFault(Fault(fault), retry_after, hang_seconds)
        with self._lock:
            self._queue.extend([entry] * times)

    @property
    def pending_faults(self) -> list[Fault]:
        """Queued faults not yet applied, in order."""
        with self._lock:
            return [entry.fault for entry in self._queue]

    def _reset_counters_locked(self) -> None:
        self._count = 0
        self._by_path: Counter[str] = Counter()
        self._by_provider: Counter[str] = Counter()
        self._by_status: Counter[str] = Counter()
        self._by_fault: Counter[str] = Counter()
        self._responder_errors = 0
        self._max_in_flight = self._in_flight
        self._first_request_at: float | None = None
        self._first_request_perf: float | None = None
        self._last_response_at: float | None = None
        self._last_response_perf: float | None = None
        self._cpu_base = self._thread_cpu() or 0.0

    def reset(self) -> None:
        """Clear counters, recorded requests and queued faults; re-seed the fault RNG.

        Uploaded files and batches stay, as they would on a real provider.
        """
        with self._lock:
            self._reset_counters_locked()
            self._requests.clear()
            self._batch_requests.clear()
            self._fault_log.clear()
            self._queue.clear()
            self._rng = random.Random(self.seed)

    # ------------------------------------------------------------------ holding answers

    def hold_after(self, answers: int) -> None:
        """Let the next ``answers`` responder answers go out, then hold every further one until :meth:`release`.

        Arming again releases what an earlier hold holds and counts from zero.
        """
        if answers < 0:
            raise ValueError("answers must be >= 0")
        self.release()
        with self._lock:
            self._hold_at, self._answered, self._released = answers, 0, asyncio.Event()

    def release(self) -> None:
        """Send every held answer and hold no more (a no-op when nothing is armed)."""
        with self._lock:
            released, self._released, self._hold_at = self._released, None, None
        if released is None:
            return
        loop = self._loop
        if loop is None or self._stopped:
            released.set()  # no loop runs to wait on it
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing waits any more
            loop.call_soon_threadsafe(released.set)

    @property
    def held(self) -> int:
        """How many answers are held now."""
        with self._lock:
            return self._held

    def wait_held(self, count: int = 1, timeout: float | None = None) -> bool:
        """Block until at least ``count`` answers are held; False if ``timeout`` seconds pass first."""
        with self._held_changed:
            return self._held_changed.wait_for(lambda: self._held >= count, timeout)

    async def _pass_hold(self) -> None:
        """Count one responder answer; wait for :meth:`release` if it comes after the armed number."""
        with self._lock:
            self._answered += 1
            released = self._released
            if released is None or self._hold_at is None or self._answered <= self._hold_at:
                return
            self._held += 1
            self._held_changed.notify_all()
        try:
            await released.wait()
        finally:
            with self._lock:
                self._held -= 1

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Snapshot of every completion request received since the last reset."""
        with self._lock:
            return list(self._requests)

    def fault_log(self) -> list[tuple[int, Fault]]:
        """``(request index, fault)`` for each request a fault was applied to."""
        with self._lock:
            return list(self._fault_log)

    def stats(self) -> dict[str, Any]:
        """JSON-able counters (a consistent snapshot)."""
        cpu = self._thread_cpu()
        with self._lock:
            span: float | None = None
            if self._first_request_perf is not None and self._last_response_perf is not None:
                span = max(0.0, self._last_response_perf - self._first_request_perf)
            return {
                "requests": self._count,
                "by_path": dict(self._by_path),
                "by_provider": dict(self._by_provider),
                "by_status": dict(self._by_status),
                "by_fault": dict(self._by_fault),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "responder_errors": self._responder_errors,
                "connections": self._connections_total,
                "open_connections": self._open_connections,
                "pending_faults": len(self._queue),
                "first_request_at": self._first_request_at,
                "last_response_at": self._last_response_at,
                "span_s": span,
                "server_cpu_s": None if cpu is None else max(0.0, cpu - self._cpu_base),
                "batch": self._batches.stats(),
            }

    def _thread_cpu(self) -> float | None:
        """CPU seconds used by the server thread so far (None where unsupported)."""
        thread = self._thread
        if thread is None:
            return None
        if not thread.is_alive():
            return self._final_cpu
        getclock = getattr(time, "pthread_getcpuclockid", None)
        if getclock is None or thread.ident is None:
            return None
        try:
            return float(time.clock_gettime(getclock(thread.ident)))
        except (OSError, ValueError, OverflowError):
            return None

    # ------------------------------------------------------------------ connection handling

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        with self._lock:
            self._connections_total += 1
            self._open_connections += 1
        try:
            loop = asyncio.get_running_loop()
            keep_open = True
            while keep_open:
                # A timer is much cheaper than asyncio.wait_for (no extra task).
                idle = loop.call_later(self.idle_timeout, writer.transport.abort)
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                except asyncio.LimitOverrunError:
                    writer.write(self._bad_request_bytes("request head too large"))
                    break
                finally:
                    idle.cancel()
                try:
                    method, target, version, headers = _parse_head(head)
                    body = await self._read_body(reader, writer, headers)
                except _BadRequest as exc:
                    writer.write(self._bad_request_bytes(str(exc)))
                    break
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                connection = headers.get("connection", "").lower()
                client_keep_alive = "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)
                keep_open = await self._dispatch(method, target, headers, body, writer, reader, client_keep_alive)
                keep_open = keep_open and client_keep_alive
                if keep_open:
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            # Only ``stop()`` cancels connection tasks; end quietly (asyncio's
            # stream callback would log a cancelled handler as an error).
            writer.transport.abort()
        finally:
            with self._lock:
                self._open_connections -= 1
            if task is not None:
                self._conn_tasks.discard(task)
            with contextlib.suppress(Exception):
                if not writer.transport.is_closing():
                    writer.close()  # flushes what is buffered, then FIN

    def _bad_request_bytes(self, message: str) -> bytes:
        body = _json_bytes(_error_body("openai", 400, message, "req_loopback_bad"))
        return _http_response(400, body, keep_alive=False)

    async def _read_body(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        headers: dict[str, str],
    ) -> bytes:
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = await reader.readuntil(b"\r\n")
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError as exc:
                    raise _BadRequest("bad chunk size") from exc
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(size))
                if await reader.readexactly(2) != b"\r\n":
                    raise _BadRequest("bad chunk terminator")
        length_text = headers.get("content-length")
        if not length_text:
            return b""
        try:
            length = int(length_text)
        except ValueError as exc:
            raise _BadRequest("bad content-length") from exc
        if length < 0:
            raise _BadRequest("bad content-length")
        return await reader.readexactly(length) if length else b""

    async def _dispatch(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        keep_alive: bool,
    ) -> bool:
        """Answer one request; returns False when the connection must be closed."""
        path = target.split("?", 1)[0]
        if path == STATS_PATH and method == "GET":
            data = _json_bytes(self.stats())
            writer.write(_http_response(200, data, keep_alive=keep_alive))
            return True
        if path == RESET_PATH and method == "POST":
            self.reset()
            writer.write(_http_response(200, b'{"ok":true}', keep_alive=keep_alive))
            return True
        provider: Provider = "openai"
        if path != OPENAI_CHAT_PATH and (
            path == ANTHROPIC_MESSAGES_PATH
            or path.startswith(ANTHROPIC_MESSAGES_PATH + "/")
            or "anthropic-version" in headers
            or "x-api-key" in headers
        ):
            provider = "anthropic"
        is_completion = path in (OPENAI_CHAT_PATH, ANTHROPIC_MESSAGES_PATH)

        arrived = asyncio.get_running_loop().time()
        index, entry = self._begin(route_label(path), provider, is_completion)
        outcome = _Outcome(status=0, close=True)
        try:
            outcome = await self._answer(
                method, path, provider, index, entry, headers, body, reader, keep_alive, arrived
            )
        finally:
            # Book-keeping happens before the bytes leave, so a client that
            # has its answer always sees counters that include it.
            self._finish(outcome.status)
        if outcome.rst:
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    linger = struct.pack("ii", 1, 0)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            writer.transport.abort()
            return False
        if outcome.data:
            writer.write(outcome.data)
        for position in range(len(outcome.trickle)):
            await writer.drain()
            if writer.transport.is_closing() or reader.at_eof():
                return False  # the client gave up
            await asyncio.sleep(self.trickle_interval)
            writer.write(outcome.trickle[position : position + 1])
        if outcome.close:
            await writer.drain()
            return False
        return True

    async def _answer(
        self,
        method: str,
        path: str,
        provider: Provider,
        index: int,
        entry: _InjectedFault | None,
        headers: dict[str, str],
        body: bytes,
        reader: asyncio.StreamReader,
        keep_alive: bool,
        arrived: float,
    ) -> _Outcome:
        request_id = f"req_loopback{index:08d}"
        id_header = "request-id" if provider == "anthropic" else "x-request-id"
        base_headers = {id_header: request_id}

        def error(status: int, message: str, extra: dict[str, str]) -> _Outcome:
            payload = _json_bytes(_error_body(provider, status, message, request_id))
            response = _http_response(status, payload, headers=extra, keep_alive=keep_alive)
            return _Outcome(status=status, data=response)

        if path == MODELS_PATH:
            if method != "GET":
                return error(405, f"Method {method} not allowed for {path}", base_headers)
            payload = _json_bytes(_models_body(self.models))
            response = _http_response(200, payload, headers=base_headers, keep_alive=keep_alive)
            return _Outcome(status=200, data=response)
        batch_route = route(path)
        if batch_route is not None:

            def batch_error(status: int, message: str) -> tuple[int, bytes, str]:
                return status, _json_bytes(_error_body(provider, status, message, request_id)), "application/json"

            status, data, content_type = await self._batches.handle(
                batch_route[0], batch_route[1], method, headers, body, batch_error
            )
            response = _http_response(
                status, data, headers=base_headers, keep_alive=keep_alive, content_type=content_type
            )
            return _Outcome(status=status, data=response)
        if path not in (OPENAI_CHAT_PATH, ANTHROPIC_MESSAGES_PATH):
            return error(404, f"Invalid URL ({method} {path})", base_headers)
        if method != "POST":
            return error(405, f"Method {method} not allowed for {path}", base_headers)

        try:
            parsed = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        body_dict: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        received = _build_received(
            provider=provider,
            path=path,
            body=body_dict,
            headers=headers,
            index=index,
            received_at=time.time(),
        )
        with self._lock:
            self._requests.append(received)

        retry_after = self.retry_after
        hang_seconds = self.hang_seconds
        answered = False  # by the responder: the answers hold_after counts and holds
        if entry is not None:
            reply = Reply(fault=entry.fault)
            if entry.retry_after is not None:
                retry_after = entry.retry_after
            if entry.hang_seconds is not None:
                hang_seconds = entry.hang_seconds
        elif not isinstance(parsed, dict):
            reply = Reply(text="request body must be a JSON object", status=400)
        elif body_dict.get("stream") is True:
            reply = Reply(text="streaming not supported by loopback server", status=400)
        elif (problem := _structured_output_problem(received, rejected=self.reject_structured_output)) is not None:
            reply = Reply(text=problem, status=400)
        else:
            reply = await self._call_responder(received)
            answered = True
        fault = reply.fault
        if fault is not None:
            with self._lock:
                self._by_fault[fault.value] += 1
                self._fault_log.append((index, fault))

        if fault is Fault.TIMEOUT:
            await self._hang(reader, hang_seconds)
            return _Outcome(status=0, close=True)

        latency = self.latency if reply.latency is None else reply.latency
        remaining = latency - (asyncio.get_running_loop().time() - arrived)
        if remaining > 0:
            await asyncio.sleep(remaining)
        if answered:
            await self._pass_hold()

        extra = {**base_headers, **reply.headers}
        if fault is Fault.CONNECTION_RESET:
            return _Outcome(status=0, rst=True)
        if fault is Fault.RATE_LIMIT:
            rate_headers = {
                "retry-after": _format_seconds(retry_after),
                "retry-after-ms": str(round(retry_after * 1000)),
            }
            return error(429, "Rate limit exceeded (loopback)", {**rate_headers, **extra})
        if fault is Fault.SERVER_ERROR:
            return error(500, "Internal server error (loopback)", extra)
        if fault is Fault.OVERLOADED:
            status = 529 if provider == "anthropic" else 503
            return error(status, "Overloaded (loopback)", extra)
        if fault is Fault.MALFORMED_JSON:
            payload = b'{"id": "loopback-malformed", "choices": [ <this is not JSON'
            response = _http_response(200, payload, headers=extra, keep_alive=keep_alive)
            return _Outcome(status=200, data=response)
        if fault is Fault.TRUNCATED:
            full = _json_bytes(_success_body(received, reply.text, reply.usage, request_id, reply))
            response = _http_response(
                200,
                full[: max(1, len(full) // 2)],
                headers=extra,
                keep_alive=False,
                content_length=len(full),
            )
            return _Outcome(status=200, data=response, close=True)
        if fault is Fault.EMPTY_CONTENT:
            payload = _json_bytes(_success_body(received, "", reply.usage, request_id, reply))
            response = _http_response(200, payload, headers=extra, keep_alive=keep_alive)
            return _Outcome(status=200, data=response)
        if fault is Fault.ECHO_HEADERS:
            return error(400, f"headers received: {headers!r}", extra)
        if fault is Fault.TRICKLE:
            payload = _json_bytes(_success_body(received, reply.text, reply.usage, request_id))
            response = _http_response(200, payload, headers=extra, keep_alive=False)
            head = len(response) - len(payload)
            return _Outcome(status=200, data=response[:head], trickle=response[head:], close=True)
        if reply.status >= 400:
            return error(reply.status, reply.text or f"loopback error {reply.status}", extra)
        payload = _json_bytes(_success_body(received, reply.text, reply.usage, request_id, reply))
        response = _http_response(reply.status, payload, headers=extra, keep_alive=keep_alive)
        return _Outcome(status=reply.status, data=response)

    def _begin(self, path: str, provider: Provider, is_completion: bool) -> tuple[int, _InjectedFault | None]:
        now, perf = time.time(), time.perf_counter()
        with self._lock:
            index = self._count
            self._count += 1
            self._by_path[path] += 1
            self._by_provider[provider] += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            if self._first_request_at is None:
                self._first_request_at, self._first_request_perf = now, perf
            entry: _InjectedFault | None = None
            if is_completion:
                random_fault: Fault | None = None
                if self.fault_rate > 0:
                    draw = self._rng.random()
                    pick = self._rng.choice(self.faults)
                    if draw < self.fault_rate:
                        random_fault = pick
                if self._queue:
                    entry = self._queue.popleft()
                elif random_fault is not None:
                    entry = _InjectedFault(random_fault, None, None)
            return index, entry

    def _finish(self, status: int) -> None:
        now, perf = time.time(), time.perf_counter()
        with self._lock:
            self._in_flight -= 1
            self._by_status[str(status) if status else "no_response"] += 1
            self._last_response_at, self._last_response_perf = now, perf

    async def _answer_batch_line(
        self, provider: BatchProvider, path: str, body: dict[str, Any], index: int
    ) -> LineResult:
        """One batch line through the responder: ``(status, completion or error body)``."""
        received = _build_received(
            provider=provider, path=path, body=body, headers={}, index=index, received_at=time.time()
        )
        with self._lock:
            self._batch_requests.append(received)
        request_id = f"req_loopback_batch{index:08d}"
        problem = _structured_output_problem(received, rejected=self.reject_structured_output)
        if problem is not None:
            return 400, _error_body(provider, 400, problem, request_id)
        reply = await self._call_responder(received)
        if reply.latency:
            await asyncio.sleep(reply.latency)
        fault = reply.fault
        if fault is Fault.EMPTY_CONTENT:
            return 200, _success_body(received, "", reply.usage, request_id, reply)
        if fault is not None or reply.status >= 400:
            status = (
                {
                    Fault.RATE_LIMIT: 429,
                    Fault.OVERLOADED: 529 if provider == "anthropic" else 503,
                }.get(fault, 500)
                if fault is not None
                else reply.status
            )
            message = (
                reply.text
                if fault is None and reply.text
                else f"batch line failed ({fault.value if fault else status})"
            )
            return status, _error_body(provider, status, message, request_id)
        return 200, _success_body(received, reply.text, reply.usage, request_id, reply)

    async def _call_responder(self, request: ReceivedRequest) -> Reply:
        try:
            result = self.responder(request)
            if inspect.isawaitable(result):
                result = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a 500
            with self._lock:
                self._responder_errors += 1
            return Reply(
                text=f"loopback responder raised {type(exc).__name__}: {exc}",
                status=500,
            )
        if isinstance(result, Reply):
            return result
        if isinstance(result, str):
            return Reply(text=result)
        with self._lock:
            self._responder_errors += 1
        return Reply(
            text=f"loopback responder returned {type(result).__name__}, not Reply or str",
            status=500,
        )

    async def _hang(self, reader: asyncio.StreamReader, seconds: float) -> None:
        """Wait until the client gives up (EOF/reset) or ``seconds`` pass."""
        with contextlib.suppress(asyncio.TimeoutError, ConnectionError, OSError):
            await asyncio.wait_for(reader.read(1), seconds)
