"""Two pytest processes on one judge-cache directory pay once per prompt (per-key leases)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from builders import judged, rows, suite_text

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

PROMPTS = 100


def _suite(base_url: str) -> str:
    return suite_text(
        "two-processes", rows(PROMPTS, case_id="c{i:03d}", input="q{i}", output="a{i}"), judge=judged(base_url)
    )


def test_two_processes_on_one_cache_directory_pay_once_per_prompt(tmp_path: Path) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(latency=0.2, responder=judge) as server:
        (tmp_path / "suite.yaml").write_text(_suite(server.openai_base_url), encoding="utf-8")
        cache = tmp_path / "shared-cache"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--llmjudge-cache-dir={cache}",
            "suite.yaml",
        ]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("LLMJUDGE_")}
        processes = [
            subprocess.Popen(
                command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
            )
            for _ in range(2)
        ]
        outputs = [process.communicate(timeout=120)[0] for process in processes]
        requests = server.stats()["requests"]

    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-2000:]
        assert f"{PROMPTS} passed" in output
    assert requests == PROMPTS, "each prompt paid once across the two processes"
    others = [p.name for p in cache.rglob("*") if p.is_file() and p.parent.name != "packs"]
    assert others == ["leases"]  # no temporary file; the leases' one lock file, nothing per key
    assert len(list(cache.glob("v1/packs/*"))) <= 2  # a pack per process that stored replies
    assert len(DirectoryStore(cache / "v1").keys()) == PROMPTS
