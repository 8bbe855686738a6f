"""Judge throughput of `pytest --llmjudge` against the loopback server, in one run.

1. A suite of N judge cases (one rubric each), run through `pytest --llmjudge` in a
   subprocess with concurrency C against the shipped loopback server answering after a
   fixed latency: whole-process wall time divided by the ideal ceil(N / C) x latency.
2. The same suite again, now served from the judge cache, divided by the wall time of
   plain pytest running N trivial parametrized tests (same interpreter, same flags).

Everything runs on this machine, in one process tree, in one run; nothing is remembered
from earlier runs. Child processes run without ``PYTHONDONTWRITEBYTECODE`` (as in a normal
environment), after one untimed ``--collect-only`` that compiles the editable install's
bytecode, as pip does for installed packages.

For scale it also times the floor (``sdk_floor.py``): a bare script that imports the openai
SDK and sends the same N requests with C in flight, nothing else. No tool built on the SDK
can beat it on this machine, so ``ours_over_floor`` is the part of the ratio that is ours.

The last line is `ratio_to_ideal=<x> cached_vs_plain=<y>`.

    python benchmarks/judge_throughput.py [--cases 1000] [--concurrency 32] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from sdk_floor import clean_env, measure_floor

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

LANGUAGES = ("hi", "bn", "ta", "fr", "ja", "sw", "ar", "de")


def write_suite(directory: Path, cases: int, base_url: str) -> Path:
    lines = [
        "suite: throughput",
        "judge:",
        "  model: loopback-judge",
        f'  base_url: "{base_url}"',
        "cases:",
    ]
    for index in range(cases):
        language = LANGUAGES[index % len(LANGUAGES)]
        lines.append(
            f'  - {{id: c{index:05d}, language: {language}, input: "question {index}", output: "answer {index}"}}'
        )
    lines += ["assert:", "  - linguistic_acceptability >= 1", ""]
    path = directory / "throughput.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def write_plain(directory: Path, cases: int) -> Path:
    path = directory / "test_plain.py"
    path.write_text(
        textwrap.dedent(
            f"""
            import pytest

            @pytest.mark.parametrize("index", range({cases}))
            def test_trivial(index):
                assert index >= 0
            """
        ),
        encoding="utf-8",
    )
    return path


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    env = clean_env()
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout[-4000:] + completed.stderr[-4000:])
        raise SystemExit(f"command failed with exit code {completed.returncode}: {' '.join(command)}")
    return elapsed, completed.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()

    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(latency=args.latency, responder=judge) as server:
        directory = Path(tmp)
        write_suite(directory, args.cases, server.openai_base_url)
        plain_dir = directory / "plain"
        plain_dir.mkdir()
        write_plain(plain_dir, args.cases)
        common = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        judged = [
            *common,
            "--llmjudge",
            "throughput.yaml",
            f"--llmjudge-concurrency={args.concurrency}",
            f"--llmjudge-cache-dir={directory / 'cache'}",
        ]

        timed([*judged, "--collect-only"], directory)  # compile bytecode; sends nothing
        started = time.time()
        cold, cold_out = timed(judged, directory)
        stats = server.stats()
        before_first = stats["first_request_at"] - started
        after_last = started + cold - stats["last_response_at"]
        if stats["requests"] != args.cases:
            raise SystemExit(f"expected {args.cases} provider requests, the server saw {stats['requests']}")
        warm, _ = timed(judged, directory)
        if server.stats()["requests"] != args.cases:
            raise SystemExit("the cached re-run made provider requests")
        plain, _ = timed([*common, "test_plain.py"], plain_dir)
        server.reset()
        floor = measure_floor(server.openai_base_url, args.cases, args.concurrency)

    ideal = math.ceil(args.cases / args.concurrency) * args.latency
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    print(f"cases={args.cases} concurrency={args.concurrency} latency={args.latency}s ideal={ideal:.2f}s")
    print(
        f"cold run: wall {cold:.2f}s = {before_first:.2f}s before the first request (start-up, collection, planning)"
        f" + {stats['span_s']:.2f}s of judge traffic + {after_last:.2f}s after the last reply;"
        f" max in flight {stats['max_in_flight']}"
    )
    print(
        f"floor: a bare script importing the openai SDK and sending the same {args.cases} requests"
        f" with {args.concurrency} in flight: {floor:.2f}s = {floor / ideal:.3f} x ideal;"
        f" ours_over_floor={cold / floor:.3f}"
    )
    print(f"cached run: wall {warm:.2f}s; plain pytest with {args.cases} trivial tests: {plain:.2f}s")
    print(f"ratio_to_ideal={cold / ideal:.3f} cached_vs_plain={warm / plain:.3f}")


if __name__ == "__main__":
    main()
