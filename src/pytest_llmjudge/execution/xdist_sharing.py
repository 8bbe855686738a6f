"""Sharing judge calls between pytest-xdist workers, through the on-disk cache.

Every xdist worker collects the whole session. To make each judge call once per run,
whichever worker runs the item that needs it, calls are partitioned by their identity
(case, rubrics, sample): worker ``i`` of ``n`` owns the calls whose ``sha256(identity)``
satisfies ``int(digest[:8], 16) % n == i``. After collection a worker submits only the
calls it owns, and writes their replies to the shared cache as usual; when one of its items
needs a call it doesn't own, it waits for the owner's reply to appear in the cache (for
each cache key of the call, re-asks included). An owner that gives up on a call (provider
failure after its retries) leaves a failure marker for this run
(``<cache>/v1/failures/<run id>/<key>``), so the others report the same error instead of
waiting.

Outputs of a suite's output target (the model under test) are shared the same way: the
worker that owns ``("output", case key)`` produces the case's output once and publishes it
(or the target's error) under ``<cache>/v1/outputs/<run id>/``; the others wait for it. So
every worker judges the same text even when the target is not deterministic, and the model
is called once per case.

These per-run directories (failure markers and outputs) are only useful during their run;
worker 0 of each run removes those of runs that ended more than a day ago
(:meth:`WorkerShare.prune_stale`), so a cache directory kept between CI jobs doesn't grow.

Degenerate cases: with the cache off there is nothing to share through, so every worker
calls (and produces outputs) for itself: correct, but duplicated, and a non-deterministic
target may then give the workers different outputs. A worker that waits longer than
``wait_seconds`` (the owner crashed) stops waiting and calls or produces for itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pytest_llmjudge.execution.cache import CachedReply, JudgeCache
from pytest_llmjudge.util.atomic import write_atomic

T = TypeVar("T")


@dataclass(frozen=True)
class WorkerShare:
    index: int
    count: int
    run_id: str
    wait_seconds: float = 600.0
    run_started: float | None = None
    """The controller's clock (Unix time) before any worker started: a cache entry created after
    it is this run's. None when the controller did not say (each runner then uses its own start)."""

    def owns(self, identity: str) -> bool:
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()
        return int(digest[:8], 16) % self.count == self.index

    def _failure_path(self, cache: JudgeCache, key: str) -> Path | None:
        if cache.root is None:
            return None
        return cache.root / "failures" / self.run_id / key

    def mark_failed(self, cache: JudgeCache, key: str, message: str) -> None:
        path = self._failure_path(cache, key)
        if path is not None:
            _write_atomically(path, message)

    async def _poll(self, look: Callable[[], T | None]) -> T | None:
        """``look()``'s first answer other than None, polling with back-off; None after ``wait_seconds``."""
        deadline = time.monotonic() + self.wait_seconds
        delay = 0.02
        while time.monotonic() < deadline:
            found = look()
            if found is not None:
                return found
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        return None

    async def wait_for_owner(self, cache: JudgeCache, key: str, since: float | None = None) -> CachedReply | str | None:
        """The owner's cached reply, its failure message, or None after ``wait_seconds``.

        ``since`` (Unix time): entries stored before it don't count; the owner is replacing
        one (an earlier run's reply that did not parse: ``execution/runner.py``).
        """
        failure = self._failure_path(cache, key)

        def look() -> CachedReply | str | None:
            hit = cache.get(key)
            if hit is not None and (since is None or (hit.created is not None and hit.created >= since)):
                return hit
            if failure is not None and failure.exists():
                return failure.read_text(encoding="utf-8")
            return None

        return await self._poll(look)

    def prune_stale(self, cache: JudgeCache, max_age_seconds: float = 86400.0) -> int:
        """Remove other runs' failure and output directories untouched for ``max_age_seconds``.

        Only worker 0 prunes (the workers of one run never race each other), and only
        directories old enough that no run can still be using them. Returns how many went.
        """
        if self.index != 0 or cache.root is None:
            return 0
        removed = 0
        cutoff = time.time() - max_age_seconds
        for kind in ("failures", "outputs"):
            parent = cache.root / kind
            try:
                runs = list(parent.iterdir())
            except OSError:
                continue
            for run in runs:
                try:
                    stale = run.name != self.run_id and run.stat().st_mtime < cutoff
                except OSError:
                    continue
                if stale:
                    shutil.rmtree(run, ignore_errors=True)
                    removed += 1
        return removed

    def _output_path(self, cache: JudgeCache, identity: str) -> Path | None:
        if cache.root is None:
            return None
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()
        return cache.root / "outputs" / self.run_id / f"{digest}.json"

    def publish_output(self, cache: JudgeCache, identity: str, *, text: str | None, error: str | None) -> None:
        """Make an owned output (or its target's error) visible to the other workers."""
        path = self._output_path(cache, identity)
        if path is not None:
            _write_atomically(path, json.dumps({"output": text, "error": error}, ensure_ascii=False))

    async def wait_for_output(self, cache: JudgeCache, identity: str) -> tuple[str | None, str | None] | None:
        """``(output, error)`` as the owner published it, or None after ``wait_seconds``."""
        path = self._output_path(cache, identity)
        if path is None:
            return None

        def look() -> tuple[str | None, str | None] | None:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            output, error = record.get("output"), record.get("error")
            return (output if isinstance(output, str) else None), (str(error) if error is not None else None)

        return await self._poll(look)


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the whole file or none of it."""
    # Not fsynced: the hand-off lives as long as this run, which a machine crash ends anyway.
    write_atomic(path, text, fsync=False, private=False)
