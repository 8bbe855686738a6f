"""Sequential judging (``--llmjudge-sequential``): calls and wall time against the full run, and
the error rate under optional stopping.

1. End to end, ``pytest --llmjudge`` subprocesses with empty caches against the shipped loopback
   server (OpenAI wire format, ``LATENCY`` s per request, counting requests), answered by a
   scripted judge whose ``task_quality`` scores (0-2) are drawn per language from a fixed
   distribution, keyed by the case's text (the same score on every run):

   * the issue's clear gate: 8 languages x 150 cases, ``lower(mean(task_quality)) >= 1.0``, seven
     languages far above the floor (mean 1.8) and one far below (mean 0.3);
   * a borderline gate: the same with every language at mean 1.05, just above the floor, where
     sequential judging must judge (nearly) everything.

   Full and sequential run each; requests, wall time and the items' verdicts are compared.

2. The error rate under optional stopping, by simulation with the plugin's own decision code
   (``execution/sequential.py``: :func:`settle` on the betting confidence sequence, looked at
   after every round of 20 of n = 150 cases, the verdict read as the plugin reads it). Scores are
   drawn with a true mean exactly at the threshold, the worst case for a false pass of
   ``lower(mean) >= 1``: any pass is wrong. Nominal: 2.5% (the one-sided level of ``lower``).
   For comparison: the fixed-size run's false-pass rate (the betting interval at n = 150), and
   "naive peeking", the same looks with the fixed-n interval instead of the sequence (what
   stopping on an interval that is not anytime-valid does).

The last line: ``clear_calls=<seq>/<full> clear_wall_ratio=<x> clear_same_verdicts=<bool>
borderline_calls=<seq>/<full> borderline_same_verdicts=<bool> max_false_pass=<x> nominal=0.025
naive_max_false_pass=<y>``.

    python benchmarks/sequential.py [--replications 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_llmjudge.execution.sequential import settle
from pytest_llmjudge.stats.betting import betting_confidence_sequence, betting_intervals
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.scripted import JudgeQuery

LANGUAGES = ("de", "es", "fr", "hi", "ja", "pt", "sw", "zh")
PER_LANGUAGE = 150
LATENCY = 0.05
CONCURRENCY = 16
ROUND = 20
THRESHOLD = 1.0
# P(score = 0, 1, 2) per gate and language.
FAR_ABOVE = (0.04, 0.12, 0.84)  # mean 1.80
FAR_BELOW = (0.75, 0.20, 0.05)  # mean 0.30
BORDERLINE = (0.30, 0.35, 0.35)  # mean 1.05
NULLS = {
    "two-point {0, 2}": (0.5, 0.0, 0.5),
    "three-point": (0.25, 0.5, 0.25),
    "crowded middle": (0.05, 0.9, 0.05),
}


def _draw(text: str, p: tuple[float, float, float]) -> int:
    u = int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12
    return 0 if u < p[0] else (1 if u < p[0] + p[1] else 2)


def scripted(gate: str) -> ScriptedJudge:
    def score(query: JudgeQuery) -> int:
        language = query.output.split()[1]
        if gate == "borderline":
            return _draw(query.output, BORDERLINE)
        return _draw(query.output, FAR_BELOW if language == "sw" else FAR_ABOVE)

    return ScriptedJudge(score)


def suite_text(base_url: str, gate: str) -> str:
    cases = "\n".join(
        f"  - {{id: {language}-{i}, language: {language}, input: 'say {i}', output: 'text {language} {gate} {i}'}}"
        for language in LANGUAGES
        for i in range(PER_LANGUAGE)
    )
    return f"""\
suite: gate
judge: {{provider: openai, model: loopback-judge, base_url: "{base_url}"}}
aggregate: ["lower(mean(task_quality)) >= {THRESHOLD}"]
cases:
{cases}
"""


def run(directory: Path, server: LoopbackServer, *args: str) -> tuple[int, float, dict[str, str], str]:
    """``(requests, wall seconds, item -> outcome, stdout)`` of one subprocess with an empty cache."""
    before = server.stats()["requests"]
    cache = tempfile.mkdtemp(prefix="cache-", dir=directory)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--llmjudge",
        f"--llmjudge-cache-dir={cache}",
        f"--llmjudge-concurrency={CONCURRENCY}",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-v",
        *args,
    ]
    started = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    wall = time.perf_counter() - started
    verdicts = dict(re.findall(r"::(\S+\[\w+\]) (PASSED|FAILED)", done.stdout))
    return server.stats()["requests"] - before, wall, verdicts, done.stdout


def end_to_end(gate: str) -> tuple[int, int, float, float, bool]:
    with LoopbackServer(responder=scripted(gate), latency=LATENCY) as server, tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "suite.yaml").write_text(suite_text(server.openai_base_url, gate), encoding="utf-8")
        full_calls, full_wall, full_verdicts, _ = run(directory, server)
        seq_calls, seq_wall, seq_verdicts, stdout = run(directory, server, "--llmjudge-sequential")
    line = next((line for line in stdout.splitlines() if line.startswith("llmjudge: sequential")), "")
    failed = sorted(name for name, outcome in full_verdicts.items() if outcome == "FAILED")
    print(
        f"{gate} gate ({len(LANGUAGES)} x {PER_LANGUAGE}, latency {LATENCY:g} s, concurrency {CONCURRENCY}):\n"
        f"  full        {full_calls:>5} requests {full_wall:6.2f} s   failed: {', '.join(failed) or 'none'}\n"
        f"  sequential  {seq_calls:>5} requests {seq_wall:6.2f} s   same verdicts: {seq_verdicts == full_verdicts}"
        f"   ({len(seq_verdicts)} items)\n  {line}"
    )
    if seq_verdicts != full_verdicts:
        for name in sorted(full_verdicts):
            if full_verdicts[name] != seq_verdicts.get(name):
                print(f"    differs: {name}: full {full_verdicts[name]}, sequential {seq_verdicts.get(name)}")
    return seq_calls, full_calls, seq_wall, full_wall, seq_verdicts == full_verdicts


def looks(n: int) -> list[int]:
    return [*range(ROUND, n, ROUND), n]


def sequential_verdict(values: np.ndarray) -> tuple[bool, int]:
    """The plugin's verdict on ``lower(mean) >= 1`` and the cases it judged, reading every look
    off one sequence (exactly the prefix's sequence: ``tests/unit/test_sequential_rule.py``)."""
    lows, highs = betting_confidence_sequence(values, 0.0, 2.0)
    for k in looks(len(values)):
        verdict = settle(float(lows[k - 1]), float(highs[k - 1]), ">=", THRESHOLD)
        if verdict is not None:
            return verdict, k
    return float(lows[-1]) >= THRESHOLD, len(values)  # a bound row that ran to the end: the sequence's bound


def naive_passes(samples: np.ndarray) -> np.ndarray:
    """Stopping on the fixed-n interval at each look (not anytime-valid): passes per replication."""
    decided = np.zeros(samples.shape[0], dtype=bool)
    passed = np.zeros(samples.shape[0], dtype=bool)
    for k in looks(samples.shape[1]):
        lows, highs = betting_intervals(samples[:, :k], 0.0, 2.0, shuffle_seed=None)
        newly_pass = ~decided & (lows >= THRESHOLD)
        newly_fail = ~decided & (highs < THRESHOLD)
        passed |= newly_pass
        decided |= newly_pass | newly_fail
    return passed


def simulate(replications: int) -> tuple[float, float]:
    rng = np.random.default_rng(2027)
    n = PER_LANGUAGE
    z = 1.96
    print(
        f"error rate under optional stopping: lower(mean) >= 1 on 0-2, true mean exactly 1 (any pass is false), "
        f"n = {n}, a look every {ROUND} cases, {replications} replications per row; nominal 0.025"
    )
    print(f"  {'scores':<18} {'sequential':>18} {'fixed-size run':>16} {'naive peeking':>15} {'mean judged':>12}")
    worst = naive_worst = 0.0
    for name, p in NULLS.items():
        samples = rng.choice([0.0, 1.0, 2.0], size=(replications, n), p=p)
        results = [sequential_verdict(row) for row in samples]
        rate = sum(passed for passed, _ in results) / replications
        half = z * np.sqrt(max(rate * (1 - rate), 1e-12) / replications)
        fixed_low, _ = betting_intervals(samples, 0.0, 2.0, shuffle_seed=None)
        fixed = float(np.mean(fixed_low >= THRESHOLD))
        naive = float(np.mean(naive_passes(samples)))
        judged = float(np.mean([k for _, k in results]))
        print(f"  {name:<18} {rate:>9.4f} ± {half:.4f} {fixed:>16.4f} {naive:>15.4f} {judged:>12.1f}")
        worst, naive_worst = max(worst, rate), max(naive_worst, naive)
    for label, p in (
        ("far above (1.80)", FAR_ABOVE),
        ("far below (0.30)", FAR_BELOW),
        ("borderline (1.05)", BORDERLINE),
    ):
        samples = rng.choice([0.0, 1.0, 2.0], size=(min(replications, 300), n), p=p)
        results = [sequential_verdict(row) for row in samples]
        passes = np.mean([passed for passed, _ in results])
        judged = np.mean([k for _, k in results])
        print(f"  power/savings {label:<18} pass rate {passes:.3f}, mean cases judged {judged:.1f} of {n}")
    return worst, naive_worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=2000)
    options = parser.parse_args()
    clear = end_to_end("clear")
    border = end_to_end("borderline")
    worst, naive = simulate(options.replications)
    print(
        f"clear_calls={clear[0]}/{clear[1]} clear_wall_ratio={clear[2] / clear[3]:.3f} "
        f"clear_same_verdicts={clear[4]} borderline_calls={border[0]}/{border[1]} "
        f"borderline_same_verdicts={border[4]} max_false_pass={worst:.4f} nominal=0.025 "
        f"naive_max_false_pass={naive:.4f}"
    )


if __name__ == "__main__":
    main()
