"""Jobs with different cache secrets on one Redis: kept apart, told about each other, never silent.

Issue 24: two secrets overwrote each other's entries and re-paid (203, then 600 requests),
the summary said only "N cache entries rejected", and a run without the secret trusted a
forged unsigned entry. Now signed entries live under their secret's key id, a shared store
lists the key ids that wrote to it, a run without the secret on a signed store is refused,
and each rejection's reason is counted in the summary.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.execution.stores.namespace import key_id
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

_spec = importlib.util.spec_from_file_location(
    "llmjudge_store_servers", Path(__file__).parents[1] / "stores" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_servers = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_servers)
redis_url = _servers.redis_url

CASES = 3
SECRET_A = "secret-of-job-a-1234"
SECRET_B = "secret-of-job-b-5678"


def test_two_secrets_keep_apart_a_run_without_one_is_refused_and_rejections_say_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    import redis

    prefix = f"signed-{uuid.uuid4().hex[:8]}:"
    url = f"{redis_url}/0?prefix={prefix}"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with LoopbackServer(responder=ScriptedJudge(lambda query: 2)) as server:
        cases = "\n".join(f"  - {{id: c{i}, language: hi, input: 'q {i}', output: 'a {i}'}}" for i in range(CASES))
        pytester.makefile(
            ".yaml",
            suite=f'suite: signed\njudge: {{model: loopback-judge, base_url: "{server.openai_base_url}"}}\n'
            f"cases:\n{cases}\nassert: [linguistic_acceptability >= 1]\n",
        )

        def run(secret: str | None) -> tuple[Any, int]:
            if secret is None:
                monkeypatch.delenv("LLMJUDGE_CACHE_SECRET", raising=False)
            else:
                monkeypatch.setenv("LLMJUDGE_CACHE_SECRET", secret)
            before = server.stats()["requests"]
            result = pytester.runpytest_inprocess(
                "--llmjudge",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                f"--llmjudge-cache-dir={pytester.path / 'local'}",
                f"--llmjudge-cache-url={url}",
            )
            return result, server.stats()["requests"] - before

        first_a, paid_a = run(SECRET_A)
        first_b, paid_b = run(SECRET_B)
        again_a, paid_again_a = run(SECRET_A)
        unsigned, paid_unsigned = run(None)

        # A forger without the secret plants an unsigned entry under job A's key id.
        client = redis.Redis.from_url(f"{redis_url}/0")
        name = sorted(client.scan_iter(f"{prefix}e:{key_id(SECRET_A)}*"))[0]
        head, _, request = client.get(name).partition(b',"request":')
        record = json.loads(head + b"}")
        del record["hmac_sha256"]
        forged = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()[:-1]
        client.set(name, forged + b',"request":' + request)
        client.close()
        rejected, paid_rejected = run(SECRET_A)

    assert (paid_a, paid_b, paid_again_a) == (CASES, CASES, 0), "no job overwrote the other's entries"
    first_a.assert_outcomes(passed=CASES)
    assert f"signed, key id {key_id(SECRET_A)})" in first_a.stdout.str()
    assert f"it also holds entries of key id(s) {key_id(SECRET_A)}" in first_b.stdout.str(), first_b.stdout.str()
    again_a.assert_outcomes(passed=CASES)

    assert unsigned.ret == pytest.ExitCode.USAGE_ERROR and paid_unsigned == 0
    assert (
        "holds signed entries" in unsigned.stderr.str() and "LLMJUDGE_CACHE_SECRET is not set" in unsigned.stderr.str()
    )

    rejected.assert_outcomes(passed=CASES)
    assert paid_rejected == 1
    assert (
        "llmjudge: 1 cache entries rejected and re-asked: 1 unsigned, and a cache secret is set"
        in rejected.stdout.str()
    ), rejected.stdout.str()
