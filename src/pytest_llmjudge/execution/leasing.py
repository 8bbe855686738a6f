"""Leases on a shared cache store: claimed when a call is sent, kept alive while it is in flight.

Processes that share a store (CI shards, concurrent runs) pay once per prompt: whoever holds a
prompt's lease is asking the judge for it, the others wait for its reply. The rules, and why:

* **Claimed at send, not at plan.** The runner claims a lease once the call holds its
  concurrency slot and rate-limit ticket (:meth:`LeaseKeeper.claim`), and first re-reads the
  store: a reply that arrived while the call was queued is used, not paid again. A call
  queued behind hundreds of others holds no lease, so a queue longer than the lease can't
  let a second run pay for the same prompt, and a crash orphans only the calls in flight.
* **Short, with a heartbeat.** A lease lives ``ttl`` seconds (``--llmjudge-lease-ttl``,
  30 s) and is renewed every ``ttl / 3`` while its call is in flight (:meth:`LeaseKeeper.beat`,
  one task for all held leases), so a slow judge keeps its prompts, and a dead holder's
  prompts are taken over within ``ttl``.
* **Released on every exit path**: after the reply is stored, after a failure, on
  cancellation (the runner's ``finally``).
* **Own leases come back.** An owner id is ``<identity>|<host:pid:nonce>:<n>|<since>``: the
  identity names the run and shard (:func:`run_identity`: ``LLMJUDGE_RUN_ID``, or the CI
  run id, job and shard, or host and directory and shard), the token this process. A lease
  whose identity is ours but whose process is gone was left by an earlier incarnation of
  this very shard (a crash, a re-run job): it is released and taken at once, not waited
  out (:attr:`LeaseKeeper.reclaimed`). Gone means: on this host, its pid is not alive (a
  live one is a concurrent run of the same command, and is waited on); on another host,
  its lease missed a heartbeat (less than half the ttl left).
* **Waits are said.** Waiting on another holder's lease prints, once per holder, who holds
  it, since when, and when it will be taken over if not renewed; a lease that ends without
  a reply (its holder died or failed) prints that it was taken over.

A waiter gives up after ``max_wait`` (the holder's longest honest hold: every attempt
timing out plus back-off) and pays without a lease: the directory store's leases are locks
that end only with their process, so a hung holder there is outwaited, as before.

Degenerate cases: cache mode ``refresh`` or ``off`` reads nothing, so nothing is waited for:
the claim is granted without a store lease; a store that can't say who holds a lease (the
directory store) is waited on with a message naming no holder; a heartbeat that finds its
lease taken over counts it in :attr:`LeaseKeeper.lost` (the reply is still stored).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pytest_llmjudge.execution.cache import JudgeCache, Lease
from pytest_llmjudge.execution.stores.base import CacheStore, lease_holder
from pytest_llmjudge.judges.base import ProviderReply

# (variable holding the run id, variables naming the job within it), first match wins.
_CI_RUNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GITHUB_RUN_ID", ("GITHUB_WORKFLOW", "GITHUB_JOB")),
    ("CI_PIPELINE_ID", ("CI_JOB_NAME",)),
    ("BUILDKITE_BUILD_ID", ("BUILDKITE_STEP_KEY",)),
    ("CIRCLE_WORKFLOW_ID", ("CIRCLE_JOB",)),
)


def run_identity(environ: Mapping[str, str], *, shard: str | None, worker: str | None, where: str) -> str:
    """Who this runner is across its own restarts: the run (or machine and ``where``), shard and xdist worker.

    ``LLMJUDGE_RUN_ID`` wins; then a CI run id and job name (the same for a re-run of a job);
    else this host and ``where`` (the rootdir), so re-running one command reclaims its leases.
    Two concurrent runs with one identity would take each other's leases (and pay twice):
    give them distinct ``LLMJUDGE_RUN_ID`` values.
    """
    base = environ.get("LLMJUDGE_RUN_ID")
    if not base:
        for run, jobs in _CI_RUNS:
            if environ.get(run):
                base = ":".join([environ[run], *(environ.get(job, "") for job in jobs)])
                break
    if not base:
        base = f"{socket.gethostname()}:{hashlib.sha256(where.encode()).hexdigest()[:8]}"
    parts = [base.replace("|", "/"), f"shard {shard}" if shard else "unsharded"]
    if worker:
        parts.append(worker)
    return " ".join(parts)


@dataclass(frozen=True)
class Holder:
    """Another owner's live lease on a key: its owner id and the seconds it has left (None: unknown)."""

    owner: str
    seconds_left: float | None

    @property
    def identity(self) -> str:
        return self.owner.split("|")[0]

    @property
    def token(self) -> str:
        parts = self.owner.split("|")
        return parts[1] if len(parts) > 1 else self.owner

    @property
    def process(self) -> str:
        """``host:pid:nonce`` of the holding process (its token without the claim number)."""
        return self.token.rsplit(":", 1)[0]

    def describe(self, now: float) -> str:
        """``<identity> (host:pid) since HH:MM:SS UTC; taken over at HH:MM:SS UTC unless renewed``."""
        parts = self.owner.split("|")
        process = parts[1].rsplit(":", 1)[0] if len(parts) > 1 else "?"
        text = f"{parts[0]} ({process})" if len(parts) > 1 else repr(self.owner)
        if len(parts) > 2:
            try:
                text += f" since {_utc(float(parts[2]))}"
            except ValueError:
                pass
        if self.seconds_left is not None:
            text += f"; taken over at {_utc(now + self.seconds_left)} unless its holder renews it"
        return text


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _utc(unix: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(unix))


class HeldLease(Lease):
    """A lease this runner holds and renews (:meth:`LeaseKeeper.beat`) until it is released."""

    def __init__(self, keeper: LeaseKeeper, key: str, owner: str) -> None:
        super().__init__(keeper.store, key, owner)
        self._keeper = keeper

    def release(self) -> None:
        self._keeper.forget(self)
        super().release()


class LeaseKeeper:
    """Claims, renews, waits on and reclaims the leases of one runner (module docstring)."""

    def __init__(
        self,
        cache: JudgeCache,
        *,
        identity: str | None = None,
        ttl: float = 30.0,
        max_wait: float = 600.0,
        notify: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache = cache
        self.identity = (identity or f"run-{uuid.uuid4().hex[:8]}").replace("|", "/")
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.ttl = ttl
        self.max_wait = max_wait
        self.notify = notify
        self._clock = clock
        self._claims = 0
        self._lock = threading.Lock()
        self._held: dict[int, HeldLease] = {}
        self._beating: asyncio.Task[None] | None = None
        self._said: set[tuple[str, str]] = set()
        self.reclaimed = 0
        """Leases of an earlier incarnation of this runner (same identity) taken back at once."""
        self.taken_over = 0
        """Other holders' leases that ended without a reply while this runner waited on them."""
        self.waits = 0
        """Calls that waited on another holder's lease."""
        self.lost = 0
        """Heartbeats that found the lease taken over (this runner's call outlived its lease)."""

    @property
    def store(self) -> CacheStore | None:
        return self.cache.store

    def _say(self, kind: str, holder: Holder, text: str) -> None:
        """``text`` once per kind and holder process (hundreds of prompts of one holder: one line)."""
        with self._lock:
            if (kind, holder.process) in self._said:
                return
            self._said.add((kind, holder.process))
        if self.notify is not None:
            self.notify(text)

    def _owner(self) -> str:
        with self._lock:
            self._claims += 1
            claim = self._claims
        return f"{self.identity}|{self.token}:{claim}|{self._clock():.0f}"

    def _left_behind(self, holder: Holder) -> bool:
        """Whether ``holder`` (of this runner's identity) is an earlier incarnation that is gone.

        On this host, by its process id: a live process with this identity is a concurrent
        run (two runs of one command), whose leases are waited on like anyone's. On another
        host, by its heartbeat: a live holder renews every third of the ttl, so a lease with
        less than half the ttl left has missed a beat.
        """
        process = holder.process
        if process == self.token:
            return False
        host, _, rest = process.partition(":")
        pid = rest.split(":", 1)[0]
        if host == socket.gethostname() and pid.isdigit():
            return not _pid_alive(int(pid))
        return holder.seconds_left is not None and holder.seconds_left < self.ttl / 2

    def _holder(self, key: str) -> Holder | None:
        store = self.cache.store
        assert store is not None
        found = lease_holder(store, key)
        return None if found is None else Holder(found[0], found[1])

    def claim(self, key: str, stale: str | None = None) -> ProviderReply | Lease | Holder:
        """A reply already stored for ``key``, the lease to pay for it, or who else holds that lease.

        ``stale``: an entry with this text is the unparseable reply being re-asked (no reply).
        """
        store = self.cache.store
        if self.cache.mode != "use" or store is None or not self.cache.writable:
            return Lease(None, key, "")  # nothing is read (or nothing can be stored): nothing to wait for
        owner = self._owner()
        for _ in range(2):
            if store.try_lease(key, owner, self.ttl):
                hit = self.cache.get(key)  # re-checked after winning: the last holder may have stored it
                if hit is not None and hit.reply.text != stale:
                    store.release(key, owner)
                    return hit.reply
                lease = HeldLease(self, key, owner)
                with self._lock:
                    self._held[id(lease)] = lease
                self.start_heartbeat()
                return lease
            hit = self.cache.get(key)
            if hit is not None and hit.reply.text != stale:
                return hit.reply
            holder = self._holder(key)
            if holder is None or holder.identity != self.identity or not self._left_behind(holder):
                return holder if holder is not None else Holder("", None)
            # An earlier incarnation of this runner left it (a crash, a re-run job): take it back now.
            store.release(key, holder.owner)
            with self._lock:
                self.reclaimed += 1
            self._say(
                "reclaim",
                holder,
                f"llmjudge: taking back at once the leases left by an earlier run of {holder.identity} "
                f"({holder.process}, gone) instead of waiting for them to expire",
            )
        return Holder("", None)

    async def wait(self, key: str, holder: Holder, stale: str | None = None) -> ProviderReply | Lease | None:
        """Wait for another holder's reply to ``key``.

        The reply once it is stored; None once the lease ended without one (claim again); after
        ``max_wait`` a claim without a store lease (the holder is taken as hung: pay anyway).
        """
        with self._lock:
            self.waits += 1
        now = self._clock()
        if holder.owner:
            self._say("wait", holder, f"llmjudge: waiting on prompt(s) leased by {holder.describe(now)}")
        else:
            self._say(
                "wait",
                holder,
                "llmjudge: waiting on prompt(s) another process is paying for (the store doesn't say which: "
                f"taken over when its lease ends, or after {self.max_wait:g} s)",
            )
        deadline = time.monotonic() + self.max_wait
        delay = 0.02
        seen = holder
        while time.monotonic() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 1.0)
            hit = self.cache.get(key)
            if hit is not None and hit.reply.text != stale:
                return hit.reply
            current = self._holder(key)
            if current is None:
                if not holder.owner:  # a store that can't say who holds it: ask by trying
                    store = self.cache.store
                    assert store is not None
                    probe = self._owner()
                    if not store.try_lease(key, probe, self.ttl):
                        continue
                    store.release(key, probe)
                    return None
                hit = self.cache.get(key)  # stored and let go between the two reads
                if hit is not None and hit.reply.text != stale:
                    return hit.reply
                with self._lock:
                    self.taken_over += 1
                self._say(
                    "takeover",
                    seen,
                    f"llmjudge: the lease of {seen.identity} ({seen.process}) on a prompt "
                    "ended without a reply (its holder stopped, failed or was not renewed): taking it over",
                )
                return None
            if current.owner != seen.owner:
                seen = current
                self._say(
                    "wait", current, f"llmjudge: waiting on prompt(s) leased by {current.describe(self._clock())}"
                )
        self._say(
            "overdue",
            seen,
            f"llmjudge: waited {self.max_wait:g} s on a prompt leased by {seen.owner.split('|')[0] or 'another process'}"
            " (longer than its holder's longest honest call): paying for it here",
        )
        return Lease(None, key, "")

    # -- heartbeat ---------------------------------------------------------------------

    def forget(self, lease: HeldLease) -> None:
        with self._lock:
            self._held.pop(id(lease), None)

    def start_heartbeat(self) -> None:
        """Start renewing held leases on the running loop (once; it ends when nothing is held).

        Outside a loop (a synchronous caller) nothing starts: :meth:`beat` renews by hand.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._beating is None or self._beating.done():
            self._beating = loop.create_task(self._heartbeat())

    async def _heartbeat(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.ttl / 3)
            with self._lock:
                if not self._held:
                    self._beating = None
                    return
            await loop.run_in_executor(None, self.beat)

    def beat(self) -> int:
        """Renew every held lease once; how many were renewed (a lost one is counted in ``lost``)."""
        store = self.cache.store
        with self._lock:
            held = list(self._held.values())
        renewed = 0
        for lease in held:
            if store is None or lease._store is None:
                continue
            try:
                ok = store.try_lease(lease.key, lease.owner, self.ttl)
            except Exception:  # a store gone mid-run: the fallback store reports it; nothing to renew
                ok = False
            renewed += ok
            if not ok:  # taken over (or the store is gone): counted once, no longer renewed
                with self._lock:
                    self.lost += 1
                    self._held.pop(id(lease), None)
        return renewed
