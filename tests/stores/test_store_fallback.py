"""A remote store that dies mid-run hands over to the local directory store; nothing paid for is lost.

A private redis-server per test (the session's shared one must stay up for the other
tests) is killed between two operations, as a server restart or a dropped network would.
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path

import pytest

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.stores import FallbackStore, open_store
from pytest_llmjudge.execution.stores.migrate import DIRECTORY_LAYOUT
from pytest_llmjudge.util.redaction import redact

_spec = importlib.util.spec_from_file_location("llmjudge_store_servers", Path(__file__).parent / "conftest.py")
assert _spec is not None and _spec.loader is not None
_servers = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_servers)
running_redis = _servers.running_redis


LEASED = "ab" * 32  # cache keys are sha256 hex digests


def _kill(process: object) -> None:
    process.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
    process.wait(timeout=10)  # type: ignore[attr-defined]


def test_a_killed_redis_hands_over_to_the_local_store_and_says_why(tmp_path: Path) -> None:
    redis = pytest.importorskip("redis")
    with running_redis() as (url, process):
        store = open_store(f"{url}?prefix=t:", fallback_dir=tmp_path)
        assert isinstance(store, FallbackStore)
        store.put("before", b"paid before the outage")
        assert store.get("before") == b"paid before the outage"
        assert store.try_lease(LEASED, "me", 30)
        assert not store.degraded
        client = redis.Redis.from_url(url)
        assert client.get("t:e:before") == b"paid before the outage"  # it really went to Redis
        client.close()

        _kill(process)
        store.put("after", b"paid during the outage")  # would raise ConnectionError without the fallback

    assert store.degraded
    assert store.failure is not None and store.failure.startswith("put failed: ConnectionError")
    assert store.get("after") == b"paid during the outage"
    assert store.get("before") is None  # only Redis had it: a miss, paid again, never an error
    local = DirectoryStore(tmp_path / DIRECTORY_LAYOUT)
    assert local.get("after") == b"paid during the outage"  # on disk, for the next run
    assert store.try_lease(LEASED, "other", 30)  # leases are local now
    store.release(LEASED, "other")
    store.close()


def test_the_first_failure_is_kept_and_the_remote_store_is_not_retried(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    with running_redis() as (url, process):
        store = open_store(url, fallback_dir=tmp_path)
        assert isinstance(store, FallbackStore)
        _kill(process)
        assert store.get("x") is None
        first = store.failure
        assert first is not None and first.startswith("get failed: ConnectionError")
        store.put("x", b"1")
        assert store.failure == first
        assert store.get("x") == b"1"


def test_a_bad_lease_ttl_is_the_callers_bug_not_an_outage(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    with running_redis() as (url, _process):
        store = open_store(url, fallback_dir=tmp_path)
        with pytest.raises(ValueError, match="ttl"):
            store.try_lease(LEASED, "me", 0)
        assert isinstance(store, FallbackStore) and not store.degraded
        store.close()


def test_credentials_in_the_failure_are_masked(tmp_path: Path) -> None:
    class Refusing:
        def get(self, key: str) -> bytes | None:
            raise ConnectionError("AUTH failed for redis://llmjudge:s3cr3t-pass@cache.internal:6379/0")

    store = FallbackStore(Refusing(), DirectoryStore(tmp_path), describe=redact)  # type: ignore[arg-type]
    assert store.get("k") is None
    assert store.failure is not None and "s3cr3t-pass" not in store.failure and "***" in store.failure


def test_local_and_sqlite_urls_are_not_wrapped(tmp_path: Path) -> None:
    assert not isinstance(open_store(str(tmp_path / "dir"), fallback_dir=tmp_path), FallbackStore)
    sqlite = open_store(f"sqlite:///{tmp_path / 'c.db'}", fallback_dir=tmp_path)
    assert not isinstance(sqlite, FallbackStore)
    sqlite.close()


def test_replies_paid_during_an_outage_are_written_back_when_the_store_returns(tmp_path: Path) -> None:
    # A store that goes away and comes back at the same URL: a switch in front of a real Redis.
    pytest.importorskip("redis")
    from pytest_llmjudge.execution.stores.redis_store import RedisStore

    class Switch:
        def __init__(self, store: RedisStore) -> None:
            self.store, self.up = store, True

        def __getattr__(self, name: str) -> object:
            if not self.up:
                raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
            return getattr(self.store, name)

    journal = tmp_path / "v1" / "writeback" / "store.keys"
    with running_redis() as (url, _process):
        remote = RedisStore.from_url(f"{url}?prefix=wb:")
        switch = Switch(remote)
        during = FallbackStore(switch, DirectoryStore(tmp_path / DIRECTORY_LAYOUT), journal=journal)  # type: ignore[arg-type]
        during.put("before", b"reached the store")
        switch.up = False
        during.put_many([("paid-1", b"one"), ("paid-2", b"two")])
        assert during.degraded and journal.read_text().split() == ["paid-1", "paid-2"]
        during.close()

        switch.up = True  # the next run reaches the store again
        after = FallbackStore(switch, DirectoryStore(tmp_path / DIRECTORY_LAYOUT), journal=journal)  # type: ignore[arg-type]
        assert after.write_back() == 2 and after.written_back == 2
        assert remote.get("paid-1") == b"one" and remote.get("paid-2") == b"two"
        assert not journal.exists() and after.write_back() == 0  # copied once
        after.close()
