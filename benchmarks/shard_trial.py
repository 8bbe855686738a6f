"""The shard trial of issue 24, end to end: real pytest processes, a real redis-server, a counting judge.

Each scenario prints the requests the loopback judge received (what a real judge would bill),
the exit statuses and the lines a user sees:

1. ``typo``: three shards and a merge on a Redis URL nothing answers (a mistyped port):
   every job must exit 4 before any judge call;
2. ``shards``: three concurrent shards and a merge on one Redis: each prompt paid once, the
   merge pays nothing and its JSON report carries the shards' requests;
3. ``queue``: run A at concurrency 1 and run B started 3 s later, on one Redis, with a 1 s
   lease (A's queue is many leases long): each prompt paid once;
4. ``crash``: a shard SIGKILLed mid-run and re-run: the re-run takes its leases back at once
   (one line) instead of waiting for them to expire.

Run: ``python benchmarks/shard_trial.py`` (needs ``redis-server`` on PATH and the ``redis``
package). Prompts ``--cases`` (default 30), judge latency ``--latency`` (default 0.3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _redis() -> tuple[str, subprocess.Popen[bytes]]:
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.025)
    client.close()
    return f"redis://127.0.0.1:{port}/0", process


class Trial:
    def __init__(self, work: Path, base_url: str, cases: int) -> None:
        self.work = work
        lines = "\n".join(f"  - {{id: c{i}, language: hi, input: 'q {i}', output: 'a {i}'}}" for i in range(cases))
        (work / "suite.yaml").write_text(
            f'suite: trial\njudge: {{model: loopback-judge, base_url: "{base_url}"}}\ncases:\n{lines}\n'
            "assert: [linguistic_acceptability >= 1]\naggregate: [mean(linguistic_acceptability) >= 1]\n",
            encoding="utf-8",
        )
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LLMJUDGE_") and not k.endswith("_API_KEY")}
        self.env["OPENAI_API_KEY"] = "sk-loopback"

    def start(self, url: str, name: str, *extra: str) -> subprocess.Popen[str]:
        command = [
            sys.executable, "-m", "pytest", "--llmjudge", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            f"--llmjudge-cache-url={url}", f"--llmjudge-cache-dir={self.work / ('cache-' + name)}", *extra, "suite.yaml",
        ]  # fmt: skip
        return subprocess.Popen(
            command, cwd=self.work, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )


def _said(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("llmjudge: taking", "llmjudge: waiting", "ERROR"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.3)
    args = parser.parse_args()
    url, redis_process = _redis()
    work = Path(tempfile.mkdtemp(prefix="llmjudge-shard-trial-"))
    try:
        with LoopbackServer(latency=args.latency, responder=ScriptedJudge(lambda query: 2)) as server:
            trial = Trial(work, server.openai_base_url, args.cases)

            def paid() -> int:
                return int(server.stats()["requests"])

            # 1. A store that never works: usage error in every job, nothing paid.
            typo = f"redis://127.0.0.1:{_free_port()}/0"
            jobs = [trial.start(typo, f"t{i}", f"--llmjudge-shard={i}/3") for i in (1, 2, 3)]
            jobs.append(trial.start(typo, "tm"))
            outputs = [job.communicate()[0] for job in jobs]
            print(f"typo:   exit {[job.returncode for job in jobs]}, requests {paid()} (expected 4s and 0)")
            print(f"        {_said(outputs[0])[0][:150]}")

            # 2. Three concurrent shards and a merge.
            before = paid()
            store = f"{url}?prefix=s{uuid.uuid4().hex[:6]}:"
            reports = [f"--llmjudge-report=json:{work / f'shard{i}.json'}" for i in (1, 2, 3)]
            jobs = [trial.start(store, f"s{i}", f"--llmjudge-shard={i}/3", reports[i - 1]) for i in (1, 2, 3)]
            for job in jobs:
                job.communicate()
            shards_paid = paid() - before
            merge = trial.start(
                store, "sm", "--llmjudge-shard-reports=shard*.json", f"--llmjudge-report=json:{work / 'merge.json'}"
            )
            merge.communicate()
            merged = json.loads((work / "merge.json").read_text(encoding="utf-8"))["accounting"]["provider_calls"]
            print(
                f"shards: exit {[job.returncode for job in jobs]} + merge {merge.returncode}, shards paid {shards_paid} "
                f"for {args.cases} prompts, merge paid {paid() - before - shards_paid}, merged report says {merged}"
            )

            # 3. A queue longer than the lease: A at concurrency 1, B three seconds later.
            before = paid()
            store = f"{url}?prefix=q{uuid.uuid4().hex[:6]}:"
            a = trial.start(store, "qa", "--llmjudge-concurrency=1", "--llmjudge-lease-ttl=1")
            time.sleep(3)
            b = trial.start(store, "qb", "--llmjudge-concurrency=4", "--llmjudge-lease-ttl=1")
            a.communicate(), b.communicate()
            print(f"queue:  exit {[a.returncode, b.returncode]}, requests {paid() - before} for {args.cases} prompts")

            # 4. A shard killed mid-run, then re-run.
            before = paid()
            store = f"{url}?prefix=c{uuid.uuid4().hex[:6]}:"
            crashed = trial.start(store, "c", "--llmjudge-shard=1/1", "--llmjudge-concurrency=8")
            while paid() - before < args.cases // 3:
                time.sleep(0.02)
            crashed.send_signal(signal.SIGKILL)
            crashed.wait()
            at_kill = paid() - before
            started = time.monotonic()
            rerun = trial.start(store, "c", "--llmjudge-shard=1/1", "--llmjudge-concurrency=8")
            output = rerun.communicate()[0]
            print(
                f"crash:  killed after {at_kill} requests; re-run exit {rerun.returncode} in "
                f"{time.monotonic() - started:.1f} s (lease 30 s), requests in all {paid() - before}"
            )
            for line in _said(output):
                print(f"        {line[:150]}")
    finally:
        redis_process.terminate()
        redis_process.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
