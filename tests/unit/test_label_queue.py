"""The label queue (label_queue/plan.py): sizes from the PPI++ standard error, seeded simple random samples."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_llmjudge.label_queue.plan import QueueCase, needed_for, plan, write

Z = 1.959963984540054


def _cases(judge: list[float], human: list[float | None], group: str = "hi", min_labels: int = 2) -> list[QueueCase]:
    return [
        QueueCase("s", "task_quality", group, group, f"c{i:03d}", "in", "out", f, y, (0.0, 2.0), min_labels)
        for i, (f, y) in enumerate(zip(judge, human, strict=True))
    ]


def test_without_labels_the_worst_case_human_only_size() -> None:
    cases = _cases([2.0] * 100, [None] * 100)
    # var = (2 - 0)^2 / 4 = 1, lambda 0: n = ceil(1 / (0.2 / 2z)^2) = ceil(z^2 * 100) = 385 -> capped by nothing here.
    assert needed_for(cases, 0.2) == math.ceil(1 / (0.1 / Z) ** 2)
    rows = plan(cases, width=0.2)
    assert len(rows) == 100  # every case: 385 labels are more than the group has


def test_size_follows_the_current_variance_and_the_sample_is_seeded() -> None:
    judge = [float(i % 3) for i in range(200)]
    human: list[float | None] = [2.0 * (i % 2) if i < 20 else None for i in range(200)]
    cases = _cases(judge, human)
    needed = needed_for(cases, 0.3)
    assert 20 < needed < 200
    rows = plan(cases, width=0.3, seed=1)
    assert len(rows) == needed - 20
    assert all(row.n_labelled == 20 and row.N == 200 for row in rows)
    assert {row.id for row in rows}.isdisjoint({f"c{i:03d}" for i in range(20)})
    assert plan(cases, width=0.3, seed=1) == rows
    assert plan(cases, width=0.3, seed=2) != rows
    # A wider target needs fewer labels.
    assert needed_for(cases, 0.6) < needed


def test_min_labels_is_a_floor_and_a_full_group_queues_nothing() -> None:
    cases = _cases([1.0, 2.0] * 10, [1.0, 2.0] * 10, min_labels=30)
    assert needed_for(cases, 5.0) == 30
    assert plan(cases, width=5.0) == []


def test_written_as_csv_or_jsonl(tmp_path: Path) -> None:
    rows = plan(_cases([2.0] * 5, [None] * 5), width=0.2)
    write(rows, tmp_path / "q.jsonl")
    records = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text("utf-8").splitlines()]
    assert [r["id"] for r in records] == [f"c{i:03d}" for i in range(5)]
    write(rows, tmp_path / "q.csv")
    assert (tmp_path / "q.csv").read_text("utf-8").splitlines()[0] == (
        "suite,group,language,metric,id,input,output,n_labelled,n_needed,N"
    )


def test_the_option_writes_the_queue(pytester: pytest.Pytester) -> None:
    lines = ["suite: q", "cases:"]
    for i in range(30):
        human = f", human: {{task_quality: [{i % 3}]}}" if i < 10 else ""
        lines.append(f"  - {{id: c{i:02d}, language: hi, output: x, recorded: {{task_quality: {i % 3}}}{human}}}")
    lines += ["aggregate:", "  - human_mean(task_quality) >= 0"]
    pytester.makefile(".yaml", suite="\n".join(lines) + "\n")
    result = pytester.runpytest("--llmjudge", "--llmjudge-label-queue=queue.jsonl", "--llmjudge-label-width=0.5")
    result.stdout.fnmatch_lines(["llmjudge: label queue: * case(s) in 1 group(s) written to queue.jsonl"])
    records = [json.loads(line) for line in (pytester.path / "queue.jsonl").read_text("utf-8").splitlines()]
    assert records and all(r["n_labelled"] == 10 and r["N"] == 30 and r["group"] == "hi" for r in records)
    bad = pytester.runpytest("--llmjudge", "--llmjudge-label-queue=queue.txt")
    bad.stderr.fnmatch_lines(["*--llmjudge-label-queue must end in .csv or .jsonl*"])
