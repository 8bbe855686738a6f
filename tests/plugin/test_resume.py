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

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

CASES = 24


def _suite(base_url: str) -> str:
    cases = "\n".join(f"  - {{id: c{i:02d}, language: hi, input: q{i}, output: a{i}}}" for i in range(CASES))
    return f"""\
suite: resume
judge: {{model: loopback-judge, base_url: "{base_url}"}}
cases:
{cases}
assert: [linguistic_acceptability >= 1]
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_run_resumes_without_paying_twice(tmp_path: Path, sig: signal.Signals) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(latency=0.3, responder=judge) as server:
        (tmp_path / "suite.yaml").write_text(_suite(server.openai_base_url), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "-q",
            "-p",
            "no:cacheprovider",
            "--llmjudge-concurrency=4",
        ]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while server.stats()["requests"] < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(sig)
        process.communicate(timeout=60)
        paid_first = server.stats()["requests"]
        assert 8 <= paid_first < CASES, "the run must be interrupted midway"

        entries = [
            path
            for path in (tmp_path / ".llmjudge_cache" / "v1").glob("??/*.json")
            if not path.name.startswith(".tmp-")
        ]
        for entry in entries:
            json.loads(entry.read_text(encoding="utf-8"))  # no corrupt entry
        leftovers = list((tmp_path / ".llmjudge_cache").rglob(".tmp-*"))
        if sig == signal.SIGINT:
            assert not leftovers, "no half-written files are left"
        else:  # a SIGKILL can cut a write short; its temporary file is never read as an entry
            assert len(leftovers) <= 4
        # Replies in flight when the process died were paid for but never stored: at most
        # one round of the concurrency limit.
        assert paid_first - 4 <= len(entries) <= paid_first

        rerun = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert rerun.returncode == 0, rerun.stdout[-2000:]
        assert f"{CASES} passed" in rerun.stdout
        assert server.stats()["requests"] - paid_first == CASES - len(entries)
        # The re-run cleaned up what the killed run left (temporary files of a dead writer);
        # the killed run's leases ended with its process, so nothing waited for them. What
        # remains is the entries and the one lock file the leases are taken in.
        left = [p.name for p in (tmp_path / ".llmjudge_cache").rglob("*") if p.is_file()]
        assert sorted(name for name in left if not name.endswith(".json") or name.startswith(".tmp-")) == ["leases"]
