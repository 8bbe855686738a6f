"""Batch mode (``--llmjudge-batch``): uncached judge requests through the providers' batch APIs.

Runs once, after collection and before the judge calls are planned
(``execution/batch_phase.py``):

1. every judge call the selected items need (this worker's share under pytest-xdist) is
   built exactly as the online path builds it -- output targets are run first -- and its
   first request's cache key computed; requests already cached are dropped;
2. the rest are grouped by provider endpoint and, for providers with a batch API (OpenAI
   Batch API, Anthropic Message Batches; ``judges/batches.py``), submitted in batches of at
   most the provider's limits, with the cache key as ``custom_id``;
3. each batch id is recorded *before* polling, in ``<cache>/v1/batches/<h>.json`` where
   ``h`` hashes the endpoint and the batch's sorted keys, together with those keys. A run
   killed while a batch is pending leaves the record; the next run resumes every recorded
   batch of the same endpoint that holds a key it needs and submits only what no recorded
   batch covers, so nothing is paid twice;
4. batches are polled every ``--llmjudge-batch-poll`` seconds with a progress line; when
   one ends its replies go into the judge cache under the same keys as online replies (all
   of them in one ``put_many``: one write and one fsync in the directory store), and then
   its record is removed;
5. then the items run as usual: everything the batches answered is a cache hit. What they
   did not answer (per-request errors, an expired or failed batch, providers without a
   batch API, re-asks for unusable replies) is requested online, with the usual retries.

Degenerate cases: nothing uncached means no batch at all; ``--llmjudge-cache`` other than
``use`` is refused (the replies travel through the cache); ``--llmjudge-batch-wait``
exceeded stops the run (exit code 2, nothing passes) with the batches still recorded, so a
re-run collects them; a record whose keys are all cached already is deleted; the replies of
a resumed batch for keys this run doesn't need stay in a record of their own (the run has
no request to verify them against in the cache), so a later run needing them collects
them from the ended batch instead of paying again; an unreadable record is ignored. The
one window that can still pay twice is a kill between the provider accepting a batch and
the record reaching the disk (one HTTP round trip).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import queue
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_llmjudge.errors import BatchPending, LLMJudgeError, SpendCapReached
from pytest_llmjudge.execution.cache import JudgeCache, redact
from pytest_llmjudge.execution.cache_directory import writer_prefix
from pytest_llmjudge.judges.base import JudgeProvider, LazyProvider, ProviderRequest
from pytest_llmjudge.judges.batches import BatchAdapter, BatchProgress, BatchRequest, adapter_for, describe_error
from pytest_llmjudge.util.atomic import write_atomic

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scorer import Scorer
    from pytest_llmjudge.suite.model import Case, Suite

RECORD_VERSION = 1
PROGRESS_EVERY = 10.0
"""Seconds between progress lines while nothing changes."""
MAX_POLL_FAILURES = 5
"""Polls of one batch failing in a row (each after the SDK's own retries) before giving up on it."""


@dataclass
class BatchSummary:
    requests: int = 0
    """Uncached requests the run needed."""
    cached: int = 0
    """Requests already in the cache."""
    submitted: int = 0
    """Requests sent in new batches."""
    resumed: int = 0
    """Recorded batches picked up again."""
    batches: list[str] = field(default_factory=list)
    answered: int = 0
    """Replies written to the cache."""
    errors: int = 0
    online: int = 0
    """Requests left for the online path (no batch API, or the batch couldn't answer)."""
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class _Record:
    path: Path
    batch_id: str
    keys: list[str]


class BatchRecords:
    """Pending-batch records under ``<cache>/v1/batches`` (atomic writes)."""

    def __init__(self, cache: JudgeCache) -> None:
        assert cache.root is not None
        self.root = cache.root / "batches"

    @staticmethod
    def endpoint_label(provider: str, base_url: str | None) -> str:
        return f"{provider} {base_url or '(default endpoint)'}"

    def path_for(self, endpoint: str, keys: Iterable[str]) -> Path:
        digest = hashlib.sha256((endpoint + "\n" + "\n".join(sorted(keys))).encode("utf-8")).hexdigest()
        return self.root / f"{digest}.json"

    def save(self, endpoint: str, batch_id: str, keys: Sequence[str]) -> _Record:
        path = self.path_for(endpoint, keys)
        record = {
            "version": RECORD_VERSION,
            "endpoint": endpoint,
            "batch_id": batch_id,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "keys": sorted(keys),
        }
        # fsynced: the record is how a re-run finds a batch already paid for.
        write_atomic(path, json.dumps(record), fsync=True, private=True, prefix=writer_prefix(), suffix=".json")
        return _Record(path, batch_id, sorted(keys))

    def load(self, endpoint: str) -> list[_Record]:
        records: list[_Record] = []
        if not self.root.is_dir():
            return records
        for path in sorted(self.root.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("endpoint") != endpoint:
                    continue
                keys = [str(key) for key in data["keys"]]
                records.append(_Record(path, str(data["batch_id"]), keys))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
        return records

    @staticmethod
    def remove(record: _Record) -> None:
        try:
            record.path.unlink()
        except OSError:
            pass


@dataclass
class _Endpoint:
    provider: JudgeProvider
    name: str
    base_url: str | None
    requests: dict[str, ProviderRequest] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return BatchRecords.endpoint_label(self.name, self.base_url)


class BatchPhase:
    """Sends a run's uncached judge requests as provider batches and fills the cache."""

    def __init__(
        self,
        board: Scorer,
        *,
        poll_seconds: float = 30.0,
        wait_seconds: float | None = None,
        report: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.board = board
        self.cache = board.runner.cache
        self.poll_seconds = poll_seconds
        self.wait_seconds = wait_seconds
        self.report = report
        self.summary = BatchSummary()
        self._messages: queue.SimpleQueue[str] = queue.SimpleQueue()

    # -- main thread ---------------------------------------------------------------------

    def run(
        self,
        needs: Iterable[tuple[Suite, Case, str]],
        requests: Iterable[tuple[JudgeProvider, ProviderRequest]] = (),
    ) -> BatchSummary:
        """Do the whole phase; blocks until every batch ended (or the wait ran out).

        ``needs``: the scorer's (suite, case, metric) calls; ``requests``: other judge
        requests with their provider (a ranking's pairwise battles), batched alike."""
        if self.cache.mode != "use" or self.cache.root is None:
            raise LLMJudgeError(
                "--llmjudge-batch needs the judge cache in mode 'use' (replies travel through it); "
                "to re-judge in batch, point --llmjudge-cache-dir at an empty directory"
            )
        endpoints = self._collect(needs, requests)
        if not endpoints:
            return self.summary
        runner = self.board.runner
        future = runner.submit(lambda: self._run_all(endpoints))
        self._wait(future)
        error = future.exception() if not future.cancelled() else None
        if isinstance(error, LLMJudgeError):
            raise error
        if error is not None:
            raise LLMJudgeError(redact(f"batch mode failed: {describe_error(error)}", runner.secrets)) from None
        return self.summary

    def _collect(
        self, needs: Iterable[tuple[Suite, Case, str]], extra: Iterable[tuple[JudgeProvider, ProviderRequest]]
    ) -> dict[int, _Endpoint]:
        board = self.board
        calls = [call for call in board.planned_calls(needs) if board.owns_call(call[1], call[2], call[3])]
        outputs = {case.key: board.output_future(suite, case) for suite, case, _, _ in calls if case.output is None}
        for future in outputs.values():
            self._wait(future)
        endpoints: dict[int, _Endpoint] = {}  # by provider client (endpoint and credentials)
        seen: set[str] = set()
        for suite, case, group, sample in calls:
            output = case.output
            if output is None:
                try:
                    output = outputs[case.key].result()
                except Exception:  # the online path reports the failed output on the item
                    continue
            self._add(
                endpoints,
                seen,
                board.provider_for(suite.judge),
                board.judge_request(suite, case, group, sample, output),
            )
        for provider, request in extra:
            self._add(endpoints, seen, provider, request)
        return endpoints

    def _add(
        self, endpoints: dict[int, _Endpoint], seen: set[str], provider: JudgeProvider, request: ProviderRequest
    ) -> None:
        """``request`` into its endpoint's batch, unless it is a repeat or already cached."""
        key = request.cache_key
        if key in seen:
            return
        seen.add(key)
        if self.cache.get(key) is not None:
            self.summary.cached += 1
            return
        spend = self.board.spend
        if spend is not None:
            try:  # a request past the spend cap is not batched: online, the cap refuses it and its items fail
                spend.reserve(request)
            except SpendCapReached:
                return
        self.summary.requests += 1
        endpoint = endpoints.get(id(provider))
        if endpoint is None:
            endpoint = _Endpoint(provider, request.provider, request.base_url)
            endpoints[id(provider)] = endpoint
        endpoint.requests[key] = request

    def _wait(self, future: concurrent.futures.Future[Any]) -> None:
        """Block on ``future``, printing queued progress lines (Ctrl-C still interrupts)."""
        while True:
            self._drain()
            try:
                future.exception(timeout=0.2)
                break
            except concurrent.futures.TimeoutError:
                continue
            except concurrent.futures.CancelledError:
                break
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                line = self._messages.get_nowait()
            except queue.Empty:
                return
            self.report(line)

    def _say(self, line: str) -> None:
        self._messages.put(redact(line, self.board.runner.secrets))

    # -- runner loop ---------------------------------------------------------------------

    async def _run_all(self, endpoints: dict[int, _Endpoint]) -> None:
        results = await asyncio.gather(
            *(self._run_endpoint(endpoint) for endpoint in endpoints.values()), return_exceptions=True
        )
        pending = [str(r) for r in results if isinstance(r, BatchPending)]
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, BatchPending):
                raise result
        if pending:
            raise BatchPending("; ".join(pending))

    async def _run_endpoint(self, endpoint: _Endpoint) -> None:
        records = BatchRecords(self.cache)
        provider = endpoint.provider.resolve() if isinstance(endpoint.provider, LazyProvider) else endpoint.provider
        adapter = adapter_for(provider)
        if adapter is None:
            self.summary.online += len(endpoint.requests)
            self._say(
                f"llmjudge: provider {endpoint.name} has no batch API; its {len(endpoint.requests)} "
                "request(s) go online"
            )
            return
        wanted = endpoint.requests
        active: list[_Record] = []
        covered: set[str] = set()
        for record in records.load(endpoint.label):
            keys = set(record.keys)
            if not keys & wanted.keys():
                if all(self.cache.get(key) is not None for key in keys):
                    records.remove(record)  # answered and cached by an earlier run
                continue
            try:
                await adapter.progress(record.batch_id)
            except Exception as exc:
                if getattr(exc, "status_code", None) == 404:  # the provider doesn't know it: never ran
                    records.remove(record)
                    self._say(f"llmjudge: recorded {endpoint.name} batch {record.batch_id} is unknown; resubmitting")
                    continue
            active.append(record)
            covered |= keys
            self.summary.resumed += 1
            self._say(f"llmjudge: resuming {endpoint.name} batch {record.batch_id} ({len(keys)} requests)")
        fresh = [BatchRequest(key, request) for key, request in wanted.items() if key not in covered]
        for chunk in _chunks(fresh, adapter):
            try:
                batch_id = await adapter.submit(chunk)
            except Exception as exc:  # the provider refused the batch: these go online
                self.summary.online += len(chunk)
                self._say(f"llmjudge: {endpoint.name} batch not accepted ({describe_error(exc)}); going online")
                continue
            active.append(records.save(endpoint.label, batch_id, [item.key for item in chunk]))
            self.summary.submitted += len(chunk)
            self._say(f"llmjudge: submitted {endpoint.name} batch {batch_id} ({len(chunk)} requests)")
        self.summary.batches.extend(record.batch_id for record in active)
        await self._poll(endpoint, adapter, active, records)

    async def _poll(
        self, endpoint: _Endpoint, adapter: BatchAdapter, active: list[_Record], records: BatchRecords
    ) -> None:
        started = time.monotonic()
        last: dict[str, tuple[BatchProgress | None, float]] = {record.batch_id: (None, 0.0) for record in active}
        failures: dict[str, int] = {record.batch_id: 0 for record in active}
        while active:
            for record in list(active):
                try:
                    progress = await adapter.progress(record.batch_id)
                except Exception as exc:
                    failures[record.batch_id] += 1
                    self._say(
                        f"llmjudge: polling {endpoint.name} batch {record.batch_id} failed: {describe_error(exc)}"
                    )
                    if failures[record.batch_id] >= MAX_POLL_FAILURES:
                        # Give up on it for this run; the record stays, so a re-run tries again.
                        active.remove(record)
                        self.summary.online += sum(1 for key in record.keys if key in endpoint.requests)
                    continue
                failures[record.batch_id] = 0
                previous, printed_at = last[record.batch_id]
                now = time.monotonic()
                changed = previous is None or (previous.status, previous.done) != (progress.status, progress.done)
                if changed or now - printed_at >= PROGRESS_EVERY:
                    self._say(
                        f"llmjudge: {endpoint.name} batch {record.batch_id} {progress.status}: "
                        f"{progress.done}/{progress.total} done ({now - started:.0f} s)"
                    )
                    last[record.batch_id] = (progress, now)
                for problem in progress.problems:
                    self._say(f"llmjudge: {endpoint.name} batch {record.batch_id}: {problem}")
                if progress.ended:
                    await self._collect_results(endpoint, adapter, record, records)
                    active.remove(record)
            if not active:
                break
            if self.wait_seconds is not None and time.monotonic() - started >= self.wait_seconds:
                ids = ", ".join(record.batch_id for record in active)
                raise BatchPending(
                    f"{endpoint.name} batch(es) {ids} still pending after {self.wait_seconds:g} s "
                    "(--llmjudge-batch-wait); they are recorded in the cache directory: re-run to collect them"
                )
            await asyncio.sleep(self.poll_seconds)

    async def _collect_results(
        self, endpoint: _Endpoint, adapter: BatchAdapter, record: _Record, records: BatchRecords
    ) -> None:
        try:
            results = await adapter.results(record.batch_id, endpoint.requests)
        except Exception as exc:
            self._say(f"llmjudge: reading {endpoint.name} batch {record.batch_id} failed: {describe_error(exc)}")
            results = None
        answered = errors = 0
        if results is not None:
            entries: list[tuple[str, bytes]] = []
            for key, reply in results.replies.items():
                if key not in record.keys:
                    continue
                request = endpoint.requests.get(key)
                if request is None:
                    # A key an earlier run needed: without its request the entry couldn't be
                    # verified on read (execution/cache.py). The record keeps it (below).
                    continue
                data, _ = self.cache.encode(key, request, reply)
                if data is not None:
                    entries.append((key, data))
                self.board.runner.received(key)  # paid for in this run: not asked again if unparseable
                answered += 1
                self.summary.input_tokens += reply.usage.input_tokens
                self.summary.output_tokens += reply.usage.output_tokens
            if entries and self.cache.store is not None:
                # The whole batch's replies in one write and one fsync, durable before its record goes.
                self.cache.store.put_many(entries)
            errors = sum(1 for key in results.errors if key in record.keys)
            records.remove(record)
            unneeded = [key for key in record.keys if key not in endpoint.requests and key in results.replies]
            if unneeded:  # a later run that needs them collects them from the ended batch, unpaid
                records.save(endpoint.label, record.batch_id, unneeded)
        mine = [key for key in record.keys if key in endpoint.requests]
        missing = sum(1 for key in mine if self.cache.get(key) is None)
        self.summary.answered += answered
        self.summary.errors += errors
        self.summary.online += missing
        detail = f", {missing} left for the online path" if missing else ""
        self._say(
            f"llmjudge: {endpoint.name} batch {record.batch_id} ended: {answered} replies cached, "
            f"{errors} failed{detail}"
        )


def _chunks(items: Sequence[BatchRequest], adapter: BatchAdapter) -> Iterable[list[BatchRequest]]:
    chunk: list[BatchRequest] = []
    size = 0
    for item in items:
        line = adapter.line_size(item)
        if chunk and (len(chunk) >= adapter.max_requests or size + line > adapter.max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += line
    if chunk:
        yield chunk
