"""pytest-xdist: the same verdicts, aggregates and reports as one process, every case once.

One suite (18 cases, 3 languages, judged scores that differ by case) runs once in a single
process and once with ``-n 2``; the two runs must agree item by item, the aggregates must
be computed over *all* cases whichever worker judged them, every report (terminal summary,
JUnit, JSON, HTML) must hold every item exactly once, and the xdist run must make each
judge call once.

Both runs are in-process (``pytester.runpytest_inprocess``): under ``-n 2`` this process is
the xdist controller and only the two workers are new interpreters, one fewer than a
subprocess run (about 0.7 s of CPU each).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from builders import judged, rows, suite_text

from pytest_llmjudge.execution.scorer import _output_identity
from pytest_llmjudge.execution.xdist_sharing import WorkerShare
from pytest_llmjudge.suite.model import Case
from pytest_llmjudge.testing import JudgeQuery, LoopbackServer, ScriptedJudge

LANGUAGES = ("hi", "ta", "sw")
CASES = 18


def score(query: JudgeQuery) -> int:
    if query.metric == "hallucinations":
        return 0
    index = int(query.output.split()[-1])
    return (index * 7) % 3  # 0, 1, 2 spread over languages and cases


def xdist_suite(base_url: str) -> str:
    return suite_text(
        "xdist-consistency",
        rows(CASES, languages=LANGUAGES),
        judge=judged(base_url),
        asserts=["linguistic_acceptability >= 1", "hallucinations <= 0"],
        aggregate=["mean(linguistic_acceptability) >= 1.2", "expr: mean(hallucinations) <= 0"],
    )


def junit_cases(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    found = []
    for case in ET.parse(path).iter("testcase"):
        outcome = "failed" if case.find("failure") is not None else "passed"
        # The plugin's default JUnit output: a headline, then one "name: value" line per result.
        lines = (case.findtext("system-out") or "").splitlines()[1:]
        properties = dict(line.split(": ", 1) for line in lines if not line.startswith("  "))
        properties.pop("cached", None)  # differs between the runs by design
        found.append((case.get("classname", "") + "::" + case.get("name", ""), outcome, properties))
    return found


def test_xdist_run_matches_a_single_process_run_and_reports_every_item_once(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    judge = ScriptedJudge(score)
    with LoopbackServer(responder=judge) as server:
        pytester.makefile(".yaml", suite=xdist_suite(server.openai_base_url))
        common = ["--llmjudge", "-p", "no:cacheprovider"]
        single = pytester.runpytest_inprocess(
            *common,
            "--llmjudge-cache-dir=single",
            "--junitxml=single.xml",
            "--llmjudge-report=json:single.json",
        )
        single_requests = server.stats()["requests"]
        server.reset()
        parallel = pytester.runpytest_inprocess(
            *common,
            "-n",
            "2",
            "--llmjudge-cache-dir=parallel",
            "--junitxml=parallel.xml",
            "--llmjudge-report=json:parallel.json",
            "--llmjudge-report=html:parallel.html",
        )
        parallel_requests = server.stats()["requests"]
        keys = Counter(json.dumps(r.body, sort_keys=True) for r in server.requests)

    items = CASES * 2 + 2 * (len(LANGUAGES) + 1)
    assert single_requests == CASES * 2
    assert parallel_requests == CASES * 2, "each judge call made once, whichever worker needed it"
    assert set(keys.values()) == {1}
    single_outcomes = single.parseoutcomes()
    assert single_outcomes == parallel.parseoutcomes()
    assert single_outcomes["passed"] + single_outcomes["failed"] == items

    # JUnit: every item once, same outcome and recorded results (score, threshold, n_scored, ...).
    one, many = junit_cases(pytester.path / "single.xml"), junit_cases(pytester.path / "parallel.xml")
    assert len(many) == items and len({name for name, _, _ in many}) == items
    assert sorted(one) == sorted(many)

    # Aggregates are over all 18 cases, not over one worker's share.
    properties = {name: props for name, _, props in many}
    assert properties["suite.yaml::mean(linguistic_acceptability)[all]"]["n_scored"] == str(CASES)
    for language in LANGUAGES:
        assert properties[f"suite.yaml::mean(linguistic_acceptability)[{language}]"]["n_scored"] == str(CASES // 3)

    # JSON report: every item once, the same scores and aggregate rows as the single run.
    first = json.loads((pytester.path / "single.json").read_text(encoding="utf-8"))
    second = json.loads((pytester.path / "parallel.json").read_text(encoding="utf-8"))
    nodeids = [record["nodeid"] for record in second["cases"] + second["aggregates"]]
    assert len(nodeids) == items and len(set(nodeids)) == items
    assert {c["nodeid"]: c["score"] for c in first["cases"]} == {c["nodeid"]: c["score"] for c in second["cases"]}
    assert {a["nodeid"]: a["rows"] for a in first["aggregates"]} == {
        a["nodeid"]: a["rows"] for a in second["aggregates"]
    }
    assert second["totals"]["items"] == items
    assert second["accounting"]["provider_calls"] == CASES * 2

    # HTML report: its case browser holds every case once (the node id ends each embedded case's "id").
    html = (pytester.path / "parallel.html").read_text(encoding="utf-8")
    failed = [c["case"] for c in second["cases"] if c["outcome"] == "failed"]
    assert len(failed) == 6
    for case in {c["case"] for c in second["cases"]}:
        assert html.count(f'::{case}[linguistic_acceptability]"') == 1, case

    # Terminal summary: the same table as the single-process run.
    def table(lines: list[str]) -> list[str]:
        # The plugin's section only: under CI=true pytest's short summary repeats whole
        # failure messages, in an order that depends on the workers.
        start = next(i for i, line in enumerate(lines) if "llmjudge summary" in line)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("=")), len(lines))
        return [line for line in lines[start:end] if line.startswith("    ") or line.startswith("  ")]

    assert table(single.outlines) == table(parallel.outlines)


NONDETERMINISTIC_TARGET = """\
import os, uuid
from pathlib import Path

REFUSED = __REFUSED__

def answer(case):
    # Not deterministic: a different text on every call, as a sampling model would give.
    Path("calls").mkdir(exist_ok=True)
    (Path("calls") / f"{case.id}.{os.getpid()}.{uuid.uuid4().hex}").write_text("", encoding="utf-8")
    if case.id in REFUSED:
        raise RuntimeError(f"model server refused {case.id}")
    return f"answer {case.id[1:]} {uuid.uuid4().hex}"
"""


REFUSED = ("c01", "c02", "c05", "c08")


def test_xdist_workers_share_outputs_of_a_target(pytester: pytest.Pytester) -> None:
    """Each case's output is produced once per run, and every worker judges that same text.

    ``--dist loadfile`` runs every item in one worker, so the cases whose output the other
    worker owns take the published path; the refused cases include owners on both sides,
    and each must report the target's error in the same words.
    """
    owners = {
        WorkerShare(0, 2, "run").owns(
            _output_identity(Case(suite="shared-outputs", id=case, language="hi", output=None))
        )
        for case in REFUSED
    }
    assert owners == {True, False}, "the refused cases should have output owners on both workers"
    judged: list[str] = []

    def remember(query: JudgeQuery) -> int:
        judged.append(query.output)
        return 2

    with LoopbackServer(responder=ScriptedJudge(remember)) as server:
        cases = "\n".join(f"  - {{id: c{i:02d}, language: hi, input: 'q {i}'}}" for i in range(12))
        pytester.makepyfile(model=NONDETERMINISTIC_TARGET.replace("__REFUSED__", repr(set(REFUSED))))
        pytester.makefile(
            ".yaml",
            suite=f"""\
suite: shared-outputs
judge: {{model: loopback-judge, base_url: "{server.openai_base_url}"}}
outputs: {{target: "model:answer"}}
cases:
{cases}
assert:
  - linguistic_acceptability >= 1
aggregate:
  - mean(linguistic_acceptability) >= 1
""",
        )
        result = pytester.runpytest_inprocess("--llmjudge", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile")
    # 8 case items pass; the 4 refused cases fail with the target's error, and so do both
    # aggregates (4 unscored cases).
    result.assert_outcomes(passed=8, failed=6)
    for case in REFUSED:
        result.stdout.fnmatch_lines([f"*reason:*output target failed: RuntimeError: model server refused {case}"])
    assert "_PublishedTargetError" not in result.stdout.str()
    calls = Counter(path.name.split(".")[0] for path in (pytester.path / "calls").iterdir())
    assert calls == {f"c{i:02d}": 1 for i in range(12)}, "the target ran more than once for some case"
    assert len(judged) == 8 == len(set(judged)), "each produced output judged once, the refused ones never"
