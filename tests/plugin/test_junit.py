"""JUnit XML of real plugin runs: valid against junit-10.xsd, with each item's results shown.

One pytester directory holds every kind of item the plugin makes: judged cases (an in-process
MockProvider judge: the wire is not the point here) that
pass, fail and end unscored, aggregates, cases skipped for want of a judge, an invalid
suite and calibration gate items (one passing, one failing). The schema is the one
pytest's own junitxml tests use (``tests/data/junit-10.xsd``, vendored with its source).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from pytest_llmjudge.testing import JudgeQuery, MockProvider, ScriptedJudge

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"
GOOD = (0, 1, 2, 2, 1, 2, 2, 0, 2, 1)


def judge_scores(query: JudgeQuery) -> int | str:
    if "unparseable" in query.output:
        return "I would rather not give a score."
    return 0 if query.language == "ja" else 2


def write_run(path: Path) -> None:
    (path / "live.yaml").write_text(
        """\
suite: live
judge: {provider: mock, model: loopback-judge}
cases:
  - {id: fr-1, language: fr, input: "Dis bonjour.", output: "Bonjour !"}
  - {id: ja-1, language: ja, input: "挨拶して", output: "こんにちは。"}
  - {id: sw-1, language: sw, input: "Salimia.", output: "unparseable"}
assert: [linguistic_acceptability >= 1]
aggregate: [mean(linguistic_acceptability) >= 1.5]
""",
        encoding="utf-8",
    )
    (path / "nojudge.yaml").write_text(
        """\
suite: no-judge
judge: {provider: openai, model: gpt-4o-mini}
cases:
  - {id: de-1, language: de, input: "Sag hallo.", output: "Hallo!"}
assert: [linguistic_acceptability >= 1]
""",
        encoding="utf-8",
    )
    (path / "broken.yaml").write_text("suite: broken\ncases: 3\n", encoding="utf-8")
    items = []
    for language, offset in (("fr", 0), ("bn", 1)):
        for i in range(12):
            true = GOOD[i % len(GOOD)]
            items.append(
                {
                    "id": f"{language}-{i}",
                    "language": language,
                    "input": "Write something.",
                    "output": f"answer {i}",
                    "human": {"linguistic_acceptability": {"a1": true, "a2": true}},
                    "recorded": {"linguistic_acceptability": {"score": min(true + offset, 2), "judge": "scripted-v1"}},
                }
            )
    (path / "items.jsonl").write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    (path / "cal.yaml").write_text(
        "calibration: tiny\nitems_file: {path: items.jsonl}\ngate:\n  threshold: 0.7\n  min_items: 10\n",
        encoding="utf-8",
    )


def junit_cases(path: Path) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in ET.parse(path).iter("testcase")}


def schema_errors(path: Path) -> list[str]:
    return [str(error.reason) for error in xmlschema.XMLSchema(SCHEMA).iter_errors(str(path))]


@pytest.fixture
def run_dir(pytester: pytest.Pytester, scripted_judge: ScriptedJudge, mock_judge: MockProvider) -> pytest.Pytester:
    scripted_judge.scores = judge_scores
    write_run(pytester.path)
    return pytester


def test_default_junit_validates_and_shows_each_result_in_system_out(run_dir: pytest.Pytester) -> None:
    result = run_dir.runpytest("--llmjudge", "--junitxml=r.xml")
    result.assert_outcomes(passed=3, failed=7, skipped=1)
    path = run_dir.path / "r.xml"
    assert schema_errors(path) == []
    cases = junit_cases(path)
    assert not list(ET.parse(path).iter("property")), "no <properties> in testcases by default"

    passed = cases["fr-1[linguistic_acceptability]"]
    assert [child.tag for child in passed] == ["system-out"]
    out = passed.findtext("system-out") or ""
    assert out.startswith(
        "llmjudge passed: linguistic_acceptability = 2.0 (>= 1), language fr, judge mock:loopback-judge\n"
    )
    assert "\nscore: 2.0\n" in out and "\nsource: judge\n" in out and "\ncached: false\n" in out

    failed = cases["ja-1[linguistic_acceptability]"]
    assert [child.tag for child in failed] == ["failure", "system-out"]
    message = failed.find("failure").get("message", "")  # type: ignore[union-attr]
    assert message.startswith("FAILED: ja-1 [ja] linguistic_acceptability = 0, expected >= 1")
    assert "judge:         mock:loopback-judge" in message
    assert (failed.findtext("system-out") or "").startswith("llmjudge failed: linguistic_acceptability = 0.0 (>= 1)")

    unscored = cases["sw-1[linguistic_acceptability]"]
    out = unscored.findtext("system-out") or ""
    assert out.startswith("llmjudge failed: linguistic_acceptability = - (>= 1), language sw")
    assert "\nunscored_reason: " in out
    assert unscored.find("failure").get("message", "").startswith("UNSCORED: sw-1")  # type: ignore[union-attr]

    aggregate = cases["mean(linguistic_acceptability)[all]"]
    out = aggregate.findtext("system-out") or ""
    assert "\naggregate: mean(linguistic_acceptability)\n" in out and "\nn_unscored: 1\n" in out
    assert "judge mock:loopback-judge" in out.splitlines()[0]
    message = cases["mean(linguistic_acceptability)[ja]"].find("failure").get("message", "")  # type: ignore[union-attr]
    assert message.startswith("FAILED: mean(linguistic_acceptability) for ja = 0, expected >= 1.5\n")
    assert message.splitlines()[1] == "  judge: mock:loopback-judge"

    skipped = cases["de-1[linguistic_acceptability]"]
    assert [child.tag for child in skipped] == ["skipped"]
    assert "judge openai:gpt-4o-mini" in skipped.find("skipped").get("message", "")  # type: ignore[union-attr]
    assert [child.tag for child in cases["suite-error"]] == ["failure"]

    gate_pass = cases["agreement[fr-linguistic_acceptability]"]
    gate_fail = cases["agreement[bn-linguistic_acceptability]"]
    assert (gate_pass.findtext("system-out") or "").startswith(
        "llmjudge passed: linguistic_acceptability F1 = 1.0 (>= 0.7), language fr, judge scripted-v1\n"
    )
    assert [child.tag for child in gate_fail] == ["failure", "system-out"]
    assert "\ncalibration: tiny\n" in (gate_fail.findtext("system-out") or "")


def test_xunit1_is_invalid_only_through_pytests_own_file_and_line(run_dir: pytest.Pytester) -> None:
    """pytest writes ``file``/``line`` on every xunit1 (and ``legacy``) testcase, which the
    schema doesn't allow, even for plain tests; without them the plugin's output validates."""
    for family in ("xunit1", "legacy"):
        run_dir.runpytest("--llmjudge", f"--junitxml={family}.xml", "-o", f"junit_family={family}")
        path = run_dir.path / f"{family}.xml"
        tree = ET.parse(path)
        assert schema_errors(path), "pytest's file/line attributes are outside junit-10.xsd"
        for case in tree.iter("testcase"):
            assert case.get("file") and case.get("line") is not None
            del case.attrib["file"], case.attrib["line"]
        stripped = run_dir.path / f"{family}-stripped.xml"
        tree.write(stripped, encoding="utf-8")
        assert schema_errors(stripped) == []
        assert junit_cases(stripped)["fr-1[linguistic_acceptability]"].findtext("system-out")


def test_properties_are_an_opt_in(run_dir: pytest.Pytester) -> None:
    run_dir.runpytest("--llmjudge", "--junitxml=props.xml", "--llmjudge-junit-properties")
    cases = junit_cases(run_dir.path / "props.xml")
    case = cases["fr-1[linguistic_acceptability]"]
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["score"] == "2.0" and properties["judge"] == "mock:loopback-judge"
    assert case.findtext("system-out"), "system-out is still written"
    assert "Unexpected child with tag 'properties' at position 1." in schema_errors(run_dir.path / "props.xml")

    run_dir.makeini("[pytest]\nllmjudge_junit_properties = true\n")
    run_dir.runpytest("--llmjudge", "--junitxml=ini.xml")
    assert list(junit_cases(run_dir.path / "ini.xml")["fr-1[linguistic_acceptability]"].iter("property"))
