"""Control characters in the data never reach the terminal, the HTML report or JUnit raw.

A suite whose name, case id, input, output and judge justification carry ``ESC [31m``
(recolours a terminal), BEL, the one-byte C1 escape ``\\x9b`` and NUL runs end to end
against the loopback judge, next to a calibration set whose name, judge and known-failure
reason carry them too; the bytes pytest printed and every file written are searched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"
RAW = ("\x1b", "\x07", "\x9b", "\x00")


def hostile_suite(base_url: str) -> str:
    # YAML double-quoted escapes: \e is ESC, \a is BEL, \x9b is the C1 CSI, \0 is NUL.
    return f"""\
suite: "evil\\e[31m-suite\\a"
judge: {{provider: openai, model: loopback-judge, base_url: "{base_url}"}}
cases:
  - id: "hi\\e(B-\\x9b2J-\\0x"
    language: hi
    input: "in\\e[32mput\\0"
    output: "out\\aput\\x9b31m \\e]0;title\\a"
  - id: ok
    language: hi
    input: "plain"
    output: "plain"
assert: [linguistic_acceptability >= 1]
aggregate: [mean(linguistic_acceptability) >= 1.5]
"""


def write_calibration(path: Path) -> None:
    """A calibration set whose Bengali gate fails and is declared a known failure, with a hostile reason."""
    items = [
        {
            "id": f"bn-{i}",
            "language": "bn",
            "input": "Write something.",
            "output": f"answer {i}",
            "human": {"linguistic_acceptability": {"a1": i % 3, "a2": i % 3}},
            "recorded": {"linguistic_acceptability": {"score": 2, "judge": "scripted\x1b[31m-v1"}},
        }
        for i in range(12)
    ]
    (path / "items.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    (path / "cal.yaml").write_text(
        'calibration: "cal\\e[31m"\nitems_file: {path: items.jsonl}\n'
        'gate:\n  threshold: 0.7\n  min_items: 10\n  xfail: {bn: "known\\e[31m bias\\x9b"}\n',
        encoding="utf-8",
    )


def test_no_raw_control_character_reaches_terminal_html_or_junit(
    pytester: pytest.Pytester,
    loopback: LoopbackServer,
    scripted_judge: ScriptedJudge,
    page_cases: Any,
) -> None:
    scripted_judge.scores = lambda query: 0 if "out" in query.output else 2
    scripted_judge.justification = "bad\x1b[31m red\x07 bell\x9b2J csi\x00 nul"
    pytester.makefile(".yaml", suite=hostile_suite(loopback.openai_base_url))
    write_calibration(pytester.path)
    result = pytester.runpytest(
        "--llmjudge",
        "-v",
        "-rA",
        "--junitxml=r.xml",
        "--llmjudge-report=html:r.html",
        "--llmjudge-report=json:r.json",
    )
    result.assert_outcomes(passed=1, failed=3, xfailed=1)
    terminal = result.stdout.str() + result.stderr.str()
    assert [c for c in RAW if c in terminal] == []
    # The data is shown, as visible text.
    assert "justification: bad\\x1b[31m red\\x07 bell\\x9b2J csi\\x00 nul" in terminal
    assert "suite.yaml::hi\\x1b(B-\\x9b2J-\\x00x[linguistic_acceptability] FAILED" in terminal
    assert "suite evil\\x1b[31m-suite\\x07:" in terminal
    assert "output:        out\\x07put\\x9b31m \\x1b]0;title\\x07" in terminal
    assert "known\\x1b[31m bias\\x9b" in terminal, "the known failure's reason (-rA)"
    assert "cal\\x1b[31m" in terminal, "the calibration summary"

    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert [c for c in RAW if c in html] == []
    assert all(c["justification"].startswith("bad\\x1b[31m red") for c in page_cases(html) if "justification" in c)
    report = (pytester.path / "r.json").read_text(encoding="utf-8")
    assert [c for c in RAW if c in report] == []
    assert json.loads(report)["cases"][0]["justification"].startswith("bad\x1b[31m"), "the data itself is kept"
    junit = (pytester.path / "r.xml").read_text(encoding="utf-8")
    assert [c for c in RAW if c in junit] == []
    assert list(xmlschema.XMLSchema(SCHEMA).iter_errors(str(pytester.path / "r.xml"))) == []


def test_a_lone_surrogate_in_an_output_and_a_justification_leaves_every_report_written_and_readable(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """A lone surrogate (``"\\ud800"`` in a JSONL cases file, a judge's reply) can't be encoded as
    UTF-8: it stopped the JSON and HTML reports from being written. It is escaped everywhere:
    ``\\ud800`` as visible text in the terminal, HTML and JUnit, a ``\\u`` escape in JSON (which
    reads back as the same string)."""
    # A reply whose JSON escapes a lone surrogate (valid JSON; the judge's half of an emoji pair).
    scripted_judge.scores = lambda query: (
        '{"linguistic_acceptability": {"justification": "lone \\ud83d half, \\u001b[31m", "score": 0}}'
    )
    pytester.makefile(
        ".yaml",
        suite=f'suite: lone\njudge: {{provider: openai, model: loopback-judge, base_url: "{loopback.openai_base_url}"}}\n'
        "cases_file: cases.jsonl\nassert: [linguistic_acceptability >= 1]\n",
    )
    lines = ['{"id": "c1", "language": "hi", "output": "bad \\ud800 lone \\udcff \\u001b[31m"}']
    (pytester.path / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="ascii")
    result = pytester.runpytest(
        "--llmjudge",
        "-rA",
        "--junitxml=junit.xml",
        "--llmjudge-report=json:report.json",
        "--llmjudge-report=html:report.html",
    )
    result.assert_outcomes(failed=1)
    terminal = result.stdout.str()
    assert "could not render" not in terminal and "could not write" not in terminal
    assert "bad \\ud800 lone \\udcff \\x1b[31m" in terminal and "lone \\ud83d half" in terminal
    document = json.loads((pytester.path / "report.json").read_bytes().decode("utf-8"))  # strict UTF-8
    (case,) = document["cases"]
    assert case["output"] == "bad \ud800 lone \udcff \x1b[31m"  # the same string, read back
    page = (pytester.path / "report.html").read_bytes().decode("utf-8")
    assert "\\ud800" in page and "\\ud83d" in page
    xmlschema.XMLSchema(str(SCHEMA)).validate(str(pytester.path / "junit.xml"))
