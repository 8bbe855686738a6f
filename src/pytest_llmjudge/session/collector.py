"""The results collector: every item's record and the judge accounting, gathered where the summary is written.

Items keep a typed record (``records.py``), which the core plugin attaches to the call
report (``report.llmjudge``); the collector, a plugin object registered by the core plugin
under ``--llmjudge``, receives the reports (on the controller under pytest-xdist, where the
records arrive with them) together with the items that could not run for want of a judge.
The workers' call accounting and per-endpoint tallies travel through ``workeroutput`` and
are summed here. Each record gets its report's ``nodeid`` and ``outcome``.

Every record lives once: a record built in this process is the item's own object, kept as
is (the item, its report and the collector share it); one that arrived from an xdist
worker in wire form is parsed back (:func:`~pytest_llmjudge.records.record_from_wire`; one
that does not parse is a bug and raises) and replaces the wire dict on the report, which
pytest's terminal statistics keep to the end of the run. The report plugin renders what
this holds; the collector itself writes nothing.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.judge_policy import NoJudge
from pytest_llmjudge.session.state import scoreboard_key

if TYPE_CHECKING:
    from pytest_llmjudge.execution.runner import RunnerStats
    from pytest_llmjudge.records import ItemRecord


class ResultsCollector:
    """Collects item records (``report.llmjudge``, carried by reports under xdist too) for the summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: list[ItemRecord] = []
        """The items' typed records (``report.llmjudge``, parsed back under xdist) with ``nodeid`` and ``outcome``."""
        self.worker_stats: list[dict[str, int]] = []
        self.worker_endpoints: list[dict[str, Any]] = []
        """Each xdist worker's judge calls per endpoint (``judges/diagnosis.py``), for the headline."""
        self.cache_problems: list[list[str]] = []
        """Each xdist worker's cache-location headlines (``ScoreBoard.cache_problems``)."""
        self.store_failures: list[str] = []
        self.rejections: dict[str, int] = {}
        """Rejected cache entries of xdist workers, by reason."""
        """Why xdist workers gave up the remote cache store (``execution/stores/fallback.py``)."""
        self.no_judge: list[NoJudge] = []
        """Items that did not run because their judge can't be called (skip_or_fail_without_judge)."""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        carried = getattr(report, "llmjudge", None)
        if carried is not None:
            from pytest_llmjudge.records import ItemRecord, record_from_wire  # pydantic: only once a record arrives

            if isinstance(carried, ItemRecord):  # built by an item of this process
                carried.nodeid = report.nodeid
                carried.outcome = report.outcome
                record = carried
            else:  # wire form, from an xdist worker
                # A record that does not parse is a bug in the item that built it: let it raise.
                record = record_from_wire({**carried, "nodeid": report.nodeid, "outcome": report.outcome})
                report.llmjudge = record  # type: ignore[attr-defined]  # the wire dict goes
            self.records.append(record)
        no_judge = getattr(report, "llmjudge_no_judge", None)
        if isinstance(no_judge, dict):
            self.no_judge.append(NoJudge(bool(no_judge["fail"]), str(no_judge["reason"]), str(no_judge["rule"])))

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without xdist
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        stats = (getattr(node, "workeroutput", None) or {}).get("llmjudge_stats")
        if stats:
            self.worker_stats.append(stats)
        endpoints = (getattr(node, "workeroutput", None) or {}).get("llmjudge_endpoints")
        if endpoints:
            self.worker_endpoints.append(endpoints)
        cache_problems = (getattr(node, "workeroutput", None) or {}).get("llmjudge_cache_problems")
        if cache_problems:
            self.cache_problems.append([str(line) for line in cache_problems])
        rejections = (getattr(node, "workeroutput", None) or {}).get("llmjudge_rejections")
        if isinstance(rejections, dict):
            for reason, count in rejections.items():
                self.rejections[str(reason)] = self.rejections.get(str(reason), 0) + int(count)
        store_failure = (getattr(node, "workeroutput", None) or {}).get("llmjudge_store_failure")
        if store_failure:
            self.store_failures.append(str(store_failure))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        board = self.config.stash.get(scoreboard_key, None)
        workeroutput = getattr(self.config, "workeroutput", None)
        if board is not None and board.runner_started and workeroutput is not None:
            workeroutput["llmjudge_stats"] = asdict(board.runner.stats)
            workeroutput["llmjudge_endpoints"] = board.runner.endpoints.as_dict()
        if board is not None and workeroutput is not None and board.cache_problems:
            workeroutput["llmjudge_cache_problems"] = board.cache_problems
        if board is not None and board.runner_started and workeroutput is not None and board.runner.rejections:
            workeroutput["llmjudge_rejections"] = dict(board.runner.rejections)
        if board is not None and workeroutput is not None and board.store_failure:
            workeroutput["llmjudge_store_failure"] = board.store_failure

    def judge_headlines(self) -> list[str]:
        """One line per judge endpoint whose calls failed, and one if the remote cache store failed,
        over this process and its xdist workers."""
        from pytest_llmjudge.judges.diagnosis import EndpointTally, headlines

        board = self.config.stash.get(scoreboard_key, None)
        tally = EndpointTally()
        for endpoints in self.worker_endpoints:
            tally.merge(endpoints)
        if board is not None and board.runner_started:
            tally.merge(board.runner.endpoints.as_dict())
        lines = headlines(tally)
        # The cache location's failure and warnings: the first process's words, and how many said so.
        reports = [*self.cache_problems, *([board.cache_problems] if board is not None else [])]
        reports = [report for report in reports if report]
        if reports:
            more = f" (in {len(reports)} processes)" if len(reports) > 1 else ""
            lines += [line + more for line in reports[0]]
        rejections = dict(self.rejections)
        if board is not None and board.runner_started:
            for reason, count in board.runner.rejections.items():
                rejections[reason] = rejections.get(reason, 0) + count
        if rejections:  # each reason and its count: "rejected" alone doesn't say forgery from a changed secret
            reasons = "; ".join(
                f"{count} {reason}" for reason, count in sorted(rejections.items(), key=lambda x: -x[1])
            )
            lines.append(f"llmjudge: {sum(rejections.values())} cache entries rejected and re-asked: {reasons}")
        lost = board.runner.leases.lost if board is not None and board.runner_started else 0
        if lost:  # the heartbeat came too late: another process may have paid for the same prompt
            lines.append(
                f"llmjudge: {lost} lease(s) on the shared cache store ran out while their call was in flight "
                "(a slow or paused process): another process may have paid for the same prompt(s)"
            )
        failures = list(self.store_failures)
        if board is not None and board.store_failure:
            failures.append(board.store_failure)
        if board is not None and failures:
            from pytest_llmjudge.redaction import redact

            where = redact(board.settings.cache_url or "")
            workers = f" in {len(failures)} processes" if len(failures) > 1 else ""
            if failures[0].startswith("at start: "):  # probe failed, --llmjudge-cache-fallback=local
                lines.append(
                    f"llmjudge: cache store {where} was unusable at start{workers} ({failures[0][10:]}): "
                    f"--llmjudge-cache-fallback=local, so replies are cached in {board.settings.cache_dir} only "
                    "and shared with no other shard (written back at the next run that reaches the store)"
                )
            else:
                lines.append(
                    f"llmjudge: cache store {where} failed mid-run{workers} ({failures[0]}): replies since then are "
                    f"cached in {board.settings.cache_dir} only (written back at the next run that reaches it)"
                )
        return lines

    def run_stats(self) -> RunnerStats | None:
        from pytest_llmjudge.execution.runner import RunnerStats

        board = self.config.stash.get(scoreboard_key, None)
        totals = RunnerStats()
        seen = False
        sources: list[dict[str, int]] = list(self.worker_stats)
        if board is not None and board.runner_started:
            sources.append(asdict(board.runner.stats))
        for source in sources:
            seen = True
            for f in fields(RunnerStats):
                setattr(totals, f.name, getattr(totals, f.name) + int(source.get(f.name, 0)))
        return totals if seen else None


results_key = pytest.StashKey[ResultsCollector]()
