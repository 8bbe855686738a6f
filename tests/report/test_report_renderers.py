"""Terminal summary and HTML report rendered from documents: the real run's, and typed records made for one case."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_llmjudge.records import (
    AggregateRecord,
    AggregateRow,
    CaseRecord,
    RegressionRecord,
    Threshold,
)
from pytest_llmjudge.report import html
from pytest_llmjudge.report.assemble import RunInputs, build_document
from pytest_llmjudge.report.document import ReportDocument
from pytest_llmjudge.report.terminal import WIDTH, render_summary, summary_lines, wrap_accounting


def case(case_id: str, score: float | None, outcome: str | None, **extra: Any) -> CaseRecord:
    fields: dict[str, Any] = {
        "suite": "s",
        "suite_path": "s.yaml",
        "case": case_id,
        "language": "hi",
        "metric": "m",
        "threshold": Threshold(op=">=", value=1),
        "score": score,
        "source": "judge",
        "passed": outcome == "passed",
        "nodeid": f"s.yaml::{case_id}[m]",
        "outcome": outcome,
    }
    return CaseRecord(**{**fields, **extra})


def test_terminal_fits_100_columns_for_every_language_and_section(real_document: ReportDocument) -> None:
    lines = render_summary(real_document)
    assert max(len(line) for line in lines) <= WIDTH
    # Fitting by cutting is a last resort: the calibration heading and the ranking lines fit whole.
    assert [line for line in lines if line.endswith("~")] == []
    text = "\n".join(lines)
    assert "\x1b[" not in text, "no escape codes in the text itself"
    for expected in (
        "suite pariksha-gpt4o-release: ",
        "suite live-judge-openai: 6 case(s), 6 language(s); judge openai:gpt-4o-mini (18 scores, 0 cached)",
        "agreement gates (judge vs human, weighted F1): 10 of 24 pass, 14 failure(s) expected (xfail)",
        "pariksha-gpt4-vs-native-speakers: judge gpt-4 (PARIKSHA release); 95% CIs",
        "regression against the baseline: 24 comparison(s)",
        "pairwise rankings (Bradley-Terry strength), strongest first",
        "other results: ranking_check x56, ranking_surrogate x8",
        " item(s) skipped: judge anthropic:claude-haiku-4-5 needs a live judge",
        "judge calls: ",
    ):
        assert expected in text, expected
    assert text.count("agreement gates (judge vs human") == 1, "gates print once"
    fails = [style for text, style in summary_lines(real_document) if " FAIL" in text and text.startswith("    ")]
    assert fails and set(fails) == {"red"}, "failing rows are marked for colour (the writer drops it off a TTY)"


def test_quiet_prints_only_the_accounting_and_the_release_verdict(synthetic: Callable[[int], RunInputs]) -> None:
    lines = render_summary(build_document(synthetic(300)), quiet=True)
    verdict = [line for line in lines if line.startswith("release verdict: ")]
    assert len(verdict) == 1 and lines[-1 - (len(lines) - lines.index(verdict[0]) - 1)] == verdict[0]
    lines = lines[: lines.index(verdict[0])]
    assert lines[0].startswith("judge calls: ") and len(lines) <= 2
    assert all(len(line) <= WIDTH for line in lines)
    assert "est. $" in " ".join(lines), "gpt-4o-mini has a built-in price"


def test_judge_headlines_come_first_in_red_also_when_quiet(real_document: ReportDocument) -> None:
    run = real_document.run.model_copy(
        update={"judge_headlines": ["judge openai:gpt-4o-mini at http://h/v1: 3 of 3 calls failed"]}
    )
    document = real_document.model_copy(update={"run": run})
    for quiet in (False, True):
        first, *rest = summary_lines(document, quiet=quiet)
        assert first == ("judge openai:gpt-4o-mini at http://h/v1: 3 of 3 calls failed", "red")
        assert rest


def test_accounting_wraps_at_semicolons() -> None:
    line = "judge calls: 1 provider requests, 2 cache hits" + "; tokens in/out 123456789/1" + "; est. $1.0 (x)" * 5
    wrapped = wrap_accounting(line)
    assert len(wrapped) > 1 and all(len(part) <= WIDTH for part in wrapped)
    assert wrapped[0].startswith("judge calls: 1 provider requests, 2 cache hits")


def test_empty_document_renders_nothing_in_the_terminal_and_a_page_in_html() -> None:
    document = build_document(RunInputs())
    assert render_summary(document) == []
    page = html.render_html(document)
    assert "No case ran." in page and "<svg" not in page


def test_html_is_self_contained_with_every_chart_kind(page_cases: Any, real_document: ReportDocument) -> None:
    page = html.render_html(real_document)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "nothing is fetched"
    assert "<link" not in page and "@import" not in page and "url(" not in page
    for section in ("summary", "scores", "agreement", "regression", "ranking", "cases", "other", "not-run"):
        assert f'<section id="{section}">' in page, section
    assert "Confusion matrices" in page and "Class distributions" in page
    cases = page_cases(page)
    assert len(cases) == len(real_document.cases), "every case, passing ones too"
    failed = sum(1 for c in real_document.cases if c.outcome == "failed")
    assert failed and sum(c["st"] in ("fail", "unscored") for c in cases) == failed


def test_html_escapes_text_and_keeps_justifications_whole(page_cases: Any) -> None:
    record = case("x", 0, "failed", suite="s<b>", justification="<script>alert(1)</script>" + "é" * 1000)
    page = html.render_html(build_document(RunInputs(records=[record])))
    assert "<script>alert(1)" not in page and "</script>" + "é" not in page
    (shown,) = page_cases(page)
    assert shown["justification"] == record.justification, "read in full; the table cuts it in the page"
    assert shown["s"] == "s<b>" and '<option value="s&lt;b&gt;">' in page


def test_case_browser_is_capped(monkeypatch: Any, many_cases: Callable[[int], ReportDocument], page_cases: Any) -> None:
    monkeypatch.setattr(html, "MAX_CASE_ROWS", 10)
    page = html.render_html(many_cases(400))
    assert len(page_cases(page)) == 10
    assert "Showing the first 10 of 400 cases" in page


def test_benchmark_prints_seconds_and_size_last(report_speed: ModuleType, tmp_path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert report_speed.main(["300"]) == 0
    last = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(r"seconds=\d+\.\d{3} html_mb=\d+\.\d{2}", last), last


def test_a_pass_rate_row_shows_its_wilson_interval_in_percent() -> None:
    # pass_rate(hallucinations <= 0) over 50 cases, 47 passing: Wilson [0.8376, 0.9794].
    row = AggregateRow(
        language="bn",
        n_scored=50,
        n_unscored=0,
        value=0.94,
        ci_low=0.8376,
        ci_high=0.9794,
        threshold=Threshold(op=">=", value=0.9),
        passed=True,
    )
    record = AggregateRecord(
        suite="s",
        suite_path="s.yaml",
        aggregate="pass_rate(hallucinations <= 0)",
        metric="hallucinations",
        language="bn",
        passed=True,
        rows=[row],
        nodeid="s.yaml::pass_rate(hallucinations <= 0)[bn]",
        outcome="passed",
    )
    lines = [text for text, _ in summary_lines(build_document(RunInputs(records=[record])))]
    assert any(re.search(r"^\s+bn\s+50\s+0\s+94% \[84%, 98%\]\s+pass_rate >= 0\.90", line) for line in lines), lines


def test_judged_text_is_redacted_and_its_control_characters_made_visible(page_cases: Any) -> None:
    secret = "sk-live-0123456789abcdef"
    record = case(
        "leak",
        0,
        "failed",
        language="en",
        input=f"use key {secret}",
        output=f"here it is: {secret}\x1b[2J\x9b31m done\nline two",
        reference="see http://user:pa55word-xyz@example.com/x",
    )
    document = build_document(RunInputs(records=[record], secrets=[secret]))
    assert document.cases[0].output == "here it is: ***\x1b[2J\x9b31m done\nline two", "JSON keeps the data"
    assert document.cases[0].reference == "see http://***@example.com/x"
    page = html.render_html(document)
    assert secret not in page and "pa55word" not in page
    assert "\x1b" not in page and "\x9b" not in page
    (shown,) = page_cases(page)
    assert shown["output"] == "here it is: ***\\x1b[2J\\x9b31m done\nline two" and shown["input"] == "use key ***"


def test_with_a_baseline_each_case_shows_its_old_score_and_output(
    page_cases: Any, regressed: Callable[[str, str, str], RegressionRecord]
) -> None:
    changed = case("c1", 0, "failed", language="de", output="neu")
    same = case("c2", 2, "passed", language="de", output="gleich")
    regression = regressed("m", "de", "s.yaml::regression(m)[de]")
    document = build_document(RunInputs(records=[changed, same, regression]))
    shown = {c["c"]: c for c in page_cases(html.render_html(document))}
    assert (shown["c1"]["bsc"], shown["c1"]["bout"], shown["c1"]["ch"]) == ("2", "alt", "score and output")
    assert shown["c2"]["ch"] == "unchanged"


def test_a_case_judged_only_for_aggregates_reads_scored_or_unscored_with_its_aggregates(page_cases: Any) -> None:
    """No threshold of its own, no item: its status is ``scored`` (or ``unscored``), never ``pass``, its
    threshold cell names the aggregates it counts in, and it counts among neither failures nor passes."""
    unasserted = {"threshold": None, "passed": None, "nodeid": None, "aggregates": ["mean(m)"]}
    scored = case("c1", 2, None, **unasserted, input="frage", output="antwort")
    unscored = case("c2", None, None, **unasserted, unscored_reason="judge reply is not JSON")
    row = AggregateRow(
        language="all", n_scored=1, n_unscored=1, value=2, threshold=Threshold(op=">=", value=1), passed=True
    )
    holder = AggregateRecord(
        suite="s",
        suite_path="s.yaml",
        aggregate="mean(m)",
        metric="m",
        language="all",
        passed=True,
        rows=[row],
        cases=[scored, unscored],
        nodeid="s.yaml::mean(m)[all]",
        outcome="passed",
    )
    page = html.render_html(build_document(RunInputs(records=[holder])))
    shown = {c["c"]: c for c in page_cases(page)}
    assert (shown["c1"]["st"], shown["c1"]["t"], shown["c1"]["output"]) == ("scored", "in mean(m)", "antwort")
    assert shown["c2"]["st"] == "unscored" and shown["c2"]["reason"] == "judge reply is not JSON"
    assert "(2, 1 failed or unscored)" in page


def _unscored_case(case_id: str) -> CaseRecord:
    return case(
        case_id,
        None,
        "failed",
        suite="a-suite-with-a-long-name-" + "x" * 90,
        metric="linguistic_acceptability",
        unscored_reason="judge reply is not JSON",
        raw_reply="I think it is fine",
    )


def test_terminal_headings_use_a_wide_terminal_and_unscored_rows_say_n_a() -> None:
    document = build_document(RunInputs(records=[_unscored_case("c1"), _unscored_case("c2")]))
    wide = render_summary_width(document, 200)
    assert any(line.startswith("suite a-suite-with-a-long-name-" + "x" * 90 + ":") for line in wide), wide
    narrow = render_summary_width(document, 80)
    assert max(len(line) for line in narrow) <= WIDTH and any(line.endswith("~") for line in narrow)
    (row,) = [line for line in wide if line.strip().startswith("hi ")]
    assert " n/a " in row and "0%" not in row, row
    assert ">n/a<" in html.render_html(document)


def render_summary_width(document: ReportDocument, width: int) -> list[str]:
    return [text for text, _ in summary_lines(document, width=width)]
