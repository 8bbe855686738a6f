"""The xdist channel (``session/channel.py``): what a worker sends is read back whole, or as nothing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from pytest_llmjudge.session import channel


def test_a_workers_output_is_read_back_and_a_crashed_worker_sends_nothing() -> None:
    node = SimpleNamespace(
        workeroutput={
            channel.STATS: {"provider_calls": 3},
            channel.ENDPOINTS: {"https://x": {"calls": 3, "failures": []}},
            channel.CACHE_PROBLEMS: ["read-only"],
            channel.REJECTIONS: {"forged": "2"},
            channel.STORE_FAILURE: "timeout",
            channel.REPORT_SUITES: [{"name": "s"}],
            channel.WRITES_REFUSED: ["report.json is a suite"],
        }
    )
    sent = channel.WorkerReport.of(node)
    assert sent.stats == {"provider_calls": 3}
    assert sent.endpoints == {"https://x": {"calls": 3, "failures": []}}
    assert sent.cache_problems == ["read-only"] and sent.rejections == {"forged": 2}
    assert sent.store_failure == "timeout" and sent.suites == [{"name": "s"}]
    assert sent.writes_refused == ["report.json is a suite"]
    assert channel.WorkerReport.of(SimpleNamespace()) == channel.WorkerReport()


def test_the_controller_hands_each_worker_the_start_time_and_the_progress_directory(tmp_path: Path) -> None:
    node = SimpleNamespace(workerinput={"workerid": "gw0"})
    channel.send_to_worker(node, 1234.5, tmp_path)
    assert node.workerinput == {"workerid": "gw0", channel.RUN_STARTED: 1234.5, channel.PROGRESS_DIR: str(tmp_path)}
    quiet = SimpleNamespace(workerinput={})
    channel.send_to_worker(quiet, 1.0, None)
    assert quiet.workerinput == {channel.RUN_STARTED: 1.0}
    assert channel.worker_input(quiet) == {channel.RUN_STARTED: 1.0} and channel.worker_input(object()) is None
