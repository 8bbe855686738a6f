"""Batch mode (``--llmjudge-batch``) end to end: real SDK batch methods against the loopback server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import builders
import pytest

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.testing import LoopbackServer, ReceivedRequest, Reply, ScriptedJudge

FAST_POLL = "--llmjudge-batch-poll=0.05"


def suite_text(base_url: str, *, provider: str = "openai", mode: str = "single", cases: int = 3) -> str:
    return builders.suite_text(
        "batched",
        builders.rows(cases, languages=("fr", "hi"), case_id="c{i}", input="q{i}", output="a{i}"),
        judge=builders.judged(base_url, provider=provider, mode=mode),
        asserts=["linguistic_acceptability >= 1", "hallucinations <= 0"],
        aggregate=["mean(linguistic_acceptability) >= 1.5"],
    )


def records(root: Path) -> list[Path]:
    return sorted((root / ".llmjudge_cache" / "v1" / "batches").glob("*.json"))


@pytest.mark.parametrize(("provider", "mode", "lines"), [("openai", "single", 6), ("anthropic", "compound", 3)])
def test_batch_mode_answers_every_call_and_a_rerun_hits_the_cache(
    pytester: pytest.Pytester, loopback: LoopbackServer, provider: str, mode: str, lines: int
) -> None:
    base_url = loopback.openai_base_url if provider == "openai" else loopback.anthropic_base_url
    pytester.makefile(".yaml", suite=suite_text(base_url, provider=provider, mode=mode))
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL)
    result.assert_outcomes(passed=9)
    stats = loopback.stats()
    assert loopback.requests == [], "every judge call went through the batch"
    assert stats["batch"]["batches_created"] == 1
    assert stats["batch"]["batch_requests"] == lines
    if provider == "openai":
        assert stats["by_path"]["/v1/files"] == 1 and stats["by_path"]["/v1/batches"] == 1
    else:
        assert stats["by_path"]["/v1/messages/batches"] == 1
    result.stdout.fnmatch_lines(
        [
            f"llmjudge: submitted {provider} batch *({lines} requests)",
            f"llmjudge: {provider} batch * ended: {lines} replies cached, 0 failed",
            f"llmjudge: batch mode: {lines} uncached request(s), 0 cached; {lines} submitted*",
            "*judge calls: 0 provider requests*",
        ]
    )
    assert records(pytester.path) == [], "an ended batch leaves no record"

    rerun = pytester.runpytest("--llmjudge")
    rerun.assert_outcomes(passed=9)
    assert loopback.requests == [] and loopback.stats()["batch"]["batch_requests"] == lines
    rerun.stdout.fnmatch_lines([f"*0 provider requests, {lines} cache hits*"])


def test_batch_requests_are_the_online_requests(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """The same bodies online and in the batch file: the same cache keys either way."""
    pytester.makefile(".yaml", suite=suite_text(loopback.openai_base_url, cases=1))
    pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "--llmjudge-cache-dir=online")
    online = sorted(json.dumps(r.body, sort_keys=True) for r in loopback.requests)
    pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL, "--llmjudge-cache-dir=batched")
    batched = sorted(json.dumps(r.body, sort_keys=True) for r in loopback.batch_requests)
    assert online == batched and len(online) == 2
    keys = DirectoryStore(pytester.path / "online" / "v1").keys()
    assert len(keys) == 2 and keys == DirectoryStore(pytester.path / "batched" / "v1").keys()


def test_failed_batch_lines_are_requested_online(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    seen: set[str] = set()

    def flaky(request: ReceivedRequest) -> Reply | str:
        text = request.last_user_text
        if "'a0'" in text or "a0\n" in text:
            if text not in seen:
                seen.add(text)
                return Reply(text="batch worker crashed", status=500)
        return scripted_judge(request)

    loopback.responder = flaky
    pytester.makefile(".yaml", suite=suite_text(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL)
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(["*ended: 4 replies cached, 2 failed, 2 left for the online path*"])
    assert len(loopback.requests) == 2, "only the two failed lines went online"


def test_an_unparseable_batch_reply_is_re_asked_with_a_note_not_asked_again(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    # The batch paid for every prompt in this run: an unparseable line is used as it is (its
    # re-ask with a note goes online), never sent online a second time unchanged.
    def prose_for_c0(request: ReceivedRequest) -> str:
        text = request.last_user_text
        if ("'a0'" in text or "a0\n" in text) and "could not be used" not in text:
            return "Looks fine to me."
        return scripted_judge(request)

    loopback.responder = prose_for_c0
    pytester.makefile(".yaml", suite=suite_text(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL)
    result.assert_outcomes(passed=9)
    assert len(loopback.requests) == 2, "the two rubrics of c0 re-asked once each, online"
    assert all("could not be used" in r.last_user_text for r in loopback.requests)
    result.stdout.fnmatch_lines(["*judge calls: 2 provider requests*"])
    assert "unparseable cache hits" not in result.stdout.str()


def test_a_run_killed_while_its_batch_is_pending_resumes_the_same_batch(tmp_path: Path) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2, "hallucinations": 0})
    with LoopbackServer(responder=judge, batch_delay=120.0) as server:
        (tmp_path / "suite.yaml").write_text(suite_text(server.openai_base_url, cases=4), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "--llmjudge-batch",
            FAST_POLL,
            "-p",
            "no:cacheprovider",
        ]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("LLMJUDGE_")}
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while not records(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # a few polls
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        (record,) = records(tmp_path)
        saved = json.loads(record.read_text(encoding="utf-8"))
        assert saved["batch_id"].startswith("batch_") and len(saved["keys"]) == 8
        assert server.stats()["batch"]["batches_created"] == 1

        server.batch_delay = 0.0
        rerun = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert rerun.returncode == 0, rerun.stdout[-3000:]
        assert "11 passed" in rerun.stdout
        assert f"resuming openai batch {saved['batch_id']} (8 requests)" in rerun.stdout
        stats = server.stats()
        assert stats["batch"]["batches_created"] == 1, "the re-run paid for no second batch"
        assert stats["batch"]["batch_requests"] == 8
        assert server.requests == []
        assert records(tmp_path) == []


def test_batch_wait_stops_the_run_and_a_rerun_collects(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    loopback.batch_delay = 120.0
    pytester.makefile(".yaml", suite=suite_text(loopback.anthropic_base_url, provider="anthropic"))
    stopped = pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL, "--llmjudge-batch-wait=0.3")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    stopped.assert_outcomes()
    stopped.stdout.fnmatch_lines(["*still pending after 0.3 s*re-run to collect them*"])
    assert len(records(pytester.path)) == 1

    loopback.batch_delay = 0.0
    collected = pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL)
    collected.assert_outcomes(passed=9)
    assert loopback.stats()["batch"]["batches_created"] == 1
    assert loopback.requests == []


def test_batch_mode_needs_the_cache(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=suite_text(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", "--llmjudge-cache=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmjudge-batch needs --llmjudge-cache=use*"])
    assert loopback.stats()["requests"] == 0


def test_nothing_uncached_means_no_batch(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=suite_text(loopback.openai_base_url))
    pytester.runpytest("--llmjudge").assert_outcomes(passed=9)
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", FAST_POLL)
    result.assert_outcomes(passed=9)
    assert loopback.stats()["batch"]["batches_created"] == 0
    result.stdout.fnmatch_lines(["llmjudge: batch mode: 0 uncached request(s), 6 cached*"])


def test_regression_items_alone_are_batched(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    """The one planner: a run selecting only regression items sends their judge calls as a batch too."""
    pytester.makefile(".yaml", suite=suite_text(loopback.openai_base_url))
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod").assert_outcomes(passed=9)
    online = len(loopback.requests)
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-batch", FAST_POLL, "--llmjudge-cache-dir=fresh", "--llmjudge-baseline=prod",
        "-k", "regression",
    )  # fmt: skip
    # One or two cases per language can decide nothing: the four items are undecided, after judging.
    result.assert_outcomes(passed=0, deselected=9)
    assert result.parseoutcomes()["undecided"] == 4
    assert len(loopback.requests) == online, "no regression call went online"
    assert loopback.stats()["batch"]["batch_requests"] == 6
