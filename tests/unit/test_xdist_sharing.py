"""WorkerShare: how xdist workers divide judge calls and outputs, through the cache directory."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from pytest_llmjudge.execution.cache import JudgeCache, cache_key
from pytest_llmjudge.execution.xdist_sharing import WorkerShare
from pytest_llmjudge.judges.base import ProviderReply


def workers(count: int, run_id: str = "run-a", wait: float = 5.0) -> list[WorkerShare]:
    return [WorkerShare(index, count, run_id, wait) for index in range(count)]


def test_every_identity_has_exactly_one_owner() -> None:
    shares = workers(3)
    identities = [repr(("case", i)) for i in range(300)]
    owners = [[share.index for share in shares if share.owns(identity)] for identity in identities]
    assert all(len(found) == 1 for found in owners)
    # The hash spreads the work: each of 3 workers owns a fair share of 300 identities.
    counts = [sum(found == [index] for found in owners) for index in range(3)]
    assert min(counts) > 70, counts


def test_a_published_output_reaches_the_other_worker(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    owner, other = workers(2)
    owner.publish_output(cache, "case-1", text="नमस्ते", error=None)
    owner.publish_output(cache, "case-2", text=None, error="RuntimeError: model down")
    assert asyncio.run(other.wait_for_output(cache, "case-1")) == ("नमस्ते", None)
    assert asyncio.run(other.wait_for_output(cache, "case-2")) == (None, "RuntimeError: model down")


def test_waiting_for_an_output_that_never_comes_gives_up(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    waiting = WorkerShare(1, 2, "run-a", wait_seconds=0.1)
    started = time.monotonic()
    # wait_for only guards against a hang; giving up (None) is the behaviour checked.
    assert asyncio.run(asyncio.wait_for(waiting.wait_for_output(cache, "never"), 60)) is None
    assert 0.1 <= time.monotonic() - started


def test_waiting_for_a_judge_reply_sees_the_owners_reply_or_its_failure(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    owner, other = workers(2)
    k1 = cache_key({"prompt": "p"})
    cache.put(k1, {"prompt": "p"}, ProviderReply(text='{"la": {"score": 2}}', model="m"))
    owner.mark_failed(cache, "k2", "openai: HTTP 500 after 5 attempts")
    hit = asyncio.run(other.wait_for_owner(cache, k1))
    assert not isinstance(hit, str) and hit is not None and hit.reply.text == '{"la": {"score": 2}}'
    assert asyncio.run(other.wait_for_owner(cache, "k2")) == "openai: HTTP 500 after 5 attempts"


def test_waiting_since_a_time_ignores_an_older_entry_until_the_owner_replaces_it(tmp_path: Path) -> None:
    # An earlier run's unparseable reply stays in the cache while the owner asks again.
    cache = JudgeCache(tmp_path)
    waiting = WorkerShare(1, 2, "run-a", wait_seconds=0.1)
    key = cache_key({"prompt": "p"})
    cache.put(key, {"prompt": "p"}, ProviderReply(text="not json", model="m"))
    stored = cache.get(key)
    assert stored is not None and stored.created is not None
    assert asyncio.run(waiting.wait_for_owner(cache, key, since=stored.created + 1)) is None

    cache.put(key, {"prompt": "p"}, ProviderReply(text='{"la": {"score": 2}}', model="m"))
    hit = asyncio.run(waiting.wait_for_owner(cache, key, since=stored.created))
    assert not isinstance(hit, str) and hit is not None and hit.reply.text == '{"la": {"score": 2}}'


def test_nothing_is_shared_without_a_cache_directory() -> None:
    cache = JudgeCache(None)
    share = WorkerShare(0, 2, "run-a", wait_seconds=0.05)
    share.publish_output(cache, "case-1", text="x", error=None)  # nowhere to write: a no-op
    assert asyncio.run(share.wait_for_output(cache, "case-1")) is None
    assert share.prune_stale(cache) == 0


def test_worker_zero_prunes_only_other_runs_older_than_a_day(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    old_run, recent_run = WorkerShare(0, 2, "old-run"), WorkerShare(0, 2, "recent-run")
    old_run.publish_output(cache, "case-1", text="a", error=None)
    old_run.mark_failed(cache, "k", "failed")
    recent_run.publish_output(cache, "case-1", text="b", error=None)
    assert cache.root is not None
    two_days_ago = time.time() - 2 * 86400
    for kind in ("outputs", "failures"):
        os.utime(cache.root / kind / "old-run", (two_days_ago, two_days_ago))

    # Another worker of a new run leaves everything alone; worker 0 removes the stale run only.
    assert WorkerShare(1, 2, "new-run").prune_stale(cache) == 0
    assert WorkerShare(0, 2, "new-run").prune_stale(cache) == 2
    assert not (cache.root / "outputs" / "old-run").exists()
    assert not (cache.root / "failures" / "old-run").exists()
    assert (cache.root / "outputs" / "recent-run").is_dir()
    # A run never prunes its own directories, however old.
    os.utime(cache.root / "outputs" / "recent-run", (two_days_ago, two_days_ago))
    assert recent_run.prune_stale(cache) == 0
