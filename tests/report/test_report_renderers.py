"""Terminal summary and HTML report rendered from documents (no pytest run)."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_llmjudge.report import html
from pytest_llmjudge.report.model import RunInputs, build_document
from pytest_llmjudge.report.terminal import WIDTH, render_summary, summary_lines, wrap_accounting


def test_terminal_fits_100_columns_for_ten_languages_with_every_section(synthetic_document: dict[str, Any]) -> None:
    lines = render_summary(synthetic_document)
    assert max(len(line) for line in lines) <= WIDTH
    text = "\n".join(lines)
    assert "\x1b[" not in text, "no escape codes in the text itself"
    for expected in (
        "suite release-gate: ",
        "  linguistic_acceptability: each >= 1; mean(linguistic_acceptability) >= 1.70",
        "agreement gates (judge vs human, weighted F1): ",
        "regression against the baseline",
        "pairwise rankings (Bradley-Terry strength), strongest first",
        "judge calls: ",
    ):
        assert expected in text
    languages = [line.split()[0] for line in lines if re.match(r"^    (ar|bn|de|fr|hi|ja|ru|sw|ta|zh|all) ", line)]
    assert languages[:11] == ["ar", "bn", "de", "fr", "hi", "ja", "ru", "sw", "ta", "zh", "all"]
    fails = [style for text, style in summary_lines(synthetic_document) if " FAIL" in text and text.startswith("    ")]
    assert fails and set(fails) == {"red"}, "failing rows are marked for colour (the writer drops it off a TTY)"


def test_quiet_prints_only_the_accounting(synthetic_document: dict[str, Any]) -> None:
    lines = render_summary(synthetic_document, quiet=True)
    assert lines[0].startswith("judge calls: ") and len(lines) <= 2
    assert all(len(line) <= WIDTH for line in lines)
    assert "est. $" in " ".join(lines), "gpt-4o-mini has a built-in price"


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


def test_html_is_self_contained_with_every_chart_kind(page_cases: Any, synthetic_document: dict[str, Any]) -> None:
    page = html.render_html(synthetic_document)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "nothing is fetched"
    assert "<link" not in page and "@import" not in page and "url(" not in page
    for section in ("summary", "scores", "agreement", "regression", "ranking", "cases"):
        assert f'<section id="{section}">' in page
    assert page.count("<svg") >= 4 + 3 + 30 + 30 + 4 + 1, "bars, gate bars, matrices, distributions, forests"
    assert "Confusion matrices" in page and "Class distributions" in page
    cases = page_cases(page)
    assert len(cases) == len(synthetic_document["cases"]), "every case, passing ones too"
    failed = sum(1 for c in synthetic_document["cases"] if c["outcome"] == "failed")
    assert sum(c["st"] in ("fail", "unscored") for c in cases) == failed


def test_html_escapes_text_and_keeps_justifications_whole(page_cases: Any) -> None:
    record = {
        "kind": "case",
        "suite": "s<b>",
        "case": "x",
        "language": "hi",
        "metric": "m",
        "threshold": {"op": ">=", "value": 1},
        "score": 0,
        "justification": "<script>alert(1)</script>" + "é" * 1000,
        "passed": False,
        "nodeid": "s.yaml::x[m]",
        "outcome": "failed",
    }
    page = html.render_html(build_document(RunInputs(records=[record])))
    assert "<script>alert(1)" not in page and "</script>" + "é" not in page
    (case,) = page_cases(page)
    assert case["justification"] == record["justification"], "read in full; the table cuts it in the page"
    assert case["s"] == "s<b>" and '<option value="s&lt;b&gt;">' in page


def test_case_browser_is_capped(monkeypatch: Any, synthetic: Any, page_cases: Any) -> None:
    monkeypatch.setattr(html, "MAX_CASE_ROWS", 10)
    page = html.render_html(build_document(synthetic(400)))
    assert len(page_cases(page)) == 10
    assert "Showing the first 10 of 400 cases" in page


def test_unknown_kinds_get_a_generic_table() -> None:
    record = {"kind": "novelty", "nodeid": "n.yaml::x", "outcome": "failed", "value": 3, "detail": "x"}
    page = html.render_html(build_document(RunInputs(records=[record])))
    assert '<section id="other">' in page and "novelty: 1 result(s), 1 failed" in page
    assert "<details open>" in page and '<td class="n">3</td>' in page and "&quot;detail&quot;: &quot;x&quot;" in page


def test_benchmark_prints_seconds_and_size_last(report_speed: ModuleType, tmp_path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert report_speed.main(["300"]) == 0
    last = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(r"seconds=\d+\.\d{3} html_mb=\d+\.\d{2}", last), last


def test_a_pass_rate_row_shows_its_wilson_interval_in_percent() -> None:
    # pass_rate(hallucinations <= 0) over 50 cases, 47 passing: Wilson [0.8376, 0.9794].
    row = {
        "language": "bn",
        "n_scored": 50,
        "n_unscored": 0,
        "value": 0.94,
        "ci_low": 0.8376,
        "ci_high": 0.9794,
        "threshold": {"op": ">=", "value": 0.9},
        "passed": True,
        "problem": None,
    }
    record = {
        "kind": "aggregate",
        "suite": "s",
        "aggregate": "pass_rate(hallucinations <= 0)",
        "metric": "hallucinations",
        "language": "bn",
        "passed": True,
        "rows": [row],
        "nodeid": "s.yaml::pass_rate(hallucinations <= 0)[bn]",
        "outcome": "passed",
    }
    lines = [text for text, _ in summary_lines(build_document(RunInputs(records=[record])))]
    assert any(re.search(r"^\s+bn\s+50\s+0\s+94% \[84%, 98%\]\s+pass_rate >= 0\.90", line) for line in lines), lines


def test_judged_text_is_redacted_and_its_control_characters_made_visible(page_cases: Any) -> None:
    secret = "sk-live-0123456789abcdef"
    record = {
        "kind": "case",
        "suite": "s",
        "case": "leak",
        "language": "en",
        "metric": "m",
        "threshold": {"op": ">=", "value": 1},
        "score": 0,
        "input": f"use key {secret}",
        "output": f"here it is: {secret}\x1b[2J\x9b31m done\nline two",
        "reference": "see http://user:pa55word-xyz@example.com/x",
        "passed": False,
        "nodeid": "s.yaml::leak[m]",
        "outcome": "failed",
    }
    document = build_document(RunInputs(records=[record], secrets=[secret]))
    assert document["cases"][0]["output"] == "here it is: ***\x1b[2J\x9b31m done\nline two", "JSON keeps the data"
    assert document["cases"][0]["reference"] == "see http://***@example.com/x"
    page = html.render_html(document)
    assert secret not in page and "pa55word" not in page
    assert "\x1b" not in page and "\x9b" not in page
    (case,) = page_cases(page)
    assert case["output"] == "here it is: ***\\x1b[2J\\x9b31m done\nline two" and case["input"] == "use key ***"


def test_with_a_baseline_each_case_shows_its_old_score_and_output(page_cases: Any) -> None:
    case = {
        "kind": "case",
        "suite": "s",
        "case": "c1",
        "language": "de",
        "metric": "m",
        "threshold": {"op": ">=", "value": 1},
        "score": 0,
        "output": "neu",
        "passed": False,
        "nodeid": "s.yaml::c1[m]",
        "outcome": "failed",
    }
    same = {**case, "case": "c2", "score": 2, "output": "gleich", "nodeid": "s.yaml::c2[m]", "outcome": "passed"}
    regression = {
        "kind": "regression",
        "suite": "s",
        "metric": "m",
        "language": "de",
        "cases": [
            {"case": "c1", "baseline": 2, "candidate": 0, "baseline_output": "alt"},
            {"case": "c2", "baseline": 2, "candidate": 2, "baseline_output": "gleich"},
        ],
        "nodeid": "s.yaml::regression(m)[de]",
        "outcome": "failed",
    }
    document = build_document(RunInputs(records=[case, same, regression]))
    assert [c["baseline"] for c in document["cases"]] == [
        {"score": 2, "output": "alt"},
        {"score": 2, "output": "gleich"},
    ]
    assert "baseline_output" not in document["regressions"][0]["cases"][0], "each output once in the document"
    shown = {c["c"]: c for c in page_cases(html.render_html(document))}
    assert (shown["c1"]["bsc"], shown["c1"]["bout"], shown["c1"]["ch"]) == ("2", "alt", "score and output")
    assert shown["c2"]["ch"] == "unchanged"


def _unscored_case(case: str, metric: str = "linguistic_acceptability") -> dict[str, Any]:
    return {
        "kind": "case",
        "suite": "a-suite-with-a-long-name-" + "x" * 90,
        "case": case,
        "language": "hi",
        "metric": metric,
        "threshold": {"op": ">=", "value": 1},
        "score": None,
        "unscored_reason": "judge reply is not JSON",
        "raw_reply": "I think it is fine",
        "passed": False,
        "nodeid": f"s.yaml::{case}[{metric}]",
        "outcome": "failed",
    }


def test_terminal_headings_use_a_wide_terminal_and_unscored_rows_say_n_a() -> None:
    document = build_document(RunInputs(records=[_unscored_case("c1"), _unscored_case("c2")]))
    wide = render_summary_width(document, 200)
    assert any(line.startswith("suite a-suite-with-a-long-name-" + "x" * 90 + ":") for line in wide), wide
    narrow = render_summary_width(document, 80)
    assert max(len(line) for line in narrow) <= WIDTH and any(line.endswith("~") for line in narrow)
    (row,) = [line for line in wide if line.strip().startswith("hi ")]
    assert " n/a " in row and "0%" not in row, row
    assert ">n/a<" in html.render_html(document)


def render_summary_width(document: dict[str, Any], width: int) -> list[str]:
    return [text for text, _ in summary_lines(document, width=width)]
