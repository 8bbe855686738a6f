"""The CacheStore contract (execution/stores/base.py), checked on SQLite, a real Redis and moto's S3 server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from pytest_llmjudge.execution.stores import CacheStore

KEY = "ab" + "0" * 62


def test_store_satisfies_the_protocol(store: Any) -> None:
    assert isinstance(store, CacheStore)


def test_put_then_get_round_trip_and_missing_key(store: Any) -> None:
    assert store.get(KEY) is None
    store.put(KEY, b'{"reply": "ok"}')
    assert store.get(KEY) == b'{"reply": "ok"}'
    assert store.get("cd" + "0" * 62) is None


def test_put_overwrites(store: Any) -> None:
    store.put(KEY, b"first")
    store.put(KEY, b"second, longer than the first")
    assert store.get(KEY) == b"second, longer than the first"


def test_put_many_stores_every_entry_and_a_later_entry_of_a_key_wins(store: Any) -> None:
    store.put_many([(KEY, b"first"), ("other-key", b"other"), (KEY, b"second")])
    assert (store.get(KEY), store.get("other-key")) == (b"second", b"other")
    store.put_many([])
    assert store.get(KEY) == b"second"


def test_bytes_are_kept_exactly_nuls_large_and_empty(store: Any) -> None:
    binary = bytes(range(256)) * 4 + b"\x00\x00tail\x00"
    large = (b"\x00\xff" + "हिन्दी".encode()) * (1024 * 1024 // 20)
    assert len(large) >= 1_000_000
    store.put("binary", binary)
    store.put("large", large)
    store.put("empty", b"")
    assert store.get("binary") == binary
    assert store.get("large") == large
    assert store.get("empty") == b""


def test_lease_is_exclusive_and_renewable_by_its_owner(store: Any) -> None:
    assert store.try_lease(KEY, "worker-a", 30)
    assert not store.try_lease(KEY, "worker-b", 30)
    assert store.try_lease(KEY, "worker-a", 30)  # already held: still the owner's
    assert not store.try_lease(KEY, "worker-b", 30)
    assert store.try_lease("other-key", "worker-b", 30)  # leases are per key


def test_release_by_owner_frees_release_by_non_owner_does_nothing(store: Any) -> None:
    assert store.try_lease(KEY, "worker-a", 30)
    store.release(KEY, "worker-b")
    assert not store.try_lease(KEY, "worker-b", 30)
    store.release(KEY, "worker-a")
    assert store.try_lease(KEY, "worker-b", 30)
    store.release("never-leased", "worker-a")  # nothing to release: no error


def test_expired_lease_is_taken_over_and_the_old_owner_cannot_release_it(
    store_and_expire: tuple[Any, Callable[[float], None]],
) -> None:
    store, expire = store_and_expire
    assert store.try_lease(KEY, "worker-a", 0.1)
    expire(0.1)
    assert store.try_lease(KEY, "worker-b", 30)
    store.release(KEY, "worker-a")  # the stale owner: must not free worker-b's lease
    assert not store.try_lease(KEY, "worker-c", 30)
    assert not store.try_lease(KEY, "worker-a", 30)


def test_concurrent_leases_from_eight_threads_have_exactly_one_winner(store: Any) -> None:
    start = threading.Barrier(8)
    results: dict[str, bool] = {}

    def contend(owner: str) -> None:
        start.wait()
        results[owner] = store.try_lease(KEY, owner, 30)

    threads = [threading.Thread(target=contend, args=(f"worker-{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [owner for owner, won in results.items() if won]
    assert len(results) == 8
    assert len(winners) == 1
    assert all(not store.try_lease(KEY, f"worker-{n}", 30) for n in range(8) if f"worker-{n}" != winners[0])


def test_non_positive_ttl_is_rejected(store: Any) -> None:
    with pytest.raises(ValueError, match="ttl must be positive"):
        store.try_lease(KEY, "worker-a", 0)


def test_cleanup_keeps_entries_and_live_leases(store: Any) -> None:
    store.put(KEY, b"entry")
    assert store.try_lease(KEY, "worker-a", 30)
    store.cleanup()
    assert store.get(KEY) == b"entry"
    assert not store.try_lease(KEY, "worker-b", 30)
