"""The directory store (``execution.cache_directory``): pack files with group commit, the old layout, leases, cleanup."""

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
    (pack,) = files(tmp_path)
    assert pack.startswith("packs/") and pack.endswith(".pack")
    assert (tmp_path / pack).stat().st_mode & 0o777 == 0o600  # paid-for replies stay private


def test_a_batch_is_one_sync_and_concurrent_puts_share_syncs(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    store.put_many([])
    assert (store.syncs, files(tmp_path)) == (0, [])  # nothing to write: no pack, no sync
    store.put_many([(f"{n:064x}", b"entry %d" % n) for n in range(50)] + [(KEY, b"first"), (KEY, b"later")])
    assert store.syncs == 1
    assert store.get(KEY) == DirectoryStore(tmp_path).get(KEY) == b"later"  # the later entry of a key wins
    assert [store.get(f"{n:064x}") for n in range(50)] == [b"entry %d" % n for n in range(50)]

    barrier = threading.Barrier(8)

    def put(worker: int) -> None:
        barrier.wait()
        for n in range(50):
            store.put(f"{worker}-{n}", b"x")

    threads = [threading.Thread(target=put, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(store.get(f"{w}-{n}") == b"x" for w in range(8) for n in range(50))
    assert store.syncs < 1 + 400  # 400 puts, each durable on return, sharing fsyncs
    store.close()
    assert len(files(tmp_path)) == 1  # one pack for all of it


def test_another_writers_entries_are_seen_and_the_latest_record_wins(tmp_path: Path) -> None:
    reader, writer = DirectoryStore(tmp_path), DirectoryStore(tmp_path)  # as two processes would be
    reader.put(KEY, b"first")
    assert reader.get(OTHER) is None
    writer.put(OTHER, b"other")
    writer.put(KEY, b"second")
    assert (reader.get(OTHER), reader.get(KEY)) == (b"other", b"second")
    reader.put(KEY, b"third")
    assert (reader.get(KEY), writer.get(KEY)) == (b"third", b"third")
    reader.close()
    writer.close()
    assert DirectoryStore(tmp_path).keys() == [KEY, OTHER]
    assert DirectoryStore(tmp_path).get(KEY) == b"third"


def test_the_old_layout_is_read_and_a_pack_record_wins_over_it(tmp_path: Path) -> None:
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f"{KEY}.json").write_bytes(b"old entry")
    (tmp_path / "ab" / f".tmp-host-1-{KEY}.json").write_bytes(b"half")  # an interrupted old write
    store = DirectoryStore(tmp_path)
    assert store.get(KEY) == b"old entry"
    assert store.keys() == [KEY]
    store.put(KEY, b"new entry")
    assert store.get(KEY) == b"new entry"
    assert DirectoryStore(tmp_path).get(KEY) == b"new entry"
    assert (tmp_path / "ab" / f"{KEY}.json").read_bytes() == b"old entry"  # nothing is rewritten


def test_a_torn_or_damaged_record_hides_itself_and_what_follows_in_its_pack_only(tmp_path: Path) -> None:
    first = DirectoryStore(tmp_path)
    first.put(KEY, b"kept")
    first.put(OTHER, b"damaged later")
    first.close()
    (pack,) = (tmp_path / "packs").iterdir()
    data = pack.read_bytes()
    # Flip a byte of the second record's data, then append half a record (a killed writer's tail).
    damaged = data.replace(b"damaged later", b"damaged LATER")
    pack.write_bytes(damaged[: damaged.index(b"LJPE")] + data[:30])
    store = DirectoryStore(tmp_path)
    assert (store.get(KEY), store.get(OTHER)) == (b"kept", None)
    store.put(OTHER, b"asked again")  # the re-asked reply goes to a pack of its own
    assert DirectoryStore(tmp_path).get(OTHER) == b"asked again"


def test_entries_put_before_a_sigkill_are_kept(tmp_path: Path) -> None:
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from pytest_llmjudge.execution.cache_directory import DirectoryStore\n"
        "store = DirectoryStore(Path(sys.argv[1]))\n"
        "for n in range(20):\n"
        "    store.put(f'{n:064x}', b'reply %d' % n)\n"
        "os.kill(os.getpid(), signal.SIGKILL)  # no close, no seal\n"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(tmp_path)])
    assert killed.returncode == -signal.SIGKILL
    store = DirectoryStore(tmp_path)
    assert [store.get(f"{n:064x}") for n in range(20)] == [b"reply %d" % n for n in range(20)]


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


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from pytest_llmjudge.execution.cache_directory import DirectoryStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
store = DirectoryStore(Path(sys.argv[1]))
store.put("a" * 64, b"small")
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))  # files may not grow past 4 KB: a full disk
try:
    store.put("b" * 64, b"x" * 10_000)
except OSError as exc:
    print("failed:", exc.strerror)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
store.put("c" * 64, b"after")
print(store.get("a" * 64), store.get("b" * 64), store.get("c" * 64))
"""


def test_after_a_failed_write_the_next_put_starts_a_new_pack(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["failed: File too large", "b'small' None b'after'"]
    assert len(list((tmp_path / "packs").iterdir())) == 2  # the torn pack is left as it is
    store = DirectoryStore(tmp_path)  # another process: the part written before the failure hides nothing
    assert (store.get("a" * 64), store.get("b" * 64), store.get("c" * 64)) == (b"small", None, b"after")


def test_a_cache_of_many_finished_packs_holds_no_descriptor_per_pack(tmp_path: Path) -> None:
    for n in range(40):  # forty runs' packs, each sealed when its store closed
        writer = DirectoryStore(tmp_path)
        writer.put(f"{n:064x}", b"reply %d" % n)
        writer.close()
    before = len(os.listdir("/proc/self/fd"))
    store = DirectoryStore(tmp_path)
    assert [store.get(f"{n:064x}") for n in range(40)] == [b"reply %d" % n for n in range(40)]
    assert len(os.listdir("/proc/self/fd")) - before <= 2  # not one per pack
    store.close()


def test_foreign_entries_in_the_pack_folder_are_ignored_with_one_warning_each(tmp_path: Path) -> None:
    """A directory or FIFO named ``*.pack``, a file without ``.pack``, a ``.pack`` of junk: the
    real packs are still read, each foreign entry is named once, none is opened for writing."""
    DirectoryStore(tmp_path).put(KEY, b"entry")
    packs = tmp_path / "packs"
    (packs / "dir.pack").mkdir()
    os.mkfifo(packs / "fifo.pack")  # opening it for reading would wait for a writer forever
    (packs / "notes.txt").write_text("hello")
    (packs / "junk.pack").write_bytes(b"garbage, not a pack record at all" * 2)
    store = DirectoryStore(tmp_path)
    assert store.get(KEY) == b"entry" and store.get(OTHER) is None
    assert sorted(store.warnings) == [
        f"ignored 'dir.pack' in {packs}: not a regular file",
        f"ignored 'fifo.pack' in {packs}: not a regular file",
        f"ignored 'junk.pack' in {packs}: not a pack file (no record at its start)",
        f"ignored 'notes.txt' in {packs}: not a pack file",
    ]
    store.put(OTHER, b"other")
    assert store.get(OTHER) == b"other" and store.keys() == sorted([KEY, OTHER]) and len(store.warnings) == 4
