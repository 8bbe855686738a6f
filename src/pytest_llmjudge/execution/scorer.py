"""Where every score of a run comes from: recorded values, judge calls, reference metrics.

The plugin hands the scorer all (suite, case, metric) needs of the selected items right
after collection (:meth:`Scorer.plan`); judge calls for them go to the runner at once,
grouped as the suite's judge mode says (one rubric per request, or all rubrics of a case in
one compound request; ``repeats`` samples each). Items then ask for their score
(:meth:`Scorer.score`) and block only on their own calls.

Groups are formed from everything a case needs in its suite, not from what happens to be
selected, so ``-k`` never changes a compound prompt (and so never invalidates the cache).

Degenerate cases, all reported as an unscored :class:`Score` with ``error`` set (never a
pass): a recorded score of ``null``; a rubric that needs the input or reference the case
lacks; an output target that raises, returns a non-string or runs past its timeout; a
provider that fails after
its retries; a reply that stays unparseable after its re-asks; a metric that is undefined
for the case. With ``repeats: k`` every sample must be scored; the score is their mean
(or majority, ties broken toward the lower score) and ``samples`` keeps them all.

Output targets run at most ``concurrency`` at once, each bounded by the suite's
``outputs.timeout`` or the run's ``target_timeout``. Sync targets run in daemon threads
(:class:`TargetThreads`), not in asyncio's default executor, whose threads the interpreter
joins at exit: one hung target call used to keep a finished or interrupted run alive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import math
import statistics
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pytest_llmjudge.errors import LLMJudgeError, MetricError, TargetTimeoutError, UnscoredError
from pytest_llmjudge.execution.cache import JudgeCache, secret_from_environment
from pytest_llmjudge.execution.leasing import LeaseKeeper
from pytest_llmjudge.execution.ratelimit import Budget
from pytest_llmjudge.execution.runner import CallOutcome, JudgeRunner
from pytest_llmjudge.execution.spend import NOT_JUDGED, SpendCap, SpendLimits
from pytest_llmjudge.execution.stores import open_store
from pytest_llmjudge.execution.stores.namespace import check_signing, key_id
from pytest_llmjudge.execution.xdist_sharing import WorkerShare
from pytest_llmjudge.judges.base import JudgeProvider, LazyProvider, ProviderRequest
from pytest_llmjudge.judges.logprobs import ScoreDistribution
from pytest_llmjudge.judges.parsing import Verdict
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import Rubric
from pytest_llmjudge.metrics import resolve_metric
from pytest_llmjudge.metrics.base import Metric, MetricInput
from pytest_llmjudge.metrics.rag import JUDGED_METRICS, Reply
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings
from pytest_llmjudge.suite.build import target_search_paths
from pytest_llmjudge.suite.model import Case, Suite
from pytest_llmjudge.suite.schema import JudgeConfig
from pytest_llmjudge.util.redaction import redact

ScoreSource = Literal["recorded", "judge", "metric"]


@dataclass(frozen=True)
class Score:
    """One metric's score for one case, or why there is none."""

    metric: str
    value: float | str | None
    source: ScoreSource
    justification: str | None = None
    judge: str | None = None
    cached: bool | None = None
    error: str | None = None
    samples: tuple[float, ...] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)
    higher_is_better: bool = True
    raw_reply: str | None = None
    """The judge's reply when it could not be parsed into a score (after the re-asks)."""
    identity: Mapping[str, str] | None = None
    """Who served a judge score: ``served_model`` (the replies' ``model``), ``system_fingerprint``
    (when the provider gave one) and ``rubric_version`` (the rubric's hash); see :func:`served_identity`."""

    @property
    def scored(self) -> bool:
        if self.error is not None or self.value is None:
            return False
        return not (isinstance(self.value, float) and math.isnan(self.value))

    @property
    def spread(self) -> float | None:
        return max(self.samples) - min(self.samples) if len(self.samples) > 1 else None


class _PublishedTargetError(Exception):
    """An output target's failure as the worker that ran it published it."""


def target_failure(exc: BaseException) -> str:
    """How an output target's failure reads in reports, the same in every xdist worker."""
    if isinstance(exc, _PublishedTargetError):
        return f"output target failed: {exc}"
    return f"output target failed: {_describe(exc)}"


def _describe(exc: BaseException) -> str:
    return f"{exc.__class__.__name__}: {exc}"


class TargetThreads:
    """Runs sync output-target calls in daemon threads, so a call that hangs can't keep the process alive.

    A call that runs past its timeout is abandoned: its case is unscored at once, its thread
    runs on (Python can't stop a thread) and ends with the process. Once ``limit`` abandoned
    calls are still running, new calls are refused rather than started: a target that hangs
    on every case would otherwise leave one stuck thread per case.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.abandoned = 0
        """Calls that timed out and whose thread still runs."""
        self._lock = threading.Lock()

    async def call(self, function: Callable[[Case], Any], case: Case, timeout: float, name: str, source: str) -> Any:
        """``function(case)`` in a daemon thread; :class:`TargetTimeoutError` after ``timeout`` seconds.

        ``name`` (the target) and ``source`` (where the timeout was set) go into the error.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            if self.abandoned >= self.limit:
                raise TargetTimeoutError(
                    f"{name} not started: {self.abandoned} earlier calls ran past the {timeout:g} s timeout "
                    f"({source}) and still hang"
                )
        future: asyncio.Future[Any] = loop.create_future()
        state = {"finished": False, "abandoned": False}
        context = contextvars.copy_context()

        def settle(value: Any, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def work() -> None:
            value: Any = None
            error: BaseException | None = None
            try:
                value = context.run(function, case)
            except BaseException as exc:  # handed to the waiting coroutine, like any executor
                error = exc
            with self._lock:
                state["finished"] = True
                if state["abandoned"]:
                    self.abandoned -= 1
                    return
            try:
                loop.call_soon_threadsafe(settle, value, error)
            except RuntimeError:  # the runner's loop is closed: the run ended while this call ran
                pass

        threading.Thread(target=work, name="llmjudge-target", daemon=True).start()
        done, _ = await asyncio.wait({future}, timeout=timeout)
        if not done:
            with self._lock:
                if not state["finished"]:
                    state["abandoned"] = True
                    self.abandoned += 1
                    raise TargetTimeoutError(f"{name} did not return within {timeout:g} s ({source})")
        return await future


async def _within(awaitable: Awaitable[Any], timeout: float, name: str, source: str) -> Any:
    """``awaitable``'s result, or :class:`TargetTimeoutError` once ``timeout`` seconds have passed."""
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    finally:
        if not task.done():
            task.cancel()
    if not done:
        raise TargetTimeoutError(f"{name} did not return within {timeout:g} s ({source})")
    return task.result()


def _output_identity(case: Case) -> str:
    return repr(("output", case.key))


def _unscored(metric: str, source: ScoreSource, error: str, **extra: Any) -> Score:
    return Score(metric=metric, value=None, source=source, error=error, **extra)


def combine_samples(samples: Sequence[float], how: Literal["mean", "majority"]) -> float:
    """Mean of the samples, or the most common one (ties go to the lower score)."""
    if how == "mean":
        return statistics.fmean(samples)
    counts = Counter(samples)
    best = max(counts.values())
    return min(value for value, count in counts.items() if count == best)


@dataclass(frozen=True)
class JuryChoice:
    """How a suite's jury scores one case (decided by the calibration plugin: ``calibration/jury.py``).

    ``members``: ``(judge suite, case, weight)`` per judge used (one for ``best``); ``problem``:
    why the case can't be scored by the jury (no judge passes its gate in the language).
    """

    combine: str
    members: tuple[tuple[Suite, Case, float], ...] = ()
    problem: str | None = None


TOP_LOGPROBS = 20
"""Alternatives asked per token for ``scoring: expected`` (OpenAI's maximum)."""


def scoring_of(rubric: Rubric, judge: JudgeConfig) -> Literal["sampled", "expected"]:
    """A rubric's scoring: its own ``scoring``, else the judge's."""
    return rubric.score_mode or judge.scoring


def verdict_score(
    rubric: Rubric,
    label: str,
    outcomes: Sequence[CallOutcome],
    how: Literal["mean", "majority"] = "mean",
    scoring: Literal["sampled", "expected"] = "sampled",
    fallback: Literal["unscored", "sampled"] = "unscored",
) -> Score:
    """The score the judge gave on ``rubric``: one call's outcome per sample, combined by ``how``.

    The one path from a judge's reply to a :class:`Score`, for suite items and the ``llmjudge``
    fixture alike. Unscored when any sample has no verdict for the rubric (its reason, and
    the reply that could not be read, kept); ``cached`` only when every sample was.
    """
    verdicts: list[Verdict] = []
    for outcome in outcomes:
        result = outcome.results.get(rubric.name)
        if not isinstance(result, Verdict):
            return _unscored(
                rubric.name,
                "judge",
                str(result) if result is not None else "no verdict",
                judge=label,
                cached=outcome.cached,
                higher_is_better=rubric.higher_is_better,
                raw_reply=result.raw_reply if isinstance(result, UnscoredError) else None,
            )
        verdicts.append(result)
    samples = tuple(v.score for v in verdicts)
    score = Score(
        metric=rubric.name,
        value=combine_samples(samples, how),
        source="judge",
        justification=verdicts[0].justification,
        judge=label,
        cached=all(outcome.cached for outcome in outcomes),
        samples=samples if len(samples) > 1 else (),
        higher_is_better=rubric.higher_is_better,
        identity=served_identity(rubric, outcomes),
    )
    return score if scoring == "sampled" else expected_score(score, verdicts, rubric, fallback)


def expected_score(
    sampled: Score, verdicts: Sequence[Verdict], rubric: Rubric, fallback: Literal["unscored", "sampled"]
) -> Score:
    """``scoring: expected``: the mean over samples of each one's probability-weighted score (G-Eval).

    ``detail`` keeps the distribution (probabilities averaged over the samples) and the sampled
    score. Without a distribution for every sample the score is unscored, or (``fallback:
    sampled``) the sampled score with ``detail.scoring`` saying why: never silently.
    """
    distributions = [v.distribution for v in verdicts]
    missing = next((d for d in distributions if not isinstance(d, ScoreDistribution)), None)
    if missing is not None:
        reason = missing if isinstance(missing, str) else "no token log-probabilities were asked for"
        if fallback == "unscored":
            return replace(sampled, value=None, error=f"scoring: expected: {reason}", samples=())
        return replace(sampled, detail={**sampled.detail, "scoring": f"sampled (fallback: {reason})"})
    found = [d for d in distributions if isinstance(d, ScoreDistribution)]
    expected = [d.expected for d in found]
    averaged = {s: statistics.fmean(d.probabilities[s] for d in found) for s in rubric.scale}
    detail = {
        "scoring": "expected",
        "probabilities": {str(s): round(p, 6) for s, p in averaged.items()},
        "mass": round(min(d.mass for d in found), 6),
        "sampled": sampled.value,
    }
    return replace(
        sampled,
        value=statistics.fmean(expected),
        samples=tuple(expected) if len(expected) > 1 else (),
        detail={**sampled.detail, **detail},
    )


def served_identity(rubric: Rubric, outcomes: Sequence[CallOutcome]) -> dict[str, str]:
    """The served identity behind a score: the model(s) the replies named, their fingerprint(s), the rubric hash.

    Several samples served by different models (a swap between two cached repeats) list
    each, comma-separated, so the identity can't look like one model's.
    """
    models = sorted({outcome.model for outcome in outcomes if outcome.model})
    prints = sorted({outcome.fingerprint for outcome in outcomes if outcome.fingerprint})
    identity = {"served_model": ", ".join(models), "rubric_version": rubric.version}
    if prints:
        identity["system_fingerprint"] = ", ".join(prints)
    return identity


def lease_ttl(settings: Settings) -> float:
    """How long a process waits on another's lease before it takes the holder as hung and pays.

    (The lease itself is short, ``settings.lease_ttl``, and renewed while its call is in
    flight: ``execution/leasing.py``. This bound matters where a hung holder keeps renewing,
    and for the directory store, whose leases end only with their process.)

    Its longest honest hold: every attempt timing out (``timeout`` x (retries + 1)) plus the
    longest waits between them (a ``Retry-After`` is obeyed up to 30 s), plus a margin for
    writing the reply. A shorter ttl would let a second shard pay while the first is only slow.
    """
    return settings.timeout * (settings.max_retries + 1) + 30.0 * settings.max_retries + 30.0


class Scorer:
    """Produces :class:`Score` objects; owns the judge runner and provider clients."""

    def __init__(
        self,
        registry: Registry,
        settings: Settings,
        *,
        share: WorkerShare | None = None,
        identity: str | None = None,
    ) -> None:
        self.registry = registry
        self.share = share
        self.settings = settings
        # --llmjudge-cache-url picks where replies live; run-scoped files stay in the cache dir.
        # A remote store is probed here, before any judge call: one that fails is a usage error,
        # unless --llmjudge-cache-fallback=local (execution/stores/probe.py).
        store = (
            open_store(
                settings.cache_url,
                fallback_dir=settings.cache_dir,
                unusable="local" if settings.cache_fallback == "local" else "error",
            )
            if settings.cache_url and settings.cache_mode != "off"
            else None
        )
        secret = secret_from_environment()
        self.other_key_ids: tuple[str, ...] = ()
        """Key ids of other secrets whose signed entries the shared store holds (not readable here)."""
        if store is not None and settings.cache_url:
            try:
                self.other_key_ids = check_signing(store, secret, redact(settings.cache_url))
            except BaseException:
                store.close()
                raise
        self.key_id = key_id(secret) if secret else None
        self._cache = JudgeCache(settings.cache_dir, settings.cache_mode, secret=secret, store=store)
        worker = share  # this process's place among the xdist workers, whether or not they share replies
        if share is not None:  # an xdist worker: share only through a cache the workers can write
            self._cache.check_location()
            share = self.share = share if self._cache.writable else None
        self._runner: JudgeRunner | None = None
        limits = SpendLimits(settings.max_calls, settings.max_cost, settings.max_tokens)
        # The cap is the run's total: split between the workers even when they can't share replies
        # (cache off or unwritable), where each pays for its own calls.
        self.spend = (
            SpendCap(limits.share(worker.index, worker.count) if worker is not None else limits, run_limits=limits)
            if limits.any
            else None
        )
        """The run's hard spend cap (this worker's share of it under xdist), or None; ``execution/spend.py``."""
        self._lock = threading.RLock()
        self._providers: dict[tuple[str, str | None, str | None], JudgeProvider] = {}
        self._calls: dict[tuple[str, tuple[str, ...], int], concurrent.futures.Future[CallOutcome]] = {}
        self._outputs: dict[str, concurrent.futures.Future[str]] = {}
        self._judged: dict[tuple[str, tuple[str, ...], int], concurrent.futures.Future[Score]] = {}
        self._target_semaphore: asyncio.Semaphore | None = None
        self.target_threads = TargetThreads(settings.concurrency)
        if share is not None:
            share.prune_stale(self._cache)
        self._metrics: dict[tuple[str, str], Metric] = {}
        self.not_judged: list[str] = []
        """Reasons of the scores handed out unjudged because of the spend cap, in order (the plugin
        fails the item that asked for one: ``plugin.pytest_runtest_call``)."""
        self.identity = identity
        """Who this run is across its own restarts (``leasing.run_identity``): its leases come back to it."""
        self.notify: Callable[[str], None] | None = None
        """Where lines about shared-store leases go (the plugin sets the terminal)."""
        self.score_adjusters: list[Callable[[Suite, Case, Score], Score]] = []
        self._jury_planners: list[threading.Thread] = []
        """Threads of :meth:`plan_juries` (joined at :meth:`close` under xdist)."""
        self.juries: list[Callable[[Suite, Case, str], JuryChoice | None]] = []
        """Who scores a case of a suite with ``judge.jury`` (the calibration plugin registers one)."""
        """Applied in order to every live judge score (e.g. the calibration's score correction)."""

    # -- judges ------------------------------------------------------------------------

    @property
    def runner(self) -> JudgeRunner:
        with self._lock:
            if self._runner is None:
                self._runner = JudgeRunner(
                    self._cache,
                    concurrency=self.settings.concurrency,
                    requests_per_minute=self.settings.requests_per_minute,
                    max_retries=self.settings.max_retries,
                    share=self.share,
                    tokens_per_minute=self.settings.tokens_per_minute,
                    rate_limits={name: Budget(rpm, tpm) for name, rpm, tpm in self.settings.rate_limits},
                    budget_parts=self.share.count if self.share is not None else 1,
                    backoff_base=self.settings.retry_backoff,
                    lease_ttl=lease_ttl(self.settings),
                    leases=LeaseKeeper(
                        self._cache,
                        identity=self.identity,
                        ttl=self.settings.lease_ttl,
                        max_wait=lease_ttl(self.settings),
                        notify=lambda line: self.notify(line) if self.notify is not None else None,
                    ),
                    spend=self.spend,
                )
            return self._runner

    @property
    def cache_description(self) -> str:
        """Where replies are cached, for the summary line: the URL with its credentials masked, or the directory."""
        if self._cache.mode == "off":
            return "off"
        where = redact(self.settings.cache_url) if self.settings.cache_url else str(self.settings.cache_dir)
        back = getattr(self._cache.store, "written_back", 0)
        extra = f"; {back} repl(ies) paid during an earlier outage written back to it" if back else ""
        if self.key_id is not None:
            extra += f"; signed, key id {self.key_id}"
        if self.other_key_ids:
            extra += (
                f"; it also holds entries of key id(s) {', '.join(self.other_key_ids)}, which this secret can't "
                "verify: those prompts are paid again here"
            )
        return f"{self._cache.mode} ({where}{extra})"

    @property
    def store_failure(self) -> str | None:
        """Why the remote cache store was given up for the local cache dir this run (``stores/fallback.py``)."""
        return getattr(self._cache.store, "failure", None)

    def cache_location_problem(self) -> str | None:
        """Why the cache directory can't take writes, looked at now without writing (``JudgeCache.check_location``)."""
        self._cache.check_location()
        return self._cache.failure

    @property
    def cache_problems(self) -> list[str]:
        """The cache location's failure this run and what it ignored there, one headline each (``cache.py``)."""
        cache = self._cache
        lines = [f"llmjudge: cache {self.settings.cache_dir}: {warning}" for warning in cache.warnings]
        if cache.failure is not None:
            lines.insert(
                0,
                f"llmjudge: cache {self.settings.cache_dir} can't be used ({cache.failure}): the run went on "
                "without it; replies paid for were used from memory and not stored",
            )
        return lines

    @property
    def runner_started(self) -> bool:
        return self._runner is not None

    def judge_settings(self, judge: JudgeConfig) -> JudgeSettings:
        """A judge config (a suite's, a calibration set's, a ranking's) with the command line's overrides."""
        provider = self.settings.provider or judge.provider
        return JudgeSettings(
            provider=provider,
            model=self.settings.model or judge.model,
            base_url=self.settings.base_url or judge.base_url,
            temperature=judge.temperature,
            max_tokens=judge.max_tokens,
            seed=judge.seed,
            instructions=judge.instructions,
            structured_output=judge.structured_output,
        )

    def judge_problem(self, judge: JudgeConfig) -> str | None:
        """Why this judge can't be called (no key, no base_url), or None."""
        settings = self.judge_settings(judge)
        try:
            factory = self.registry.provider(settings.provider)
        except LLMJudgeError as exc:
            return str(exc)
        return factory.credentials_problem(settings.base_url, judge.api_key_env)

    def provider_for(self, judge: JudgeConfig) -> JudgeProvider:
        """The provider client of this judge, one per (provider, endpoint, key variable) in a run."""
        settings = self.judge_settings(judge)
        key = (settings.provider, settings.base_url, judge.api_key_env)
        with self._lock:
            provider = self._providers.get(key)
            if provider is None:
                factory = self.registry.provider(settings.provider)
                api_key = factory.api_key(judge.api_key_env)
                base_url, timeout = settings.base_url, self.settings.timeout
                provider = LazyProvider(settings.provider, lambda: factory.create(api_key, base_url, timeout))
                self.runner.add_secret(api_key)
                self.runner.track_provider(provider)
                self._providers[key] = provider
            return provider

    def rubric_groups(self, suite: Suite, case: Case) -> list[tuple[Rubric, ...]]:
        """The judge requests one case needs, as groups of rubrics."""
        needed: list[str] = []
        names = [t.metric for t in case.thresholds] + [a.spec.metric for a in suite.aggregates]
        for name in names:
            if suite.metric_kinds.get(name) == "rubric" and name not in case.recorded and name not in needed:
                # A rubric the case lacks fields for is unscored without asking (and paying) a judge.
                if all(getattr(case, need) for need in suite.rubrics[name].needs):
                    needed.append(name)
        rubrics = [suite.rubrics[name] for name in needed]
        if not rubrics:
            return []
        if suite.judge.mode == "compound":
            return [tuple(rubrics)]
        return [(rubric,) for rubric in rubrics]

    def planned_calls(
        self, needs: Iterable[tuple[Suite, Case, str]]
    ) -> Iterator[tuple[Suite, Case, tuple[Rubric, ...], int]]:
        """``(suite, case, rubric group, sample)`` of every judge call the needs require."""
        for suite, case, metric in needs:
            if suite.metric_kinds.get(metric) != "rubric" or metric in case.recorded:
                continue
            if suite.judge.jury:
                continue  # its judges' calls are planned once the jury has chosen (plan_juries)
            for group in self.rubric_groups(suite, case):
                if metric in {rubric.name for rubric in group}:
                    for sample in range(suite.judge.repeats):
                        yield suite, case, group, sample

    def unplanned(self, needs: Iterable[tuple[Suite, Case, str]]) -> int:
        """How many distinct judge calls the needs would add to what is planned (none is submitted)."""
        needs = list(needs)
        seen: set[tuple[str, tuple[str, ...], int]] = set()
        with self._lock:
            for _, case, group, sample in self.planned_calls(needs):
                key = (case.key, tuple(r.name for r in group), sample)
                if key not in self._calls:
                    seen.add(key)
            # A judge-based metric counts its first call (a second step is known only from the first reply).
            for suite, case, metric in needs:
                key = (case.key, (f"judged:{metric}",), 0)
                if (
                    suite.metric_kinds.get(metric) == "judged"
                    and metric not in case.recorded
                    and key not in self._judged
                ):
                    seen.add(key)
        return len(seen)

    def jury_needs(self, needs: Iterable[tuple[Suite, Case, str]]) -> list[tuple[Suite, Case, str]]:
        """The needs of the judges that juries chose for the jury suites' needs (``judge.jury``).

        Blocks until each jury has chosen: its calibration gates' scores (planned up front with
        the other dependencies) decide per language which judge, or which judges, score a case.
        A case whose jury has a problem (no judge passes) needs no call.
        """
        found: list[tuple[Suite, Case, str]] = []
        for suite, case, metric in needs:
            if not suite.judge.jury or suite.metric_kinds.get(metric) != "rubric" or metric in case.recorded:
                continue
            choice = self._jury(suite, case, metric)
            if choice is not None and choice.problem is None:
                found.extend((member, member_case, metric) for member, member_case, _ in choice.members)
        return found

    def plan_juries(self, needs: Iterable[tuple[Suite, Case, str]]) -> int:
        """Plan the jury suites' case calls once their juries have chosen, on a thread of its own.

        The choice waits for the calibration gates, which are in flight (or cached) by now, so
        planning it here would hold up every item; on a thread, the chosen judges' calls of all
        selected cases are submitted together as soon as the gates are known, and run
        concurrently under the concurrency limit like the rest of the plan (instead of one
        round trip per item as the items run). Returns how many jury needs wait for a choice.
        """
        jury = [need for need in needs if need[0].judge.jury]
        if not jury:
            return 0

        def plan() -> None:
            try:
                for suite, case, group, sample in self.planned_calls(self.jury_needs(jury)):
                    self._submit(suite, case, group, sample, eager=True)
            except Exception:  # noqa: BLE001 - the items ask again when they run, and report what went wrong
                return

        thread = threading.Thread(target=plan, name="llmjudge-jury-plan", daemon=True)
        self._jury_planners.append(thread)
        thread.start()
        return len(jury)

    def owns_call(self, case: Case, group: tuple[Rubric, ...], sample: int) -> bool:
        """Whether this process makes the call (always, unless another xdist worker owns it)."""
        return self.share is None or self.share.owns(repr((case.key, tuple(r.name for r in group), sample)))

    def judge_request(
        self, suite: Suite, case: Case, group: tuple[Rubric, ...], sample: int, output: str
    ) -> ProviderRequest:
        """The provider request of one judge call (its first ask; re-asks extend its prompt)."""
        text = JudgedText(
            language=case.language,
            output=output,
            input=case.input,
            reference=case.reference,
            context=case.context,
            messages=tuple((turn.role, turn.content) for turn in case.messages),
        )
        request = build_request(group, text, self.judge_settings(suite.judge), task=suite.task, sample=sample)
        if any(scoring_of(rubric, suite.judge) == "expected" for rubric in group):
            request = replace(request, top_logprobs=TOP_LOGPROBS)
        return request

    def plan(self, needs: Iterable[tuple[Suite, Case, str]]) -> int:
        """Submit every judge call the needs require; returns how many were submitted.

        Outputs that come from a target start too (the ones this worker owns under xdist),
        so the model under test runs concurrently up front, also for metric-only suites.

        Once the first ``concurrency`` calls are in, planning pauses until the runner has
        sent them (``yield_to_calls``): the rest is planned during their round trip instead
        of before it, which moves the first request earlier by most of the planning time
        (docs/scale.md).
        """
        needs = list(needs)
        for suite, case, metric in needs:
            if case.output is None and suite.output_target is not None and metric not in case.recorded:
                if self.owns_output(case):
                    self.output_future(suite, case)
        submitted = 0
        for suite, case, metric in needs:
            if suite.metric_kinds.get(metric) == "judged" and metric not in case.recorded:
                # Under xdist one worker starts it up front; another that needs the score starts
                # it when asked, and the cache's lease makes it wait for the owner's replies.
                if self.share is None or self.share.owns(repr((case.key, f"judged:{metric}"))):
                    submitted += self._judged_future(suite, case, metric)[1]
        paused = False
        for suite, case, group, sample in self.planned_calls(needs):
            submitted += self._submit(suite, case, group, sample, eager=True)
            if not paused and submitted == self.settings.concurrency and self._runner is not None:
                paused = True
                self._runner.yield_to_calls()
        return submitted

    def _submit(self, suite: Suite, case: Case, group: tuple[Rubric, ...], sample: int, *, eager: bool) -> int:
        """Submit one call; under xdist, eagerly only the calls this worker owns."""
        key = (case.key, tuple(r.name for r in group), sample)
        owner_elsewhere = self.share is not None and not self.share.owns(repr(key))
        if eager and owner_elsewhere:
            return 0
        with self._lock:
            if key in self._calls:
                return 0
            provider = self.provider_for(suite.judge)

            def build(output: str) -> tuple[JudgeProvider, Any, Sequence[Rubric], int]:
                request = self.judge_request(suite, case, group, sample, output)
                return provider, request, group, suite.judge.max_reasks

            if case.output is not None:
                provider_, request, rubrics, reasks = build(case.output)
                future = self.runner.submit_judgment(
                    provider_, request, rubrics, max_reasks=reasks, owner_elsewhere=owner_elsewhere
                )
            else:
                future = self.runner.submit_judgment_after(
                    self.output_future(suite, case), build, owner_elsewhere=owner_elsewhere
                )
            self._calls[key] = future
            return 1

    # -- outputs -----------------------------------------------------------------------

    def output_future(self, suite: Suite, case: Case) -> concurrent.futures.Future[str]:
        """The case's output: inline, or produced by the suite's output target (once)."""
        with self._lock:
            existing = self._outputs.get(case.key)
            if existing is not None:
                return existing
            if case.output is not None:
                done: concurrent.futures.Future[str] = concurrent.futures.Future()
                done.set_result(case.output)
                self._outputs[case.key] = done
                return done
            assert suite.output_target is not None
            try:
                target = self.registry.target(suite.output_target, target_search_paths(suite.path))
            except LLMJudgeError as exc:
                failed: concurrent.futures.Future[str] = concurrent.futures.Future()
                failed.set_exception(exc)
                self._outputs[case.key] = failed
                return failed

            timeout = suite.target_timeout or self.settings.target_timeout
            source = "the suite's outputs.timeout" if suite.target_timeout else "llmjudge_target_timeout"
            name = suite.output_target

            async def produce() -> str:
                async with self._target_slots():
                    started = time.monotonic()
                    if inspect.iscoroutinefunction(target):
                        value = await _within(target(case), timeout, name, source)
                    else:
                        value = await self.target_threads.call(target, case, timeout, name, source)
                        if inspect.isawaitable(value):
                            left = max(timeout - (time.monotonic() - started), 0.0)
                            value = await _within(value, left, name, source)
                if not isinstance(value, str):
                    raise TypeError(
                        f"output target {suite.output_target} returned {type(value).__name__}, expected str"
                    )
                return value

            share = self.share if self._shares_outputs else None
            if share is None:
                future = self.runner.submit(produce)
            else:
                future = self.runner.submit(lambda: self._shared_output(share, case, produce))
            self._outputs[case.key] = future
            return future

    def _target_slots(self) -> asyncio.Semaphore:
        """At most ``concurrency`` output-target calls at once (on the runner's loop)."""
        if self._target_semaphore is None:
            self._target_semaphore = asyncio.Semaphore(self.settings.concurrency)
        return self._target_semaphore

    @property
    def _shares_outputs(self) -> bool:
        """Outputs travel between xdist workers through the cache directory; not with the cache off."""
        return self.share is not None and self._cache.mode != "off" and self._cache.root is not None

    def owns_output(self, case: Case) -> bool:
        """Whether this process produces the case's output (always, unless another xdist worker does)."""
        return self.share is None or not self._shares_outputs or self.share.owns(_output_identity(case))

    async def _shared_output(self, share: WorkerShare, case: Case, produce: Callable[[], Awaitable[str]]) -> str:
        """The case's output, produced here by its owner worker or awaited from it."""
        identity = _output_identity(case)
        if not share.owns(identity):
            published = await share.wait_for_output(self._cache, identity)
            if published is not None:
                text, error = published
                if text is not None:
                    return text
                raise _PublishedTargetError(error or "no output")
            # The owner never published (it crashed): produce here rather than fail the case.
        try:
            text = await produce()
        except Exception as exc:
            share.publish_output(self._cache, identity, text=None, error=_describe(exc))
            raise
        share.publish_output(self._cache, identity, text=text, error=None)
        return text

    def output(self, suite: Suite, case: Case) -> str:
        """The output text; raises :class:`UnscoredError` when the target failed."""
        future = self.output_future(suite, case)
        self._wait(future)
        try:
            return future.result()
        except Exception as exc:
            raise UnscoredError(target_failure(exc)) from None

    # -- scores ------------------------------------------------------------------------

    def _wait(self, future: concurrent.futures.Future[Any]) -> None:
        """Until ``future`` is done, then until the runner's loop waits on the network (``yield_to_calls``)."""
        while True:
            try:
                future.exception(timeout=2.0)
                break
            except concurrent.futures.TimeoutError:
                continue  # waits in slices; live progress is drawn by its own thread (progress/run_phase.py)
            except concurrent.futures.CancelledError:
                break
        if self._runner is not None:
            self._runner.yield_to_calls()

    def score(self, suite: Suite, case: Case, metric: str) -> Score:
        kind = suite.metric_kinds.get(metric)
        recorded = case.recorded.get(metric)
        if recorded is not None:
            nulls = sum(1 for sample in recorded.samples if sample is None)
            if nulls:  # like a judged repeat without a verdict: the case is unscored
                return _unscored(
                    metric,
                    "recorded",
                    f"{nulls} of {len(recorded.samples)} recorded samples are null",
                    judge=recorded.judge,
                )
            if recorded.score is None:
                return _unscored(metric, "recorded", "the recorded score is null", judge=recorded.judge)
            rubric = suite.rubrics.get(metric)
            samples = tuple(sample for sample in recorded.samples if sample is not None)
            return Score(
                metric=metric,
                value=recorded.score,
                source="recorded",
                justification=recorded.justification,
                judge=recorded.judge or "recorded",
                samples=samples if len(samples) > 1 else (),
                higher_is_better=rubric.higher_is_better if rubric else True,
            )
        if kind == "rubric":
            choice = self._jury(suite, case, metric)
            judged = (
                self._judge_score(suite, case, metric) if choice is None else self._jury_score(suite, choice, metric)
            )
            for adjust in self.score_adjusters:
                judged = adjust(suite, case, judged)
            return self.noted(judged)
        if kind == "metric":
            return self._metric_score(suite, case, metric)
        if kind == "judged":
            return self.noted(self._judged_score(suite, case, metric))
        return _unscored(metric, "recorded", f"case {case.id!r} has no recorded score for {metric!r}")

    def _judge_score(self, suite: Suite, case: Case, metric: str) -> Score:
        rubric = suite.rubrics[metric]
        label = self.judge_settings(suite.judge).label
        missing = [need for need in sorted(rubric.needs) if not getattr(case, need)]
        if missing:
            return _unscored(
                metric,
                "judge",
                f"rubric {metric} needs the case's {' and '.join(missing)}",
                judge=label,
                higher_is_better=rubric.higher_is_better,
            )
        group = next(g for g in self.rubric_groups(suite, case) if metric in {r.name for r in g})
        for sample in range(suite.judge.repeats):
            self._submit(suite, case, group, sample, eager=False)
        names = tuple(r.name for r in group)
        outcomes: list[CallOutcome] = []
        for sample in range(suite.judge.repeats):
            future = self._calls[(case.key, names, sample)]
            self._wait(future)
            try:
                outcomes.append(future.result())
            except concurrent.futures.CancelledError:
                return _unscored(metric, "judge", "the judge call was cancelled", judge=label)
            except UnscoredError as exc:
                return _unscored(metric, "judge", str(exc), judge=label, higher_is_better=rubric.higher_is_better)
            except Exception as exc:
                return _unscored(metric, "judge", target_failure(exc), judge=label)
        return verdict_score(
            rubric,
            label,
            outcomes,
            suite.judge.repeat_aggregate,
            scoring_of(rubric, suite.judge),
            suite.judge.scoring_fallback,
        )

    def _jury(self, suite: Suite, case: Case, metric: str) -> JuryChoice | None:
        if not suite.judge.jury:
            return None
        for resolve in self.juries:
            found = resolve(suite, case, metric)
            if found is not None:
                return found
        return JuryChoice("best", problem="judge.jury: no jury resolver is registered")

    def _jury_score(self, suite: Suite, choice: JuryChoice, metric: str) -> Score:
        """The jury's score: the chosen judge's (``best``), or the judges' combination with each one's in ``detail``."""
        rubric = suite.rubrics[metric]
        if choice.problem is not None or not choice.members:
            return _unscored(
                metric,
                "judge",
                choice.problem or "the jury has no judge",
                judge="jury",
                higher_is_better=rubric.higher_is_better,
            )
        scores = [(self._judge_score(member, case, metric), weight) for member, case, weight in choice.members]
        if choice.combine == "best":
            only = scores[0][0]
            return replace(only, judge=f"jury best: {only.judge}")
        label = f"jury {choice.combine}: " + ", ".join(str(score.judge) for score, _ in scores)
        missing = [score for score, _ in scores if not score.scored]
        if missing:
            reasons = "; ".join(f"{score.judge}: {score.error}" for score in missing)
            return _unscored(metric, "judge", f"jury judge unscored ({reasons})", judge=label)
        from pytest_llmjudge.stats.committee import combine_scores

        values = {f"{i}": [float(score.value)] for i, (score, _) in enumerate(scores)}  # type: ignore[arg-type]
        weights = {f"{i}": weight for i, (_, weight) in enumerate(scores)}
        [value] = combine_scores(values, choice.combine, weights, rubric.scale)
        return Score(
            metric=metric,
            value=value,
            source="judge",
            justification=scores[0][0].justification,
            judge=label,
            cached=all(bool(score.cached) for score, _ in scores),
            higher_is_better=rubric.higher_is_better,
            detail={"jury": {str(score.judge): score.value for score, _ in scores}},
        )

    def noted(self, score: Score) -> Score:
        """``score``, remembered in :attr:`not_judged` when the spend cap kept its call from being
        sent: the item that asked for it then fails, whatever it makes of the score."""
        if score.error is not None and score.error.startswith(NOT_JUDGED):
            self.not_judged.append(score.error)
        return score

    # -- judge-based metrics (metrics/rag.py) ----------------------------------------------

    def _judged_future(self, suite: Suite, case: Case, metric: str) -> tuple[concurrent.futures.Future[Score], int]:
        """The future score of a judge-based metric, started once (and whether it was started now).

        The metric's steps run as one coroutine on the runner's loop: each step's request goes
        through :meth:`JudgeRunner.submit_call` (cache, lease, retries, spend cap, re-asks, the
        concurrency limit) and the next step is built when its reply arrives, so a two-step
        metric waits on its own first reply only, never on other cases' calls.
        """
        key = (case.key, (f"judged:{metric}",), 0)
        with self._lock:
            existing = self._judged.get(key)
            if existing is not None:
                return existing, 0
            instance = JUDGED_METRICS[metric]
            settings = self.judge_settings(suite.judge)
            provider = self.provider_for(suite.judge)
            output = self.output_future(suite, case)
            runner = self.runner
            reasks = suite.judge.max_reasks

            async def ask(request: ProviderRequest, parse: Callable[[str], Any]) -> Reply:
                result = await asyncio.wrap_future(runner.submit_call(provider, request, parse, max_reasks=reasks))
                return Reply(result.value, result.error, result.cached, result.raw_reply)

            async def run() -> Score:
                try:
                    text = await asyncio.wrap_future(output)
                except Exception as exc:
                    return _unscored(metric, "judge", target_failure(exc), judge=settings.label)
                item = _metric_input(case, text)
                found = await instance.evaluate(item, settings, ask)
                return Score(
                    metric=metric,
                    value=found.value,
                    source="judge",
                    judge=settings.label,
                    cached=found.cached,
                    error=found.error,
                    detail=dict(found.detail),
                    higher_is_better=instance.higher_is_better,
                    raw_reply=found.raw_reply,
                )

            future = runner.submit(run)
            self._judged[key] = future
            return future, 1

    def _judged_score(self, suite: Suite, case: Case, metric: str) -> Score:
        future, _ = self._judged_future(suite, case, metric)
        self._wait(future)
        label = self.judge_settings(suite.judge).label
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            return _unscored(metric, "judge", "the judge call was cancelled", judge=label)
        except Exception as exc:
            return _unscored(metric, "judge", f"{metric} failed: {_describe(exc)}", judge=label)

    def metric_object(self, suite: Suite, metric: str) -> Metric:
        key = (str(suite.path), metric)
        with self._lock:
            if key not in self._metrics:
                self._metrics[key] = resolve_metric(metric, suite.metric_options.get(metric), self.registry.metrics)
            return self._metrics[key]

    def _metric_score(self, suite: Suite, case: Case, metric: str) -> Score:
        try:
            output = self.output(suite, case)
            instance = self.metric_object(suite, metric)
            value = instance.compute(_metric_input(case, output))
        except (MetricError, UnscoredError) as exc:
            return _unscored(metric, "metric", str(exc))
        except LLMJudgeError as exc:
            return _unscored(metric, "metric", str(exc))
        if isinstance(value.value, float) and math.isnan(value.value):
            return _unscored(metric, "metric", "the metric is undefined (NaN) for this case", detail=value.detail)
        return Score(
            metric=metric,
            value=value.value,
            source="metric",
            detail=dict(value.detail),
            higher_is_better=instance.higher_is_better,
        )

    def abandon(self) -> None:
        """Stop the runner now, cancelling every pending call and target (the run was interrupted).

        Unlike :meth:`close`, nothing is finished for other xdist workers: they are being
        interrupted too. Targets running in threads are left to end with the process.
        """
        if self._runner is not None:
            self._runner.close()

    def close(self) -> None:
        """Stop the runner; under xdist, first finish the work other workers may be waiting for.

        A worker whose own items are done can still own judge calls and outputs that
        another worker's items wait on (with ``--dist loadfile`` a worker may have no items
        at all); cancelling them would leave that worker waiting for ``wait_seconds``.
        """
        if self._runner is None:
            return
        if self.share is not None:
            for planner in self._jury_planners:  # its calls may be ones other workers wait for
                planner.join(timeout=self.share.wait_seconds)
            with self._lock:
                owned: list[concurrent.futures.Future[Any]] = [*self._calls.values(), *self._outputs.values()]
            pending = [future for future in owned if not future.done()]
            concurrent.futures.wait(pending, timeout=self.share.wait_seconds)
        self._runner.close()


def _metric_input(case: Case, output: str) -> MetricInput:
    """What a metric sees of a case: the output under test and the case's fields."""
    return MetricInput(
        output=output,
        reference=case.reference,
        input=case.input,
        context=case.context,
        language=case.language,
        metadata=case.metadata,
    )
