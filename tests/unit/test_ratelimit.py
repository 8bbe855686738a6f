"""Rate budgets (``execution/ratelimit.py``): rpm spacing, tpm estimates and corrections, 429 back-off.

Unit tests drive :class:`ProviderBudget` on an event loop with short intervals; the last
tests run the real runner and SDK against the loopback server answering 429s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.ratelimit import Budget, Budgets, ProviderBudget, Ticket, parse_rate_limits
from pytest_llmjudge.execution.runner import JudgeRunner
from pytest_llmjudge.judges.base import ProviderRequest, Usage
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.testing import Fault, LoopbackServer, ScriptedJudge

T = TypeVar("T")
LA = BUILTIN_RUBRICS["linguistic_acceptability"]


def run(make: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(make())  # type: ignore[arg-type]


def request(chars: int = 400, max_tokens: int = 1) -> ProviderRequest:
    # 400 characters / 4 + 8 of overhead: a raw estimate of 108 tokens.
    return ProviderRequest(provider="openai", model="m", system="", user="x" * chars, max_tokens=max_tokens)


# --------------------------------------------------------------------------- parsing


def test_parse_rate_limits() -> None:
    assert parse_rate_limits("openai:rpm=500:tpm=2e5, anthropic:tpm=40000,") == {
        "openai": Budget(500.0, 200000.0),
        "anthropic": Budget(None, 40000.0),
    }
    assert parse_rate_limits("") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("openai", "expected provider:rpm=N"),
        ("openai:rpm", "expected rpm=N or tpm=N"),
        ("openai:rps=3", "expected rpm=N or tpm=N"),
        ("openai:rpm=fast", "rpm must be a number"),
        ("openai:tpm=0", "tpm must be positive"),
        ("openai:tpm=nan", "tpm must be positive"),
    ],
)
def test_bad_rate_limits_name_the_entry(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rate_limits(text)


def test_rate_limit_settings_resolve(tmp_path: Path) -> None:
    from pytest_llmjudge.errors import ConfigError
    from pytest_llmjudge.settings import resolve_settings

    settings = resolve_settings(
        {"tokens_per_minute": "90000"}, {}, {"LLMJUDGE_RATE_LIMITS": "anthropic:rpm=50"}, tmp_path
    )
    assert settings.tokens_per_minute == 90000.0
    assert settings.rate_limits == (("anthropic", 50.0, None),)
    with pytest.raises(ConfigError, match="--llmjudge-rate-limits: expected rpm=N or tpm=N"):
        resolve_settings({"rate_limits": "openai:x=1"}, {}, {}, tmp_path)


def test_budgets_per_endpoint_fill_in_from_the_default_and_split_between_workers() -> None:
    budgets = Budgets(Budget(600.0, 90000.0), {"anthropic": Budget(50.0, None)}, max_window=8, parts=2)
    anthropic = budgets.get("anthropic", None)
    assert anthropic.budget == Budget(25.0, 45000.0)
    openai_a, openai_b = budgets.get("openai", "http://a/v1"), budgets.get("openai", "http://b/v1")
    assert openai_a is not openai_b and openai_a.budget == Budget(300.0, 45000.0)
    assert budgets.get("openai", "http://a/v1") is openai_a
    assert openai_a.max_window == 8


def test_budgets_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ProviderBudget(Budget(0.0, None))
    with pytest.raises(ValueError):
        ProviderBudget(Budget(None, -1.0))
    with pytest.raises(ValueError):
        ProviderBudget(max_window=0)


# --------------------------------------------------------------------------- schedules


def test_no_limit_admits_at_once() -> None:
    async def go() -> float:
        budget = ProviderBudget(max_window=64)
        start = time.monotonic()
        tickets = [await budget.acquire(request()) for _ in range(50)]
        for ticket in tickets:
            budget.release(ticket, succeeded=True)
        return time.monotonic() - start

    assert run(go) < 0.05


def test_requests_per_minute_space_requests_evenly() -> None:
    async def go() -> list[float]:
        budget = ProviderBudget(Budget(requests_per_minute=1200.0))  # one per 50 ms
        starts = []
        for _ in range(5):
            ticket = await budget.acquire(request())
            starts.append(time.monotonic())
            budget.release(ticket, succeeded=True)
        return starts

    starts = run(go)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(gap >= 0.045 for gap in gaps), gaps


def test_tokens_per_minute_charge_the_estimate() -> None:
    async def go() -> float:
        # 60,000 tpm = 1,000 tokens/s; each request is estimated at 108 + 1 tokens = ~0.11 s.
        budget = ProviderBudget(Budget(tokens_per_minute=60000.0), burst_seconds=0.0)
        start = time.monotonic()
        for _ in range(5):
            ticket = await budget.acquire(request())
            assert ticket.tokens == pytest.approx(109.0)
            budget.release(ticket, succeeded=True)
        return time.monotonic() - start

    assert 0.4 <= run(go) < 1.0


def test_reported_usage_corrects_the_charge_and_the_estimates() -> None:
    async def go() -> tuple[float, float, float]:
        budget = ProviderBudget(Budget(tokens_per_minute=60000.0), burst_seconds=0.0)
        ticket = await budget.acquire(request())
        # The provider counted 3x the prompt estimate (say, Devanagari) and a long reply.
        budget.release(ticket, usage=Usage(324, 300), succeeded=True)
        start = time.monotonic()
        second = await budget.acquire(request())
        waited = time.monotonic() - start
        return waited, second.tokens, budget.estimate(request())[1]

    waited, charged, later_estimate = run(go)
    # The first request really cost 624 tokens (0.624 s of budget), not 109.
    assert waited >= 0.5
    # Input ratio 1 -> 0.8 + 0.2 * 3 = 1.4; the reply estimate is capped by max_tokens (1).
    assert charged == pytest.approx(108 * 1.4 + 1)
    assert later_estimate == pytest.approx(charged)


def test_a_refused_request_is_refunded() -> None:
    async def go() -> float:
        budget = ProviderBudget(Budget(tokens_per_minute=60000.0), burst_seconds=0.0)
        for _ in range(5):
            ticket = await budget.acquire(request())
            budget.release(ticket, status=500)
        start = time.monotonic()
        ticket = await budget.acquire(request())
        budget.release(ticket, succeeded=True)
        return time.monotonic() - start

    assert run(go) < 0.15


def test_a_request_larger_than_the_burst_still_goes() -> None:
    async def go() -> None:
        budget = ProviderBudget(Budget(tokens_per_minute=600.0), burst_seconds=6.0)  # 60 tokens of burst
        ticket = await asyncio.wait_for(budget.acquire(request(chars=4000)), 1.0)
        assert ticket.tokens > 60

    run(go)


# --------------------------------------------------------------------------- adaptive back-off


def test_a_429_halves_the_window_once_per_burst_and_successes_recover_it() -> None:
    async def go() -> None:
        budget = ProviderBudget(max_window=8)
        tickets = [await budget.acquire(request()) for _ in range(8)]
        budget.release(tickets[0], status=429, retry_after=0.0)
        assert budget.window == 4.0
        for ticket in tickets[1:4]:  # the same burst: sent before the decrease
            budget.release(ticket, status=429, retry_after=0.0)
        assert budget.window == 4.0 and budget.stats.congestion_events == 4
        for ticket in tickets[4:]:
            budget.release(ticket, succeeded=True)
        assert 4.0 < budget.window < 5.0  # +1/window per success
        later = await budget.acquire(request())
        budget.release(later, status=529)
        assert budget.window < 2.5 and budget.stats.window_decreases == 2
        for _ in range(200):
            ticket = await budget.acquire(request())
            budget.release(ticket, succeeded=True)
        assert budget.window == 8.0

    run(go)


def test_the_window_limits_requests_in_flight() -> None:
    async def go() -> None:
        budget = ProviderBudget(max_window=4)
        first = [await budget.acquire(request()) for _ in range(4)]
        budget.release(first[0], status=429, retry_after=0.0)  # window 2, 3 in flight
        waiter = asyncio.ensure_future(budget.acquire(request()))
        await asyncio.sleep(0.02)
        assert not waiter.done()
        budget.release(first[1], succeeded=True)
        await asyncio.sleep(0.02)
        assert not waiter.done()  # 2 in flight, window ~2.5: still full
        budget.release(first[2], succeeded=True)
        ticket = await asyncio.wait_for(waiter, 1.0)
        assert budget.in_flight == 2
        budget.release(ticket, succeeded=True)
        budget.release(first[3], succeeded=True)
        assert budget.in_flight == 0

    run(go)


def test_waiters_are_admitted_in_arrival_order() -> None:
    """Releases hand slots over first come, first served (calls finish in submission order)."""

    async def go() -> list[int]:
        budget = ProviderBudget(max_window=2)
        order: list[int] = []

        async def call(index: int) -> None:
            ticket = await budget.acquire(request())
            order.append(index)
            await asyncio.sleep(0.001 * (index % 3))
            budget.release(ticket, succeeded=True)

        await asyncio.gather(*(call(i) for i in range(40)))
        return order

    assert run(go) == list(range(40))


def test_retry_after_pauses_every_new_request() -> None:
    async def go() -> float:
        budget = ProviderBudget(max_window=8)
        ticket = await budget.acquire(request())
        budget.release(ticket, status=429, retry_after=0.2)
        start = time.monotonic()
        again = await budget.acquire(request())
        budget.release(again, succeeded=True)
        return time.monotonic() - start

    assert run(go) >= 0.18


def test_a_cancelled_wait_gives_its_place_back() -> None:
    async def go() -> None:
        budget = ProviderBudget(max_window=1)
        held = await budget.acquire(request())
        cancelled = asyncio.ensure_future(budget.acquire(request()))
        waiting = asyncio.ensure_future(budget.acquire(request()))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        budget.release(held, succeeded=True)
        ticket = await asyncio.wait_for(waiting, 1.0)
        assert isinstance(ticket, Ticket) and budget.in_flight == 1

    run(go)


# --------------------------------------------------------------------------- with the runner


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Callable[..., JudgeRunner]]:
    made: list[JudgeRunner] = []

    def make(**kwargs: Any) -> JudgeRunner:
        made.append(JudgeRunner(JudgeCache(tmp_path / "cache"), max_retries=6, backoff_base=0.01, **kwargs))
        return made[-1]

    yield make
    for item in made:
        item.close()


def _requests(server: LoopbackServer, count: int) -> list[ProviderRequest]:
    settings = JudgeSettings(provider="openai", model="loopback-judge", base_url=server.openai_base_url)
    return [build_request([LA], JudgedText(language="hi", output=f"उत्तर {i}"), settings) for i in range(count)]


def test_429s_shrink_the_window_at_the_server_and_every_call_still_succeeds(
    runner: Callable[..., JudgeRunner],
) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(responder=judge, latency=0.05, retry_after=0.05) as server:
        judge_runner = runner(concurrency=16)
        provider = OpenAIProvider(api_key="k", base_url=server.openai_base_url, timeout=5)
        judge_runner.track_provider(provider)
        requests = _requests(server, 48)
        server.inject(Fault.RATE_LIMIT, times=16)  # the whole first wave is refused
        futures = [judge_runner.submit_judgment(provider, r, [LA]) for r in requests]
        outcomes = [f.result(timeout=60) for f in futures]
        assert all(o.error is None for o in outcomes)
        budget = judge_runner.budgets.get("openai", server.openai_base_url)
        assert judge_runner.stats.rate_limited == 16
        assert budget.stats.window_decreases == 1 and budget.stats.min_window == 8.0
        # After the 429 wave, never more than the shrunk window (plus its slow growth) in flight.
        retried = [r for r in server.requests[16:]]
        assert len(retried) == 48
        assert server.stats()["max_in_flight"] == 16  # the first wave only


def test_tokens_per_minute_through_the_runner_use_reported_usage(runner: Callable[..., JudgeRunner]) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(responder=judge) as server:
        judge_runner = runner(concurrency=8, tokens_per_minute=1_000_000.0)
        provider = OpenAIProvider(api_key="k", base_url=server.openai_base_url, timeout=5)
        judge_runner.track_provider(provider)
        for r in _requests(server, 3):
            assert judge_runner.submit_judgment(provider, r, [LA]).result(timeout=30).error is None
        budget = judge_runner.budgets.get("openai", server.openai_base_url)
        assert budget.limits_tokens and budget.stats.admitted == 3
        # The loopback server counts characters / 4 as we do, so the learned ratio stays near 1.
        raw, charged = budget.estimate(_requests(server, 1)[0])
        assert 0.8 * raw < charged - min(1024, 256) or charged > raw


def test_rpm_and_tpm_options_through_pytest(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    cases = "\n".join(f"  - {{id: c{i}, language: fr, output: 'r{i}'}}" for i in range(4))
    pytester.makefile(
        ".yaml",
        suite=f"""\
suite: limited
judge: {{model: loopback-judge, base_url: "{loopback.openai_base_url}"}}
cases:
{cases}
assert: [linguistic_acceptability >= 1]
""",
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-rate-limits=openai:rpm=600", "--llmjudge-tpm=10000000")
    result.assert_outcomes(passed=4)
    times = sorted(r.received_at for r in loopback.requests)
    # Admissions are 100 ms apart; arrivals jitter a little with connection set-up.
    assert times[-1] - times[0] >= 0.28 and all(b - a >= 0.05 for a, b in zip(times, times[1:])), times
