"""Calibration gates grouped by language and task (``group_by``) through pytester: item names,
per-group overrides and xfail marks, the failing criterion in the message, the summary table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def write_items(path: Path) -> None:
    """hi: the judge is right on task qa and always says 2 on task mt (humans: 2 on 3 of 4, so
    the constant judge's weighted F1 is 3/4 * 2*9/(9+12) = 0.643 and its kappa 0)."""
    lines = []
    for task in ("qa", "mt"):
        for i in range(12):
            label = 1 if i % 4 == 0 else 2
            score = label if task == "qa" else 2
            record = {
                "id": f"hi-{task}-{i:02d}",
                "language": "hi",
                "output": "x",
                "task": task,
                "human": {"linguistic_acceptability": {"a1": label, "a2": label, "a3": label}},
                "recorded": {"linguistic_acceptability": {"score": score, "judge": "scripted"}},
            }
            lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_gates_per_language_and_task(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(
        ".yaml",
        cal="""\
calibration: grouped
items_file: {path: items.jsonl, extra_fields: metadata}
group_by: [language, task]
gate:
  threshold: 0.6
  min_items: 10
  per_group:
    hi-task=mt: {min_kappa: 0.2}
  xfail:
    hi-task=mt: "always answers 2"
""",
    )
    result = pytester.runpytest("--llmjudge", "-v", "-rx", "-p", "no:randomly")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "cal.yaml::agreement[[]hi-task=mt-linguistic_acceptability[]] XFAIL*",
            "cal.yaml::agreement[[]hi-task=qa-linguistic_acceptability[]] PASSED*",
            "group      metric    n     F1*",
            "hi-task=mt LA       12  0.643 *xfail",
            "hi-task=qa LA       12  1.000 *pass",
        ]
    )
    # Without the mark the failure names the group and the criterion that failed (F1 passes).
    cal = pytester.path / "cal.yaml"
    cal.write_text(cal.read_text().split("  xfail:")[0])
    result = pytester.runpytest("--llmjudge", "-p", "no:randomly", "-k", "mt")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED: grouped: judge scripted vs native speakers, hi-task=mt linguistic_acceptability: "
            "Cohen's kappa 0.000 < min_kappa 0.200",
        ]
    )
