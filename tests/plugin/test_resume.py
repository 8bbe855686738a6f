"""An interrupted run keeps every judge reply it paid for, and the re-run resumes from them and cleans up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import judged, rows, suite_text

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

CASES = 24
CONCURRENCY = 4
ANSWERED = 8  # replies the first run gets before the server holds the rest


def interrupt_midway(server: LoopbackServer, process: subprocess.Popen[bytes], sig: signal.Signals) -> int:
    """Send ``sig`` to ``process`` once each of its concurrency slots holds a call; returns the requests paid.

    The server must have been armed with ``hold_after``. The runner stores a reply before it
    frees the reply's slot, so when every slot holds a call the replies answered before are
    all on disk. After the signal the held answers go out (answers in flight may arrive, as
    from a real provider) and any call the run still starts is held, never answered: those
    count as paid, and can only start when a reply was stored and freed a slot. Fails if the
    run ends before the hold; the timeouts only detect a hang.
    """
    try:
        deadline = time.monotonic() + 120
        while not server.wait_held(CONCURRENCY, timeout=0.1):
            assert process.poll() is None, "the run ended before it could be interrupted"
            assert time.monotonic() < deadline, "the run never reached the hold"
        assert process.poll() is None
        process.send_signal(sig)
        server.hold_after(0)
        process.wait(timeout=120)
        return int(server.stats()["requests"])
    finally:
        server.release()
        if process.poll() is None:
            process.kill()
            process.wait()


def _suite(base_url: str) -> str:
    return suite_text("resume", rows(CASES, input="q{i}", output="a{i}"), judge=judged(base_url))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_run_resumes_without_paying_twice(tmp_path: Path, sig: signal.Signals) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(responder=judge) as server:
        (tmp_path / "suite.yaml").write_text(_suite(server.openai_base_url), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--llmjudge-concurrency={CONCURRENCY}",
        ]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        # The signal is sent on observed progress, never raced against it: after ANSWERED
        # replies the server holds every further answer until the signal is sent, so the run
        # is certainly midway, with a call in flight in each of its slots, whatever the load.
        server.hold_after(ANSWERED)
        log = tmp_path / "first-run.txt"
        with log.open("wb") as sink:
            process = subprocess.Popen(command, cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT, env=env)
            paid_first = interrupt_midway(server, process, sig)
        expected_status = -signal.SIGKILL if sig == signal.SIGKILL else pytest.ExitCode.INTERRUPTED
        assert process.returncode == expected_status, log.read_text(encoding="utf-8")[-2000:]
        assert ANSWERED + CONCURRENCY <= paid_first < CASES, "the run must be interrupted midway"

        store = DirectoryStore(tmp_path / ".llmjudge_cache" / "v1")
        entries = store.keys()
        for key in entries:
            json.loads(store.get(key) or b"")  # no corrupt entry
        store.close()
        leftovers = list((tmp_path / ".llmjudge_cache").rglob(".tmp-*"))
        if sig == signal.SIGINT:
            assert not leftovers, "no half-written files are left"
        else:  # a SIGKILL can cut a write short; its temporary file is never read as an entry
            assert len(leftovers) <= CONCURRENCY
        # Replies in flight when the process died were paid for but never stored: at most
        # one round of the concurrency limit.
        assert paid_first - CONCURRENCY <= len(entries) <= paid_first

        rerun = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert rerun.returncode == 0, rerun.stdout[-2000:]
        assert f"{CASES} passed" in rerun.stdout
        assert server.stats()["requests"] - paid_first == CASES - len(entries)
        # The re-run cleaned up what the killed run left (temporary files of a dead writer);
        # the killed run's leases ended with its process, so nothing waited for them. What
        # remains is the entries and the one lock file the leases are taken in.
        left = [p.name for p in (tmp_path / ".llmjudge_cache").rglob("*") if p.is_file()]
        assert sorted(name for name in left if not name.endswith(".pack")) == ["leases"]
