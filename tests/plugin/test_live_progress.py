"""Live progress through pytester: periodic lines when the output is not a terminal (CI logs), never in an
item's "Captured stdout", none with ``-q``; cost n/a for a model without a price. The judge is the loopback
server behind the real openai SDK, slowed down so that the progress thread ticks while items wait."""

from __future__ import annotations

import pytest
from builders import judged, suite_text

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge


def _suite(base_url: str) -> str:
    cases = [{"id": f"c{i}", "language": "hi", "input": f"q{i}", "output": f"a{i}"} for i in (1, 2, 3)]
    cases[1]["assert"] = ["linguistic_acceptability >= 3"]
    return suite_text("slow", cases, judge=judged(base_url))


@pytest.fixture
def slow_server():  # type: ignore[no-untyped-def]
    with LoopbackServer(latency=0.3, responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        yield server


def test_progress_lines_in_ci_logs_never_in_captured_stdout(
    pytester: pytest.Pytester, slow_server: LoopbackServer
) -> None:
    pytester.makefile(".yaml", suite=_suite(slow_server.openai_base_url))
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-concurrency", "1", "--llmjudge-progress-interval", "0.05", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=3, failed=1)
    progress = [line for line in result.outlines if line.startswith("llmjudge: ") and "judge calls," in line]
    assert progress, result.stdout.str()
    # The loopback model has no price: the line says so rather than guess.
    assert all(
        line.endswith("cost n/a") and "/3 judge calls, " in line and "provider requests, 0 cache hits" in line
        for line in progress
    )
    assert "Captured stdout" not in result.stdout.str()


def test_quiet_runs_show_no_progress(pytester: pytest.Pytester, slow_server: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=_suite(slow_server.openai_base_url))
    result = pytester.runpytest(
        "--llmjudge", "-q", "--llmjudge-concurrency", "1", "--llmjudge-progress-interval", "0.05"
    )
    result.assert_outcomes(passed=3, failed=1)
    assert not [line for line in result.outlines if "judge calls," in line and "llmjudge: " in line]


def test_under_xdist_the_controller_shows_the_workers_sum(
    pytester: pytest.Pytester, slow_server: LoopbackServer
) -> None:
    pytester.makefile(".yaml", suite=_suite(slow_server.openai_base_url))
    result = pytester.runpytest_inprocess(
        "--llmjudge", "-n", "2", "--llmjudge-concurrency", "1", "--llmjudge-progress-interval", "0.05"
    )
    result.assert_outcomes(passed=3, failed=1)
    progress = [line for line in result.outlines if line.startswith("llmjudge: ") and "judge calls," in line]
    assert progress, result.stdout.str()
    # Only the controller prints, and its counts are the sum of both workers' files: each worker
    # submits at most the suite's 3 prompts, so more than 3 means both were added up.
    planned = {int(line.split("/")[1].split(" ")[0]) for line in progress}
    assert max(planned) > 3
    assert "Captured stdout" not in result.stdout.str()


def test_a_price_given_on_the_command_line_gives_a_cost_so_far(
    pytester: pytest.Pytester, slow_server: LoopbackServer
) -> None:
    pytester.makefile(".yaml", suite=_suite(slow_server.openai_base_url))
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-concurrency",
        "1",
        "--llmjudge-progress-interval",
        "0.05",
        "--llmjudge-price",
        "loopback-judge = 1000 2000",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=3, failed=1)
    progress = [line for line in result.outlines if line.startswith("llmjudge: ") and "judge calls," in line]
    assert progress and all(" so far" in line and "est. $" in line for line in progress)
    # Once calls are done, the cost is tokens x price, the same table as the final accounting line's.
    assert any(not line.endswith("est. $0.0000 so far") for line in progress)
    result.stdout.fnmatch_lines(["judge calls: 3 provider requests*est. $*"])
