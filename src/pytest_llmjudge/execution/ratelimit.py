"""Rate budgets shared by all concurrent judge calls of a run, per provider endpoint.

Two kinds of limit, both optional, each per provider endpoint (provider name + base URL):

* **requests per minute**: requests are spaced evenly, the n-th starting no earlier than
  ``first_start + n * 60 / rpm``. Even spacing (rather than a burst of ``rpm`` requests then
  a wait) keeps providers' own per-second limits happy.
* **tokens per minute**: each request is charged an *estimate* before it is sent: the
  prompt's characters / 4, times a correction learned from the usage the provider reports
  (scripts such as Devanagari or CJK need more tokens per character than English), plus the
  mean reported reply length (``min(max_tokens, 256)`` until a reply has been seen). When the
  reply arrives its reported usage replaces the estimate (the difference is charged or
  refunded); a request the provider refused (HTTP 4xx/5xx) is refunded. Tokens flow at
  ``tpm / 60`` per second and up to a tenth of the minute's budget may go out at once
  (a GCRA/leaky-bucket schedule), so a run can never exceed the budget by more than that.

**Adaptive back-off.** Each endpoint also has a congestion window, like TCP's: at most
``window`` requests in flight (starting at the run's concurrency). When the server answers
429 (or Anthropic's 529 "overloaded") the window halves, the rpm/tpm rates shrink by the
same factor, and no new request starts before the server's ``Retry-After`` (0.5 s without
one), capped at :data:`MAX_PAUSE` (30 s, the runner's back-off cap): a ``Retry-After: 999999``
pauses the endpoint 30 s, not 11 days. One burst of 429s halves the window once: only a 429 for a request sent after the last
decrease decreases it again. Every success grows the window by ``1 / window`` (about one
request per window of successes), so the rate recovers gradually to the configured one.

Degenerate cases: no rpm, no tpm and no 429 cost almost nothing per request (a counter);
a request whose estimate exceeds the whole burst allowance still goes, alone, once the
schedule reaches it; the window never drops below 1; a cancelled wait gives its slot back.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from pytest_llmjudge.judges.base import ProviderRequest, Usage

CONGESTION_STATUSES = frozenset({429, 529})
"""HTTP statuses that mean "you are sending too much": they shrink the window."""

DEFAULT_PAUSE = 0.5
"""Seconds no new request starts after a 429 without ``Retry-After``."""

MAX_PAUSE = 30.0
"""The longest pause a ``Retry-After`` can impose on an endpoint (seconds; ``docs/scale.md``)."""

BURST_FRACTION = 0.1
"""Share of a minute's token budget that may go out at once."""


@dataclass(frozen=True)
class Budget:
    """The configured limits of one provider endpoint (``None``: no limit)."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def divided(self, parts: int) -> Budget:
        """This budget split evenly between ``parts`` processes (pytest-xdist workers)."""
        if parts <= 1:
            return self
        rpm, tpm = self.requests_per_minute, self.tokens_per_minute
        return Budget(rpm / parts if rpm else None, tpm / parts if tpm else None)


@dataclass(frozen=True)
class Ticket:
    """One admitted request: what it was charged, and when it was admitted."""

    sequence: int
    input_estimate: int = 0
    """The prompt's raw estimate (characters / 4), before the learned correction."""
    tokens: float = 0.0
    """Tokens charged against the tpm budget."""
    rate_factor: float = 1.0


@dataclass
class BudgetStats:
    admitted: int = 0
    congestion_events: int = 0
    """429/529 answers seen."""
    window_decreases: int = 0
    min_window: float = 0.0
    waited_seconds: float = 0.0
    """Total time requests spent waiting for the rpm/tpm schedule or a pause."""


class ProviderBudget:
    """Requests/tokens per minute and the adaptive window of one provider endpoint.

    Used only from one event loop (the runner's); not thread-safe.
    """

    def __init__(
        self,
        budget: Budget = Budget(),
        *,
        max_window: int = 16,
        burst_seconds: float = 60.0 * BURST_FRACTION,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_pause: float = MAX_PAUSE,
    ) -> None:
        # ``clock`` and ``sleep`` go together: a test passes a fake clock and a sleep that
        # advances it, and checks the schedule exactly, whatever the machine's load.
        if max_window < 1:
            raise ValueError("max_window must be at least 1")
        rpm, tpm = budget.requests_per_minute, budget.tokens_per_minute
        if (rpm is not None and not rpm > 0) or (tpm is not None and not tpm > 0):
            raise ValueError("rate limits must be positive")
        self.budget = budget
        self.max_window = max_window
        self.window = float(max_window)
        self._clock = clock
        self._sleep = sleep
        self._request_interval = 60.0 / rpm if rpm else 0.0
        self._token_interval = 60.0 / tpm if tpm else 0.0
        self._burst = burst_seconds
        self.max_pause = max_pause
        self._in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._paused_until = 0.0
        self._next_request_at = 0.0
        self._token_tat = 0.0
        self._input_ratio = 1.0
        self._output_mean: float | None = None
        self._sequence = 0
        self._decrease_mark = 0
        self.stats = BudgetStats(min_window=float(max_window))

    # -- estimates -----------------------------------------------------------------------

    @property
    def limits_tokens(self) -> bool:
        return bool(self._token_interval)

    def raw_input_estimate(self, request: ProviderRequest) -> int:
        """Prompt tokens by the plain rule of thumb: characters / 4, plus message overhead."""
        return (len(request.system) + len(request.user) + 3) // 4 + 8

    def estimate(self, request: ProviderRequest) -> tuple[int, float]:
        """``(raw input estimate, tokens to charge)`` for one request."""
        raw = self.raw_input_estimate(request)
        output = self._output_mean if self._output_mean is not None else min(request.max_tokens, 256)
        return raw, raw * self._input_ratio + min(float(request.max_tokens), output)

    # -- admission -----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _limit(self) -> int:
        return max(1, int(self.window))

    async def acquire(self, request: ProviderRequest | None = None) -> Ticket:
        """Wait for a window slot and the rpm/tpm schedule; the caller must :meth:`release`."""
        if self._waiters or self._in_flight >= self._limit():
            await self._wait_for_slot()  # returns holding a slot handed over by a release
        else:
            self._in_flight += 1
        try:
            raw, tokens = self.estimate(request) if (request is not None and self._token_interval) else (0, 0.0)
            factor = self.window / self.max_window
            now = self._clock()
            start = now
            if self._paused_until > start:
                start = self._paused_until
            if self._request_interval:
                start = max(start, self._next_request_at)
                self._next_request_at = start + self._request_interval / factor
            if self._token_interval:
                start = max(start, self._token_tat - self._burst)
                self._token_tat = max(self._token_tat, start) + tokens * self._token_interval / factor
            if start > now:
                self.stats.waited_seconds += start - now
                await self._sleep(start - now)
        except BaseException:
            self._in_flight -= 1
            self._wake()
            raise
        self._sequence += 1
        self.stats.admitted += 1
        return Ticket(self._sequence, raw, tokens, factor)

    async def _wait_for_slot(self) -> None:
        """Queue up (FIFO); :meth:`_wake` hands this waiter a slot before waking it."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed a slot it won't use
                self._in_flight -= 1
                self._wake()
            else:
                try:
                    self._waiters.remove(future)
                except ValueError:
                    pass
            raise

    def _wake(self) -> None:
        """Hand free slots to the waiters in arrival order (a woken waiter owns its slot)."""
        while self._waiters and self._in_flight < self._limit():
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)
                self._in_flight += 1

    def release(
        self,
        ticket: Ticket,
        *,
        usage: Usage | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        succeeded: bool = False,
    ) -> None:
        """Give the slot back, correcting the token charge and adapting the window."""
        self._in_flight -= 1
        if succeeded:
            if usage is not None and (usage.input_tokens or usage.output_tokens):
                self._learn(ticket, usage)
            if self.window < self.max_window:
                self.window = min(float(self.max_window), self.window + 1.0 / self.window)
        else:
            if status is not None and self._token_interval:
                self._token_tat -= ticket.tokens * self._token_interval / ticket.rate_factor  # refused: refund
            if status in CONGESTION_STATUSES:
                self._congested(ticket, retry_after)
        self._wake()

    def _learn(self, ticket: Ticket, usage: Usage) -> None:
        if not self._token_interval:
            return
        actual = usage.input_tokens + usage.output_tokens
        self._token_tat += (actual - ticket.tokens) * self._token_interval / ticket.rate_factor
        if ticket.input_estimate > 0 and usage.input_tokens > 0:
            ratio = min(10.0, max(0.1, usage.input_tokens / ticket.input_estimate))
            self._input_ratio = 0.8 * self._input_ratio + 0.2 * ratio
        if usage.output_tokens > 0:
            previous = self._output_mean
            self._output_mean = (
                float(usage.output_tokens) if previous is None else 0.8 * previous + 0.2 * usage.output_tokens
            )

    def _congested(self, ticket: Ticket, retry_after: float | None) -> None:
        self.stats.congestion_events += 1
        pause = min(DEFAULT_PAUSE if retry_after is None else retry_after, self.max_pause)
        self._paused_until = max(self._paused_until, self._clock() + pause)
        if ticket.sequence > self._decrease_mark:
            self.window = max(1.0, self.window / 2.0)
            self._decrease_mark = self._sequence
            self.stats.window_decreases += 1
            self.stats.min_window = min(self.stats.min_window, self.window)


class Budgets:
    """One :class:`ProviderBudget` per provider endpoint, created on first use."""

    def __init__(
        self,
        default: Budget = Budget(),
        overrides: Mapping[str, Budget] | None = None,
        *,
        max_window: int = 16,
        parts: int = 1,
        max_pause: float = MAX_PAUSE,
    ) -> None:
        self.default = default
        self.overrides = dict(overrides or {})
        self.max_window = max_window
        self.max_pause = max_pause
        self.parts = max(1, parts)
        self._budgets: dict[tuple[str, str | None], ProviderBudget] = {}

    def get(self, provider: str, base_url: str | None) -> ProviderBudget:
        key = (provider, base_url)
        budget = self._budgets.get(key)
        if budget is None:
            configured = self.overrides.get(provider)
            if configured is None:
                configured = self.default
            else:  # a per-provider entry fills in what it doesn't say from the default
                configured = Budget(
                    configured.requests_per_minute or self.default.requests_per_minute,
                    configured.tokens_per_minute or self.default.tokens_per_minute,
                )
            budget = ProviderBudget(
                configured.divided(self.parts), max_window=self.max_window, max_pause=self.max_pause
            )
            self._budgets[key] = budget
        return budget

    def all(self) -> dict[tuple[str, str | None], ProviderBudget]:
        return dict(self._budgets)


def parse_rate_limits(text: str) -> dict[str, Budget]:
    """``"openai:rpm=500:tpm=2e5,anthropic:rpm=50"`` -> per-provider :class:`Budget` s.

    Raises ``ValueError`` naming the bad entry.
    """
    limits: dict[str, Budget] = {}
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue
        name, *pairs = [part.strip() for part in entry.split(":")]
        if not name or not pairs:
            raise ValueError(f"expected provider:rpm=N[:tpm=N], got {entry!r}")
        values: dict[str, float] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            key = key.strip().lower()
            if not sep or key not in ("rpm", "tpm"):
                raise ValueError(f"expected rpm=N or tpm=N in {entry!r}, got {pair!r}")
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"{key} must be a number in {entry!r}, got {raw!r}") from None
            if not value > 0 or value == float("inf"):
                raise ValueError(f"{key} must be positive in {entry!r}, got {raw!r}")
            values[key] = value
        limits[name] = Budget(values.get("rpm"), values.get("tpm"))
    return limits
