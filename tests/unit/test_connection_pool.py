"""The connection pool under the SDK clients (judges/connection_pool.py), over real 127.0.0.1 sockets.

Every request goes through the real ``openai`` / ``anthropic`` SDK and httpx to the loopback
server; what the pool does is read from the server's connection counters and the pool's own
``connections_made`` / ``probes``.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from pytest_llmjudge.judges.anthropic import AnthropicProvider
from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.judges.connection_pool import pool_of, proxies_configured, sdk_http_client
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.testing import Fault, LoopbackServer

HTTP = __import__(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0])


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(hang_seconds=5.0) as srv:
        yield srv


def client_for(srv: LoopbackServer, *, limits: Any = None, timeout: Any = 5.0) -> openai.AsyncOpenAI:
    http_client = sdk_http_client(openai, timeout=timeout, limits=limits)
    assert http_client is not None
    return openai.AsyncOpenAI(
        base_url=srv.openai_base_url, api_key="sk-test", max_retries=0, timeout=timeout, http_client=http_client
    )


async def ask(client: openai.AsyncOpenAI, text: str = "rate this") -> str:
    reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content or ""


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def stack_pool(client: openai.AsyncOpenAI | anthropic.AsyncAnthropic) -> Any:
    pool = pool_of(client._client)
    assert pool is not None
    return pool


def test_sequential_requests_reuse_one_connection(server: LoopbackServer) -> None:
    async def main() -> None:
        client = client_for(server)
        for index in range(20):
            assert await ask(client, f"q{index}")
        pool = stack_pool(client)
        assert (pool.connections_made, pool.probes, pool.idle_connections) == (1, 19, 1)
        await client.close()

    asyncio.run(main())
    assert server.stats()["connections"] == 1


def test_concurrent_rounds_open_one_connection_per_request_in_flight_and_probe_one_per_reuse(
    server: LoopbackServer,
) -> None:
    """httpcore's own pool probes every idle connection at every request and every close:
    58-65 probes per request at concurrency 64 (docs/scale.md). Here: one per reuse."""
    server.latency = 0.02

    async def main() -> None:
        client = client_for(server)
        for _ in range(3):
            await asyncio.gather(*(ask(client) for _ in range(32)))
        pool = stack_pool(client)
        assert pool.connections_made == 32
        assert pool.probes == 64  # rounds two and three: each request reused one idle connection
        await client.close()

    asyncio.run(main())
    stats = server.stats()
    assert stats["connections"] == 32 and stats["requests"] == 96


def test_a_connection_the_server_closed_while_idle_is_not_used(server: LoopbackServer) -> None:
    server.idle_timeout = 0.05

    async def main() -> None:
        client = client_for(server)
        assert await ask(client)
        await asyncio.to_thread(wait_until, lambda: server.stats()["open_connections"] == 0, "the server closed it")
        assert await ask(client)  # the probe saw the closed socket: a new connection, no error
        pool = stack_pool(client)
        assert (pool.connections_made, pool.probes) == (2, 1)
        await client.close()

    asyncio.run(main())
    assert server.stats()["connections"] == 2


def test_an_expired_keepalive_connection_is_closed_not_reused(server: LoopbackServer) -> None:
    async def main() -> None:
        client = client_for(server, limits=HTTP.Limits(max_connections=4, keepalive_expiry=0.0))
        for _ in range(3):
            assert await ask(client)
        assert stack_pool(client).connections_made == 3
        await client.close()

    asyncio.run(main())
    wait_until(lambda: server.stats()["open_connections"] == 0, "every connection is closed")
    assert server.stats()["connections"] == 3


def test_max_connections_bounds_requests_in_flight_and_the_rest_wait(server: LoopbackServer) -> None:
    server.latency = 0.05

    async def main() -> None:
        client = client_for(server, limits=HTTP.Limits(max_connections=2, max_keepalive_connections=2))
        replies = await asyncio.gather(*(ask(client) for _ in range(7)))
        assert all(replies)
        assert stack_pool(client).connections_made == 2
        await client.close()

    asyncio.run(main())
    stats = server.stats()
    assert stats["max_in_flight"] == 2 and stats["connections"] == 2


def test_a_request_that_waits_past_the_pool_timeout_is_a_timeout(server: LoopbackServer) -> None:
    server.latency = 1.0

    async def main() -> None:
        timeout = HTTP.Timeout(5.0, pool=0.05)
        client = client_for(server, limits=HTTP.Limits(max_connections=1), timeout=timeout)
        first = asyncio.create_task(ask(client))
        await asyncio.sleep(0.1)  # the first request holds the only slot
        with pytest.raises(openai.APITimeoutError):
            await ask(client)
        assert await first
        await client.close()

    asyncio.run(main())


def test_max_keepalive_closes_connections_beyond_it(server: LoopbackServer) -> None:
    server.latency = 0.05

    async def main() -> None:
        client = client_for(server, limits=HTTP.Limits(max_connections=10, max_keepalive_connections=2))
        await asyncio.gather(*(ask(client) for _ in range(5)))
        assert stack_pool(client).idle_connections == 2
        await asyncio.to_thread(wait_until, lambda: server.stats()["open_connections"] == 2, "three were closed")
        await client.close()

    asyncio.run(main())


def test_a_cancelled_request_gives_back_its_slot_and_its_connection_is_not_reused(server: LoopbackServer) -> None:
    server.latency = 5.0

    async def main() -> None:
        client = client_for(server, limits=HTTP.Limits(max_connections=1), timeout=HTTP.Timeout(5.0, pool=1.0))
        hung = asyncio.create_task(ask(client))
        await asyncio.to_thread(wait_until, lambda: server.stats()["in_flight"] == 1, "the request is in flight")
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        server.latency = 0.0
        assert await ask(client)  # within the 1 s pool timeout: the slot came back
        assert stack_pool(client).connections_made == 2
        await client.close()

    asyncio.run(main())


def test_a_reset_connection_fails_its_request_and_the_next_request_gets_a_new_one(server: LoopbackServer) -> None:
    server.inject(Fault.CONNECTION_RESET)

    async def main() -> None:
        client = client_for(server)
        with pytest.raises(openai.APIConnectionError):
            await ask(client)
        assert await ask(client)
        assert stack_pool(client).connections_made == 2
        await client.close()

    asyncio.run(main())


def test_a_refused_connection_is_httpxs_connect_error_under_the_sdks_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        http_client = sdk_http_client(openai, timeout=5.0)
        client = openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test", max_retries=0, http_client=http_client
        )
        with pytest.raises(openai.APIConnectionError) as caught:
            await ask(client)
        assert isinstance(caught.value.__cause__, HTTP.ConnectError)
        await client.close()

    asyncio.run(main())


def test_closing_the_client_closes_the_idle_connections(server: LoopbackServer) -> None:
    async def main() -> None:
        client = client_for(server)
        await asyncio.gather(*(ask(client) for _ in range(4)))
        assert server.stats()["open_connections"] >= 1
        await client.close()
        assert stack_pool(client).idle_connections == 0

    asyncio.run(main())
    wait_until(lambda: server.stats()["open_connections"] == 0, "the server saw every connection close")


def test_proxies_in_the_environment_keep_the_sdks_own_client(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not proxies_configured({})
    assert proxies_configured({"HTTPS_PROXY": "http://proxy.internal:3128"})
    assert proxies_configured({"all_proxy": "socks5://proxy.internal:1080"})
    assert not proxies_configured({"NO_PROXY": "localhost", "HTTPS_PROXY": ""})
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert sdk_http_client(openai, timeout=5.0) is None
    assert OpenAIProvider(api_key=None, base_url="http://127.0.0.1:9/v1").http_client is None


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_the_providers_send_through_the_pool(server: LoopbackServer, provider_name: str) -> None:
    server.latency = 0.02
    provider: OpenAIProvider | AnthropicProvider
    if provider_name == "openai":
        provider = OpenAIProvider(api_key=None, base_url=server.openai_base_url, timeout=5.0)
    else:
        provider = AnthropicProvider(api_key=None, base_url=server.anthropic_base_url, timeout=5.0)
    request = ProviderRequest(provider=provider_name, model="m", system="Rate.", user="answer")

    async def main() -> None:
        for _ in range(2):
            replies = await asyncio.gather(*(provider.complete(request) for _ in range(16)))
            assert all(reply.text for reply in replies)
        pool = pool_of(provider.http_client)
        assert pool is not None and (pool.connections_made, pool.probes) == (16, 16)
        await provider.aclose()

    asyncio.run(main())
    assert server.stats()["connections"] == 16


def _self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (the IP in its subjectAltName) and its key, as PEM files."""
    x509 = pytest.importorskip("cryptography.x509", reason="the TLS test makes its certificate with cryptography")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_https_through_the_pool_verifies_the_server_and_reuses_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real providers are HTTPS: the pool's connections get the SDK's TLS settings (here the CA
    from SSL_CERT_FILE, which httpx reads), and a server it can't verify is refused."""
    cert_path, key_path = _self_signed_certificate(tmp_path)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert_path, key_path)
    body = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        }
    ).encode()
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                    % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_tls)
        port = server.sockets[0].getsockname()[1]
        base_url = f"https://127.0.0.1:{port}/v1"
        async with server:
            monkeypatch.delenv("SSL_CERT_DIR", raising=False)
            monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "elsewhere.pem"))
            (tmp_path / "elsewhere.pem").write_bytes(_self_signed_certificate(tmp_path / "other")[0].read_bytes())
            untrusting = openai.AsyncOpenAI(
                base_url=base_url, api_key="k", max_retries=0, http_client=sdk_http_client(openai, timeout=5.0)
            )
            with pytest.raises(openai.APIConnectionError):
                await ask(untrusting)
            await untrusting.close()

            monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
            client = openai.AsyncOpenAI(
                base_url=base_url, api_key="k", max_retries=0, http_client=sdk_http_client(openai, timeout=5.0)
            )
            for _ in range(5):
                assert await ask(client) == "ok"
            pool = stack_pool(client)
            assert (pool.connections_made, pool.probes) == (1, 4)
            await client.close()

    asyncio.run(main())
    assert connections == 1  # five requests on one connection (the refused handshake never reached the handler)
