"""What per-language aggregates add to a large suite's run.

Two suites of the same 10,000 recorded-score cases in 10 languages (two metrics each, one
case threshold), written to a temporary directory: one without aggregates, one with two
(``mean(linguistic_acceptability) >= 1.4`` and ``mean(task_quality) >= 0.5``, so 2 x (10
languages + all) = 22 aggregate items, one of them with every case unasserted). Each is run
through ``pytest --llmjudge`` in a child process; the wall time of the whole process counts.

Each aggregate item shows every row of its aggregate (its failure prints the table), and the
rows are computed once per aggregate and shared by its items (``suite/items.py``,
``AggregateItem._shared_scores``). Measured 2026-11-24 on the 2-core VM, alternating the two
versions: ``aggregates_over_plain`` 1.83 and 1.87 when every row item computed every row,
1.23 and 1.40 with the rows shared (the VM's speed drifted by a third between runs, so
each ratio is taken within one run).

Run: ``python benchmarks/aggregate_speed.py [--cases N]``. The last line is
``aggregates_over_plain=<ratio>``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LANGUAGES = ("hi", "bn", "ta", "te", "mr", "gu", "pa", "or", "fr", "ja")
HEAD = "cases_file: cases.jsonl\nassert: [linguistic_acceptability >= 1]\n"
AGGREGATES = "aggregate:\n  - mean(linguistic_acceptability) >= 1.4\n  - mean(task_quality) >= 0.5\n"


def write(directory: Path, cases: int) -> None:
    with (directory / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i in range(cases):
            recorded = {"linguistic_acceptability": 1 + i % 2, "task_quality": i % 3}
            case = {
                "id": f"c{i:05d}",
                "language": LANGUAGES[i % len(LANGUAGES)],
                "output": f"a{i}",
                "recorded": recorded,
            }
            out.write(json.dumps(case) + "\n")
    (directory / "plain.yaml").write_text("suite: plain\n" + HEAD, encoding="utf-8")
    (directory / "aggregated.yaml").write_text("suite: aggregated\n" + HEAD + AGGREGATES, encoding="utf-8")


def wall(directory: Path, suite: str) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--llmjudge", suite]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # some aggregate rows fail by design
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llmjudge-aggregates-") as tmp:
        directory = Path(tmp)
        write(directory, args.cases)
        wall(directory, "plain.yaml")  # compiles bytecode; not timed
        plain = wall(directory, "plain.yaml")
        aggregated = wall(directory, "aggregated.yaml")
    print(
        f"{args.cases} cases, {len(LANGUAGES)} languages: without aggregates {plain:.2f} s, with 2 aggregates {aggregated:.2f} s"
    )
    print(f"aggregates_over_plain={aggregated / plain:.3f}")


if __name__ == "__main__":
    main()
