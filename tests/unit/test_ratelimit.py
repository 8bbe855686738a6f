"""Rate budgets (``execution/ratelimit.py``): rpm spacing, tpm estimates and corrections, 429 back-off.

Unit tests drive :class:`ProviderBudget` on an event loop with a fake clock and sleep, so
they check the schedule exactly and can't fail on a loaded machine; the last tests run the
real runner and SDK against the loopback server answering 429s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.ratelimit import (
    DEFAULT_PAUSE,
    MAX_PAUSE,
    Budget,
    Budgets,
    ProviderBudget,
    Ticket,
    parse_rate_limits,
)
from pytest_llmjudge.execution.runner import JudgeRunner
from pytest_llmjudge.judges.base import ProviderRequest, Usage
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.session.state import scorer_key
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


class FakeClock:
    """A monotonic clock that moves only when the budget sleeps on it: schedules are exact."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # still a suspension point, as a real sleep is


def budget_on(clock: FakeClock, budget: Budget | None = None, **kwargs: Any) -> ProviderBudget:
    return ProviderBudget(budget or Budget(), clock=clock, sleep=clock.sleep, **kwargs)


def test_no_limit_admits_at_once() -> None:
    clock = FakeClock()

    async def go() -> None:
        budget = budget_on(clock, max_window=64)
        tickets = [await budget.acquire(request()) for _ in range(50)]
        for ticket in tickets:
            budget.release(ticket, succeeded=True)
        assert budget.stats.admitted == 50 and budget.stats.waited_seconds == 0.0

    run(go)
    assert clock.sleeps == [] and clock.now == 100.0


def test_requests_per_minute_space_requests_evenly() -> None:
    clock = FakeClock()

    async def go() -> list[float]:
        budget = budget_on(clock, Budget(requests_per_minute=1200.0))  # one per 50 ms
        starts = []
        for _ in range(5):
            ticket = await budget.acquire(request())
            starts.append(clock())
            budget.release(ticket, succeeded=True)
        return starts

    assert run(go) == pytest.approx([100.0, 100.05, 100.1, 100.15, 100.2])


def test_requests_per_minute_do_not_wait_when_the_caller_is_slower() -> None:
    clock = FakeClock()

    async def go() -> None:
        budget = budget_on(clock, Budget(requests_per_minute=1200.0))
        budget.release(await budget.acquire(request()), succeeded=True)
        clock.now += 0.2  # the caller took longer than the interval: no debt, no burst owed
        budget.release(await budget.acquire(request()), succeeded=True)
        budget.release(await budget.acquire(request()), succeeded=True)

    run(go)
    assert clock.sleeps == pytest.approx([0.05])


def test_tokens_per_minute_charge_the_estimate() -> None:
    clock = FakeClock()

    async def go() -> None:
        # 60,000 tpm = 1,000 tokens/s; each request is estimated at 108 + 1 tokens = 0.109 s.
        budget = budget_on(clock, Budget(tokens_per_minute=60000.0), burst_seconds=0.0)
        for _ in range(5):
            ticket = await budget.acquire(request())
            assert ticket.tokens == pytest.approx(109.0)
            budget.release(ticket, succeeded=True)

    run(go)
    assert clock.sleeps == pytest.approx([0.109] * 4)


def test_the_burst_allowance_lets_a_tenth_of_the_minute_go_at_once() -> None:
    clock = FakeClock()

    async def go() -> None:
        # 6 s of burst at 1,000 tokens/s: 6,000 tokens, so 56 requests of 109 go at once, the 57th waits.
        budget = budget_on(clock, Budget(tokens_per_minute=60000.0), burst_seconds=6.0)
        for _ in range(57):
            budget.release(await budget.acquire(request()), succeeded=True)

    run(go)
    assert len(clock.sleeps) == 1 and clock.now == pytest.approx(100.0 + 56 * 0.109 - 6.0)


def test_reported_usage_corrects_the_charge_and_the_estimates() -> None:
    clock = FakeClock()

    async def go() -> tuple[float, float]:
        budget = budget_on(clock, Budget(tokens_per_minute=60000.0), burst_seconds=0.0)
        ticket = await budget.acquire(request())
        # The provider counted 3x the prompt estimate (say, Devanagari) and a long reply.
        budget.release(ticket, usage=Usage(324, 300), succeeded=True)
        second = await budget.acquire(request())
        return second.tokens, budget.estimate(request())[1]

    charged, later_estimate = run(go)
    # The first request really cost 624 tokens (0.624 s of budget), not 109.
    assert clock.sleeps == pytest.approx([0.624])
    # Input ratio 1 -> 0.8 + 0.2 * 3 = 1.4; the reply estimate is capped by max_tokens (1).
    assert charged == pytest.approx(108 * 1.4 + 1)
    assert later_estimate == pytest.approx(charged)


def test_a_refused_request_is_refunded() -> None:
    clock = FakeClock()

    async def go() -> None:
        budget = budget_on(clock, Budget(tokens_per_minute=60000.0), burst_seconds=0.0)
        for _ in range(5):
            ticket = await budget.acquire(request())
            budget.release(ticket, status=500)
        ticket = await budget.acquire(request())
        budget.release(ticket, succeeded=True)
        budget.release(await budget.acquire(request()), succeeded=True)

    run(go)
    # Five refused requests cost nothing: only the last waits, for the one that succeeded.
    assert clock.sleeps == pytest.approx([0.109])


def test_a_request_larger_than_the_burst_still_goes() -> None:
    clock = FakeClock()

    async def go() -> None:
        budget = budget_on(clock, Budget(tokens_per_minute=600.0), burst_seconds=6.0)  # 60 tokens of burst
        ticket = await budget.acquire(request(chars=4000))
        assert ticket.tokens == pytest.approx(1009.0) and clock.sleeps == []
        budget.release(ticket, succeeded=True)
        budget.release(await budget.acquire(request()), succeeded=True)

    run(go)
    # The next one waits until the big one's 1,009 tokens (100.9 s at 10 tokens/s) are within the burst.
    assert clock.sleeps == pytest.approx([100.9 - 6.0])


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
    clock = FakeClock()

    async def go() -> None:
        budget = budget_on(clock, max_window=8)
        ticket = await budget.acquire(request())
        budget.release(ticket, status=429, retry_after=0.2)
        first, second = await budget.acquire(request()), await budget.acquire(request())  # the first waits
        budget.release(first, succeeded=True)
        budget.release(second, status=503)  # an error, but not congestion: no pause
        budget.release(await budget.acquire(request()), succeeded=True)

    run(go)
    assert clock.sleeps == pytest.approx([0.2])


def test_a_429_without_retry_after_pauses_for_the_default() -> None:
    clock = FakeClock()

    async def go() -> None:
        budget = budget_on(clock)
        budget.release(await budget.acquire(request()), status=429)
        budget.release(await budget.acquire(request()), succeeded=True)

    run(go)
    assert clock.sleeps == pytest.approx([DEFAULT_PAUSE])


@pytest.mark.parametrize("retry_after", [999999.0, float("inf")])
def test_a_huge_retry_after_pauses_the_endpoint_for_the_cap_only(retry_after: float) -> None:
    """``Retry-After: 999999`` (11 days) pauses the endpoint for :data:`MAX_PAUSE` (30 s), as documented."""
    clock = FakeClock()

    async def go(budget: ProviderBudget) -> None:
        budget.release(await budget.acquire(request()), status=429, retry_after=retry_after)
        budget.release(await budget.acquire(request()), succeeded=True)

    run(lambda: go(budget_on(clock)))
    assert MAX_PAUSE == 30.0 and clock.sleeps == pytest.approx([MAX_PAUSE])
    clock.sleeps.clear()
    run(lambda: go(budget_on(clock, max_pause=0.25)))  # the runner passes its back-off cap
    assert clock.sleeps == pytest.approx([0.25])


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
        # Never more than the concurrency; only the first wave can reach it (how many of its 16
        # calls overlap at the server depends on the machine's load, so that is not asserted).
        assert server.stats()["max_in_flight"] <= 16


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
    recorder = pytester.inline_run("--llmjudge", "--llmjudge-rate-limits=openai:rpm=600", "--llmjudge-tpm=10000000")
    recorder.assertoutcome(passed=4)
    # The options reach the endpoint's budget, which admitted every request; how a budget spaces
    # requests is checked exactly above, on a fake clock (real arrival times jitter under load).
    board = recorder.getcall("pytest_sessionfinish").session.config.stash[scorer_key]
    budget = board.runner.budgets.get("openai", loopback.openai_base_url)
    assert budget.budget == Budget(600.0, 10_000_000.0)
    assert budget.stats.admitted == 4 == len(loopback.requests)
