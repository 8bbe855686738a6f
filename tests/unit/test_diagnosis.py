"""Judge failures put into words (``judges/diagnosis.py``): causes, endpoint tallies, headlines, reply excerpts."""

from __future__ import annotations

import asyncio
import socket

import openai
import pytest

from pytest_llmjudge.judges.base import connection_cause
from pytest_llmjudge.judges.diagnosis import (
    REPLY_EXCERPT_CHARS,
    EndpointTally,
    classify,
    endpoint_label,
    headlines,
    reply_excerpt,
)


def test_endpoint_label_names_provider_model_and_url_without_credentials() -> None:
    label = endpoint_label(
        "openai", "gpt-4o-mini", "http://ci-user:s3cret-pass@judge.internal:8000/v1?api-key=k1234567"
    )
    assert label == "openai:gpt-4o-mini at http://judge.internal:8000/v1"
    assert endpoint_label("anthropic", "claude", None) == "anthropic:claude (default endpoint)"
    assert endpoint_label("openai", "m", "http://h/v1/tok-abcdefgh", ["tok-abcdefgh"]) == "openai:m at http://h/v1/***"


def test_connection_cause_digs_out_the_operating_systems_reason_from_the_real_sdk() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def call() -> BaseException:
        client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
        try:
            await client.models.list()
        except openai.APIConnectionError as exc:
            return exc
        finally:
            await client.close()
        raise AssertionError("a closed port answered")

    assert connection_cause(asyncio.run(call())) == "connection refused"


def test_tls_spoken_to_a_plain_http_port_says_so_not_an_errno_of_openssls_code() -> None:
    """``https://`` to a port that answers plain HTTP: OpenSSL's ``WRONG_VERSION_NUMBER``, whose
    ``errno`` is OpenSSL's code (``strerror`` gave "exec format error" or "operation not permitted")."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def answer_in_plain_http() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(4096)  # the TLS ClientHello
            connection.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")

    thread = threading.Thread(target=answer_in_plain_http, daemon=True)
    thread.start()

    async def call() -> BaseException:
        client = openai.AsyncOpenAI(base_url=f"https://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=10)
        try:
            await client.models.list()
        except openai.APIConnectionError as exc:
            return exc
        finally:
            await client.close()
        raise AssertionError("TLS to a plain port succeeded")

    try:
        cause = connection_cause(asyncio.run(call()))
    finally:
        thread.join(timeout=10)
        server.close()
    assert cause == (
        "TLS handshake failed: the server does not speak TLS on this port [WRONG_VERSION_NUMBER], is it http:// not https://?"
    )
    assert classify(None, f"connection failed ({cause})") == ("unreachable", cause)


def test_connection_cause_without_an_errno_is_the_innermost_message() -> None:
    try:
        try:
            raise RuntimeError("All connection attempts failed")
        except RuntimeError as inner:
            raise ValueError("Connection error.") from inner
    except ValueError as outer:
        assert connection_cause(outer) == "All connection attempts failed"


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (401, "HTTP 401: Incorrect API key provided", ("rejected", "HTTP 401")),
        (403, "HTTP 403: forbidden", ("rejected", "HTTP 403")),
        (500, "HTTP 500: boom after 5 attempts", ("failing", "HTTP 500")),
        (None, "connection failed (connection refused) after 5 attempts", ("unreachable", "connection refused")),
        (None, "openai raised KeyError: 'x'", ("failing", "openai raised KeyError: 'x'")),
        (None, "request timed out after 2 attempts", ("unreachable", "timed out")),
    ],
)
def test_classify(status: int | None, message: str, expected: tuple[str, str]) -> None:
    assert classify(status, message) == expected


def test_headline_per_endpoint_with_failures_only() -> None:
    tally = EndpointTally()
    for _ in range(200):
        tally.failed("openai:gpt-4o-mini at http://127.0.0.1:9/v1", "unreachable", "connection refused")
    tally.succeeded("anthropic:claude (default endpoint)")
    assert headlines(tally) == [
        "llmjudge: judge openai:gpt-4o-mini at http://127.0.0.1:9/v1 unreachable: "
        "200 of 200 calls failed (connection refused)"
    ]


def test_mixed_causes_lead_with_the_most_severe_and_count_each() -> None:
    tally = EndpointTally()
    tally.succeeded("e")
    tally.failed("e", "failing", "HTTP 500")
    tally.failed("e", "failing", "HTTP 500")
    tally.failed("e", "rejected", "HTTP 401")
    assert headlines(tally) == [
        "llmjudge: judge e rejected the credentials: 3 of 4 calls failed (HTTP 401: 1, HTTP 500: 2)"
    ]


def test_tallies_of_workers_merge_by_adding() -> None:
    first, second, total = EndpointTally(), EndpointTally(), EndpointTally()
    first.failed("e", "unreachable", "connection refused")
    second.failed("e", "unreachable", "connection refused")
    second.succeeded("e")
    for worker in (first, second):
        total.merge(worker.as_dict())
    assert total.as_dict() == {"e": {"calls": 3, "failures": [["unreachable", "connection refused", 2]]}}
    assert headlines(EndpointTally()) == []


def test_reply_excerpt_is_one_escaped_line_cut_at_the_limit() -> None:
    assert reply_excerpt("Score: two\n\x1b[31mthanks\x9b") == "Score: two\\x0a\\x1b[31mthanks\\x9b"
    long = "x" * (REPLY_EXCERPT_CHARS + 25)
    assert reply_excerpt(long) == "x" * REPLY_EXCERPT_CHARS + " … (25 more characters)"
    assert reply_excerpt("") == ""
