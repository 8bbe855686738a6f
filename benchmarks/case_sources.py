"""Memory and time of reading a large cases file: CSV and TSV rows stream, one at a time.

Writes a CSV with N rows (default 1,000,000; three scripts, quoted commas and newlines in
some cells), then, each in a fresh subprocess, reads it through the suite builder's readers
and reports the peak resident memory (``ru_maxrss``) and the time:

* ``csv_stream``: every row through ``suite.tabular.table_records`` (parsed and mapped to
  case fields), nothing kept: what the reader itself costs;
* ``jsonl_stream``: the same rows as JSONL through ``suite.loader.iter_jsonl``, for comparison;
* ``baseline``: the interpreter with the package imported, nothing read.

Prints one line per measurement and a last line with the ratios. Run:
``python benchmarks/case_sources.py [N]``.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000

CHILD = """
import resource, sys, time
from pathlib import Path
from pytest_llmjudge.suite.build import _CASE_FIELDS
from pytest_llmjudge.suite.loader import iter_jsonl
from pytest_llmjudge.suite.tabular import table_records
kind, path = sys.argv[1], Path(sys.argv[2])
started = time.perf_counter()
count = 0
if kind == "csv_stream":
    for _ in table_records(path, "csv", columns={}, case_fields=_CASE_FIELDS):
        count += 1
elif kind == "jsonl_stream":
    for _ in iter_jsonl(path):
        count += 1
elapsed = time.perf_counter() - started
print(count, f"{elapsed:.2f}", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""

TEXTS = ('भारत की राजधानी, "नई दिल्ली"।', "Столица — Москва.\nВторая строка", "東京です。")


def write_files(directory: Path) -> tuple[Path, Path]:
    csv_path, jsonl_path = directory / "cases.csv", directory / "cases.jsonl"
    with csv_path.open("w", encoding="utf-8", newline="") as table, jsonl_path.open("w", encoding="utf-8") as lines:
        writer = csv.writer(table)
        writer.writerow(["id", "language", "input", "output", "reference", "topic"])
        for index in range(ROWS):
            text = TEXTS[index % 3]
            row = [f"c{index}", ("hi", "ru", "ja")[index % 3], f"question {index}", text, text[:5], "geo"]
            writer.writerow(row)
            lines.write(
                json.dumps(dict(zip(["id", "language", "input", "output", "reference"], row[:5], strict=True))) + "\n"
            )
    return csv_path, jsonl_path


def measure(kind: str, path: Path) -> tuple[int, float, int]:
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(path)], capture_output=True, text=True, check=True
    )
    count, seconds, megabytes = completed.stdout.split()
    return int(count), float(seconds), int(megabytes)


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        csv_path, jsonl_path = write_files(Path(directory))
        print(f"rows={ROWS} csv_mb={csv_path.stat().st_size / 2**20:.1f} written_s={time.perf_counter() - started:.1f}")
        results = {
            kind: measure(kind, path)
            for kind, path in (("baseline", csv_path), ("csv_stream", csv_path), ("jsonl_stream", jsonl_path))
        }
    for kind, (count, seconds, megabytes) in results.items():
        print(f"{kind}: rows={count} seconds={seconds:.2f} peak_rss_mb={megabytes}")
    base = results["baseline"][2]
    print(
        f"csv_rss_over_baseline_mb={results['csv_stream'][2] - base} jsonl_rss_over_baseline_mb={results['jsonl_stream'][2] - base} "
        f"csv_us_per_row={results['csv_stream'][1] / ROWS * 1e6:.1f}"
    )


if __name__ == "__main__":
    main()
