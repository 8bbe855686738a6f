"""The HTML report alone: its size per case and its render time, with and without repeated text.

``benchmarks/report_speed.py`` times both reports end to end on its synthetic run. Its
justifications repeat (a few texts per language and metric), and the page embeds a text
held by several cases once, so its page size is the size of a judge that repeats itself.
This script renders the same document with every justification made unique (prefixed by
its case and metric), the page size of a judge that never repeats itself, next to it.

Timed: ``render_html`` in CPU seconds of this process (the best of three), which a busy
machine disturbs less than wall time; building the document is not timed.

Run: ``python benchmarks/html_size.py [N_CASES] [--all-failing] [--unique]``. The last
line is ``render_cpu_s=<time> html_mb=<size> bytes_per_case=<size / N_CASES>``.
"""

from __future__ import annotations

import dataclasses
import sys
import time

from report_speed import make_all_fail, synthetic_inputs

from pytest_llmjudge.records import CaseRecord
from pytest_llmjudge.report.assemble import RunInputs, build_document
from pytest_llmjudge.report.html import render_html


def unique_justifications(inputs: RunInputs) -> RunInputs:
    """Every case's justification prefixed by its case and metric: no two cases share one."""
    records = [
        record.model_copy(update={"justification": f"{record.case} {record.metric}: {record.justification}"})
        if isinstance(record, CaseRecord) and record.justification
        else record
        for record in inputs.records
    ]
    return dataclasses.replace(inputs, records=records)


def main(argv: list[str]) -> int:
    numbers = [a for a in argv if not a.startswith("--")]
    n_cases = int(numbers[0]) if numbers else 10_000
    inputs = synthetic_inputs(n_cases)
    if "--all-failing" in argv:
        inputs = make_all_fail(inputs)
    if "--unique" in argv:
        inputs = unique_justifications(inputs)
    document = build_document(inputs)
    times = []
    for _ in range(3):
        start = time.process_time()
        page = render_html(document)
        times.append(time.process_time() - start)
    size = len(page.encode("utf-8"))
    print(f"cases={n_cases} all_failing={'--all-failing' in argv} unique={'--unique' in argv}")
    print(f"render_cpu_s={min(times):.3f} html_mb={size / 1e6:.2f} bytes_per_case={size / n_cases:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
