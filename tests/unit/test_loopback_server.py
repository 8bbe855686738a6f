"""The loopback server, exercised through the real OpenAI and Anthropic SDKs.

No SDK method is patched: every call goes over a real 127.0.0.1 socket.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from pytest_llmjudge.testing import Fault, LoopbackServer, ReceivedRequest, Reply

OPENAI_KEY = "sk-loopback-secret-openai"
ANTHROPIC_KEY = "sk-ant-loopback-secret"


_open_clients: list[openai.OpenAI | anthropic.Anthropic] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _open_clients:
        _open_clients.pop().close()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(hang_seconds=5.0) as srv:
        yield srv


def oai(srv: LoopbackServer, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 5.0)
    client = openai.OpenAI(base_url=srv.openai_base_url, api_key=OPENAI_KEY, **kwargs)
    _open_clients.append(client)
    return client


def ant(srv: LoopbackServer, **kwargs: Any) -> anthropic.Anthropic:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 5.0)
    client = anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key=ANTHROPIC_KEY, **kwargs)
    _open_clients.append(client)
    return client


def chat(client: openai.OpenAI, text: str = "hi", **kwargs: Any) -> Any:
    return client.chat.completions.create(model="gpt-loopback", messages=[{"role": "user", "content": text}], **kwargs)


def message(client: anthropic.Anthropic, text: str = "hi", **kwargs: Any) -> Any:
    return client.messages.create(
        model="claude-loopback",
        max_tokens=64,
        messages=[{"role": "user", "content": text}],
        **kwargs,
    )


def text_of(reply: anthropic.types.Message) -> str:
    block = reply.content[0]
    assert isinstance(block, anthropic.types.TextBlock)
    return block.text


def get_json(url: str, method: str = "GET") -> Any:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


# --------------------------------------------------------------------------- round trips


def test_openai_round_trip() -> None:
    seen: list[ReceivedRequest] = []

    def responder(req: ReceivedRequest) -> str:
        seen.append(req)
        return '{"score": 4, "justification": "fine"}'

    with LoopbackServer(responder=responder) as srv:
        assert srv.openai_base_url == f"http://127.0.0.1:{srv.port}/v1"
        resp = oai(srv).chat.completions.create(
            model="gpt-4o-mini-2024-07-18",
            messages=[
                {"role": "system", "content": "You are a judge."},
                {"role": "developer", "content": "Answer JSON."},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "part one"},
                        {"type": "text", "text": "part two"},
                    ],
                },
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "grade it"},
            ],
            temperature=0.0,
            seed=7,
            max_tokens=50,
            response_format={"type": "json_object"},
        )
        assert resp.object == "chat.completion"
        assert resp.model == "gpt-4o-mini-2024-07-18"
        choice = resp.choices[0]
        assert choice.message.content == '{"score": 4, "justification": "fine"}'
        assert choice.message.role == "assistant"
        assert choice.message.refusal is None
        assert choice.finish_reason == "stop"
        assert resp.usage is not None
        assert resp.usage.prompt_tokens > 0
        assert resp.usage.completion_tokens == (len(choice.message.content) + 3) // 4
        assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens

        (req,) = seen
        assert srv.requests == seen
        assert req.provider == "openai"
        assert req.path == "/v1/chat/completions"
        assert req.model == "gpt-4o-mini-2024-07-18"
        assert req.system == "You are a judge.\n\nAnswer JSON."
        assert req.messages == [
            ("user", "part one\npart two"),
            ("assistant", "ok"),
            ("user", "grade it"),
        ]
        assert req.last_user_text == "grade it"
        assert req.temperature == 0.0
        assert req.seed == 7
        assert req.max_tokens == 50
        assert req.response_format == {"type": "json_object"}
        assert req.body["model"] == "gpt-4o-mini-2024-07-18"
        assert req.api_key_present is True
        assert "authorization" not in req.headers
        assert req.headers["user-agent"].startswith("OpenAI/Python")
        assert OPENAI_KEY not in repr(req)


def test_anthropic_round_trip() -> None:
    with LoopbackServer(responder=lambda req: Reply(text="verdict", usage=(11, 3))) as srv:
        assert srv.anthropic_base_url == f"http://127.0.0.1:{srv.port}"
        resp = ant(srv).messages.create(
            model="claude-loopback-judge",
            max_tokens=128,
            system=[
                {"type": "text", "text": "You are"},
                {"type": "text", "text": "a judge."},
            ],
            messages=[
                {"role": "user", "content": "question"},
                {"role": "assistant", "content": [{"type": "text", "text": "draft"}]},
                {"role": "user", "content": "grade"},
            ],
            output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
            # anthropic 2.x has no `temperature` argument any more; it can only travel in extra_body
            extra_body={"temperature": 0.0},
        )
        assert resp.type == "message"
        assert resp.role == "assistant"
        assert resp.model == "claude-loopback-judge"
        assert resp.stop_reason == "end_turn"
        assert resp.stop_sequence is None
        assert len(resp.content) == 1 and resp.content[0].type == "text"
        assert resp.content[0].text == "verdict"
        assert (resp.usage.input_tokens, resp.usage.output_tokens) == (11, 3)

        (req,) = srv.requests
        assert req.provider == "anthropic"
        assert req.path == "/v1/messages"
        assert req.system == "You are\na judge."
        assert req.messages == [
            ("user", "question"),
            ("assistant", "draft"),
            ("user", "grade"),
        ]
        assert req.max_tokens == 128
        assert req.temperature == 0.0
        assert req.seed is None
        assert req.response_format == {
            "type": "json_schema",
            "schema": {"type": "object"},
        }
        assert req.api_key_present is True
        assert "x-api-key" not in req.headers and "authorization" not in req.headers
        assert "anthropic-version" in req.headers
        assert ANTHROPIC_KEY not in repr(req)


def test_default_responder_async_responder_and_estimated_usage() -> None:
    with LoopbackServer() as srv:
        resp = message(ant(srv), "abcdefgh")  # 8 chars -> 2 tokens + 4 per message
        assert resp.content[0].text == "{}"
        assert (resp.usage.input_tokens, resp.usage.output_tokens) == (6, 1)

    async def slow_echo(req: ReceivedRequest) -> str:
        await asyncio.sleep(0.01)
        return req.last_user_text.upper()

    with LoopbackServer(responder=slow_echo) as srv:
        assert chat(oai(srv), "shout").choices[0].message.content == "SHOUT"


def test_models_endpoint_both_sdks(server: LoopbackServer) -> None:
    assert [m.id for m in oai(server).models.list()] == ["loopback-judge"]
    assert [m.id for m in ant(server).models.list()] == ["loopback-judge"]
    assert server.stats()["by_path"] == {"/v1/models": 2}
    assert server.requests == []  # only completion requests are recorded


def test_unknown_path_is_404_in_provider_format(server: LoopbackServer) -> None:
    with pytest.raises(openai.NotFoundError) as oerr:
        oai(server).models.retrieve("nope")
    assert oerr.value.type == "invalid_request_error"
    assert "Invalid URL" in oerr.value.message
    with pytest.raises(anthropic.NotFoundError) as aerr:
        ant(server).models.retrieve("nope")
    assert aerr.value.type == "not_found_error"


def test_streaming_and_error_replies_are_4xx_5xx(server: LoopbackServer) -> None:
    with pytest.raises(openai.BadRequestError, match="streaming not supported by loopback server"):
        chat(oai(server), stream=True)

    server.responder = lambda req: Reply(text="nope", status=400)
    with pytest.raises(anthropic.BadRequestError) as aerr:
        message(ant(server))
    assert aerr.value.api_message == "nope"
    assert aerr.value.type == "invalid_request_error"

    def broken(req: ReceivedRequest) -> str:
        raise RuntimeError("boom")

    server.responder = broken
    with pytest.raises(openai.InternalServerError, match="RuntimeError: boom"):
        chat(oai(server))
    assert server.stats()["responder_errors"] == 1


def test_content_level_malformed_judge_reply_is_just_text(
    server: LoopbackServer,
) -> None:
    server.responder = lambda req: "score: five-ish {"
    assert chat(oai(server)).choices[0].message.content == "score: five-ish {"


def test_chunked_request_body_and_expect_continue(server: LoopbackServer) -> None:
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "chunky"}]}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        chunks = iter([payload[:10], payload[10:]])
        conn.request(
            "POST",
            "/v1/chat/completions",
            body=chunks,
            headers={"Content-Type": "application/json", "Authorization": "Bearer x"},
            encode_chunked=True,
        )
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["choices"][0]["message"]["content"] == "{}"
        # keep-alive: a second request on the same connection
        conn.request("GET", "/v1/models")
        resp2 = conn.getresponse()
        assert resp2.status == 200
        resp2.read()
    finally:
        conn.close()
    assert server.requests[0].messages == [("user", "chunky")]
    assert server.stats()["connections"] == 1


# --------------------------------------------------------------------------- concurrency and soak


def test_concurrency_latency_and_max_in_flight() -> None:
    """64 requests, 32 at a time, 0.2 s latency: two waves, not 64 sleeps."""

    async def run(srv: LoopbackServer) -> tuple[float, float]:
        client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=OPENAI_KEY, max_retries=0)
        sem = asyncio.Semaphore(32)

        async def one(i: int) -> str:
            async with sem:
                resp = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                return resp.choices[0].message.content or ""

        async def wave() -> float:
            t0 = time.perf_counter()
            out = await asyncio.gather(*(one(i) for i in range(64)))
            assert out == [str(i) for i in range(64)]
            return time.perf_counter() - t0

        srv.latency = 0.0
        await wave()  # warm-up: opens the 32 keep-alive connections
        baseline = await wave()  # the SDK's own per-request cost, no server latency
        srv.reset()
        srv.latency = 0.2
        wall = await wave()
        await client.close()
        return baseline, wall

    with LoopbackServer(responder=lambda req: req.last_user_text) as srv:
        baseline, wall = asyncio.run(run(srv))
        stats = srv.stats()
    # Two waves of 0.2 s: 32 requests at the server at once (no upper bound on the wall
    # time, which a loaded machine stretches; the overlap is what shows concurrency).
    assert 0.4 <= wall, (wall, baseline)
    assert stats["max_in_flight"] == 32
    assert stats["in_flight"] == 0
    assert stats["requests"] == 64
    assert stats["connections"] == 32  # all reused from the warm-up
    assert 0.4 <= stats["span_s"] <= wall


def test_64_concurrent_requests_anthropic_async() -> None:
    async def run(srv: LoopbackServer) -> float:
        client = anthropic.AsyncAnthropic(base_url=srv.anthropic_base_url, api_key=ANTHROPIC_KEY, max_retries=0)
        t0 = time.perf_counter()
        replies = await asyncio.gather(
            *(
                client.messages.create(model="c", max_tokens=8, messages=[{"role": "user", "content": str(i)}])
                for i in range(64)
            )
        )
        wall = time.perf_counter() - t0
        await client.close()
        assert [text_of(r) for r in replies] == [str(i) for i in range(64)]
        return wall

    # The latency is long next to the SDK's per-request CPU cost, so all 64 overlap.
    with LoopbackServer(latency=1.0, responder=lambda req: req.last_user_text) as srv:
        wall = asyncio.run(run(srv))
        stats = srv.stats()
    assert 1.0 <= wall, wall
    assert stats["max_in_flight"] == 64  # one latency, not 64 of them: all overlap at the server
    assert stats["connections"] == 64


async def _raw_client(port: int, requests: int, path: bytes = b"/v1/messages") -> list[int]:
    """Minimal keep-alive HTTP/1.1 client: ``requests`` sequential POSTs on one connection."""
    body = json.dumps({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}).encode()
    head = b"POST %s HTTP/1.1\r\nHost: loopback\r\nx-api-key: k\r\nContent-Length: %d\r\n\r\n" % (path, len(body))
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    statuses: list[int] = []
    try:
        for _ in range(requests):
            writer.write(head + body)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            payload = json.loads(await reader.readexactly(length))
            assert payload["type"] == "message"
            statuses.append(int(status_line.split()[1]))
    finally:
        writer.close()
    return statuses


def test_raw_capacity_256_connections_at_once() -> None:
    # Every answer is held until all 256 requests are in (a fixed latency raced the connects
    # on a loaded machine: 255 overlapped once), so the overlap is proven, not timed.
    async def run(srv: LoopbackServer) -> list[list[int]]:
        clients = asyncio.gather(*(_raw_client(srv.port, 1) for _ in range(256)))
        all_held = await asyncio.to_thread(srv.wait_held, 256, 60)
        held = srv.held
        srv.release()
        results = await clients
        assert all_held, f"only {held} requests were in flight at once"
        return results

    with LoopbackServer() as srv:
        srv.hold_after(0)
        results = asyncio.run(run(srv))
        stats = srv.stats()
    assert results == [[200]] * 256
    assert stats["max_in_flight"] == 256


def test_soak_thousands_of_requests_low_server_cpu() -> None:
    # A raw keep-alive client: the server's own cost per request is what is measured.
    async def run(port: int) -> list[list[int]]:
        return await asyncio.gather(*(_raw_client(port, 100) for _ in range(32)))

    with LoopbackServer() as srv:
        results = asyncio.run(run(srv.port))
        stats = srv.stats()
        assert len(srv.requests) == 3200
    assert all(r == [200] * 100 for r in results)
    assert stats["requests"] == 3200
    assert stats["by_status"] == {"200": 3200}
    assert stats["connections"] == 32
    assert stats["in_flight"] == 0
    if stats["server_cpu_s"] is not None:  # ~0.4 ms per request on a 2-core VM
        assert stats["server_cpu_s"] / 3200 < 0.003, stats["server_cpu_s"]


def test_sdk_soak_with_random_rate_limits_and_retries() -> None:
    n = 300

    async def run(srv: LoopbackServer) -> list[str]:
        client = openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key=OPENAI_KEY, max_retries=8)
        sem = asyncio.Semaphore(64)

        async def one(i: int) -> str:
            async with sem:
                resp = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                return resp.choices[0].message.content or ""

        out = await asyncio.gather(*(one(i) for i in range(n)))
        await client.close()
        return out

    with LoopbackServer(
        fault_rate=0.1, faults=[Fault.RATE_LIMIT], retry_after=0.01, seed=3, responder=lambda r: r.last_user_text
    ) as srv:
        out = asyncio.run(run(srv))
        stats = srv.stats()
    assert out == [str(i) for i in range(n)]  # every call eventually succeeded
    limited = stats["by_fault"]["rate_limit"]
    assert 10 < limited < 60
    assert stats["requests"] == n + limited
    assert stats["by_status"] == {"200": n, "429": limited}


# --------------------------------------------------------------------------- faults


def test_rate_limit_surfaces_with_retry_after() -> None:
    with LoopbackServer(retry_after=3) as srv:
        srv.inject(Fault.RATE_LIMIT)
        with pytest.raises(openai.RateLimitError) as oerr:
            chat(oai(srv))
        assert oerr.value.response.headers["retry-after"] == "3"
        assert oerr.value.response.headers["retry-after-ms"] == "3000"
        assert oerr.value.code == "rate_limit_exceeded"

        srv.inject(Fault.RATE_LIMIT, retry_after=1.5)
        with pytest.raises(anthropic.RateLimitError) as aerr:
            message(ant(srv))
        assert aerr.value.response.headers["retry-after"] == "1.5"
        assert aerr.value.type == "rate_limit_error"
        assert aerr.value.request_id == "req_loopback00000001"
        assert srv.stats()["by_fault"] == {"rate_limit": 2}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdk_retry_honours_retry_after(provider: str) -> None:
    with LoopbackServer(responder=lambda req: "after retry") as srv:
        oclient, aclient = oai(srv, max_retries=2), ant(srv, max_retries=2)

        def call() -> str:
            if provider == "openai":
                return str(chat(oclient).choices[0].message.content)
            return text_of(message(aclient))

        call()  # warm-up: first-call costs (lazy imports, connection) stay out of the timing
        srv.reset()
        srv.inject(Fault.RATE_LIMIT, times=1, retry_after=1.0)
        t0 = time.perf_counter()
        text = call()
        elapsed = time.perf_counter() - t0
        assert text == "after retry"
        assert elapsed >= 1.0, elapsed
        first, retry = srv.requests
        assert (first.headers["x-stainless-retry-count"], retry.headers["x-stainless-retry-count"]) == ("0", "1")
        # Without Retry-After both SDKs would back off at most 0.5 s (0.5 s * jitter in
        # [0.75, 1]) before the first retry, so a gap of a whole second shows the header was
        # used. Only a lower bound: a loaded machine can lengthen the gap, never shorten it.
        gap = retry.received_at - first.received_at
        assert gap >= 1.0, gap
        stats = srv.stats()
        assert stats["requests"] == 2
        assert stats["by_status"] == {"429": 1, "200": 1}


def test_server_error_and_overloaded(server: LoopbackServer) -> None:
    server.inject(Fault.SERVER_ERROR)
    with pytest.raises(openai.InternalServerError) as e1:
        chat(oai(server))
    assert e1.value.status_code == 500
    server.inject(Fault.SERVER_ERROR)
    with pytest.raises(anthropic.InternalServerError) as e2:
        message(ant(server))
    assert e2.value.status_code == 500 and e2.value.type == "api_error"

    server.inject(Fault.OVERLOADED)
    with pytest.raises(openai.InternalServerError) as e3:
        chat(oai(server))
    assert e3.value.status_code == 503
    server.inject(Fault.OVERLOADED)
    with pytest.raises(anthropic.OverloadedError) as e4:
        message(ant(server))
    assert e4.value.status_code == 529 and e4.value.type == "overloaded_error"
    assert isinstance(e4.value, anthropic.InternalServerError)


def test_timeout_fault_client_gives_up() -> None:
    with LoopbackServer(hang_seconds=5.0) as srv:
        srv.inject(Fault.TIMEOUT)
        t0 = time.perf_counter()
        with pytest.raises(openai.APITimeoutError):  # not the connection closed after 5 s
            chat(oai(srv, timeout=0.3))
        assert 0.3 <= time.perf_counter() - t0
        srv.inject(Fault.TIMEOUT)
        with pytest.raises(anthropic.APITimeoutError):
            message(ant(srv, timeout=0.3))
        # the server notices the client hung up and stops hanging
        deadline = time.monotonic() + 2
        while srv.stats()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.stats()["in_flight"] == 0
        assert srv.stats()["by_fault"] == {"timeout": 2}
        # the server is still healthy afterwards
        assert chat(oai(srv)).choices[0].message.content == "{}"


def test_timeout_fault_hang_seconds_then_close() -> None:
    with LoopbackServer() as srv:
        srv.inject(Fault.TIMEOUT, hang_seconds=0.2)
        t0 = time.perf_counter()
        # the client waits longer than the server hangs: the server closes without answering
        with pytest.raises(openai.APIConnectionError) as err:
            chat(oai(srv, timeout=3.0))
        assert not isinstance(err.value, openai.APITimeoutError)
        assert 0.2 <= time.perf_counter() - t0


@pytest.mark.parametrize("fault", [Fault.CONNECTION_RESET, Fault.TRUNCATED])
def test_reset_and_truncated_are_connection_errors(server: LoopbackServer, fault: Fault) -> None:
    server.inject(fault)
    with pytest.raises(openai.APIConnectionError) as oerr:
        chat(oai(server))
    assert not isinstance(oerr.value, openai.APITimeoutError)
    server.inject(fault)
    with pytest.raises(anthropic.APIConnectionError) as aerr:
        message(ant(server))
    assert not isinstance(aerr.value, anthropic.APITimeoutError)
    # connection errors are retried by the SDKs
    server.inject(fault)
    assert chat(oai(server, max_retries=1)).choices[0].message.content == "{}"
    assert server.stats()["by_fault"] == {fault.value: 3}


def test_malformed_json_raises_json_decode_error(server: LoopbackServer) -> None:
    # Both SDKs call response.json() on an application/json body and let the
    # json.JSONDecodeError (a ValueError) escape unwrapped -- and do not retry it.
    server.inject(Fault.MALFORMED_JSON)
    with pytest.raises(json.JSONDecodeError):
        chat(oai(server, max_retries=2))
    server.inject(Fault.MALFORMED_JSON)
    with pytest.raises(json.JSONDecodeError):
        message(ant(server, max_retries=2))
    assert server.stats()["requests"] == 2


def test_empty_content(server: LoopbackServer) -> None:
    server.responder = lambda req: Reply(text="ignored", fault=Fault.EMPTY_CONTENT)
    resp = chat(oai(server))
    assert resp.choices[0].message.content == ""
    assert resp.usage is not None and resp.usage.completion_tokens == 0
    aresp = message(ant(server))
    assert aresp.content[0].text == ""


def test_injected_faults_are_fifo_and_counted(server: LoopbackServer) -> None:
    server.inject(Fault.SERVER_ERROR, times=2)
    server.inject(Fault.RATE_LIMIT)
    assert server.pending_faults == [
        Fault.SERVER_ERROR,
        Fault.SERVER_ERROR,
        Fault.RATE_LIMIT,
    ]
    client = oai(server)
    for expected in (
        openai.InternalServerError,
        openai.InternalServerError,
        openai.RateLimitError,
    ):
        with pytest.raises(expected):
            chat(client)
    chat(client)
    assert server.fault_log() == [
        (0, Fault.SERVER_ERROR),
        (1, Fault.SERVER_ERROR),
        (2, Fault.RATE_LIMIT),
    ]
    assert server.pending_faults == []


def _fault_pattern(seed: int) -> list[str]:
    with LoopbackServer(fault_rate=0.3, faults=[Fault.RATE_LIMIT, Fault.SERVER_ERROR], seed=seed) as srv:
        client = oai(srv)
        outcomes: list[str] = []
        for _ in range(30):
            try:
                chat(client)
                outcomes.append("ok")
            except openai.APIStatusError as exc:
                outcomes.append(str(exc.status_code))
        first_log = srv.fault_log()
        srv.reset()
        for _ in range(30):
            try:
                chat(client)
            except openai.APIStatusError:
                pass
        assert srv.fault_log() == first_log  # reset() re-seeds the fault RNG
        return outcomes


def test_seeded_fault_rate_is_reproducible() -> None:
    first = _fault_pattern(1)
    assert first == _fault_pattern(1)
    assert {"ok", "429", "500"} == set(first)
    assert first != _fault_pattern(2)


# --------------------------------------------------------------------------- stats, reset, lifecycle


def test_stats_and_reset_over_http(server: LoopbackServer) -> None:
    chat(oai(server))
    message(ant(server))
    stats = get_json(f"{server.url}/stats")
    assert stats["requests"] == 2
    assert stats["by_path"] == {"/v1/chat/completions": 1, "/v1/messages": 1}
    assert stats["by_provider"] == {"openai": 1, "anthropic": 1}
    assert stats["max_in_flight"] == 1
    assert stats["first_request_at"] <= stats["last_response_at"]
    assert stats["span_s"] >= 0
    assert server.stats()["requests"] == 2  # control endpoints are not counted
    assert get_json(f"{server.url}/reset", method="POST") == {"ok": True}
    assert server.stats()["requests"] == 0
    assert server.requests == []
    chat(oai(server))
    assert [r.index for r in server.requests] == [0]
    server.reset()
    assert server.stats()["span_s"] is None


def test_stop_aborts_hung_requests_and_frees_port() -> None:
    srv = LoopbackServer(hang_seconds=30.0).start()
    port = srv.port
    srv.inject(Fault.TIMEOUT)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            chat(oai(srv, timeout=20.0))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.monotonic() + 5
    while srv.stats()["in_flight"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    srv.stop()
    thread.join(timeout=60)  # a hang guard only
    # A connection error, not the client's 20 s timeout: stop() closed the hung connection.
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)
    assert not isinstance(errors[0], openai.APITimeoutError)
    with (
        pytest.raises(OSError),
        socket.create_connection(("127.0.0.1", port), timeout=1),
    ):
        pass
    srv.stop()  # idempotent


def test_cli_serves_until_sigterm() -> None:
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_llmjudge.testing",
            "--port",
            "0",
            "--latency",
            "0.01",
            "--seed",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        fields = dict(part.split("=", 1) for part in line.split())
        assert set(fields) == {"openai_base_url", "anthropic_base_url"}
        with openai.OpenAI(base_url=fields["openai_base_url"], api_key="x", max_retries=0, timeout=5) as client:
            content = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        assert json.loads(content.choices[0].message.content or "") == {"score": 1, "justification": "loopback"}
        with anthropic.Anthropic(base_url=fields["anthropic_base_url"], api_key="x", max_retries=0, timeout=5) as ac:
            reply = ac.messages.create(model="c", max_tokens=8, messages=[{"role": "user", "content": "q"}])
        assert json.loads(text_of(reply))["score"] == 1
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0
        assert json.loads(err.strip().splitlines()[-1])["requests"] == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- holding answers


def test_hold_after_sends_n_answers_then_holds_the_rest_until_release(server: LoopbackServer) -> None:
    server.hold_after(2)
    server.inject(Fault.SERVER_ERROR)  # a queued fault never reaches the responder: not counted, not held
    client = oai(server, timeout=60.0)  # the timeout only stops a hung test
    with pytest.raises(openai.InternalServerError):
        chat(client)
    done: list[str] = []
    errors: list[BaseException] = []

    def ask(text: str) -> None:
        try:
            chat(client, text)
            done.append(text)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(f"q{i}",)) for i in range(5)]
    for thread in threads:
        thread.start()
    try:
        assert server.wait_held(3, timeout=60), "three answers should be held"
        # Held answers stay held: whatever the scheduling, exactly two were answered (an
        # answer is counted before its bytes leave; the client may not have read them yet).
        assert len(server.requests) == 6 and server.held == 3
        assert server.stats()["by_status"] == {"500": 1, "200": 2}
        assert not server.wait_held(4, timeout=0.05)  # no fourth request exists to hold
        assert server.stats()["in_flight"] == 3
    finally:
        server.release()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors and len(done) == 5 and server.held == 0
    chat(client)  # released: nothing is held any more
    with pytest.raises(ValueError):
        server.hold_after(-1)


def test_arming_again_releases_the_earlier_hold(server: LoopbackServer) -> None:
    server.hold_after(0)
    client = oai(server, timeout=60.0)
    first = threading.Thread(target=chat, args=(client,))
    first.start()
    assert server.wait_held(1, timeout=60)
    server.hold_after(1)  # the held answer goes out and counts afresh from here
    first.join(timeout=60)
    assert not first.is_alive() and server.held == 0
    chat(client)  # the one answer the new hold lets through
    second = threading.Thread(target=chat, args=(client,))
    second.start()
    try:
        assert server.wait_held(1, timeout=60)
    finally:
        server.release()
        second.join(timeout=60)
    assert not second.is_alive()
