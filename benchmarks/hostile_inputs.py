"""Does a large valid suite cost more to collect than pytest's own items do?

Measures, in one run on this machine:

* ``pytest --collect-only -q`` of a Python file with 10,000 trivial test functions;
* ``pytest --llmjudge --collect-only -q`` of a suite with 10,000 inline cases (one
  recorded score and one threshold each), which goes through everything this change
  added: sniffing the file, decoding it, composing the YAML without recursion under the
  depth and alias caps, and the schema;
* the same suite with its cases in a ``cases_file`` JSONL (bounded line reads);
* loading only (``build_suite`` in this process, no pytest), for scale.

Each subprocess is timed as a whole (interpreter and pytest start-up included), the best
of three. The last line prints the ratios to the plain-pytest collection.

    python benchmarks/hostile_inputs.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = 10_000
REPEATS = 3


def _plain_tests(directory: Path) -> Path:
    path = directory / "test_trivial.py"
    path.write_text("".join(f"def test_{index}():\n    assert True\n\n\n" for index in range(CASES)), encoding="utf-8")
    return path


def _inline_suite(directory: Path) -> Path:
    lines = ["suite: ten-thousand", "cases:"]
    for index in range(CASES):
        lines += [
            f"  - id: case-{index}",
            "    language: hi",
            f'    output: "उत्तर {index}"',
            f"    recorded: {{linguistic_acceptability: {index % 3}}}",
        ]
    lines += ["assert:", "  - linguistic_acceptability >= 0", ""]
    path = directory / "inline_suite.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _jsonl_suite(directory: Path) -> Path:
    records = (
        json.dumps(
            {
                "id": f"case-{index}",
                "language": "hi",
                "output": f"उत्तर {index}",
                "recorded": {"linguistic_acceptability": index % 3},
            },
            ensure_ascii=False,
        )
        for index in range(CASES)
    )
    (directory / "cases.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    path = directory / "jsonl_suite.yaml"
    path.write_text(
        "suite: ten-thousand-jsonl\ncases_file: cases.jsonl\nassert:\n  - linguistic_acceptability >= 0\n",
        encoding="utf-8",
    )
    return path


def _best_wall(arguments: list[str], cwd: Path) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *arguments],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
        if completed.returncode != 0 or f"{CASES} tests collected" not in completed.stdout:
            raise SystemExit(
                f"unexpected result for {arguments}:\n{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}"
            )
        best = min(best, elapsed)
    return best


def _load_seconds(path: Path) -> float:
    from pytest_llmjudge.registry import Registry
    from pytest_llmjudge.suite.build import build_suite

    registry = Registry()
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        suite = build_suite(path, registry)
        best = min(best, time.perf_counter() - start)
        assert len(suite.cases) == CASES
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        for sub in ("plain", "inline", "jsonl"):
            (root / sub).mkdir()
        _plain_tests(root / "plain")
        inline = _inline_suite(root / "inline")
        jsonl = _jsonl_suite(root / "jsonl")
        plain_s = _best_wall(["--collect-only", "test_trivial.py"], root / "plain")
        inline_s = _best_wall(["--llmjudge", "--collect-only", inline.name], root / "inline")
        jsonl_s = _best_wall(["--llmjudge", "--collect-only", jsonl.name], root / "jsonl")
        load_inline = _load_seconds(inline)
        load_jsonl = _load_seconds(jsonl)
    print(f"pytest --collect-only, {CASES} trivial tests:       {plain_s:.2f} s")
    print(
        f"pytest --llmjudge --collect-only, inline YAML suite: {inline_s:.2f} s (build_suite alone {load_inline:.2f} s)"
    )
    print(
        f"pytest --llmjudge --collect-only, JSONL cases:       {jsonl_s:.2f} s (build_suite alone {load_jsonl:.2f} s)"
    )
    print(f"inline_over_pytest={inline_s / plain_s:.3f} jsonl_over_pytest={jsonl_s / plain_s:.3f}")


if __name__ == "__main__":
    main()
