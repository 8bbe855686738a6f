"""Speed at size (issue 15, item 4): the plugin against plain pytest and the bare SDK, in one run.

Workloads, each a child process timed here (whole-process wall; CPU as user + sys of the
child from ``resource.getrusage(RUSAGE_CHILDREN)`` deltas; peak RSS as the child's
``ru_maxrss`` from ``os.wait4``):

1. ``cpu_ratio``: 10,000 judged cases (one rubric each), latency 0, concurrency 64, cold
   cache: client CPU of ``pytest --llmjudge`` over (CPU of ``sdk_floor.py`` sending the same
   10,000 requests + CPU of plain pytest running 10,000 trivial tests). Target <= 1.15.
2. ``cached_ratio``: the same suite re-run from the cache, wall over plain pytest's 10,000
   trivial tests. Target <= 1.3.
3. ``recorded_time_ratio`` / ``recorded_mem_ratio``: 100,000 cases with recorded scores
   (no judge call) against plain pytest with 100,000 trivial tests, wall and peak RSS.
   Targets <= 1.1 and <= 1.5.
4. ``calibration_100k_s``: a calibration set of 100,000 labelled items x 3 metrics in 5
   languages (recorded judge scores, three annotators), ``pytest --llmjudge`` end to end,
   seconds. Target <= 5.
5. ``wall_over_floor``: 2,000 judged cases at 200 ms latency, concurrency 32, whole-process
   wall over ``sdk_floor.py`` sending the same requests. Target <= 1.05.

The judge is an independent minimal asyncio HTTP/1.1 server (below, not the project's
LoopbackServer) in a thread of this process, so its CPU is not a child's: it answers every
``POST .../chat/completions`` after the latency with a fixed verdict. Children run without
API keys or ``LLMJUDGE_*`` settings, after one untimed ``--collect-only`` that compiles the
bytecode. The machine is shared: compare the ratios, which are taken within one run.

    python benchmarks/scale.py [--quick] [--only judged|recorded|calibration|latency ...]

``--quick`` runs tiny workloads (20 judged cases, 100 recorded cases and calibration items,
32 cases at 200 ms) and skips the untimed ``--collect-only`` runs: a smoke test of the
script (tests/test_benchmark_scale.py); its numbers mean nothing. ``--only`` runs some
workloads (while working on one of them; the last line then holds only their ratios). The
last line of a full run is
``cpu_ratio=<x> cached_ratio=<x> recorded_time_ratio=<x> recorded_mem_ratio=<x>
calibration_100k_s=<x> wall_over_floor=<x>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sdk_floor import clean_env

LANGUAGES = ("hi", "bn", "ta", "fr", "ja")
VERDICT = json.dumps({"linguistic_acceptability": {"justification": "reads naturally", "score": 2}})


class MinimalServer:
    """An OpenAI-compatible chat-completions endpoint in a few dozen lines of asyncio (keep-alive HTTP/1.1)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def __enter__(self) -> MinimalServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                self.requests += 1
                if self.latency:
                    await asyncio.sleep(self.latency)
                reply = {
                    "id": f"cmpl-{self.requests}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "judge"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": VERDICT},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }
                data = json.dumps(reply).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(data)
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    max_rss_mb: float


def run(command: list[str], cwd: Path, *, ok: tuple[int, ...] = (0,)) -> Run:
    """Run ``command`` to its end; its wall time, CPU (user + sys) and peak RSS."""
    log = cwd / "child.log"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=clean_env())
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ok:
        sys.stderr.write(log.read_text()[-4000:])
        raise SystemExit(f"exit code {process.returncode}: {' '.join(command)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, usage.ru_maxrss / 1024)  # ru_maxrss is in KiB on Linux


def write_judged(directory: Path, cases: int, base_url: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i in range(cases):
            case = {"id": f"c{i:06d}", "language": LANGUAGES[i % 5], "input": f"question {i}", "output": f"answer {i}"}
            out.write(json.dumps(case) + "\n")
    (directory / "judged.yaml").write_text(
        f'suite: judged\njudge: {{model: judge, base_url: "{base_url}"}}\ncases_file: cases.jsonl\n'
        "assert: [linguistic_acceptability >= 1]\n",
        encoding="utf-8",
    )


def write_recorded(directory: Path, cases: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i in range(cases):
            case = {
                "id": f"c{i:06d}",
                "language": LANGUAGES[i % 5],
                "output": f"answer {i}",
                "recorded": {"linguistic_acceptability": 1 + i % 2},
            }
            out.write(json.dumps(case) + "\n")
    (directory / "recorded.yaml").write_text(
        "suite: recorded\ncases_file: cases.jsonl\nassert: [linguistic_acceptability >= 1]\n", encoding="utf-8"
    )


def write_calibration(directory: Path, items: int) -> None:
    """``items`` labelled items, 3 metrics, 5 languages, three annotators and a recorded judge score each."""
    directory.mkdir(parents=True, exist_ok=True)
    metrics = ("linguistic_acceptability", "task_quality", "hallucinations")
    with (directory / "items.jsonl").open("w", encoding="utf-8") as out:
        for i in range(items):
            human = {}
            recorded = {}
            for m, metric in enumerate(metrics):
                top = 1 if metric == "hallucinations" else 2
                truth = (i * (m + 3)) % (top + 1)
                human[metric] = {"a1": truth, "a2": truth, "a3": (truth + (i % 7 == 0)) % (top + 1)}
                recorded[metric] = {"judge": "bench-judge", "score": truth if i % 11 else (truth + 1) % (top + 1)}
            item = {"id": f"i{i:06d}", "language": LANGUAGES[i % 5], "output": "", "human": human}
            item["recorded"] = recorded
            out.write(json.dumps(item) + "\n")
    (directory / "calibration.yaml").write_text(
        "calibration: bench\nrecorded_judge: bench-judge\nmetrics: [" + ", ".join(metrics) + "]\n"
        "items_file: items.jsonl\ngate: {threshold: 0.5, min_items: 10}\n",
        encoding="utf-8",
    )


def write_plain(directory: Path, tests: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "test_plain.py").write_text(
        textwrap.dedent(
            f"""
            import pytest

            @pytest.mark.parametrize("index", range({tests}))
            def test_trivial(index):
                assert index >= 0
            """
        ),
        encoding="utf-8",
    )


WORKLOADS = ("judged", "recorded", "calibration", "latency")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny N: a smoke test of the script")
    parser.add_argument(
        "--only",
        choices=WORKLOADS,
        action="append",
        help="run only these workloads (repeatable): judged = 1 and 2, recorded = 3, calibration = 4, latency = 5;"
        " the last line then holds only their ratios",
    )
    args = parser.parse_args()
    only = set(args.only or WORKLOADS)
    judged_n, recorded_n, calibration_n, latency_n = (
        (20, 100, 100, 32) if args.quick else (10_000, 100_000, 100_000, 2_000)
    )
    python = sys.executable
    floor_script = str(Path(__file__).resolve().parent / "sdk_floor.py")
    pytest_cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    lines: list[str] = []
    ratios: list[str] = []
    with tempfile.TemporaryDirectory(prefix="llmjudge-scale-") as tmp:
        root = Path(tmp)
        if "judged" in only:
            with MinimalServer(latency=0.0) as fast:
                write_judged(root / "judged", judged_n, fast.base_url)
                write_plain(root / "plain10k", judged_n)
                judged = [*pytest_cmd, "--llmjudge", "judged.yaml", "--llmjudge-concurrency=64"]
                judged.append(f"--llmjudge-cache-dir={root / 'judged-cache'}")
                if not args.quick:  # its numbers mean nothing: no need to warm anything
                    run([*judged, "--collect-only"], root / "judged")  # compiles bytecode; sends nothing
                cold = run(judged, root / "judged")
                if fast.requests != judged_n:
                    raise SystemExit(f"expected {judged_n} requests, the server saw {fast.requests}")
                cached = run(judged, root / "judged")
                if fast.requests != judged_n:
                    raise SystemExit("the cached re-run sent requests")
                plain10k = run([*pytest_cmd, "test_plain.py"], root / "plain10k")
                floor_cpu = run(
                    [python, floor_script, f"--base-url={fast.base_url}", f"--cases={judged_n}", "--concurrency=64"],
                    root,
                )
            lines.append(
                f"1. {judged_n} judged cases, latency 0, concurrency 64: ours CPU {cold.cpu:.2f} s"
                f" (wall {cold.wall:.2f} s);\n   sdk_floor CPU {floor_cpu.cpu:.2f} s"
                f" + plain pytest {judged_n} trivial tests CPU {plain10k.cpu:.2f} s"
            )
            lines.append(
                f"2. cached re-run: wall {cached.wall:.2f} s (CPU {cached.cpu:.2f} s);"
                f" plain pytest {judged_n} trivial tests: wall {plain10k.wall:.2f} s"
            )
            ratios.append(f"cpu_ratio={cold.cpu / (floor_cpu.cpu + plain10k.cpu):.3f}")
            ratios.append(f"cached_ratio={cached.wall / plain10k.wall:.3f}")

        if "recorded" in only:
            write_recorded(root / "recorded", recorded_n)
            write_plain(root / "plain100k", recorded_n)
            recorded = run([*pytest_cmd, "--llmjudge", "recorded.yaml"], root / "recorded")
            plain100k = run([*pytest_cmd, "test_plain.py"], root / "plain100k")
            lines.append(
                f"3. {recorded_n} recorded cases: wall {recorded.wall:.2f} s, peak RSS {recorded.max_rss_mb:.0f} MB;"
                f" plain pytest {recorded_n} trivial tests: wall {plain100k.wall:.2f} s,"
                f" peak RSS {plain100k.max_rss_mb:.0f} MB"
            )
            ratios.append(f"recorded_time_ratio={recorded.wall / plain100k.wall:.3f}")
            ratios.append(f"recorded_mem_ratio={recorded.max_rss_mb / plain100k.max_rss_mb:.3f}")

        if "calibration" in only:
            write_calibration(root / "calibration", calibration_n)
            calibration = run([*pytest_cmd, "--llmjudge", "calibration.yaml"], root / "calibration")
            lines.append(
                f"4. calibration set of {calibration_n} items x 3 metrics, 5 languages: wall {calibration.wall:.2f} s"
            )
            ratios.append(f"calibration_100k_s={calibration.wall:.2f}")

        if "latency" in only:
            with MinimalServer(latency=0.2) as slow:
                write_judged(root / "latency", latency_n, slow.base_url)
                latency_cmd = [*pytest_cmd, "--llmjudge", "judged.yaml", "--llmjudge-concurrency=32"]
                latency_cmd.append(f"--llmjudge-cache-dir={root / 'latency-cache'}")
                if not args.quick:
                    run([*latency_cmd, "--collect-only"], root / "latency")
                ours = run(latency_cmd, root / "latency")
                floor = run(
                    [python, floor_script, f"--base-url={slow.base_url}", f"--cases={latency_n}", "--concurrency=32"],
                    root,
                )
                if slow.requests != 2 * latency_n:
                    raise SystemExit(f"expected {2 * latency_n} requests at 200 ms, the server saw {slow.requests}")
            lines.append(
                f"5. {latency_n} judged cases at 200 ms, concurrency 32: wall {ours.wall:.2f} s;"
                f" sdk_floor {floor.wall:.2f} s"
            )
            ratios.append(f"wall_over_floor={ours.wall / floor.wall:.3f}")

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    print("\n".join(lines))
    print(" ".join(ratios))


if __name__ == "__main__":
    main()
