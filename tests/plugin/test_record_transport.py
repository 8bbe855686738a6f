"""The items' typed records reach the results collector intact, once each, also across pytest-xdist workers.

In one process the item, its call report and the collector share one record object (no
copy, no wire form). Under xdist each worker writes its items' own records
(``item.llmjudge_result``) from a conftest; the controller's collector parses what the
reports carried (``record_from_wire``) and the reports then hold the parsed record, not the
wire dict. The two must be the same typed records, ``nodeid`` and ``outcome`` included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_llmjudge.records import (
    AggregateRecord,
    CaseRecord,
    ItemRecord,
    RegressionRecord,
    record_from_wire,
)
from pytest_llmjudge.session.run import NAME as RUN

WORKER_CONFTEST = """
import json, os
from pathlib import Path

def pytest_runtest_teardown(item):
    record = getattr(item, "llmjudge_result", None)
    if record is not None:
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with (Path(__file__).parent / f"items-{name}.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps({"nodeid": item.nodeid, "type": type(record).__name__, "wire": record.to_wire()}) + "\\n")
"""

BASELINE = {
    "format": "pytest-llmjudge-baseline",
    "version": 1,
    "name": "prod",
    "created": "2026-11-01T00:00:00Z",
    "suites": {
        "release": {
            "metrics": {
                "task_quality": {"higher_is_better": True, "scores": {"hi": {f"hi-{i}": 2.0 for i in range(6)}}}
            }
        }
    },
}


class Keep:
    """Keeps the items' records, the call reports and the collector's records at the end of the session."""

    def __init__(self) -> None:
        self.items: dict[str, ItemRecord] = {}
        self.reports: dict[str, pytest.TestReport] = {}
        self.records: list[ItemRecord] = []
        self.wire: dict[str, dict[str, Any]] = {}
        """Each record's wire form at the session's end, before the report document makes its paths relative."""

    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        record = getattr(item, "llmjudge_result", None)
        if record is not None:
            self.items[item.nodeid] = record

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.reports[report.nodeid] = report

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.records = list(session.config.pluginmanager.get_plugin(RUN).results.records)
        self.wire = {str(record.nodeid): record.to_wire() for record in self.records}


def test_in_one_process_the_item_its_report_and_the_collector_share_one_record(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="suite: release\ncases:\n"
        + "".join(f"  - {{id: hi-{i}, language: hi, output: x, recorded: {{task_quality: {i}}}}}\n" for i in range(3))
        + "assert:\n  - task_quality >= 1\naggregate:\n  - mean(task_quality) >= 1\n",
    )
    keep = Keep()
    result = pytester.inline_run("--llmjudge", "-p", "no:randomly", plugins=[keep])
    result.assertoutcome(passed=2 + 2, failed=1)
    assert len(keep.records) == 3 + 2 and {type(r) for r in keep.records} == {CaseRecord, AggregateRecord}
    for record in keep.records:
        assert record.nodeid is not None and record.outcome == ("passed" if record.passed else "failed")
        assert keep.items[record.nodeid] is record
        assert keep.reports[record.nodeid].llmjudge is record  # type: ignore[attr-defined]
    # A report leaving the process (xdist, pytest-reportlog) carries the wire form; the report keeps the record.
    config = result.getcalls("pytest_sessionfinish")[0].session.config
    report = keep.reports[str(keep.records[0].nodeid)]
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    assert json.loads(json.dumps(data))["llmjudge"] == keep.records[0].to_wire()
    assert report.llmjudge is keep.records[0]  # type: ignore[attr-defined]
    assert record_from_wire(data["llmjudge"]) == keep.records[0]


def test_the_collectors_records_are_the_items_typed_records_under_xdist(pytester: pytest.Pytester) -> None:
    # Eight cases: six of them changed, enough for the exact regression test to reach 5% (2^-6).
    cases = "".join(
        f"  - {{id: hi-{i}, language: hi, output: x, recorded: {{task_quality: {i % 3}}}}}\n" for i in range(8)
    )
    pytester.makefile(
        ".yaml",
        suite="suite: release\nregression: {baseline: prod.json}\n"
        f"cases:\n{cases}assert:\n  - task_quality >= 1\naggregate:\n  - mean(task_quality) >= 1.5\n",
    )
    baseline = json.loads(json.dumps(BASELINE))
    baseline["suites"]["release"]["metrics"]["task_quality"]["scores"]["hi"] = {f"hi-{i}": 2.0 for i in range(8)}
    pytester.makefile(".json", prod=json.dumps(baseline))
    pytester.makeconftest(WORKER_CONFTEST)
    keep = Keep()
    result = pytester.inline_run("--llmjudge", "-p", "xdist", "-n", "2", "-p", "no:randomly", plugins=[keep])
    # Cases scored 1 or 2 pass, those scored 0 fail; the mean (0.875) fails for hi and all; it dropped from 2.0.
    result.assertoutcome(passed=5, failed=3 + 2 + 1)
    items: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in pytester.path.glob("items-gw*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            items[entry["nodeid"]] = (entry["type"], entry["wire"])
    assert len(list(pytester.path.glob("items-gw*.jsonl"))) == 2, "both workers ran items"
    collected = {str(record.nodeid): record for record in keep.records}
    assert set(collected) == set(items) and len(collected) == 8 + 2 + 1
    kinds = {type(record) for record in keep.records}
    assert kinds == {CaseRecord, AggregateRecord, RegressionRecord}
    for nodeid, record in collected.items():
        kind, wire = items[nodeid]
        assert type(record).__name__ == kind
        # The worker's collector gave the item's record its nodeid and outcome.
        assert keep.wire[nodeid] == wire and type(record_from_wire(wire)) is type(record)
        assert record.outcome == ("passed" if record.passed else "failed")
        assert keep.reports[nodeid].llmjudge is record  # type: ignore[attr-defined]  # the wire dict went
