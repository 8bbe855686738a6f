"""--llmjudge-report and the terminal summary in real pytest runs (pytester, loopback judge)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import pytest_llmjudge
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.report.assemble import rubric_hash
from pytest_llmjudge.report.document import ReportDocument
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "report.schema.json"
SENTINEL = "sk-llmjudge-SENTINEL-0123456789abcdef"


def live_suite(base_url: str) -> str:
    return f"""\
suite: live
judge:
  provider: openai
  model: loopback-judge
  base_url: "{base_url}"
  seed: 7
cases:
  - id: fr-1
    language: fr
    input: "Dis bonjour poliment."
    output: "Bonjour, comment allez-vous ?"
  - id: ja-1
    language: ja
    input: "丁寧に挨拶して"
    output: "こんにちは。お元気ですか。"
assert:
  - linguistic_acceptability >= 1
  - hallucinations <= 0
aggregate:
  - mean(linguistic_acceptability) >= 1.5
"""


def validate(document: dict[str, Any]) -> None:
    """The JSON report validates against docs/report.schema.json and parses back into a ReportDocument."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in jsonschema.Draft202012Validator(schema).iter_errors(document)
    ]
    assert not errors, errors[:5]
    ReportDocument.model_validate(document)


def test_json_and_html_reports_of_a_live_run(
    pytester: pytest.Pytester,
    loopback: LoopbackServer,
    scripted_judge: ScriptedJudge,
    page_cases: Any,
) -> None:
    scripted_judge.scores = lambda q: (
        0
        if (q.language == "ja" and q.metric == "linguistic_acceptability")
        else (0 if q.metric == "hallucinations" else 2)
    )
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-report=json:out/report.json",
        "--llmjudge-report=html:out/report.html",
        "-o",
        "llmjudge_prices=loopback-judge = 1.5 6",
    )
    result.assert_outcomes(passed=4, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*llmjudge summary*",
            "suite live: 2 case(s), 2 language(s); judge openai:loopback-judge (4 scores, 0 cached)",
            "  linguistic_acceptability: each >= 1; mean(linguistic_acceptability) >= 1.50",
            "    ja *1 *0 *0 *-*mean >= 1.50*0/1 FAIL",
            "*judge calls: 4 provider requests, 0 cache hits; tokens in/out */*; est. $* (loopback-judge)",
            "*llmjudge json report: *report.json*",
            "*llmjudge html report: *report.html*",
        ]
    )
    document = json.loads((pytester.path / "out" / "report.json").read_text(encoding="utf-8"))
    validate(document)
    run = document["run"]
    assert run["plugin_version"] == pytest_llmjudge.__version__
    assert run["judge_models"] == ["openai:loopback-judge"] and run["judge_seeds"] == [7]
    versions = {name: BUILTIN_RUBRICS[name].version for name in ("hallucinations", "linguistic_acceptability")}
    assert document["suites"][0]["rubrics"] == versions
    assert run["rubric_hash"] == rubric_hash(versions.items())
    assert run["exit_status"] == 1 and "--llmjudge-report=json:out/report.json" in run["pytest_args"]
    assert [(c["case"], c["metric"], c["outcome"]) for c in document["cases"]] == [
        ("fr-1", "hallucinations", "passed"),
        ("fr-1", "linguistic_acceptability", "passed"),
        ("ja-1", "hallucinations", "passed"),
        ("ja-1", "linguistic_acceptability", "failed"),
    ]
    assert document["cases"][3]["justification"] == "scripted verdict (linguistic_acceptability)"
    assert [(c["input"], c["output"], c["reference"]) for c in document["cases"]][2] == (
        "丁寧に挨拶して",
        "こんにちは。お元気ですか。",
        None,
    ), "what was judged, passing cases too"
    assert [a["language"] for a in document["aggregates"]] == ["all", "fr", "ja"]
    accounting = document["accounting"]
    assert accounting["provider_calls"] == 4 and accounting["input_tokens"] > 0
    expected = (accounting["input_tokens"] * 1.5 + accounting["output_tokens"] * 6) / 1e6
    assert accounting["estimated_cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert document["totals"] == {
        "cases": 4,
        "error": 0,
        "failed": 3,
        "items": 7,
        "passed": 4,
        "skipped": 0,
        "xfailed": 0,
        "xpassed": 0,
    }
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<span class="badge fail">FAILED</span>' in page and page.count("<svg") >= 2
    shown = {(c["s"], c["c"], c["m"]): c for c in page_cases(page)}
    assert len(shown) == 4, "every case, passing ones too"
    ja = shown[("live", "ja-1", "linguistic_acceptability")]
    assert (ja["l"], ja["st"], ja["input"], ja["output"]) == (
        "ja",
        "fail",
        "丁寧に挨拶して",
        "こんにちは。お元気ですか。",
    )
    assert ja["justification"] == "scripted verdict (linguistic_acceptability)"


def test_no_api_key_in_any_report(
    pytester: pytest.Pytester,
    loopback: LoopbackServer,
    scripted_judge: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    scripted_judge.justification = f"the request carried {SENTINEL}"
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-report=json:r.json",
        "--llmjudge-report=html:r.html",
        "-o",
        f"junit_suite_name={SENTINEL}",
        "-v",
    )
    result.assert_outcomes(passed=7)
    assert loopback.requests and all(r.api_key_present for r in loopback.requests), "the key was really sent"
    for name in ("r.json", "r.html"):
        text = (pytester.path / name).read_text(encoding="utf-8")
        assert SENTINEL not in text and SENTINEL[:20] not in text, name
        assert "***" in text
    assert SENTINEL not in result.stdout.str()


def test_xdist_report_has_the_same_results(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    serial = pytester.runpytest("--llmjudge", "--llmjudge-cache-dir=c1", "--llmjudge-report=json:serial.json")
    serial.assert_outcomes(passed=7)
    parallel = pytester.runpytest_subprocess(
        "--llmjudge", "--llmjudge-cache-dir=c2", "-n", "2", "--llmjudge-report=json:parallel.json"
    )
    parallel.assert_outcomes(passed=7)
    documents = [json.loads((pytester.path / n).read_text(encoding="utf-8")) for n in ("serial.json", "parallel.json")]
    for document in documents:
        validate(document)
    for document in documents:
        # Under xdist a worker may find a reply another worker just cached: a timing detail.
        for record in document["cases"]:
            record.pop("cached")
        for row in document["summary"]:
            row.pop("cached")
    for section in ("cases", "aggregates", "summary", "suites", "totals", "not_run"):
        assert documents[0][section] == documents[1][section], section
    for field in ("judge_models", "rubric_hash", "rubrics", "judge_seeds"):
        assert documents[0]["run"][field] == documents[1]["run"][field], field
    assert documents[1]["run"]["xdist_workers"] == 2
    assert documents[1]["accounting"]["provider_calls"] == 4, "the workers' accounting is summed"


def test_skipped_items_are_reported_with_their_reason(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: needs-key
judge: {provider: openai, model: gpt-4o-mini}
cases:
  - {id: a, language: en, output: hello}
assert: [linguistic_acceptability >= 1]
""",
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["1 item(s) skipped: judge openai:gpt-4o-mini needs a live judge: set OPENAI_API_KEY*"])
    document = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    validate(document)
    (item,) = document["not_run"]
    assert item["nodeid"] == "suite.yaml::a[linguistic_acceptability]" and item["outcome"] == "skipped"
    assert item["reason"].startswith("judge openai:gpt-4o-mini needs a live judge")
    assert document["accounting"] is None and document["cases"] == []


def test_quiet_prints_the_accounting_only_and_colour_only_when_asked(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda q: 0 if q.language == "ja" else (0 if q.metric == "hallucinations" else 2)
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    quiet = pytester.runpytest("--llmjudge", "-q")
    summary = quiet.stdout.str().split("llmjudge summary", 1)[1].splitlines()[1:]
    assert summary[0].startswith("judge calls: 4 provider requests") and summary[1].startswith("====")
    plain = pytester.runpytest("--llmjudge")
    assert "\x1b[" not in plain.stdout.str(), "no colour codes when the output is not a terminal"
    coloured = pytester.runpytest("--llmjudge", "--color=yes")
    assert any("\x1b[31m" in line and "FAIL" in line for line in coloured.stdout.lines)
    # Only the plugin's own section: pytest leaves its short test summary untruncated under CI=true.
    section = plain.stdout.str().split("llmjudge summary", 1)[1].split("\n=", 1)[0]
    assert all(len(line) <= 100 for line in section.splitlines()[1:])


def test_report_options_are_checked_before_the_run(pytester: pytest.Pytester) -> None:
    bad_format = pytester.runpytest("--llmjudge", "--llmjudge-report=pdf:r.pdf")
    assert bad_format.ret == pytest.ExitCode.USAGE_ERROR
    bad_format.stderr.fnmatch_lines(["*--llmjudge-report expects FORMAT:PATH with FORMAT one of json, html*"])
    bad_price = pytester.runpytest("--llmjudge", "-o", "llmjudge_prices=gpt-4o 1 2")
    assert bad_price.ret == pytest.ExitCode.USAGE_ERROR
    bad_price.stderr.fnmatch_lines(["*llmjudge_prices: expected 'MODEL = INPUT OUTPUT'*"])


def test_unwritable_report_fails_the_run_and_says_why(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: recorded
cases:
  - {id: a, language: en, output: hello, recorded: {linguistic_acceptability: 2}}
assert: [linguistic_acceptability >= 1]
""",
    )
    # The directory appears after the start-of-run check (which refuses one already there:
    # test_suite_identity.py), so the write itself fails.
    pytester.makeconftest(
        "from pathlib import Path\n\n"
        "def pytest_runtestloop(session):\n"
        "    (Path(session.config.invocation_params.dir) / 'taken.json').mkdir()\n"
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:taken.json", "--llmjudge-report=html:ok.html")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["*llmjudge: could not write the json report to *taken.json*"])
    assert (pytester.path / "ok.html").exists()


def test_inert_without_llmjudge(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest("--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "r.json").exists()
    result.stdout.no_fnmatch_line("*llmjudge summary*")
    result.stdout.no_fnmatch_line("*llmjudge json report*")


def test_works_without_xdist_and_from_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: recorded
cases:
  - {id: a, language: en, output: hello, recorded: {linguistic_acceptability: 2}}
  - {id: b, language: hi, output: नमस्ते, recorded: {linguistic_acceptability: 1}}
assert: [linguistic_acceptability >= 1]
""",
    )
    pytester.makeini("[pytest]\nllmjudge_report =\n    json:r.json\n    html:out/r.html\n")
    result = pytester.runpytest("--llmjudge", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "out" / "r.html").exists(), "the ini option names the reports"
    result.stdout.fnmatch_lines(["suite recorded: 2 case(s), 2 language(s)", "    all * 2 * 0 * 1.50 *2/2 pass"])
    document = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    validate(document)
    assert [row["language"] for row in document["summary"]] == ["en", "hi", "all"]


def test_a_dead_judges_headline_is_in_the_json_report_and_printed_once(pytester: pytest.Pytester) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    pytester.makefile(".yaml", suite=live_suite(f"http://user-{SENTINEL}@127.0.0.1:{port}/v1"))
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-max-retries=0", "--llmjudge-retry-backoff=0.01", "--llmjudge-report=json:r.json"
    )
    result.assert_outcomes(failed=7)
    document = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    validate(document)
    (headline,) = document["run"]["judge_headlines"]
    assert "unreachable" in headline and f"127.0.0.1:{port}" in headline and SENTINEL not in headline
    assert result.stdout.lines.count(headline) == 1, "once, at the top of the llmjudge summary"
    assert (
        result.stdout.lines.index(headline)
        == result.stdout.lines.index(next(line for line in result.stdout.lines if "llmjudge summary" in line)) + 1
    )


AGGREGATE_ONLY = """\
suite: only-aggregates
group_by: [language]
cases:
  - {id: hi-1, language: hi, output: "नमस्ते", recorded: {linguistic_acceptability: 2}}
  - {id: hi-2, language: hi, output: "धन्यवाद", recorded: {linguistic_acceptability: 1}}
  - {id: ja-1, language: ja, output: "こんにちは", recorded: {linguistic_acceptability: 2}}
aggregate:
  - mean(linguistic_acceptability) >= 1
  - pass_rate(linguistic_acceptability >= 1) >= 0.5
"""

CARRIED = """\
import json
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    yield
    record = getattr(item, "llmjudge_result", None)
    with open("carried.jsonl", "a", encoding="utf-8") as out:
        for case in getattr(record, "cases", None) or ():
            out.write(json.dumps([case.case, case.metric]) + "\\n")
"""


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ((), {"hi-1", "hi-2", "ja-1"}),
        (("-k", "all"), {"hi-1", "hi-2", "ja-1"}),  # only the all items run: they carry every case
        (("--llmjudge-language", "hi"), {"hi-1", "hi-2"}),
    ],
    ids=["everything", "all-rows-only", "one-language"],
)
def test_aggregate_only_cases_are_carried_once_whatever_is_selected(
    pytester: pytest.Pytester, selection: tuple[str, ...], expected: set[str]
) -> None:
    """Each case a suite only aggregates is in the report once, carried by one selected aggregate item
    (not by each group item, each all item and each aggregate of the metric)."""
    pytester.makefile(".yaml", suite=AGGREGATE_ONLY)
    pytester.makeconftest(CARRIED)
    result = pytester.runpytest_inprocess(
        "--llmjudge", "--llmjudge-report=json:report.json", "-p", "no:randomly", *selection
    )
    assert result.ret == 0, result.stdout.str()
    document = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert sorted(c["case"] for c in document["cases"]) == sorted(expected)
    assert all(c["threshold"] is None and c["outcome"] is None for c in document["cases"])
    lines = (pytester.path / "carried.jsonl").read_text(encoding="utf-8").splitlines()
    carried = [tuple(json.loads(line)) for line in lines]
    assert sorted(carried) == sorted((case, "linguistic_acceptability") for case in expected), "each once"
