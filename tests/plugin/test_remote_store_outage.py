"""The remote cache dies mid-run: every case is still scored, each reply paid once, and the run says so.

redis-server is killed from inside the judge (the loopback responder) when the fifth
request arrives, so the outage falls between calls of a running session. Before the
fallback store (``execution/stores/fallback.py``) every reply paid after that point was
dropped, and the cases came out unscored as "output target failed: ConnectionError".
"""

from __future__ import annotations

import importlib.util
import signal
import sys
import threading
from pathlib import Path

import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.scripted import JudgeQuery

_spec = importlib.util.spec_from_file_location(
    "llmjudge_store_servers", Path(__file__).parents[1] / "stores" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_servers = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_servers)

CASES = 24
KILL_AT = 5


def test_redis_killed_mid_run_keeps_every_paid_reply_and_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("redis")
    with _servers.running_redis() as (url, process):
        seen = 0
        lock = threading.Lock()

        def score(query: JudgeQuery) -> int:
            nonlocal seen
            with lock:
                seen += 1
                if seen == KILL_AT:
                    process.send_signal(signal.SIGKILL)
                    process.wait(timeout=10)
            return 2

        with LoopbackServer(latency=0.05, responder=ScriptedJudge(score)) as server:
            cases = "\n".join(
                f"  - {{id: c{i:02d}, language: hi, input: 'q {i}', output: 'answer {i}'}}" for i in range(CASES)
            )
            pytester.makefile(
                ".yaml",
                suite=f'suite: outage\njudge: {{model: loopback-judge, base_url: "{server.openai_base_url}"}}\n'
                f"cases:\n{cases}\nassert: [linguistic_acceptability >= 1]\n",
            )
            monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
            cache_dir = pytester.path / "local-cache"
            common = ["--llmjudge", "-p", "no:randomly", "-p", "no:cacheprovider", f"--llmjudge-cache-dir={cache_dir}"]
            result = pytester.runpytest_inprocess(
                *common, "--llmjudge-concurrency=2", f"--llmjudge-cache-url={url}/0?prefix=outage:"
            )
            paid = server.stats()["requests"]
            rerun = pytester.runpytest_inprocess(*common)  # the next run, on the local cache alone
            paid_again = server.stats()["requests"] - paid

    text = result.stdout.str()
    result.assert_outcomes(passed=CASES)
    assert paid == CASES, "each reply paid once, the ones after the outage too"
    assert "cache store" in text and "failed mid-run" in text and "ConnectionError" in text, text[-3000:]
    rerun.assert_outcomes(passed=CASES)
    # Replies paid after the outage were kept in the local cache dir; those that only reached
    # Redis (at most the calls before the kill, plus the two in flight) are paid again.
    assert paid_again <= KILL_AT + 1, paid_again
