"""A remote cache store that never works is a usage error at start, not a silent local run.

Issue 24: three shards and a merge on a mistyped bucket paid 1,217 requests for 600 prompts
and exited 0. Now the store is probed (write, read, lease) before any judge call: a wrong
bucket, port or password exits 4 with the URL (credentials masked) and the cause, and pays
nothing; ``--llmjudge-cache-fallback=local`` runs on the local directory with a red headline,
and the next run that reaches the store writes those replies back to it.
"""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import judged, rows, suite_text

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

_spec = importlib.util.spec_from_file_location(
    "llmjudge_store_servers", Path(__file__).parents[1] / "stores" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_servers = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_servers)
redis_url = _servers.redis_url
s3_server = _servers.s3_server

CASES = 4


def _suite(pytester: pytest.Pytester, base_url: str) -> None:
    pytester.makefile(".yaml", suite=suite_text("probe", rows(CASES, case_id="c{i}"), judge=judged(base_url)))


def _run(pytester: pytest.Pytester, url: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(
        "--llmjudge",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        f"--llmjudge-cache-dir={pytester.path / 'local'}",
        f"--llmjudge-cache-url={url}",
        *extra,
    )


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with LoopbackServer(responder=ScriptedJudge(lambda query: 2)) as server:
        _suite(pytester, server.openai_base_url)
        yield server


def test_a_mistyped_bucket_is_a_usage_error_before_any_judge_call(
    pytester: pytest.Pytester, judge: Any, s3_server: Any
) -> None:
    url = f"s3://no-such-bucket-llmjudge/p?endpoint_url={s3_server.endpoint}"
    result = _run(pytester, url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "cache store s3://no-such-bucket-llmjudge/p" in text and "is unusable: put failed" in text, text
    assert "NoSuchBucket" in text and "--llmjudge-cache-fallback=local" in text, text
    assert judge.stats()["requests"] == 0


def test_a_wrong_port_and_a_wrong_password_name_the_cause_and_mask_the_password(
    pytester: pytest.Pytester, judge: Any, redis_url: str
) -> None:
    refused = _run(pytester, f"redis://127.0.0.1:{_closed_port()}/0")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "is unusable: put failed: ConnectionError" in refused.stderr.str(), refused.stderr.str()

    # The test server has no password: AUTH with one is refused, as a wrong password is.
    wrong = _run(pytester, redis_url.replace("redis://", "redis://llmjudge:s3cr3t-pass@") + "/0")
    text = wrong.stderr.str()
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    assert "s3cr3t-pass" not in text + wrong.stdout.str() and "redis://***@127.0.0.1" in text, text
    assert "is unusable: put failed:" in text and "Error" in text, text
    assert judge.stats()["requests"] == 0


def test_the_local_fallback_is_opt_in_loud_and_written_back_at_the_next_run(
    pytester: pytest.Pytester, judge: Any, s3_server: Any
) -> None:
    bucket = "llmjudge-later"
    url = f"s3://{bucket}/p?endpoint_url={s3_server.endpoint}"
    degraded = _run(pytester, url, "--llmjudge-cache-fallback=local")
    degraded.assert_outcomes(passed=CASES)
    assert judge.stats()["requests"] == CASES
    assert f"cache store {url} was unusable at start (put failed: NoSuchBucket" in degraded.stdout.str()

    s3_server.client.create_bucket(Bucket=bucket)  # the store is fixed: the next run shares what was paid
    try:
        fixed = _run(pytester, url)
        fixed.assert_outcomes(passed=CASES)
        assert f"{CASES} repl(ies) paid during an earlier outage written back" in fixed.stdout.str()
        stored = s3_server.client.list_objects_v2(Bucket=bucket, Prefix="p/entries/")["KeyCount"]
        assert stored == CASES + 1  # and the probe's entry
        assert judge.stats()["requests"] == CASES, "nothing paid twice"
        again = _run(pytester, url)  # the journal is gone: nothing written back twice
        assert "written back" not in again.stdout.str()
    finally:
        for item in s3_server.client.list_objects_v2(Bucket=bucket).get("Contents", []):
            s3_server.client.delete_object(Bucket=bucket, Key=item["Key"])
        s3_server.client.delete_bucket(Bucket=bucket)


def test_a_wait_on_a_dead_shards_lease_is_said_on_the_terminal_while_items_run(
    pytester: pytest.Pytester, judge: Any, redis_url: str
) -> None:
    import time
    import uuid

    import redis

    prefix = f"wait-{uuid.uuid4().hex[:8]}:"
    url = f"{redis_url}/0?prefix={prefix}"
    first = _run(pytester, url)
    first.assert_outcomes(passed=CASES)
    client = redis.Redis.from_url(f"{redis_url}/0")
    entry = sorted(client.scan_iter(f"{prefix}e:*"))[0]
    key = entry.decode()[len(f"{prefix}e:") :]
    client.delete(entry)  # its reply lost, and its lease left by a shard that crashed while paying for it
    # Two seconds: the rerun's start-up (collection, planning) must not outlast it on a loaded machine.
    client.set(f"{prefix}l:{key}", f"ci 9 shard 3/3|elsewhere:77:c0ffee:1|{time.time():.0f}", px=2000)
    client.close()
    rerun = _run(pytester, url, "-q")
    rerun.assert_outcomes(passed=CASES)
    text = rerun.stdout.str()
    # Printed from the runner's thread while an item waits: not swallowed by pytest's capture.
    assert "llmjudge: waiting on prompt(s) leased by ci 9 shard 3/3 (elsewhere:77:c0ffee) since " in text, text
    assert "llmjudge: the lease of ci 9 shard 3/3 (elsewhere:77:c0ffee) on a prompt ended without a reply" in text
    assert judge.stats()["requests"] == CASES + 1
