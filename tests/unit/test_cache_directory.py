"""The directory store (``execution.cache_directory``): atomic entries, per-key leases, cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_llmjudge.execution.cache_directory import DirectoryStore

KEY = "ab" * 32


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.is_file() and not p.name.endswith(f"{KEY}.json"))


def test_put_then_get(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    assert store.get(KEY) is None
    store.put(KEY, b"\x00entry")
    assert store.get(KEY) == b"\x00entry"
    assert (tmp_path / "ab" / f"{KEY}.json").read_bytes() == b"\x00entry"


def test_a_lease_is_exclusive_between_owners_and_processes_stores(tmp_path: Path) -> None:
    first, second = DirectoryStore(tmp_path), DirectoryStore(tmp_path)
    assert first.try_lease(KEY, "a", 60)
    assert first.try_lease(KEY, "a", 60)  # the holder again: still held
    assert not first.try_lease(KEY, "b", 60)
    assert not second.try_lease(KEY, "c", 60)

    second.release(KEY, "c")  # not the holder: nothing happens
    first.release(KEY, "b")
    assert not second.try_lease(KEY, "c", 60)

    first.release(KEY, "a")
    assert leftovers(tmp_path) == []  # a released lease leaves no file
    assert second.try_lease(KEY, "c", 60)
    second.close()  # closing lets go of what it held
    assert leftovers(tmp_path) == []


def test_a_lease_needs_a_positive_ttl(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DirectoryStore(tmp_path).try_lease(KEY, "a", 0)


def test_exactly_one_of_eight_concurrent_claimants_wins(tmp_path: Path) -> None:
    stores = [DirectoryStore(tmp_path) for _ in range(8)]
    barrier = threading.Barrier(8)
    won: list[bool] = [False] * 8

    def claim(index: int) -> None:
        barrier.wait()
        won[index] = stores[index].try_lease(KEY, f"owner-{index}", 60)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(won) == 1


def test_an_expired_lease_of_a_live_holder_is_taken_over(tmp_path: Path) -> None:
    hung, waiting = DirectoryStore(tmp_path), DirectoryStore(tmp_path)
    assert hung.try_lease(KEY, "hung", 0.05)
    assert not waiting.try_lease(KEY, "waiting", 60)
    time.sleep(0.1)  # let the lease expire (no timing is asserted)
    assert waiting.try_lease(KEY, "waiting", 60)
    hung.release(KEY, "hung")  # the late holder's release doesn't free the new lease
    assert not DirectoryStore(tmp_path).try_lease(KEY, "third", 60)
    waiting.release(KEY, "waiting")
    hung.close()
    assert leftovers(tmp_path) == []


HOLDER = """
import sys, time
from pathlib import Path
from pytest_llmjudge.execution.cache_directory import DirectoryStore
store = DirectoryStore(Path(sys.argv[1]))
assert store.try_lease(sys.argv[2], "holder", 600)
print("held", flush=True)
time.sleep(600)
"""


def test_a_killed_holders_lease_is_free_at_once_and_cleanup_removes_its_leftovers(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), KEY], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = DirectoryStore(tmp_path)
        assert not store.try_lease(KEY, "me", 600)
        store.cleanup()  # a held lease is never removed
        assert leftovers(tmp_path) == [f"{KEY}.lease"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    # A temporary file of the dead writer (named after its pid), and one of a live one.
    shard = tmp_path / "ab"
    (shard / f".tmp-{DirectoryStore(tmp_path)._host}-{holder.pid}-x1.json").write_bytes(b"half")
    (shard / f".tmp-{DirectoryStore(tmp_path)._host}-{os.getpid()}-x2.json").write_bytes(b"writing")

    DirectoryStore(tmp_path).cleanup()
    assert leftovers(tmp_path) == [f".tmp-{DirectoryStore(tmp_path)._host}-{os.getpid()}-x2.json"]
    assert DirectoryStore(tmp_path).try_lease(KEY, "me", 600)


def test_cleanup_of_a_missing_root_does_nothing(tmp_path: Path) -> None:
    DirectoryStore(tmp_path / "absent").cleanup()
    assert not (tmp_path / "absent").exists()
