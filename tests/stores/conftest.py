"""Real servers for the cache-store tests: redis-server and moto's S3 server, one each per session.

Each is skipped with the reason when it can't start (binary or package missing). Every
test gets its own key prefix, so tests share a server without seeing each other's keys.

moto's server runs with ONE request thread: its conditional PutObject/DeleteObject check
is a read then a write, atomic only when requests are served one at a time, which is what
S3 itself guarantees per key (see s3_store.py and docs/remote-cache.md).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.execution.stores import SQLiteStore

BUCKET = "llmjudge-test"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A throwaway redis-server (no persistence): its URL and its process (a test may kill it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    redis = pytest.importorskip("redis", reason="the redis package is not installed (pip install -e '.[dev]')")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None:
                    pytest.skip(f"redis-server exited with {process.returncode} on port {port}")
                time.sleep(0.025)
        else:
            pytest.skip(f"redis-server did not answer on port {port}")
        yield f"redis://127.0.0.1:{port}", process
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """``redis://127.0.0.1:<port>`` of a throwaway redis-server (no persistence), one per session."""
    with running_redis() as (url, _process):
        yield url


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    client: Any
    bucket: str = BUCKET


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 with bucket ``llmjudge-test``, test credentials and a client."""
    pytest.importorskip("boto3", reason="boto3 is not installed (pip install -e '.[dev]')")
    werkzeug_app = pytest.importorskip(
        "moto.moto_server.werkzeug_app", reason="moto[server] is not installed (pip install -e '.[dev]')"
    )
    import boto3
    from werkzeug.serving import make_server

    app = werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)
    server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=werkzeug_app.MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="moto-s3", daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    with pytest.MonkeyPatch.context() as env:
        # Fake credentials, and no reading of the developer's own AWS configuration.
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.delenv("AWS_SESSION_TOKEN", raising=False)
        env.delenv("AWS_PROFILE", raising=False)
        env.setenv("AWS_CONFIG_FILE", "/nonexistent/llmjudge-test-aws-config")
        env.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/llmjudge-test-aws-credentials")
        # One client for the session: building a boto3 client costs about half a second.
        client = boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        try:
            yield S3Server(endpoint, client)
        finally:
            client.close()
            server.shutdown()
            thread.join(timeout=10)


def _prefix() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


class Clock:
    """A clock the test moves by hand (for stores whose lease expiry uses the caller's clock)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def open_test_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path, prefix: str) -> tuple[Any, Clock]:
    """A fresh store of ``kind`` and the clock its leases expire by (unused by Redis)."""
    from pytest_llmjudge.execution.stores.redis_store import RedisStore
    from pytest_llmjudge.execution.stores.s3_store import S3Store

    clock = Clock()
    store: Any
    if kind == "sqlite":
        store = SQLiteStore(tmp_path / f"{prefix}.db", clock=clock)
    elif kind == "redis":
        store = RedisStore.from_url(f"{request.getfixturevalue('redis_url')}/0?prefix={prefix}:")
    else:
        store = S3Store(request.getfixturevalue("s3_server").client, BUCKET, prefix, clock)
    return store, clock


@pytest.fixture(params=["sqlite", "redis", "s3"])
def store_and_expire(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Callable[[float], None]]]:
    """(store, expire): ``expire(ttl)`` makes every lease taken with ``ttl`` expire.

    Redis expires leases on the server's clock, so there it waits out the ttl; the others
    expire by an injected clock, moved forward.
    """
    store, clock = open_test_store(request.param, request, tmp_path, _prefix())

    def expire(ttl: float) -> None:
        if request.param == "redis":
            time.sleep(ttl * 1.5)
        else:
            clock.now += ttl * 1.5

    try:
        yield store, expire
    finally:
        store.close()


@pytest.fixture
def store(store_and_expire: tuple[Any, Callable[[float], None]]) -> Any:
    return store_and_expire[0]


@pytest.fixture
def fresh_prefix() -> str:
    return _prefix()
