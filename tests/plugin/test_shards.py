"""Three shards as separate processes on one remote cache pay once per prompt; the merge run equals one run.

The shards (``--llmjudge-shard i/3``) run at the same time against one Redis (or one S3
server) and one loopback judge. Six cases repeat another case's prompt under a new id, so
some prompts are needed by two shards at once: the per-key lease makes one pay and the
other wait. Then the merge run (unsharded, same cache URL) must send no request and give
every item the outcome a single unsharded run on a fresh local cache gives.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from builders import judged, rows, suite_text

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.scripted import JudgeQuery

# The real servers of tests/stores (redis-server, moto's S3), skipped with a reason where they can't start.
_spec = importlib.util.spec_from_file_location(
    "llmjudge_store_servers", Path(__file__).parents[1] / "stores" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_servers = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_servers)
redis_url = _servers.redis_url
s3_server = _servers.s3_server

DISTINCT = 24
CASES = 30  # cases 24..29 repeat the prompts of cases 0..5


def _score(query: JudgeQuery) -> int:
    return (int(query.output.split()[-1]) * 7) % 3


def _suite(base_url: str) -> str:
    prompts = rows(DISTINCT, languages=("hi", "ta", "bn"))
    cases = [{**prompts[i % DISTINCT], "id": f"c{i:02d}"} for i in range(CASES)]
    return suite_text(
        "sharded",
        cases,
        judge=judged(base_url),
        aggregate=["mean(linguistic_acceptability) >= 0.9", "expr: mean(linguistic_acceptability) >= 1.5"],
    )


def _outcomes(path: Path) -> dict[str, str]:
    found = {}
    for case in ET.parse(path).iter("testcase"):
        outcome = (
            "failed"
            if case.find("failure") is not None
            else "error"
            if case.find("error") is not None
            else ("skipped" if case.find("skipped") is not None else "passed")
        )
        found[case.get("classname", "") + "::" + case.get("name", "")] = outcome
    return found


def _args(tmp_path: Path, junit: str, *extra: str) -> list[str]:
    return [
        "--llmjudge",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--junitxml={tmp_path / junit}",
        *extra,
        "suite.yaml",
    ]


def _run(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("LLMJUDGE_")}
    command = [sys.executable, "-m", "pytest", *args]
    return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


@pytest.mark.parametrize("kind", ["redis", "s3"])
def test_three_shards_pay_once_per_prompt_and_merge_to_the_single_run(
    kind: str, request: pytest.FixtureRequest, pytester: pytest.Pytester
) -> None:
    tmp_path = pytester.path
    prefix = f"shards-{uuid.uuid4().hex[:10]}"
    if kind == "redis":
        url = f"{request.getfixturevalue('redis_url')}/0?prefix={prefix}:"
    else:
        server_info: Any = request.getfixturevalue("s3_server")
        url = f"s3://{server_info.bucket}/{prefix}?endpoint_url={server_info.endpoint}"
    with LoopbackServer(latency=0.3, responder=ScriptedJudge(_score)) as server:
        (tmp_path / "suite.yaml").write_text(_suite(server.openai_base_url), encoding="utf-8")
        # The unsharded run reads no remote store and needs no process of its own.
        single = pytester.runpytest_inprocess(
            *_args(tmp_path, "single.xml", "-q", f"--llmjudge-cache-dir={tmp_path / 'local'}")
        )
        single_output = single.stdout.str()
        single_requests = server.stats()["requests"]

        shards = [
            _run(
                _args(
                    tmp_path,
                    f"shard{i}.xml",
                    "-q",
                    f"--llmjudge-cache-url={url}",
                    f"--llmjudge-shard={i}/3",
                    f"--llmjudge-report=json:{tmp_path / f'shard{i}.json'}",
                ),
                tmp_path,
            )
            for i in (1, 2, 3)
        ]
        shard_outputs = [shard.communicate(timeout=120)[0] for shard in shards]
        shard_requests = server.stats()["requests"] - single_requests

        # The shards must be processes of their own (they run at the same time); the merge run needn't.
        merge = pytester.runpytest_inprocess(
            *_args(
                tmp_path,
                "merge.xml",
                f"--llmjudge-cache-url={url}",
                "--llmjudge-shard-reports=shard*.json",
                f"--llmjudge-report=json:{tmp_path / 'merge.json'}",
            )
        )
        merge_output = merge.stdout.str()
        merge_requests = server.stats()["requests"] - single_requests - shard_requests

    assert single.ret == 1, single_output[-2000:]  # some cases score 0
    assert single_requests == DISTINCT, single_output[-2000:]
    assert shard_requests == DISTINCT, "every prompt paid once over the three shards"
    assert merge_requests == 0, merge_output[-2000:]
    assert merge.ret == single.ret, merge_output[-2000:]
    single_outcomes = _outcomes(tmp_path / "single.xml")
    assert _outcomes(tmp_path / "merge.xml") == single_outcomes
    assert sum(outcome == "failed" for outcome in single_outcomes.values()) > 1
    assert any("aggregate" in nodeid or "mean(" in nodeid for nodeid in single_outcomes)

    # The shards split the case items between them, each once, with the single run's outcomes,
    # and ran no aggregate (they run in the merge job).
    sharded: dict[str, str] = {}
    for i, output in enumerate(shard_outputs, start=1):
        assert f"llmjudge: shard {i}/3:" in output, output[-2000:]
        outcomes = _outcomes(tmp_path / f"shard{i}.xml")
        assert outcomes, f"shard {i} ran nothing: {output[-1000:]}"
        assert not set(outcomes) & set(sharded)
        sharded.update(outcomes)
    case_items = {nodeid: outcome for nodeid, outcome in single_outcomes.items() if "mean(" not in nodeid}
    assert sharded == case_items
    assert f"cache use ({url.split('?')[0]}" in merge_output
    # The merged report carries the shards' calls (the merge itself paid none) and their cost's tokens.
    merged = json.loads((tmp_path / "merge.json").read_text(encoding="utf-8"))["accounting"]
    shard_calls = [
        json.loads((tmp_path / f"shard{i}.json").read_text(encoding="utf-8"))["accounting"]["provider_calls"]
        for i in (1, 2, 3)
    ]
    assert merged["provider_calls"] == sum(shard_calls) == DISTINCT
    assert merged["input_tokens"] > 0
    assert "judge calls and cost include 3 shard report(s) (24 provider requests)" in merge_output
