"""Live progress of a run's judge calls: counters in, one line of text out.

``Counters`` are what one process knows (calls planned and done, cache hits, failed calls,
tokens); under pytest-xdist the controller adds the workers' counters up (``+``).
``Progress`` turns them into the line shown while the run goes on::

    llmjudge: 37/200 judge calls, 25 provider requests, 12 cache hits, 1 failed, 0:12 elapsed, ETA 0:53, est. $0.0042 so far

Under xdist every worker plans the calls of the items it may run and one of them pays for
each prompt; the others take its reply ("N shared between workers"), so ``planned`` counts
a prompt once per worker that asked for it, as the summary's accounting does.

* elapsed: since the progress started (the calls were planned), on the injected clock;
* ETA: the remaining calls at the average rate so far, ``elapsed / done * (planned - done)``.
  Cache hits finish almost at once, so while they dominate the estimate is low; it
  corrects itself as provider calls finish. ``ETA --`` before the first call is done (no
  rate yet), none once all are done;
* cost: tokens so far times the price of the run's one judge model (USD per 1M tokens, the
  table in ``report/assemble.py`` plus ``llmjudge_prices``), as the final accounting line
  computes it. ``cost n/a`` when no price is known for the model, or when the run has
  several judge models (the tokens are not split per model): never a guess.

Degenerate cases: nothing planned gives no line (``text`` returns None); ``done`` above
``planned`` (a re-asked unparseable reply counts as a call) shows ``planned`` as done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Counters:
    """One process's judge-call counters (all whole numbers, so they sum across workers)."""

    planned: int = 0
    done: int = 0
    cache_hits: int = 0
    failed: int = 0
    provider_calls: int = 0
    shared_hits: int = 0
    """Calls answered by another xdist worker's reply (the summary's "shared between workers")."""
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Counters) -> Counters:
        return Counters(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Counters:
        """From :meth:`to_dict` output; unknown keys are ignored, missing ones are 0."""
        return cls(**{f.name: int(data.get(f.name, 0)) for f in fields(cls)})


def _duration(seconds: float) -> str:
    """``0:07``, ``12:30``, ``1:02:03``."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Renders :class:`Counters` as the progress line (see the module docstring).

    ``price`` is ``(input, output)`` USD per 1M tokens of the run's judge model, or None
    when it is unknown; ``clock`` returns seconds (``time.monotonic`` in a run, a fake in tests).
    """

    def __init__(self, clock: Callable[[], float], price: tuple[float, float] | None) -> None:
        self.clock = clock
        self.price = price
        self.started = clock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def eta(self, counters: Counters) -> float | None:
        """Seconds to go at the rate so far, or None when there is no rate yet (or nothing left)."""
        done = min(counters.done, counters.planned)
        if done == 0 or done >= counters.planned:
            return None
        return self.elapsed() / done * (counters.planned - done)

    def cost(self, counters: Counters) -> float | None:
        if self.price is None:
            return None
        price_in, price_out = self.price
        return (counters.input_tokens * price_in + counters.output_tokens * price_out) / 1e6

    def text(self, counters: Counters) -> str | None:
        if counters.planned <= 0:
            return None
        done = min(counters.done, counters.planned)
        # The same words and counts as the final accounting line, so the two never seem to disagree.
        parts = [
            f"llmjudge: {done}/{counters.planned} judge calls",
            f"{counters.provider_calls} provider requests",
            f"{counters.cache_hits} cache hits",
        ]
        if counters.shared_hits:
            parts.append(f"{counters.shared_hits} shared between workers")
        if counters.failed:
            parts.append(f"{counters.failed} failed")
        parts.append(f"{_duration(self.elapsed())} elapsed")
        eta = self.eta(counters)
        if done < counters.planned:
            parts.append("ETA --" if eta is None else f"ETA {_duration(eta)}")
        cost = self.cost(counters)
        parts.append("cost n/a" if cost is None else f"est. ${cost:.4f} so far")
        return ", ".join(parts)
