"""The Markdown verdict (report/markdown.py): ``md:PATH`` and ``$GITHUB_STEP_SUMMARY``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.report import markdown
from pytest_llmjudge.report.markdown import escape, render_markdown

SUITE = """\
suite: md
cases:
  - id: "hi-1"
    language: hi
    output: "x"
    recorded: {task_quality: 2}
  - id: "hi|2 <img src=x onerror=alert(1)> **bold**"
    language: hi
    output: "y"
    recorded: {task_quality: 0}
  - id: sw-1
    language: sw
    output: "z"
    recorded: {task_quality: 1}
assert:
  - task_quality >= 1
aggregate:
  - mean(task_quality) >= 1.5
"""


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| suite")]


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_md_report_holds_the_verdict_the_table_and_what_failed(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", md=SUITE)
    result = pytester.runpytest("--llmjudge", "--llmjudge-report=md:out/verdict.md", "--llmjudge-report=json:r.json")
    assert result.ret == 1
    text = (pytester.path / "out" / "verdict.md").read_text(encoding="utf-8")
    assert text.startswith("## pytest-llmjudge: FAIL\n")
    assert "failed" in text.splitlines()[2] and "exit status 1" in text.splitlines()[2]
    rows = table_rows(text)
    assert any(row.startswith("| md | task\\_quality | hi | 2 |") for row in rows), rows
    # Every table row keeps its 9 column separators whatever the ids hold.
    assert all(unescaped_pipes(row) == 9 for row in rows), rows
    assert "### What failed (" in text
    failed = [line for line in text.splitlines() if line.startswith("- ")]
    assert any("task\\_quality = 0, needs >= 1" in line for line in failed), failed
    assert any("mean(task_quality)" in line.replace("\\", "") and "[hi]" in line for line in failed), failed
    assert "<img" not in re.sub(r"`[^`]*`", "", text)  # code spans show it as text
    assert "json report: `r.json`" in text


def test_the_verdict_is_appended_to_the_github_step_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".yaml", md=SUITE)
    summary = pytester.path / "step_summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.runpytest("--llmjudge")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n## pytest-llmjudge: FAIL\n")
    pytester.runpytest("--llmjudge", "--llmjudge-step-summary=no")
    assert summary.read_text(encoding="utf-8") == text
    pytester.makeini("[pytest]\nllmjudge_step_summary = false\n")
    pytester.runpytest("--llmjudge")
    assert summary.read_text(encoding="utf-8") == text


def test_a_passing_run_says_pass(pytester: pytest.Pytester) -> None:
    passing = SUITE.replace("recorded: {task_quality: 0}", "recorded: {task_quality: 2}")
    pytester.makefile(".yaml", md=passing.replace("recorded: {task_quality: 1}", "recorded: {task_quality: 2}"))
    pytester.runpytest("--llmjudge", "--llmjudge-report=md:v.md").assert_outcomes(passed=6)
    text = (pytester.path / "v.md").read_text(encoding="utf-8")
    assert text.startswith("## pytest-llmjudge: PASS\n")
    assert "What failed" not in text


def test_escape_leaves_no_markup_and_no_line_break() -> None:
    hostile = "a|b\n## heading\r\n<img src=x onerror=alert(1)> `code` *x* [link](http://e)"
    escaped = escape(hostile)
    assert "\n" not in escaped and "\r" not in escaped
    assert unescaped_pipes(escaped) == 0
    assert "<img" not in escaped
    assert "\\[link\\](http://e)" in escaped


def test_the_real_run_renders_and_failures_are_capped(real_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    text = render_markdown(real_run.document)
    failures = [line for line in text.splitlines() if line.startswith("- ")]
    assert failures, "the example run has failing items"
    monkeypatch.setattr(markdown, "MAX_FAILURES", 1)
    capped = render_markdown(real_run.document)
    listed = [line for line in capped.splitlines() if line.startswith("- ")]
    assert len(listed) == 2 and listed[-1] == f"- … and {len(failures) - 1} more (see the JSON or HTML report)"
    assert len(text.encode("utf-8")) < 1024 * 1024


def test_step_summary_file_that_cannot_be_written_fails_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.makefile(".yaml", md=SUITE.replace("recorded: {task_quality: 0}", "recorded: {task_quality: 2}"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a directory
    result = pytester.runpytest("--llmjudge")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*could not append the verdict to GITHUB_STEP_SUMMARY*"])
