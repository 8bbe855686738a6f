"""A requests-per-minute limit shared by all concurrent judge calls of a run.

Requests are spaced evenly: the n-th request may start no earlier than
``first_start + n * 60 / rpm``. Even spacing (rather than a burst of ``rpm`` requests then
a wait) keeps providers' own per-second limits happy. ``rpm=None`` means no limit.
"""

from __future__ import annotations

import asyncio
import time


class RateLimiter:
    def __init__(self, requests_per_minute: float | None) -> None:
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests per minute must be positive")
        self._interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._next_start = 0.0
        self._lock: asyncio.Lock | None = None

    async def acquire(self) -> None:
        if not self._interval:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self._interval
        if start > now:
            await asyncio.sleep(start - now)
