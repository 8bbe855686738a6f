"""The judge runner: every planned judge call of a run, concurrently, on one event loop.

After collection the plugin submits all judge calls of the selected items at once; the
runner executes them on a background event loop with at most ``concurrency`` provider
requests in flight (per provider endpoint: optional requests/tokens-per-minute budgets and
a window that 429s shrink, see ``execution/ratelimit.py``), while pytest runs items in
the main thread. Each item blocks only on its own calls' futures, so N calls take about
``ceil(N / concurrency)`` round trips in total (design.md, "Data flow"). An item whose calls
are done still waits until the loop has nothing to do but wait on the network
(:meth:`JudgeRunner.yield_to_calls`): two busy threads trade the GIL at every system call
either makes, a large share of a cold run's CPU against a local judge (docs/scale.md).

Per call:

1. look the request up in the cache (entries are verified on read; a rejected one is a
   miss, counted in ``RunnerStats.cache_rejected``, and is overwritten by the fresh reply);
   on a miss, queue for a rate ticket and a concurrency slot, and only then claim the key's
   lease and re-read the entry (``execution/leasing.py``): a reply stored meanwhile is used
   unpaid; a lease another process holds means it is paying for this very prompt, so the
   slot is given back and its reply waited for (polling with back-off, the wait said on the
   terminal) until the entry appears or the lease ends, for at most ``lease_ttl`` seconds
   (then the holder is taken as hung, and this runner pays without the lease). A held
   lease is renewed by a heartbeat while the call is in flight and released on every way
   out; then call the provider (each attempt first reserved against the run's spend cap,
   ``execution/spend.py``: one past it is not sent, and the call is unscored "not judged:
   ..."), retrying retryable failures (429, 5xx,
   timeouts, dropped connections) with exponential back-off and full
   jitter, or the server's ``Retry-After`` when it sends one, either capped at ``backoff_max``
   (30 s; so is the pause a 429 imposes on its endpoint, ``ratelimit.py``); the sleep happens
   outside the concurrency slot so other calls proceed;
2. store the reply in the cache (redacted: see ``execution/cache.py``) *before* giving back
   its concurrency slot and before parsing it (paid-for work survives a crash, and a kill
   loses at most one round), then release the lease. Replies are stored in batches (group
   commit): the entry is encoded on the loop, and one job in a worker thread at a time
   writes every entry waiting with one ``store.put_many`` (for the directory store: one
   write and one fsync), so neither an fsync nor a thread hop is paid per reply;
3. parse; if the reply is unusable, re-ask with a note naming the problem (a changed
   prompt, hence its own cache entry) up to ``max_reasks`` times, keeping every valid
   verdict seen; rubrics still without one are unscored with the parser's reason (and the
   raw reply, for the reports).

A cached reply that does not parse is not a usable hit for a fresh run: an earlier run
stored it, and replaying it would repeat that run's failure without a word. The prompt
is asked again (counted in ``RunnerStats.cache_unparseable``) and the new reply
overwrites it; a reply this runner paid for, or another xdist worker stored during this
run, is used as it is, so a run never pays twice for one unparseable prompt (the
re-asks with a note are other prompts). A non-owning xdist worker waits for the owner's
fresh reply instead of asking itself.

Under pytest-xdist a :class:`~pytest_llmjudge.execution.xdist_sharing.WorkerShare` makes each
call once per run across workers (see that module).

A provider failure after the last retry is an outcome with ``error`` set, never an
exception that escapes into pytest, and never a score; its message names the endpoint
(``judges/diagnosis.py``, credentials removed), and ``JudgeRunner.endpoints`` counts each
endpoint's calls and failures by cause for the run's headline. Identical calls submitted twice
share one future. Error messages pass through :func:`redact` so configured API keys can't
leak into reports; the same secrets are redacted from replies before they are cached.

At start the runner removes what killed runs left in the cache (``cache.cleanup``: the
temporary files of dead writers).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import selectors
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from pytest_llmjudge.errors import ProviderCallError, ProviderError, UnscoredError
from pytest_llmjudge.execution.cache import JudgeCache, Lease, cache_key, redact
from pytest_llmjudge.execution.leasing import Holder, LeaseKeeper
from pytest_llmjudge.execution.ratelimit import CONGESTION_STATUSES, Budget, Budgets
from pytest_llmjudge.execution.spend import NOT_JUDGED, Reservation, SpendCap
from pytest_llmjudge.execution.xdist_sharing import WorkerShare
from pytest_llmjudge.judges.base import (
    MAX_REPLY_BYTES,
    JudgeProvider,
    LazyProvider,
    ProviderReply,
    ProviderRequest,
    Usage,
    reply_too_large,
)
from pytest_llmjudge.judges.diagnosis import PROVIDER_FAILED, EndpointTally, classify, endpoint_label
from pytest_llmjudge.judges.logprobs import score_distribution
from pytest_llmjudge.judges.parsing import Verdict, parse_reply
from pytest_llmjudge.judges.rubrics import Rubric

T = TypeVar("T")


def _failure_text(exc: ProviderError) -> str:
    """An unscored call's reason: the provider's failure, or the spend cap that kept it from being sent."""
    text = str(exc)
    return text if text.startswith(NOT_JUDGED) else f"{PROVIDER_FAILED}{text}"


@dataclass(frozen=True)
class CallOutcome:
    """What one judge call produced: a verdict or an error per rubric."""

    results: dict[str, Verdict | UnscoredError]
    error: str | None = None
    cached: bool = False
    provider_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    fingerprint: str | None = None
    """The served backend's ``system_fingerprint`` of the reply used, when the provider gave one."""


@dataclass(frozen=True)
class CallResult(Generic[T]):
    """What one generic judge call (:meth:`JudgeRunner.submit_call`) produced.

    ``value`` is what the caller's ``parse`` made of the reply, or None with ``error`` set
    (a provider failure, or a reply still unusable after the re-asks). ``raw_reply`` is the
    last reply text seen, for reports.
    """

    value: T | None
    error: str | None = None
    cached: bool = False
    provider_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    raw_reply: str | None = None


@dataclass
class RunnerStats:
    submitted: int = 0
    finished: int = 0
    cache_hits: int = 0
    shared_hits: int = 0
    provider_calls: int = 0
    retries: int = 0
    failed_calls: int = 0
    unscored: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    batched: int = 0
    """Replies that came from provider batches (``--llmjudge-batch``), then read from the cache."""
    rate_limited: int = 0
    """Provider answers 429/529 (each shrinks the provider's adaptive window; see ratelimit.py)."""
    cache_rejected: int = 0
    """Cache entries that failed verification (misplaced, edited, wrongly shaped, unsigned): re-asked."""
    cache_unparseable: int = 0
    """Cached replies of earlier runs that did not parse: asked again instead of replayed."""
    not_needed: int = 0
    """Judge calls sequential judging never made: their rows' verdicts settled first (``sequential.py``)."""


@dataclass
class _Asked:
    """Accounting of one call's asks (:meth:`JudgeRunner._ask`), filled in as they happen."""

    model: str
    cached: bool = True
    fingerprint: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    problem: str | None = None
    """What was still wrong with the last reply, if anything."""

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens)


class _Busy(Exception):
    """Raised inside the concurrency slot when another process holds the lease: wait outside it."""

    def __init__(self, holder: Holder) -> None:
        super().__init__(holder.owner)
        self.holder = holder


class _SignallingSelector(selectors.DefaultSelector):
    """The loop's selector, raising ``waiting`` while the loop has waited on I/O for a while.

    "A while" is :data:`_SETTLE` seconds with nothing ready: a judge that answers within it
    (a local server) keeps the loop busy, so items are not let in between its replies.
    """

    def __init__(self, waiting: threading.Event) -> None:
        super().__init__()
        self._waiting = waiting

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout <= _SETTLE:
            return super().select(timeout)
        ready = super().select(_SETTLE)
        if ready:
            return ready
        self._waiting.set()
        try:
            return super().select(None if timeout is None else timeout - _SETTLE)
        finally:
            self._waiting.clear()


_SETTLE = 0.001


class JudgeRunner:
    """Runs judge calls on a background event loop; thread-safe ``submit_*`` methods."""

    def __init__(
        self,
        cache: JudgeCache,
        *,
        concurrency: int = 16,
        requests_per_minute: float | None = None,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        secrets: Sequence[str] = (),
        share: WorkerShare | None = None,
        tokens_per_minute: float | None = None,
        rate_limits: Mapping[str, Budget] | None = None,
        budget_parts: int = 1,
        lease_ttl: float = 600.0,
        leases: LeaseKeeper | None = None,
        spend: SpendCap | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.cache = cache
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.lease_ttl = lease_ttl
        self.leases = leases if leases is not None else LeaseKeeper(cache, max_wait=lease_ttl)
        """Claims at send, heartbeats and waits on the cache store's leases (``execution/leasing.py``)."""
        self.spend = spend
        """The hard spend cap (``execution/spend.py``), consulted right before each request is sent."""
        for secret in secrets:
            cache.add_secret(secret)
        self.secrets = (*secrets, *cache.secrets)
        cache.check_location()  # a cache that can't be written: known before anything is paid for
        self.share = share if cache.mode == "use" and cache.writable else None
        self.stats = RunnerStats()
        self.endpoints = EndpointTally()
        """Calls and failures per judge endpoint, made by this process (not waited for)."""
        self._paid: set[str] = set()
        """Cache keys whose reply this runner got from the provider: used as they are, even unparseable."""
        self._rejected: set[str] = set()
        self.rejections: dict[str, int] = {}
        """Rejected cache entries by reason (``JudgeCache._checked``), for the summary's headline."""
        cache.on_reject = self._count_rejected
        cache.cleanup()
        self._started = time.time()
        # Per provider endpoint: rpm/tpm budgets (split between ``budget_parts`` xdist workers)
        # and the adaptive window that 429s shrink.
        self.budgets = Budgets(
            Budget(requests_per_minute, tokens_per_minute),
            rate_limits,
            max_window=concurrency,
            parts=budget_parts,
            max_pause=backoff_max,  # a Retry-After pauses the endpoint no longer than it delays a retry
        )
        self._lock = threading.Lock()
        self._futures: dict[str, concurrent.futures.Future[CallOutcome]] = {}
        self._call_futures: dict[str, concurrent.futures.Future[Any]] = {}
        self._providers: list[JudgeProvider] = []
        self._waiting_on_network = threading.Event()
        self._loop = asyncio.SelectorEventLoop(_SignallingSelector(self._waiting_on_network))
        self._semaphore: asyncio.Semaphore | None = None
        self._labels: dict[tuple[str, str, str | None, tuple[str, ...]], str] = {}
        """Endpoint labels (``_endpoint``) by (provider, model, base URL, secrets)."""
        self._to_store: list[tuple[str, bytes, Lease, asyncio.Future[None]]] = []
        """Encoded replies waiting for the next batch write: (key, entry, lease, done)."""
        self._storing = False
        self._thread = threading.Thread(target=self._loop.run_forever, name="llmjudge-runner", daemon=True)
        self._thread.start()

    def add_secret(self, secret: str | None) -> None:
        if secret:
            self.secrets = (*self.secrets, secret)
            self.cache.add_secret(secret)

    def _count_rejected(self, key: str, reason: str) -> None:
        """Count each rejected cache entry once, however often it is read (a waiter polls), by reason."""
        with self._lock:
            if key not in self._rejected:
                self.rejections[reason] = self.rejections.get(reason, 0) + 1
            self._rejected.add(key)
            self.stats.cache_rejected = len(self._rejected)

    def received(self, key: str) -> None:
        """Count the reply cached under ``key`` as this run's (a batch result): used as it is, even unparseable."""
        with self._lock:
            self._paid.add(key)

    def track_provider(self, provider: JudgeProvider) -> None:
        self._providers.append(provider)

    # -- submission (any thread) -------------------------------------------------------

    def submit(self, make: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Run an arbitrary coroutine (e.g. an output target) on the runner's loop."""

        async def wrapped() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop)

    def submit_judgment(
        self,
        provider: JudgeProvider,
        request: ProviderRequest,
        rubrics: Sequence[Rubric],
        *,
        max_reasks: int = 2,
        owner_elsewhere: bool = False,
    ) -> concurrent.futures.Future[CallOutcome]:
        """Schedule one judge call; identical calls share one future.

        ``owner_elsewhere``: another xdist worker makes this call; wait for its reply.
        """
        reply_key = request.cache_key
        key = f"{reply_key}|{','.join(r.name for r in rubrics)}|{max_reasks}"
        with self._lock:
            existing = self._futures.get(key)
            if existing is not None:
                return existing
        cached = None if owner_elsewhere else self._usable_cached_outcome(reply_key, request, tuple(rubrics))
        with self._lock:
            existing = self._futures.get(key)
            if existing is not None:
                return existing
            self.stats.submitted += 1
            if cached is not None:
                self.stats.finished += 1
                self.stats.cache_hits += 1
                future: concurrent.futures.Future[CallOutcome] = concurrent.futures.Future()
                future.set_result(cached)
            else:
                future = asyncio.run_coroutine_threadsafe(
                    self._judge(provider, request, tuple(rubrics), max_reasks, owner_elsewhere), self._loop
                )
            self._futures[key] = future
            return future

    def _usable_cached_outcome(
        self, reply_key: str, request: ProviderRequest, rubrics: tuple[Rubric, ...]
    ) -> CallOutcome | None:
        """The outcome of a call whose reply is cached and parses, read right here.

        The common case of a re-run: no event-loop round trip per call, so a fully cached
        run costs little more than reading its cache files. Anything else (a miss, a reply
        that needs a re-ask) returns None and takes the loop's full path.
        """
        hit = self.cache.get(reply_key)
        if hit is None:
            return None
        results: dict[str, Verdict | UnscoredError] = {}
        if self._merge(results, hit.reply, rubrics, request.top_logprobs is not None) is not None:
            return None
        self._count(request, None)
        return CallOutcome(
            results=results, cached=True, model=hit.reply.model or request.model, fingerprint=hit.reply.fingerprint
        )

    def _endpoint(self, request: ProviderRequest) -> str:
        # Labelled once per endpoint and set of secrets: redacting the URL per call showed in
        # a cold run's profile.
        key = (request.provider, request.model, request.base_url, self.secrets)
        label = self._labels.get(key)
        if label is None:
            label = self._labels[key] = endpoint_label(request.provider, request.model, request.base_url, self.secrets)
        return label

    def _count(self, request: ProviderRequest, failure: ProviderError | None) -> None:
        """Tally one finished judge call of this process under its endpoint (``judges/diagnosis.py``)."""
        endpoint = self._endpoint(request)
        with self._lock:
            if failure is None:
                self.endpoints.succeeded(endpoint)
            else:
                self.endpoints.failed(endpoint, *classify(failure.status, str(failure).removeprefix(f"{endpoint}: ")))

    def submit_judgment_after(
        self,
        text_future: concurrent.futures.Future[Any],
        build: Callable[[Any], tuple[JudgeProvider, ProviderRequest, Sequence[Rubric], int]],
        *,
        owner_elsewhere: bool = False,
    ) -> concurrent.futures.Future[CallOutcome]:
        """Schedule a judge call whose request depends on a not-yet-produced output."""

        async def chained() -> CallOutcome:
            value = await asyncio.wrap_future(text_future)
            provider, request, rubrics, max_reasks = build(value)
            with self._lock:
                self.stats.submitted += 1
            return await self._judge(provider, request, tuple(rubrics), max_reasks, owner_elsewhere)

        return asyncio.run_coroutine_threadsafe(chained(), self._loop)

    def submit_call(
        self,
        provider: JudgeProvider,
        request: ProviderRequest,
        parse: Callable[[str], T],
        *,
        max_reasks: int = 2,
        owner_elsewhere: bool = False,
    ) -> concurrent.futures.Future[CallResult[T]]:
        """Schedule a judge call whose reply is not rubric scores (e.g. a pairwise verdict).

        Same cache, retries, concurrency limit, xdist sharing and re-asks as
        :meth:`submit_judgment`; ``parse`` turns the reply text into a value or raises
        :class:`UnscoredError`, which triggers a re-ask (up to ``max_reasks``) and then an
        ``error`` result, never a value. Identical calls (same request, parser and re-asks)
        share one future.
        """
        name = f"{getattr(parse, '__module__', '')}.{getattr(parse, '__qualname__', type(parse).__name__)}"
        key = cache_key({**request.cache_payload(), "parse": name, "reasks": max_reasks})
        with self._lock:
            existing = self._call_futures.get(key)
            if existing is not None:
                return existing
            self.stats.submitted += 1
            future = asyncio.run_coroutine_threadsafe(
                self._call(provider, request, parse, max_reasks, owner_elsewhere), self._loop
            )
            self._call_futures[key] = future
            return future

    # -- execution (runner loop) ---------------------------------------------------------

    async def _ask(
        self,
        provider: JudgeProvider,
        request: ProviderRequest,
        interpret: Callable[[ProviderReply], str | None],
        max_reasks: int,
        owner_elsewhere: bool,
        asked: _Asked,
    ) -> None:
        """The loop every judge call runs: cache or provider, then re-asks while unusable.

        ``interpret`` folds one reply into the caller's result and returns what is still
        wrong with it (None when usable). ``asked`` accumulates the accounting as it goes,
        so a :class:`ProviderError` (raised after the last retry) leaves it complete.
        """
        current = request
        for reask in range(max_reasks + 1):
            key = current.cache_key
            found, shared = await self._find_reply(key, owner_elsewhere)
            problem = None if found is None else interpret(found)
            stale: str | None = None
            if found is not None and problem is not None and not shared and key not in self._paid:
                # An earlier run's unparseable reply: ask again rather than replay its failure.
                stale = found.text
                if owner_elsewhere and self.share is not None:
                    found, shared = await self._fresh_from_owner(key)  # the owner counts it
                else:
                    found, shared = None, False
                    with self._lock:
                        self.stats.cache_unparseable += 1
                problem = None if found is None else interpret(found)
            if found is not None:
                reply = found
                if shared:
                    asked.cached = False
                    with self._lock:
                        self.stats.shared_hits += 1
                elif asked.cached:
                    with self._lock:
                        self.stats.cache_hits += 1
            else:
                asked.cached = False
                try:
                    reply, paid = await self._call_with_retries(provider, current, key, stale)
                except ProviderError as exc:
                    if self.share is not None:
                        self.share.mark_failed(self.cache, key, str(exc))
                    raise
                if paid:
                    self._paid.add(key)
                    asked.calls += 1
                    asked.input_tokens += reply.usage.input_tokens
                    asked.output_tokens += reply.usage.output_tokens
                else:  # another process paid for it while this call was queued or waiting on its lease
                    with self._lock:
                        self.stats.shared_hits += 1
                problem = interpret(reply)
            asked.model = reply.model or asked.model
            asked.fingerprint = reply.fingerprint
            asked.problem = problem
            if asked.problem is None or reask == max_reasks:
                return
            current = replace(
                request,
                user=request.user
                + f"\n\n## Note\nReply {reask + 1} to this request could not be used ("
                + asked.problem
                + "). Reply again with only the JSON object described above.",
            )

    async def _call(
        self,
        provider: JudgeProvider,
        request: ProviderRequest,
        parse: Callable[[str], T],
        max_reasks: int,
        owner_elsewhere: bool,
    ) -> CallResult[T]:
        """:meth:`submit_call`'s work: :meth:`_ask` with a caller's parser."""
        asked = _Asked(model=request.model)
        value: T | None = None
        raw: str | None = None

        def interpret(reply: ProviderReply) -> str | None:
            nonlocal value, raw
            raw = reply.text
            try:
                value = parse(reply.text)
            except UnscoredError as exc:
                return str(exc)
            return None

        try:
            await self._ask(provider, request, interpret, max_reasks, owner_elsewhere, asked)
            error = asked.problem
            cached = asked.cached
        except ProviderError as exc:
            value, error, cached = None, _failure_text(exc), False
            if not owner_elsewhere and not error.startswith(NOT_JUDGED):
                self._count(request, exc)
        else:
            if not owner_elsewhere:
                self._count(request, None)
        result: CallResult[T] = CallResult(
            value=value if error is None else None,
            error=error,
            cached=cached,
            provider_calls=asked.calls,
            usage=asked.usage,
            model=asked.model,
            raw_reply=raw,
        )
        with self._lock:
            self.stats.finished += 1
            self.stats.input_tokens += result.usage.input_tokens
            self.stats.output_tokens += result.usage.output_tokens
            if result.error is not None:
                if result.error.startswith(PROVIDER_FAILED):
                    self.stats.failed_calls += 1
                else:
                    self.stats.unscored += 1
        return result

    async def _judge(
        self,
        provider: JudgeProvider,
        request: ProviderRequest,
        rubrics: tuple[Rubric, ...],
        max_reasks: int,
        owner_elsewhere: bool = False,
    ) -> CallOutcome:
        """:meth:`submit_judgment`'s work: :meth:`_ask` keeping every valid verdict seen."""
        asked = _Asked(model=request.model)
        results: dict[str, Verdict | UnscoredError] = {}
        try:
            await self._ask(
                provider,
                request,
                lambda reply: self._merge(results, reply, rubrics, request.top_logprobs is not None),
                max_reasks,
                owner_elsewhere,
                asked,
            )
            outcome = CallOutcome(
                results=results,
                cached=asked.cached,
                provider_calls=asked.calls,
                usage=asked.usage,
                model=asked.model,
                fingerprint=asked.fingerprint,
            )
            if not owner_elsewhere:
                self._count(request, None)
        except ProviderError as exc:
            failure = _failure_text(exc)
            if not owner_elsewhere and not failure.startswith(NOT_JUDGED):
                self._count(request, exc)
            outcome = CallOutcome(
                results={r.name: UnscoredError(failure) for r in rubrics},
                error=str(exc),
                cached=False,
                provider_calls=asked.calls,
                usage=asked.usage,
                model=asked.model,
            )
        with self._lock:
            self.stats.finished += 1
            self.stats.input_tokens += outcome.usage.input_tokens
            self.stats.output_tokens += outcome.usage.output_tokens
            if outcome.error is not None and not outcome.error.startswith(NOT_JUDGED):  # a refusal is no failure
                self.stats.failed_calls += 1
            self.stats.unscored += sum(isinstance(v, UnscoredError) for v in outcome.results.values())
        return outcome

    async def _store(self, key: str, request: ProviderRequest, reply: ProviderReply, lease: Lease) -> ProviderReply:
        """Store a reply, then let go of its lease; return the reply as stored (secrets redacted), which the run uses.

        The entry joins the batch the next write takes (:meth:`_write_stored`): this returns
        once the batch is durable.
        """
        if self.cache.mode == "off":
            return reply
        data, stored = self.cache.encode(key, request, reply)
        if data is None or not self.cache.writable:
            if data is not None:  # the cache location failed earlier this run: keep the reply in memory
                self.cache.keep(key, stored)
            lease.release()
            return stored
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._to_store.append((key, data, lease, done))
        if not self._storing:
            self._storing = True
            asyncio.get_running_loop().create_task(self._write_stored())
        try:
            await done
        except OSError as exc:  # read-only, full, not a directory: paid for, so used (cache.py)
            self.cache.failed("write", exc)
            self.cache.keep(key, stored)
        return stored

    async def _write_stored(self) -> None:
        """Write the waiting entries, a batch at a time, off the loop (an fsync would stall every call).

        One batch is in flight at a time; the replies that finish meanwhile form the next one,
        so the batches grow with the rate of replies, and each costs one thread hop and one
        ``put_many``. The worker thread only writes: the leases are let go here, on the loop,
        because a worker releasing them one system call at a time traded the GIL with the
        busy loop at each one.
        """
        loop = asyncio.get_running_loop()
        store = self.cache.store
        try:
            assert store is not None  # encode gave entries, so there is a store
            while self._to_store:
                batch, self._to_store = self._to_store, []
                try:
                    await loop.run_in_executor(None, store.put_many, [(key, data) for key, data, _, _ in batch])
                except Exception as exc:
                    outcome: BaseException | None = exc
                else:
                    outcome = None
                finally:
                    for _, _, lease, _ in batch:
                        lease.release()  # stored or not: a failed write is the caller's to report
                for *_, done in batch:
                    if not done.done():
                        if outcome is None:
                            done.set_result(None)
                        else:
                            done.set_exception(outcome)
        finally:
            self._storing = False

    @staticmethod
    def _merge(
        results: dict[str, Verdict | UnscoredError],
        reply: ProviderReply,
        rubrics: tuple[Rubric, ...],
        logprobs: bool = False,
    ) -> str | None:
        """Fold one reply's verdicts into ``results``; return what is still wrong, if anything.

        ``logprobs``: the request asked for token log-probabilities (``scoring: expected``), so
        each verdict gets the distribution at its score token, or why there is none.
        """
        try:
            parsed: dict[str, Verdict | UnscoredError] = parse_reply(reply.text, rubrics)
        except UnscoredError as exc:
            parsed = {r.name: exc for r in rubrics}
        if logprobs:
            names = tuple(r.name for r in rubrics)
            scales = {r.name: r.scale for r in rubrics}
            parsed = {
                name: replace(
                    value,
                    distribution=score_distribution(reply.text, reply.digit_tokens, name, scales[name], names),
                )
                if isinstance(value, Verdict)
                else value
                for name, value in parsed.items()
            }
        for name, value in parsed.items():
            if not isinstance(results.get(name), Verdict):
                results[name] = value
        problems = [str(v) for v in results.values() if isinstance(v, UnscoredError)]
        return "; ".join(dict.fromkeys(problems)) if problems else None

    async def _find_reply(self, key: str, owner_elsewhere: bool) -> tuple[ProviderReply | None, bool]:
        """A reply already paid for, and whether another xdist worker made it in this run.

        A reply another worker stored since this runner started counts as shared, not as
        cached, whether it was there at the first look or had to be waited for: so the
        ``cached`` flag of an item doesn't depend on which worker happened to be faster.
        """
        hit = self.cache.get(key)
        if owner_elsewhere and self.share is not None:
            if hit is None:
                waited = await self.share.wait_for_owner(self.cache, key)
                if isinstance(waited, str):
                    raise ProviderError(waited)
                return (waited.reply, True) if waited is not None else (None, False)
            if hit.created is not None and hit.created >= self._run_started():
                return hit.reply, True
        return (hit.reply if hit is not None else None), False

    def _run_started(self) -> float:
        """When this run started: entries created since are this run's (another worker's).

        The xdist controller's clock before it started any worker, when it said; else this
        runner's start less a second for workers that started later than the first writer. That
        fallback takes an earlier run's entries from the second before this one as this run's.
        """
        if self.share is not None and self.share.run_started is not None:
            return self.share.run_started
        return self._started - 1.0

    async def _fresh_from_owner(self, key: str) -> tuple[ProviderReply | None, bool]:
        """The reply the owning xdist worker stores this run for ``key`` (an earlier run's did not parse).

        ``(None, False)`` when waiting gave nothing (the owner crashed): this runner then pays.
        """
        assert self.share is not None
        waited = await self.share.wait_for_owner(self.cache, key, since=self._run_started())
        if isinstance(waited, str):
            raise ProviderError(waited)
        return (waited.reply, True) if waited is not None else (None, False)

    async def _call_with_retries(
        self, provider: JudgeProvider, request: ProviderRequest, key: str, stale: str | None = None
    ) -> tuple[ProviderReply, bool]:
        """One provider call with retries: the reply (cached under ``key``) and whether this runner paid for it.

        The key's lease is claimed once the call holds its rate ticket and concurrency slot
        (``execution/leasing.py``): a reply another process stored meanwhile is returned
        unpaid, and a lease held elsewhere is waited on outside the slot. The reply is stored
        before its concurrency slot is given back, so at any moment at most ``concurrency``
        paid-for replies are not yet on disk: a killed run loses at most one round of calls.
        The lease is released on every way out.
        """
        held: list[Lease | None] = [None]
        try:
            return await self._send(provider, request, key, stale, held)
        finally:
            if held[0] is not None:
                held[0].release()  # after a failure or a cancellation (a stored reply released it already)

    async def _send(
        self, provider: JudgeProvider, request: ProviderRequest, key: str, stale: str | None, held: list[Lease | None]
    ) -> tuple[ProviderReply, bool]:
        """:meth:`_call_with_retries`' loop; the lease it claims goes to ``held[0]`` (the caller releases it)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        budget = self.budgets.get(provider.name, request.base_url)
        if isinstance(provider, LazyProvider):
            provider.resolve()  # build the SDK client before admission, so spacing holds at the server
        attempt = 0
        lease: Lease | None = None
        while True:
            ticket = await budget.acquire(request)
            usage: Usage | None = None
            failure: ProviderCallError | None = None
            busy: Holder | None = None
            reservation: Reservation | None = None
            try:
                async with self._semaphore:
                    if lease is None:  # claimed at send, after the queue: execution/leasing.py
                        claimed = self.leases.claim(key, stale)
                        if isinstance(claimed, ProviderReply):
                            return claimed, False
                        if isinstance(claimed, Holder):
                            raise _Busy(claimed)
                        lease = held[0] = claimed
                    if self.spend is not None:  # reserve before send: raises SpendCapReached past a cap
                        reservation = self.spend.reserve(request)
                    with self._lock:
                        self.stats.provider_calls += 1
                    try:
                        reply = await provider.complete(request)
                        if len(reply.text) * 4 > MAX_REPLY_BYTES:  # maybe over the cap (a character is 1-4 bytes)
                            size = len(reply.text.encode("utf-8", "surrogatepass"))
                            if size > MAX_REPLY_BYTES:
                                raise reply_too_large(size)  # any provider's: never stored
                        usage = reply.usage
                    except ProviderCallError as exc:
                        failure = exc
                    except Exception as exc:  # a provider bug: report it on the case, don't crash the run
                        raise ProviderError(
                            redact(f"{provider.name} raised {exc.__class__.__name__}: {exc}", self.secrets)
                        ) from None
                    else:
                        return await self._store(key, request, reply, lease), True
            except _Busy as waiting:
                busy = waiting.holder
            finally:
                if reservation is not None and self.spend is not None:
                    self.spend.settle(reservation, request, usage, refused=failure is not None and bool(failure.status))
                budget.release(
                    ticket,
                    usage=usage,
                    succeeded=usage is not None,
                    status=None if failure is None else failure.status,
                    retry_after=None if failure is None else failure.retry_after,
                )
            if busy is not None:  # another process holds the lease: wait outside the slot
                waited = await self.leases.wait(key, busy, stale)
                if isinstance(waited, ProviderReply):
                    return waited, False
                lease = waited  # None: claim again; a Lease: pay without a store lease (the holder hung)
                if lease is not None:
                    held[0] = lease
                continue
            assert failure is not None
            if failure.status in CONGESTION_STATUSES:
                with self._lock:
                    self.stats.rate_limited += 1
            attempt += 1
            if not failure.retryable or attempt > self.max_retries:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise ProviderError(
                    redact(f"{self._endpoint(request)}: {failure}{tries}", self.secrets),
                    status=failure.status,
                    attempts=attempt,
                )
            with self._lock:
                self.stats.retries += 1
            if failure.retry_after is not None:
                delay = min(failure.retry_after, self.backoff_max)
            else:
                delay = random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)))
            await asyncio.sleep(delay)

    def yield_to_calls(self, timeout: float = 1.0) -> None:
        """Return once the runner's loop waits on the network (or after ``timeout`` seconds).

        An item that runs while the loop is busy makes the two threads trade the GIL at every
        system call either one makes (the HTTP pool alone makes over a hundred per request),
        dozens of futex calls per case and much more CPU than waiting here (measured in
        docs/scale.md, "Items yield to the runner"). Items that wait here run in the loop's idle
        moments instead: between round trips when the judge has latency, and after the calls
        when it answers faster than the runner can ask. The timeout bounds the wait when the
        loop stays busy; a stopped runner has nothing to wait for.
        """
        if self._thread.is_alive():
            self._waiting_on_network.wait(timeout)

    # -- shutdown ----------------------------------------------------------------------

    def close(self) -> None:
        """Cancel what is still pending, close provider clients, stop the loop, let go of cache leases."""
        if not self._thread.is_alive():
            return

        async def shutdown() -> None:
            current = asyncio.current_task()
            for task in asyncio.all_tasks():
                if task is not current:
                    task.cancel()
            for provider in self._providers:
                try:
                    await provider.aclose()
                except Exception:  # closing is best effort; the process is ending anyway
                    pass

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=10)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
        self.cache.close()
