"""Leases between runners on one real Redis (and moto's S3): claimed at send, renewed, reclaimed, said.

Two :class:`JudgeRunner` objects with their own store clients stand for two CI shards: they
share nothing but the server. Each test counts the requests the loopback judge received
(the money), and the lines a user sees (``LeaseKeeper.notify``). Leases are a fraction of
a second so that expiry happens inside the test; calls are slower than the lease so only
the heartbeat keeps them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.leasing import LeaseKeeper
from pytest_llmjudge.execution.runner import JudgeRunner
from pytest_llmjudge.execution.stores import s3_store
from pytest_llmjudge.execution.stores.s3_store import S3Store
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

LA = BUILTIN_RUBRICS["linguistic_acceptability"]


class Shard:
    def __init__(self, runner: JudgeRunner, provider: OpenAIProvider, lines: list[str]) -> None:
        self.runner, self.provider, self.lines = runner, provider, lines

    def judge(self, outputs: list[str], server: LoopbackServer) -> list[Any]:
        futures = [self.runner.submit_judgment(self.provider, _request(server, text), [LA]) for text in outputs]
        return [future.result(timeout=60) for future in futures]


def _request(server: LoopbackServer, output: str) -> Any:
    return build_request(
        [LA],
        JudgedText(language="hi", output=output, input="Greet."),
        JudgeSettings(provider="openai", model="loopback-judge", base_url=server.openai_base_url),
    )


@pytest.fixture
def make_shard(redis_url: str, fresh_prefix: str) -> Iterator[Callable[..., Shard]]:
    from pytest_llmjudge.execution.stores.redis_store import RedisStore

    made: list[JudgeRunner] = []

    def make(server: LoopbackServer, identity: str, *, concurrency: int = 1, ttl: float = 0.3, **kw: Any) -> Shard:
        cache = JudgeCache(None, store=RedisStore.from_url(f"{redis_url}/0?prefix={fresh_prefix}:"))
        lines: list[str] = []
        keeper = LeaseKeeper(cache, identity=identity, ttl=ttl, max_wait=kw.pop("max_wait", 20.0), notify=lines.append)
        runner = JudgeRunner(cache, concurrency=concurrency, max_retries=0, leases=keeper, **kw)
        made.append(runner)
        provider = OpenAIProvider(api_key="sk-loopback", base_url=server.openai_base_url, timeout=10)
        runner.track_provider(provider)
        return Shard(runner, provider, lines)

    yield make
    for runner in made:
        runner.close()


def _raw_redis(redis_url: str) -> Any:
    import redis

    return redis.Redis.from_url(f"{redis_url}/0")


def test_a_queue_longer_than_the_lease_pays_each_prompt_once(make_shard: Callable[..., Shard]) -> None:
    # Each call (1 s) outlives the lease (0.9 s) and each queue (4 calls at concurrency 1) is
    # four leases long: claimed-at-plan leases without a heartbeat paid prompts twice. The
    # heartbeat (every 0.3 s) has 0.6 s of slack, for a loaded machine.
    outputs = [f"answer {i}" for i in range(4)]
    with LoopbackServer(latency=1.0, responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        first, second = make_shard(server, "run shard 1/2", ttl=0.9), make_shard(server, "run shard 2/2", ttl=0.9)
        futures = [first.runner.submit_judgment(first.provider, _request(server, text), [LA]) for text in outputs]
        futures += [
            second.runner.submit_judgment(second.provider, _request(server, text), [LA]) for text in reversed(outputs)
        ]
        outcomes = [future.result(timeout=60) for future in futures]
        paid = server.stats()["requests"]
    assert paid == len(outputs), "each prompt paid once over both runners"
    assert all(outcome.error is None for outcome in outcomes)
    assert first.runner.stats.provider_calls + second.runner.stats.provider_calls == len(outputs)
    assert first.runner.leases.lost == second.runner.leases.lost == 0, "the heartbeat kept every lease"
    assert first.runner.leases.taken_over == second.runner.leases.taken_over == 0


def test_a_dead_holders_lease_is_waited_on_out_loud_then_taken_over(
    make_shard: Callable[..., Shard], redis_url: str, fresh_prefix: str
) -> None:
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        request = _request(server, "orphaned")
        # A shard that crashed while paying for this prompt: its lease lives on, unrenewed, for 0.5 s.
        raw = _raw_redis(redis_url)
        since = time.time()
        raw.set(f"{fresh_prefix}:l:{request.cache_key}", f"run shard 2/3|ci-host-b:4242:c0ffee:7|{since:.0f}", px=1000)
        raw.close()
        shard = make_shard(server, "run shard 1/3")
        outcome = shard.runner.submit_judgment(shard.provider, request, [LA]).result(timeout=60)
        paid = server.stats()["requests"]
    assert outcome.error is None and paid == 1
    wait, takeover = shard.lines
    assert wait.startswith("llmjudge: waiting on prompt(s) leased by run shard 2/3 (ci-host-b:4242:c0ffee) since ")
    assert "UTC; taken over at " in wait and wait.endswith("UTC unless its holder renews it"), wait
    assert takeover.startswith("llmjudge: the lease of run shard 2/3 (ci-host-b:4242:c0ffee) on a prompt ended"), (
        takeover
    )
    assert shard.runner.leases.taken_over == 1


def test_a_crashed_shards_rerun_takes_its_own_leases_back_at_once(
    make_shard: Callable[..., Shard], redis_url: str, fresh_prefix: str
) -> None:
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        requests = [_request(server, f"left {i}") for i in range(3)]
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()  # a process id of this host that is no longer alive
        raw = _raw_redis(redis_url)
        for request in requests:  # the crashed first attempt of this very shard: leases for a minute
            owner = f"ci 77 shard 1/3|{socket.gethostname()}:{dead.pid}:dead01:3|1800000000"
            raw.set(f"{fresh_prefix}:l:{request.cache_key}", owner, px=60_000)
        raw.close()
        # max_wait 5 s: without the reclaim, the rerun would wait that long and then pay.
        shard = make_shard(server, "ci 77 shard 1/3", max_wait=5.0)
        outcomes = [shard.runner.submit_judgment(shard.provider, r, [LA]).result(timeout=60) for r in requests]
        paid = server.stats()["requests"]
    assert paid == 3 and all(outcome.error is None for outcome in outcomes)
    assert shard.runner.leases.reclaimed == 3
    assert shard.lines == [
        "llmjudge: taking back at once the leases left by an earlier run of ci 77 shard 1/3 "
        f"({socket.gethostname()}:{dead.pid}:dead01, gone) instead of waiting for them to expire"
    ], shard.lines
    assert not any("waited" in line for line in shard.lines)


def test_a_live_concurrent_run_with_the_same_identity_is_waited_on_not_robbed(
    make_shard: Callable[..., Shard], redis_url: str, fresh_prefix: str
) -> None:
    # Two runs of one command on one host share an identity: the live one's lease is not "left behind".
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        request = _request(server, "shared")
        raw = _raw_redis(redis_url)
        owner = f"same command unsharded|{socket.gethostname()}:{os.getpid()}:other1:1|{time.time():.0f}"
        raw.set(f"{fresh_prefix}:l:{request.cache_key}", owner, px=1000)
        raw.close()
        shard = make_shard(server, "same command unsharded")
        outcome = shard.runner.submit_judgment(shard.provider, request, [LA]).result(timeout=60)
        paid = server.stats()["requests"]
    assert outcome.error is None and paid == 1
    assert shard.runner.leases.reclaimed == 0 and shard.runner.leases.taken_over == 1
    assert shard.lines[0].startswith("llmjudge: waiting on prompt(s) leased by same command unsharded ("), shard.lines


def test_a_reply_stored_while_the_call_was_queued_is_used_not_paid(
    make_shard: Callable[..., Shard], redis_url: str, fresh_prefix: str
) -> None:
    with LoopbackServer(latency=0.2, responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        first, second = make_shard(server, "a"), make_shard(server, "b")
        prompts = [f"queued {i}" for i in range(3)]
        first.judge(prompts, server)  # paid and stored
        paid = server.stats()["requests"]
        # The second runner's first look misses nothing here; its claim at send re-reads the store.
        outcomes = second.judge(prompts, server)
        assert server.stats()["requests"] == paid == 3
    assert all(outcome.error is None for outcome in outcomes)


def test_s3_leases_go_by_the_servers_clock_not_a_skewed_client(s3_server: Any, fresh_prefix: str) -> None:
    honest = S3Store(s3_server.client, s3_server.bucket, fresh_prefix)  # no injected clock: the server's
    ahead = S3Store(s3_server.client, s3_server.bucket, fresh_prefix)
    key = "cd" * 32
    assert honest.try_lease(key, "honest", 60)
    with pytest.MonkeyPatch.context() as patch:
        # This process's clock two minutes ahead, as the store's client sees it (moto runs in this
        # process too, so the clock is moved for the store's module alone, not for the server).
        ahead_clock = types.SimpleNamespace(time=lambda: time.time() + 120, monotonic=time.monotonic)
        patch.setattr(s3_store, "time", ahead_clock)
        assert not ahead.try_lease(key, "ahead", 60), "a live 60 s lease taken by a client 120 s ahead"
        holder = ahead.lease_holder(key)
    assert holder is not None and holder[0] == "honest" and 55 <= holder[1] <= 61, holder
    honest.release(key, "honest")
    assert ahead.lease_holder(key) is None and ahead.try_lease(key, "ahead", 60)
    ahead.release(key, "ahead")


def test_a_heartbeat_renews_held_leases_and_counts_one_taken_over(redis_url: str, fresh_prefix: str) -> None:
    from pytest_llmjudge.execution.stores.redis_store import RedisStore

    cache = JudgeCache(None, store=RedisStore.from_url(f"{redis_url}/0?prefix={fresh_prefix}:"))
    keeper = LeaseKeeper(cache, identity="me", ttl=30.0)
    kept, stolen = keeper.claim("ab" * 32), keeper.claim("cd" * 32)
    assert not isinstance(kept, (type(None), str)) and hasattr(kept, "owner") and hasattr(stolen, "owner")
    raw = _raw_redis(redis_url)
    raw.pexpire(f"{fresh_prefix}:l:{'ab' * 32}", 1000)  # about to run out: the beat restarts it
    raw.set(f"{fresh_prefix}:l:{'cd' * 32}", "someone else|h:1:x:1|0", px=30_000)  # expired and taken over
    assert keeper.beat() == 1 and keeper.lost == 1
    assert raw.pttl(f"{fresh_prefix}:l:{'ab' * 32}") > 20_000
    raw.close()
    kept.release()  # type: ignore[union-attr]
    assert keeper.beat() == 0 and keeper.lost == 1  # released: no longer renewed (the stolen one still counts)
    cache.close()
