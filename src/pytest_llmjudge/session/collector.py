"""The results collector: the one listener that every report of the run is built from.

Items keep a typed record (``records.py``), which the Run attaches to the call report
(``report.llmjudge``); the Run hands every test report to :meth:`ResultsCollector.add` (on
the controller under pytest-xdist, where the records arrive with them) and every finished
xdist worker's :class:`~pytest_llmjudge.session.channel.WorkerReport` to
:meth:`ResultsCollector.add_worker`. It keeps:

* each item's record, with its report's ``nodeid`` and ``outcome``;
* the items that could not run for want of a judge (``llmjudge_no_judge``);
* expected failures (pytest reports them as skipped or passed) and the suite items that
  ended without a record (an error in setup, a skip), for the reports' "not run" list;
* the workers' call accounting, per-endpoint tallies, cache problems and suite infos.

Every record lives once: a record built in this process is the item's own object, kept as
is (the item, its report and the collector share it); one that arrived from an xdist
worker in wire form is parsed back (:func:`~pytest_llmjudge.records.record_from_wire`; one
that does not parse is a bug and raises) and replaces the wire dict on the report, which
pytest's terminal statistics keep to the end of the run. The reports render what this
holds; the collector itself writes nothing.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.judges.no_judge_policy import NoJudge
from pytest_llmjudge.session.channel import WorkerReport

if TYPE_CHECKING:
    from pytest_llmjudge.execution.runner import RunnerStats
    from pytest_llmjudge.execution.scorer import Scorer
    from pytest_llmjudge.records import ItemRecord
    from pytest_llmjudge.report.document import NotRun, SuiteInfo

_SUITE_FILES = (".yaml", ".yml")
MAX_REASON_CHARS = 500


def _suite_item(nodeid: str) -> bool:
    return nodeid.split("::", 1)[0].endswith(_SUITE_FILES)


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
        text = text[len("Skipped: ") :] if text.startswith("Skipped: ") else text
    else:
        lines = [line.strip() for line in report.longreprtext.splitlines() if line.strip()]
        text = " ".join(lines[:3])
    return text[:MAX_REASON_CHARS]


class ResultsCollector:
    """Collects item records (``report.llmjudge``, carried by reports under xdist too) for every report."""

    def __init__(self, board: Scorer | None = None) -> None:
        self.board = board
        """This process's scorer: its own accounting is added to the workers'."""
        self.records: list[ItemRecord] = []
        """The items' typed records (``report.llmjudge``, parsed back under xdist) with ``nodeid`` and ``outcome``."""
        self.worker_stats: list[dict[str, int]] = []
        """Each xdist worker's (and each merged shard report's) judge-call accounting."""
        self.worker_endpoints: list[dict[str, Any]] = []
        """Each xdist worker's judge calls per endpoint (``judges/diagnosis.py``), for the headline."""
        self.cache_problems: list[list[str]] = []
        """Each xdist worker's cache-location headlines (``Scorer.cache_problems``)."""
        self.store_failures: list[str] = []
        """Why xdist workers gave up the remote cache store (``execution/stores/fallback.py``)."""
        self.rejections: dict[str, int] = {}
        """Rejected cache entries of xdist workers, by reason."""
        self.no_judge: list[NoJudge] = []
        """Items that did not run because their judge can't be called (skip_or_fail_without_judge)."""
        self.not_run: dict[str, NotRun] = {}
        """Suite items that ended without a record (not passed), by node id."""
        self.xfail: dict[str, str] = {}
        """nodeid -> ``xfailed`` or ``xpassed`` (pytest reports those as skipped or passed)."""
        self.worker_suites: list[SuiteInfo] = []
        """What the xdist workers' collection knew of each suite."""
        self.workers = 0
        """How many xdist workers finished."""

    def add(self, report: pytest.TestReport) -> None:
        """Take one test report (each phase of each item, in the process that writes the reports)."""
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
        self._note_not_run(report)

    def _note_not_run(self, report: pytest.TestReport) -> None:
        """Remember expected failures, and suite items that end without a structured record."""
        if hasattr(report, "wasxfail") and report.when == "call":
            self.xfail[report.nodeid] = "xfailed" if report.skipped else "xpassed"
        if not _suite_item(report.nodeid) or getattr(report, "llmjudge", None) is not None:
            return
        if report.outcome == "passed" or report.nodeid in self.not_run:
            return
        failed_outside_call = report.when != "call" and report.outcome == "failed"
        outcome: Any = "error" if failed_outside_call else report.outcome
        if hasattr(report, "wasxfail") and report.skipped:
            outcome = "xfailed"
        from pytest_llmjudge.report.document import NotRun

        self.not_run[report.nodeid] = NotRun(
            nodeid=report.nodeid, outcome=outcome, when=report.when, reason=_reason(report)
        )

    def add_worker(self, sent: WorkerReport) -> None:
        """Take what one finished xdist worker sent back."""
        self.workers += 1
        if sent.stats:
            self.worker_stats.append(sent.stats)
        if sent.endpoints:
            self.worker_endpoints.append(sent.endpoints)
        if sent.cache_problems:
            self.cache_problems.append(sent.cache_problems)
        for reason, count in sent.rejections.items():
            self.rejections[reason] = self.rejections.get(reason, 0) + count
        if sent.store_failure:
            self.store_failures.append(sent.store_failure)
        if sent.suites:
            from pytest_llmjudge.report.document import SuiteInfo

            self.worker_suites.extend(SuiteInfo.model_validate(wire) for wire in sent.suites)

    def send_to_controller(self, workeroutput: dict[str, Any]) -> None:
        """In an xdist worker: this process's accounting into ``workeroutput`` (``session/channel.py``)."""
        from pytest_llmjudge.session import channel

        board = self.board
        if board is None:
            return
        if board.runner_started:
            workeroutput[channel.STATS] = asdict(board.runner.stats)
            workeroutput[channel.ENDPOINTS] = board.runner.endpoints.as_dict()
        if board.cache_problems:
            workeroutput[channel.CACHE_PROBLEMS] = board.cache_problems
        if board.runner_started and board.runner.rejections:
            workeroutput[channel.REJECTIONS] = dict(board.runner.rejections)
        if board.store_failure:
            workeroutput[channel.STORE_FAILURE] = board.store_failure

    def judge_headlines(self) -> list[str]:
        """One line per judge endpoint whose calls failed, and one if the remote cache store failed,
        over this process and its xdist workers."""
        from pytest_llmjudge.judges.diagnosis import EndpointTally, headlines

        board = self.board
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
            from pytest_llmjudge.util.redaction import redact

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

        board = self.board
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
