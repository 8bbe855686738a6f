"""Ctrl-C ends a run at once, even with an output target that hangs, and keeps the replies it paid for.

A subprocess, since what is checked is how the process ends: one SIGINT while the main thread
waits on a target that never returns (in a thread) and judge calls are in flight must give
pytest's "KeyboardInterrupt" summary and exit status 2, without a second Ctrl-C. The bound on
the wait is a hang detector, generous for a loaded machine, not a timing assertion.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

CASES = 24
CONCURRENCY = 4
ANSWERED = 2 * CONCURRENCY  # replies the run gets before the server holds the rest

HANGING_MODEL = """
import threading

def answer(case):
    threading.Event().wait()  # never returns
"""


def _judged_suite(base_url: str) -> str:
    cases = "\n".join(f"  - {{id: c{i:02d}, language: hi, input: q{i}, output: a{i}}}" for i in range(CASES))
    return f"""\
suite: judged
judge: {{model: loopback-judge, base_url: "{base_url}"}}
cases:
{cases}
assert: [linguistic_acceptability >= 1]
"""


HANGING_SUITE = """\
suite: hanging
outputs: {target: "hanging_model:answer"}
cases:
  - {id: stuck, language: fr, reference: "Bonjour !"}
assert: [chrf >= 50]
"""


def test_one_sigint_ends_the_run_and_the_paid_replies_are_kept(pytester: pytest.Pytester) -> None:
    tmp_path = pytester.path
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        (tmp_path / "hanging_model.py").write_text(HANGING_MODEL, encoding="utf-8")
        # Items run in file order: the main thread waits on the hung target while judge calls go on.
        (tmp_path / "a_hanging.yaml").write_text(HANGING_SUITE, encoding="utf-8")
        (tmp_path / "b_judged.yaml").write_text(_judged_suite(server.openai_base_url), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "-p",
            "no:cacheprovider",
            f"--llmjudge-concurrency={CONCURRENCY}",
        ]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CI"}
        # The signal is sent on observed progress, never raced against it: after ANSWERED
        # replies the server holds every further answer, so when each concurrency slot holds
        # one the run is certainly midway, whatever the load. After the signal the held
        # answers go out (as a real provider's would) and any call the run still starts is
        # held, never answered: it counts as paid, and needs a stored reply to free its slot.
        server.hold_after(ANSWERED)
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        try:
            deadline = time.monotonic() + 120  # a hang detector only
            while not server.wait_held(CONCURRENCY, timeout=0.1):
                assert process.poll() is None, "the run ended before it could be interrupted"
                assert time.monotonic() < deadline, "the run never reached the hold"
            assert process.poll() is None, "the run must be interrupted midway"
            process.send_signal(signal.SIGINT)
            server.hold_after(0)
            try:
                output, _ = process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
                raise AssertionError("one SIGINT did not end the run:\n" + output[-3000:]) from None
            paid = server.stats()["requests"]
        finally:
            server.release()
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
        assert "KeyboardInterrupt" in output
        assert ANSWERED + CONCURRENCY <= paid < CASES, "the run must be interrupted midway"

        # The re-run needs no process of its own (and skips the hung target's suite).
        rerun = pytester.runpytest(*command[3:], "b_judged.yaml")
        rerun.assert_outcomes(passed=CASES)
        # Every reply the first run received is in the cache; only calls still in flight at the
        # interrupt (at most one round of the concurrency) are paid again.
        again = server.stats()["requests"] - paid
        assert CASES - paid <= again <= CASES - paid + CONCURRENCY
