"""The hard spend cap of a run: ``--llmjudge-max-calls``, ``--llmjudge-max-cost``, ``--llmjudge-max-tokens``.

Reserve before send: the runner asks :meth:`SpendCap.reserve` right before every provider
request (each attempt: a retry and a re-ask are requests too; each ``repeats`` sample is a
call of its own), and no request is sent whose reservation would pass a cap. A reply from
the cache, or waited for from another process, reserves nothing: it is free.

What a request is charged:

* calls: 1 per request (sent, whatever its outcome);
* tokens: reserved as an upper bound before sending, the prompt's UTF-8 bytes (a token of a
  byte-level BPE tokenizer covers at least one byte) plus :data:`MESSAGE_OVERHEAD` per message
  and the request's ``max_tokens`` for the reply; when the reply comes, the usage the provider
  reports replaces the reservation (a reply without usage keeps it). A request the provider
  refused with an HTTP status is refunded (providers don't bill refusals); one that timed out
  or lost its connection keeps its reservation (it may have been processed and billed);
* cost: those tokens priced as the report's cost estimate prices them (``report/assemble.py``:
  ``input x price_in + output x price_out``, USD per 1M tokens, the built-in table plus
  ``llmjudge_prices`` / ``--llmjudge-price``). With ``--llmjudge-max-cost`` a request to a model
  without a price is refused: the cap can't be kept for a cost it can't price.

A refused request raises :class:`~pytest_llmjudge.errors.SpendCapReached`, whose message starts
with :data:`NOT_JUDGED` and names the cap (``not judged: --llmjudge-max-calls 100 reached (100
requests sent; 300 judge calls planned)``); the items that needed it fail with that headline,
never pass or skip, and the run exits non-zero.

Under pytest-xdist each worker sends the calls it owns (``execution/xdist_sharing.py``); the run's cap
is split between the workers deterministically (:meth:`SpendLimits.share`: worker ``i`` of ``n``
gets ``N // n`` calls, plus one when ``i < N % n``; cost and tokens ``1/n`` each), so the workers
together never pass it; a worker that owns fewer calls than its share leaves the rest unused.
CI shards (``selection/sharding.py``) are separate runs: each keeps the cap it is given.

Degenerate cases: ``--llmjudge-max-calls 0`` sends nothing (a run from the cache alone); no cap
set costs one comparison per request.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pytest_llmjudge.errors import SpendCapReached
from pytest_llmjudge.judges.base import ProviderRequest, Usage

NOT_JUDGED = "not judged: "
"""How the error of a call the cap refused begins (scores, items, and xdist's shared failures)."""

MESSAGE_OVERHEAD = 16
"""Tokens a chat message costs beyond its text (role and separators), per message; generous."""

Pricer = Callable[[str], "tuple[float, float] | None"]
"""``model -> (input, output)`` USD per 1M tokens, or None when the model has no price."""


@dataclass(frozen=True)
class SpendLimits:
    """The caps of a run (None: no cap)."""

    max_calls: int | None = None
    max_cost: float | None = None
    max_tokens: int | None = None

    @property
    def any(self) -> bool:
        return self.max_calls is not None or self.max_cost is not None or self.max_tokens is not None

    def share(self, index: int, parts: int) -> SpendLimits:
        """Worker ``index``'s share of ``parts`` (xdist): the shares add up to the run's caps."""
        if parts <= 1:
            return self
        calls = None
        if self.max_calls is not None:
            calls = self.max_calls // parts + (1 if index < self.max_calls % parts else 0)
        tokens = None
        if self.max_tokens is not None:
            tokens = self.max_tokens // parts + (1 if index < self.max_tokens % parts else 0)
        cost = None if self.max_cost is None else self.max_cost / parts
        return SpendLimits(calls, cost, tokens)


def token_bound(request: ProviderRequest) -> tuple[int, int]:
    """``(input, output)`` tokens a request can cost at most (see the module docstring)."""
    text = len(request.system.encode("utf-8", "surrogatepass")) + len(request.user.encode("utf-8", "surrogatepass"))
    return text + 2 * MESSAGE_OVERHEAD, max(0, request.max_tokens)


@dataclass(frozen=True)
class Reservation:
    """What one admitted request holds until :meth:`SpendCap.settle`."""

    tokens: int
    cost: float


class SpendCap:
    """The run's (or this xdist worker's) caps and what has been sent against them. Thread-safe."""

    def __init__(
        self, limits: SpendLimits, *, run_limits: SpendLimits | None = None, price: Pricer | None = None
    ) -> None:
        self.limits = limits
        self.run_limits = run_limits or limits
        """The caps as the user gave them (the names in messages); ``limits`` is this process's share."""
        self.price = price
        self.planned = 0
        """Judge calls planned in this process (set after planning; for the messages)."""
        self.calls = 0
        self.tokens = 0
        self.cost = 0.0
        self.refused = 0
        """Requests not sent because of a cap."""
        self.first_refusal: str | None = None
        self._lock = threading.Lock()

    def reserve(self, request: ProviderRequest) -> Reservation:
        """Admit one request against the caps, or raise :class:`SpendCapReached` naming the cap."""
        input_tokens, output_tokens = token_bound(request)
        tokens = input_tokens + output_tokens
        cost = 0.0
        with self._lock:
            problem: str | None = None
            if self.limits.max_cost is not None:
                prices = self.price(request.model) if self.price is not None else None
                if prices is None:
                    problem = (
                        f"--llmjudge-max-cost {self.run_limits.max_cost:g} is set and model {request.model!r} "
                        "has no price (set llmjudge_prices or --llmjudge-price)"
                    )
                else:
                    cost = (input_tokens * prices[0] + output_tokens * prices[1]) / 1e6
            if problem is None:
                problem = self._passes(tokens, cost)
            if problem is not None:
                self.refused += 1
                message = f"{NOT_JUDGED}{problem}"
                if self.first_refusal is None:
                    self.first_refusal = message
                raise SpendCapReached(message)
            self.calls += 1
            self.tokens += tokens
            self.cost += cost
        return Reservation(tokens, cost)

    def _passes(self, tokens: int, cost: float) -> str | None:
        """Which cap one more request of ``tokens`` and ``cost`` would pass, as the message says it."""
        limits, run = self.limits, self.run_limits
        shared = limits is not run
        sent = f"{self.calls} requests sent; {self.planned} judge calls planned"
        if limits.max_calls is not None and self.calls + 1 > limits.max_calls:
            share = f"this worker's share {limits.max_calls}: " if shared else ""
            return f"--llmjudge-max-calls {run.max_calls} reached ({share}{sent})"
        if limits.max_tokens is not None and self.tokens + tokens > limits.max_tokens:
            share = f"this worker's share {limits.max_tokens}: " if shared else ""
            return (
                f"--llmjudge-max-tokens {run.max_tokens} reached ({share}{self.tokens} tokens spent or "
                f"reserved, the next request may take {tokens}; {sent})"
            )
        if limits.max_cost is not None and self.cost + cost > limits.max_cost + 1e-12:
            share = f"this worker's share ${limits.max_cost:.4f}: " if shared else ""
            return (
                f"--llmjudge-max-cost {run.max_cost:g} reached ({share}est. ${self.cost:.4f} spent or "
                f"reserved, the next request may cost ${cost:.4f}; {sent})"
            )
        return None

    def settle(self, reservation: Reservation, request: ProviderRequest, usage: Usage | None, refused: bool) -> None:
        """Replace a reservation by what the request cost: its reported usage, nothing when the
        provider refused it with an HTTP status, the reservation when nothing is known."""
        if refused:
            tokens, cost = 0, 0.0
        elif usage is not None and (usage.input_tokens or usage.output_tokens):
            tokens = usage.input_tokens + usage.output_tokens
            cost = 0.0
            if reservation.cost and self.price is not None:
                prices = self.price(request.model)
                if prices is not None:
                    cost = (usage.input_tokens * prices[0] + usage.output_tokens * prices[1]) / 1e6
        else:
            return
        with self._lock:
            self.tokens += tokens - reservation.tokens
            self.cost = max(0.0, self.cost + cost - reservation.cost)
            if math.isclose(self.cost, 0.0, abs_tol=1e-15):
                self.cost = 0.0
