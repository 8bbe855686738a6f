"""The floor under any judge runner built on the openai SDK: a bare script, no pytest.

It starts an interpreter, imports ``openai``, and sends N chat-completion requests to a
server with C in flight through ``AsyncOpenAI.post`` (the path our provider uses), then
exits. Nothing else: no suite, no cache, no report. Its whole-process wall time, divided by
the ideal ``ceil(N / C) x latency``, is the best ratio a tool that imports the SDK can reach
on this machine and this server; the benchmarks print it next to ours so the gap that is
ours to close is visible.

    python benchmarks/sdk_floor.py --base-url http://127.0.0.1:PORT/v1 [--cases 1000] [--concurrency 32]

Imported by ``judge_throughput.py`` and ``vs_peers.py`` (:func:`measure_floor`, and
:func:`clean_env` for every child process they time).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The benchmarks' child environment: no API keys, no LLMJUDGE_* settings, and bytecode
    caching as in a normal environment (``PYTHONDONTWRITEBYTECODE`` removed)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and not key.startswith("LLMJUDGE_") and key != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(extra or {})
    return env


def measure_floor(base_url: str, cases: int, concurrency: int) -> float:
    """Whole-process wall time of this script against ``base_url``, in seconds."""
    env = clean_env()
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        f"--base-url={base_url}",
        f"--cases={cases}",
        f"--concurrency={concurrency}",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the SDK floor script failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


async def _send_all(base_url: str, cases: int, concurrency: int) -> None:
    import openai

    try:  # the HTTP library the SDK is built on: httpx2 from openai 3.x, httpx before
        from httpx2 import Response
    except ImportError:
        from httpx import Response

    client = openai.AsyncOpenAI(api_key="not-needed", base_url=base_url, max_retries=0)
    slots = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        body = {
            "model": "loopback-judge",
            "messages": [
                {"role": "system", "content": "Rate the answer."},
                {"role": "user", "content": f"question {index}\nanswer {index}"},
            ],
            "temperature": 0,
            "max_tokens": 1024,
        }
        async with slots:
            response = await client.post("/chat/completions", body=body, cast_to=Response)
            response.json()

    await asyncio.gather(*(one(index) for index in range(cases)))
    await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(_send_all(args.base_url, args.cases, args.concurrency))


if __name__ == "__main__":
    main()
