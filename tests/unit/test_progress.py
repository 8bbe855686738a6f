"""The progress line (``progress/counters.py``) from counters and a fake clock: done/planned, ETA, cost or n/a."""

from __future__ import annotations

from pytest_llmjudge.progress.counters import Counters, Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_nothing_planned_gives_no_line() -> None:
    assert Progress(FakeClock(), None).text(Counters()) is None


def test_eta_from_the_rate_so_far_and_cost_from_tokens() -> None:
    clock = FakeClock()
    progress = Progress(clock, (0.15, 0.60))  # gpt-4o-mini's USD per 1M tokens
    clock.now += 12.0
    counters = Counters(
        planned=200, done=40, cache_hits=10, failed=1, provider_calls=30, input_tokens=20_000, output_tokens=1_000
    )
    # 12 s for 40 calls: 0.3 s a call, 160 to go -> 48 s. Cost: (20000 * 0.15 + 1000 * 0.60) / 1e6 = 0.0036.
    assert progress.text(counters) == (
        "llmjudge: 40/200 judge calls, 30 provider requests, 10 cache hits, 1 failed, 0:12 elapsed, ETA 0:48, "
        "est. $0.0036 so far"
    )


def test_no_rate_yet_no_price_and_durations_over_an_hour() -> None:
    clock = FakeClock()
    progress = Progress(clock, None)
    assert (
        progress.text(Counters(planned=5))
        == "llmjudge: 0/5 judge calls, 0 provider requests, 0 cache hits, 0:00 elapsed, ETA --, cost n/a"
    )
    clock.now += 3723.0
    assert (
        progress.text(Counters(planned=5, done=5))
        == "llmjudge: 5/5 judge calls, 0 provider requests, 0 cache hits, 1:02:03 elapsed, cost n/a"
    )


def test_more_done_than_planned_shows_planned_and_counters_sum_across_workers() -> None:
    a = Counters(planned=3, done=4, cache_hits=1, input_tokens=10)
    b = Counters.from_dict({"planned": 2, "done": 1, "unknown": 7})
    total = a + b
    assert total == Counters(planned=5, done=5, cache_hits=1, input_tokens=10)
    assert Counters.from_dict(total.to_dict()) == total
    assert Progress(FakeClock(), None).text(a) == (
        "llmjudge: 3/3 judge calls, 0 provider requests, 1 cache hits, 0:00 elapsed, cost n/a"
    )


def test_the_line_uses_the_accountings_words_for_shared_replies() -> None:
    # Under xdist each worker plans its calls; one pays, the others take its reply: the line
    # says so as the summary does ("shared between workers"), never as cache hits.
    workers = Counters(planned=72, done=72, provider_calls=72) + Counters(
        planned=72, done=72, shared_hits=64, cache_hits=8
    )
    assert Progress(FakeClock(), None).text(workers) == (
        "llmjudge: 144/144 judge calls, 72 provider requests, 8 cache hits, 64 shared between workers, "
        "0:00 elapsed, cost n/a"
    )
