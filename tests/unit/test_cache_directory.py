"""The directory store (``execution.cache_directory``): atomic entries, per-key leases, cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pytest_llmjudge.execution.cache_directory import DirectoryStore

KEY = "ab" * 32
OTHER = "cd" * 32


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_put_then_get(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    assert store.get(KEY) is None
    store.put(KEY, b"\x00entry")
    assert store.get(KEY) == b"\x00entry"
    assert files(tmp_path) == [f"ab/{KEY}.json"]


def test_a_lease_is_exclusive_between_owners_and_stores(tmp_path: Path) -> None:
    first, second = DirectoryStore(tmp_path), DirectoryStore(tmp_path)
    try:
        assert first.try_lease(KEY, "a", 60)
        assert first.try_lease(KEY, "a", 60)  # the holder again: still held
        assert not first.try_lease(KEY, "b", 60)
        assert not second.try_lease(KEY, "c", 60)
        assert second.try_lease(OTHER, "c", 60)  # another key is another lease

        second.release(KEY, "c")  # not the holder: nothing happens
        first.release(KEY, "b")
        assert not second.try_lease(KEY, "c", 60)

        first.release(KEY, "a")
        assert second.try_lease(KEY, "c", 60)
        second.close()  # closing lets go of everything it held
        assert first.try_lease(KEY, "a", 60) and first.try_lease(OTHER, "a", 60)
    finally:
        first.close()
        second.close()
    assert files(tmp_path) == ["leases"]  # one lock file, nothing per key


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
    for store in stores:
        store.close()
    assert sum(won) == 1


def test_an_expired_lease_is_taken_over_and_its_old_owner_cannot_release_it(tmp_path: Path) -> None:
    now = [0.0]
    store = DirectoryStore(tmp_path, clock=lambda: now[0])
    try:
        assert store.try_lease(KEY, "hung", 10)
        assert not store.try_lease(KEY, "waiting", 60)
        now[0] = 10.5
        assert store.try_lease(KEY, "waiting", 60)
        store.release(KEY, "hung")  # the late holder's release doesn't free the new lease
        assert not store.try_lease(KEY, "third", 60)
        assert not DirectoryStore(tmp_path).try_lease(KEY, "elsewhere", 60)
    finally:
        store.close()


HOLDER = """
import sys, time
from pathlib import Path
from pytest_llmjudge.execution.cache_directory import DirectoryStore
store = DirectoryStore(Path(sys.argv[1]))
assert store.try_lease(sys.argv[2], "holder", 600)
print("held", flush=True)
time.sleep(600)
"""


def test_a_killed_holders_lease_is_free_at_once(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), KEY], stdout=subprocess.PIPE, text=True)
    store = DirectoryStore(tmp_path)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not store.try_lease(KEY, "me", 600)
        assert store.try_lease(OTHER, "me", 600)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    try:
        assert store.try_lease(KEY, "me", 600)
    finally:
        store.close()


def test_cleanup_removes_temporary_files_of_dead_writers_only(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store = DirectoryStore(tmp_path)
    host = store._host
    shard = tmp_path / "ab"
    shard.mkdir()
    (shard / f".tmp-{host}-{dead.stdout.strip()}-x1.json").write_bytes(b"half")  # its writer is gone
    (shard / f".tmp-{host}-{os.getpid()}-x2.json").write_bytes(b"writing")  # a live writer's
    (shard / ".tmp-otherhost-1-x3.json").write_bytes(b"elsewhere")  # another host's, fresh

    store.cleanup()
    assert files(tmp_path) == sorted([f"ab/.tmp-{host}-{os.getpid()}-x2.json", "ab/.tmp-otherhost-1-x3.json"])


def test_cleanup_of_a_missing_root_does_nothing(tmp_path: Path) -> None:
    DirectoryStore(tmp_path / "absent").cleanup()
    assert not (tmp_path / "absent").exists()


def test_cleanup_also_removes_a_dead_writers_half_written_batch_record(tmp_path: Path) -> None:
    """Batch records (``<root>/batches``) are written with the same writer-named prefix."""
    from pytest_llmjudge.execution.cache_directory import writer_prefix

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store = DirectoryStore(tmp_path)
    batches = tmp_path / "batches"
    batches.mkdir()
    (batches / f".tmp-{store._host}-{dead.stdout.strip()}-r1.json").write_bytes(b"half")  # killed mid-write
    (batches / "deadbeef.json").write_bytes(b"{}")  # a finished record stays
    assert writer_prefix() == f".tmp-{store._host}-{os.getpid()}-"

    store.cleanup()
    assert files(tmp_path) == ["batches/deadbeef.json"]
