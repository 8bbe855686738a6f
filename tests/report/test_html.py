"""The HTML report: the run's judge headlines on top, repeated text embedded once, every case whole.

Documents are built from typed records (the case records a suite item emits); sizes are
bytes of the page per case, never timings.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.records import BaselineCase, CaseRecord, Threshold
from pytest_llmjudge.report import html
from pytest_llmjudge.report.document import ReportDocument, RunInfo
from pytest_llmjudge.testing import LoopbackServer, Reply

WORDS = "उत्तर स्पष्ट है लेकिन कुछ वाक्य अस्वाभाविक लगते हैं"  # 3 bytes a letter in UTF-8
DEAD_JUDGE = (
    "connection failed: APIConnectionError after 5 attempts (base_url http://127.0.0.1:9/v1): "
    "Connection refused; every call to this judge failed, see the headline at the top of the report"
)


def case(index: int, *, failed: bool = False, **fields: Any) -> CaseRecord:
    """A judged case record as ``CaseItem`` emits it, with its own input, output and reference."""
    values: dict[str, Any] = {
        "suite": "release",
        "suite_path": "release.yaml",
        "case": f"hi-{index:05d}",
        "language": "hi",
        "metric": "linguistic_acceptability",
        "threshold": Threshold(op=">=", value=1),
        "score": 0 if failed else 2,
        "source": "judge",
        "judge": "openai:gpt-4o-mini",
        "cached": False,
        "justification": f"{index}: {WORDS}",
        "input": f"{index}? {WORDS}",
        "output": f"{index}: {WORDS} {WORDS}",
        "reference": f"{index} {WORDS}",
        "passed": not failed,
        "nodeid": f"release.yaml::hi-{index:05d}[linguistic_acceptability]",
        "outcome": "failed" if failed else "passed",
    }
    values.update(fields)
    return CaseRecord(**values)


def embedded(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="case-data">(.*?)</script>', page, re.S)
    assert found is not None, "the page embeds its cases"
    packed: dict[str, Any] = json.loads(found.group(1))
    return packed


def resolved(page: str) -> list[dict[str, Any]]:
    """The embedded cases as the page's script reads them: an index into the string table is its text."""
    packed = embedded(page)
    shared = ("s", "l", "m", "t", "input", "output", "reference", "judge", "justification", "reason", "raw", "w")
    shared += ("bout",)
    return [
        {k: packed["strings"][v] if k in shared and isinstance(v, int) else v for k, v in entry.items()}
        for entry in packed["cases"]
    ]


def size(records: list[CaseRecord]) -> int:
    return len(html.render_html(ReportDocument(cases=records)).encode("utf-8"))


def test_a_dead_judges_one_reason_costs_a_failing_case_a_few_bytes() -> None:
    # The same cases twice: judged and passing, then unscored by a dead judge (one reason, no reply).
    n = 300
    passing = [case(i, justification=None) for i in range(n)]
    unscored = [
        case(i, failed=True, score=None, source="unscored", justification=None, unscored_reason=DEAD_JUDGE)
        for i in range(n)
    ]
    per_failing_case = (size(unscored) - size(passing)) / n
    # The status word and an index to the reason; the reason itself (210 bytes) once for all cases.
    assert per_failing_case < 30, per_failing_case
    page = html.render_html(ReportDocument(cases=unscored))
    assert page.count(DEAD_JUDGE) == 1
    assert all(c["reason"] == DEAD_JUDGE and c["st"] == "unscored" for c in resolved(page)), "every case says why"


def test_repeated_justifications_and_replies_are_embedded_once_and_every_case_reads_them_whole() -> None:
    shared = "La réponse <b>est</b> claire & \x1b[31m correcte. " * 20
    reply = "I would rate it fine. Score: two"
    records = [case(i, failed=True, justification=shared) for i in range(50)]
    records += [
        case(i, failed=True, score=None, unscored_reason="no JSON object", raw_reply=reply) for i in range(50, 60)
    ]
    records.append(case(60, failed=True, score=None, unscored_reason="no JSON object", raw_reply="only once"))
    page = html.render_html(ReportDocument(cases=records))
    visible = shared.replace("\x1b", "\\\\x1b").replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    assert page.count(visible) == 1 and page.count(reply) == 1
    cases = {c["c"]: c for c in resolved(page)}
    assert len(cases) == 61
    assert all(cases[f"hi-{i:05d}"]["justification"] == shared.replace("\x1b", "\\x1b") for i in range(50))
    assert all(cases[f"hi-{i:05d}"]["raw"] == reply for i in range(50, 60))
    # Text held once stays inline, where it is read (and found by a search of the page) as it is.
    assert '"raw":"only once"' in page
    assert all(isinstance(c["input"], str) for c in embedded(page)["cases"]), "each case's own input is inline"


def test_unchanged_baseline_output_is_not_embedded_twice() -> None:
    records = [case(i, baseline=BaselineCase(score=2, output=f"{i}: {WORDS} {WORDS}")) for i in range(20)]
    page = html.render_html(ReportDocument(cases=records))
    assert page.count(f"19: {WORDS} {WORDS}") == 1
    assert {c["ch"] for c in resolved(page)} == {"unchanged"}
    assert all(c["bout"] == c["output"] for c in resolved(page))


def test_ten_thousand_failing_cases_with_long_justifications_fit_in_ten_megabytes() -> None:
    # issue 13's worst case: every case fails with a justification three times as long (here
    # 3 x ~110 letters of Devanagari, ~1 kB, repeated across cases as a judge repeats itself).
    judged = [f"{m}: {WORDS * (1 + m % 4)}" * 3 for m in range(12)]
    records = [case(i, failed=True, score=0, justification=judged[i % 12]) for i in range(1000)]
    per_case = size(records) / len(records)
    assert per_case < 1000, f"{per_case:.0f} bytes per failing case: 10,000 would not fit in 10 MB"


def test_judge_headlines_are_at_the_top_in_red() -> None:
    headline = "judge openai:gpt-4o-mini at http://127.0.0.1:9/v1: 200 of 200 calls failed (connection refused) <\x1b>"
    page = html.render_html(ReportDocument(run=RunInfo(judge_headlines=[headline, "second judge down"])))
    top = page[: page.index("<nav>")]
    found = re.search(r'<div class="headlines" role="alert">(.*?)</div>', top)
    assert found is not None, "the headline is in the page's header, before the navigation"
    assert found.group(1) == (
        "<p>judge openai:gpt-4o-mini at http://127.0.0.1:9/v1: 200 of 200 calls failed (connection refused) "
        "&lt;\\x1b&gt;</p><p>second judge down</p>"
    )
    assert top.index('class="headlines"') < top.index('<dl class="meta">'), "above the run's details"
    assert re.search(r"\.headlines\{[^}]*color:var\(--fail\)", page), "in the failure colour"
    assert 'class="headlines"' not in html.render_html(ReportDocument()), "no headline box when every call went"


def test_a_run_whose_judge_rejects_the_key_says_so_on_top_and_each_case_once(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    loopback.responder = lambda request: Reply(text="Incorrect API key provided", status=401)
    base_url = loopback.openai_base_url.replace("http://", "http://ci-user:hunter2-secret@")
    cases = "".join(
        f'  - {{id: fr-{n}, language: fr, input: "Dis bonjour.", output: "Bonjour {n} !"}}\n' for n in range(4)
    )
    pytester.makefile(
        ".yaml",
        failures=f'suite: failures\njudge: {{provider: openai, model: loopback-judge, base_url: "{base_url}"}}\n'
        f"cases:\n{cases}assert:\n  - linguistic_acceptability >= 1\n",
    )
    pytester.runpytest("--llmjudge", "--llmjudge-report=html:r.html").assert_outcomes(failed=4)
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    headline = (
        f"llmjudge: judge openai:loopback-judge at {loopback.openai_base_url} rejected the credentials: "
        "4 of 4 calls failed (HTTP 401)"
    )
    assert f'<div class="headlines" role="alert"><p>{headline}</p></div>' in page[: page.index("<nav>")]
    assert "hunter2-secret" not in page
    reasons = {c["reason"] for c in resolved(page)}
    assert len(reasons) == 1 and all(page.count(reason) == 1 for reason in reasons), "one reason, embedded once"


def test_the_size_benchmark_prints_render_time_and_bytes_per_case_last(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))
    spec = importlib.util.spec_from_file_location("html_size", benchmarks / "html_size.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sizes = []
    for args in (["200", "--all-failing"], ["200", "--all-failing", "--unique"]):
        assert module.main(args) == 0
        last = capsys.readouterr().out.splitlines()[-1]
        found = re.fullmatch(r"render_cpu_s=\d+\.\d{3} html_mb=\d+\.\d{2} bytes_per_case=(\d+)", last)
        assert found is not None, last
        sizes.append(int(found.group(1)))
    # The synthetic judge repeats its justifications (stored once); made unique, each is kept whole.
    assert sizes[1] > sizes[0], sizes
