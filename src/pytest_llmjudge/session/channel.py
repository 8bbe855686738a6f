"""The one channel between a pytest-xdist controller and its workers: every key that crosses it.

Under pytest-xdist the controller owns the terminal and writes the reports, while the workers
run the items and make the judge calls. What the controller hands a worker travels in
``node.workerinput`` (set in ``pytest_configure_node``), what a worker hands back in
``config.workeroutput`` (read in ``pytest_testnodedown``), and the live progress counters in
one JSON file per worker. Nothing else crosses: the items' records ride their reports
(``report.llmjudge``, in wire form, ``records.py``), which xdist carries itself.

Controller -> worker (``workerinput``):

* ``llmjudge_run_started``: the controller's clock (Unix time) before it started any worker;
  a cache entry written after it is this run's (another worker's), see ``execution/xdist_sharing.py``;
* ``llmjudge_progress_dir``: the directory where each worker writes its progress file.

Worker -> controller (``workeroutput``), each written only when the worker has it:

* ``llmjudge_stats``: the worker's judge-call accounting (``RunnerStats`` as a dict);
* ``llmjudge_endpoints``: its judge calls per endpoint (``judges/diagnosis.py``);
* ``llmjudge_cache_problems``: its cache location's headlines (``Scorer.cache_problems``);
* ``llmjudge_rejections``: its rejected cache entries, by reason;
* ``llmjudge_store_failure``: why it gave up the remote cache store;
* ``llmjudge_report_suites``: what only collection knows of each suite (``SuiteInfo``, wire form);
* ``llmjudge_writes_refused``: the report or baseline targets it refused (the controller
  then refuses them too and exits as a usage error).

Progress files (``<progress_dir>/<workerid>.json``): ``{"counters": Counters, "models": [...]}``,
rewritten atomically every tick by the worker and summed by the controller's progress thread
(``progress/run_phase.py``).

Degenerate cases: a worker that crashed sends no ``workeroutput`` (every read below defaults
to nothing); without xdist nothing here is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUN_STARTED = "llmjudge_run_started"
PROGRESS_DIR = "llmjudge_progress_dir"
STATS = "llmjudge_stats"
ENDPOINTS = "llmjudge_endpoints"
CACHE_PROBLEMS = "llmjudge_cache_problems"
REJECTIONS = "llmjudge_rejections"
STORE_FAILURE = "llmjudge_store_failure"
REPORT_SUITES = "llmjudge_report_suites"
WRITES_REFUSED = "llmjudge_writes_refused"


def worker_input(config: Any) -> dict[str, Any] | None:
    """This process's ``workerinput`` (None when it is not an xdist worker)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return workerinput


def is_worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


def worker_output(config: Any) -> dict[str, Any] | None:
    """This worker's ``workeroutput`` to fill (None when it is not an xdist worker)."""
    return getattr(config, "workeroutput", None)


def send_to_worker(node: Any, run_started: float, progress_dir: Path | None) -> None:
    """On the controller: what a starting worker gets (``pytest_configure_node``)."""
    node.workerinput[RUN_STARTED] = run_started
    if progress_dir is not None:
        node.workerinput[PROGRESS_DIR] = str(progress_dir)


@dataclass
class WorkerReport:
    """What one worker sent back (``workeroutput``), read on the controller."""

    stats: dict[str, int] | None = None
    endpoints: dict[str, Any] | None = None
    cache_problems: list[str] = field(default_factory=list)
    rejections: dict[str, int] = field(default_factory=dict)
    store_failure: str | None = None
    suites: list[Any] = field(default_factory=list)
    writes_refused: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, node: Any) -> WorkerReport:
        output = getattr(node, "workeroutput", None) or {}
        rejections = output.get(REJECTIONS)
        store_failure = output.get(STORE_FAILURE)
        return cls(
            stats=output.get(STATS) or None,
            endpoints=output.get(ENDPOINTS) or None,
            cache_problems=[str(line) for line in output.get(CACHE_PROBLEMS) or []],
            rejections={str(k): int(v) for k, v in rejections.items()} if isinstance(rejections, dict) else {},
            store_failure=str(store_failure) if store_failure else None,
            suites=list(output.get(REPORT_SUITES) or []),
            writes_refused=list(output.get(WRITES_REFUSED) or []),
        )
