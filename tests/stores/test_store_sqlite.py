"""SQLiteStore beyond the shared contract: durability, several processes, group commit, migration."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_llmjudge.execution.cache import JudgeCache, cache_key
from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.stores import SQLiteStore, migrate_directory
from pytest_llmjudge.execution.stores.namespace import key_id
from pytest_llmjudge.judges.base import ProviderReply, Usage

WRITER = """
import os, sys, threading
from pytest_llmjudge.execution.stores import SQLiteStore
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = SQLiteStore(path)
def write(part):
    for n in range(part, count, 4):
        store.put(f"{name}-{n}", f"{name}:{n}".encode() * 50)
threads = [threading.Thread(target=write, args=(part,)) for part in range(4)]
for thread in threads: thread.start()
for thread in threads: thread.join()
print("done", flush=True)
os._exit(0)  # no close(): what put returned must already be on disk
"""


def _run_writer(path: Path, name: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name, str(count)], stdout=subprocess.PIPE, text=True
    )


def test_a_returned_put_is_visible_to_another_process_without_close(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    writer = _run_writer(path, "durable", 20)
    out, _ = writer.communicate(timeout=60)
    assert writer.returncode == 0 and out.strip() == "done"
    store = SQLiteStore(path)
    try:
        assert all(store.get(f"durable-{n}") == f"durable:{n}".encode() * 50 for n in range(20))
    finally:
        store.close()


def test_two_processes_write_concurrently_and_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    SQLiteStore(path).close()  # the schema exists before both start (each would create it anyway)
    writers = [_run_writer(path, name, 40) for name in ("left", "right")]
    for writer in writers:
        out, _ = writer.communicate(timeout=60)
        assert writer.returncode == 0 and out.strip() == "done"
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT count(*) FROM entries").fetchone() == (80,)
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_group_commit_puts_many_waiting_puts_in_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    store = SQLiteStore(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # hold the write lock: the store's writer must wait for it
    threads = [threading.Thread(target=store.put, args=(f"key-{n}", b"x" * 100)) for n in range(32)]
    for thread in threads:
        thread.start()
    for _ in range(2000):  # every put has been handed to the writer and is waiting
        if store.uncommitted == 32:
            break
        time.sleep(0.005)
    assert store.uncommitted == 32
    assert store.commits == 0
    blocker.execute("ROLLBACK")
    for thread in threads:
        thread.join()
    # The writer's first batch took what was queued when it started; all others form the second.
    assert 1 <= store.commits <= 2
    assert store.uncommitted == 0
    assert all(store.get(f"key-{n}") == b"x" * 100 for n in range(32))
    store.close()
    blocker.close()


def test_puts_one_after_another_commit_one_by_one(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "cache.db")
    for n in range(5):
        store.put(f"key-{n}", b"v")
    assert store.commits == 5  # nothing waits for company: a lone put commits at once
    store.close()


def test_put_after_close_raises(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "cache.db")
    store.close()
    store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        store.put("key", b"v")


def test_cleanup_deletes_expired_leases_only(tmp_path: Path) -> None:
    now = [1000.0]
    store = SQLiteStore(tmp_path / "cache.db", clock=lambda: now[0])
    assert store.try_lease("old", "a", 10)
    assert store.try_lease("live", "a", 100)
    now[0] += 50
    store.cleanup()
    with sqlite3.connect(tmp_path / "cache.db") as check:
        assert check.execute("SELECT key FROM leases").fetchall() == [("live",)]
    store.close()


def _directory_cache(root: Path, count: int) -> dict[str, bytes]:
    """A directory cache written by the real JudgeCache; key -> the entry file's bytes."""
    cache = JudgeCache(root)
    for n in range(count):
        payload = {"model": "judge", "prompt": f"rate answer {n}"}
        cache.put(cache_key(payload), payload, ProviderReply(text=f"score: {n % 3}", model="judge", usage=Usage(5, 1)))
    store = DirectoryStore(root / "v1")
    return {key: store.get(key) or b"" for key in store.keys()}


def test_migrate_directory_imports_every_entry_byte_for_byte(tmp_path: Path) -> None:
    entries = _directory_cache(tmp_path / "dir", 40)
    assert len(entries) == 40
    shard = tmp_path / "dir" / "v1" / "ab"  # the old layout, one file per entry, is migrated too
    shard.mkdir()
    (shard / ("ab" * 32 + ".json")).write_bytes(b"an old entry")
    (shard / ".tmp-host-1-abc.json").write_bytes(b"half a reply")  # an interrupted write: skipped
    (shard / "notes.txt").write_bytes(b"not an entry")
    entries["ab" * 32] = b"an old entry"
    store = SQLiteStore(tmp_path / "cache.db")
    assert migrate_directory(tmp_path / "dir", store) == 41
    assert all(store.get(key) == data for key, data in entries.items())
    assert store.get(".tmp-host-1-abc") is None
    assert migrate_directory(tmp_path / "dir" / "v1", store) == 41  # the v1 directory itself works too
    assert migrate_directory(tmp_path / "missing", store) == 0
    store.close()


def test_signed_entries_still_verify_after_migration_through_judge_cache(tmp_path: Path) -> None:
    """The cache layer over SQLite reads migrated, signed entries as hits: bytes were copied exactly."""
    directory = JudgeCache(tmp_path / "dir", secret="signing-secret")
    payload = {"model": "judge", "prompt": "rate this"}
    directory.put(cache_key(payload), payload, ProviderReply(text="score: 2", model="judge", usage=Usage(5, 1)))
    store = SQLiteStore(tmp_path / "cache.db")
    assert migrate_directory(tmp_path / "dir", store) == 1
    rejected: list[tuple[str, str]] = []
    over_sqlite = JudgeCache(None, secret="signing-secret", store=store)
    over_sqlite.on_reject = lambda key, reason: rejected.append((key, reason))
    hit = over_sqlite.get(cache_key(payload))
    assert hit is not None and hit.reply.text == "score: 2" and rejected == []
    other_secret = JudgeCache(None, secret="another-secret", store=store)
    other_secret.on_reject = lambda key, reason: rejected.append((key, reason))
    assert other_secret.get(cache_key(payload)) is None and rejected == []  # another key id's namespace
    key = cache_key(payload)
    store.put(key_id("another-secret") + key, store.get(key_id("signing-secret") + key) or b"")
    assert other_secret.get(key) is None and len(rejected) == 1  # the check is live
    store.close()
