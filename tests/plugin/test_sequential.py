"""Sequential judging (``--llmjudge-sequential``, ``execution/sequential.py``), counted at the
loopback judge server: a clear gate stops early with the full run's verdicts, a borderline one
judges everything, a re-run from the cache sends nothing and decides the same, and the cases
never judged are reported as not needed."""

from __future__ import annotations

import hashlib
import json
import re

import builders
import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.scripted import JudgeQuery

LANGUAGES = ("de", "fr", "hi", "sw")
PER_LANGUAGE = 60


def _draw(output: str) -> float:
    """A uniform draw in [0, 1) fixed by the case's output (the same on every run)."""
    return int(hashlib.sha256(output.encode()).hexdigest()[:8], 16) / 2**32


def _score(query: JudgeQuery) -> int:
    """task_quality 0-2: ``sw`` far below the floor of 1 (mean 0.3), the others far above (mean 1.85);
    ``hi`` right at it when the output says ``borderline``."""
    u = _draw(query.output)
    if "sw" in query.output:
        return 0 if u < 0.75 else (1 if u < 0.95 else 2)
    if "borderline" in query.output:
        return 0 if u < 0.5 else 2  # mean 1.0 on a floor of 1.0
    return 2 if u < 0.88 else (1 if u < 0.97 else 0)


@pytest.fixture
def scripted_judge() -> ScriptedJudge:
    return ScriptedJudge(_score)


def suite(
    base_url: str, *, borderline: bool = False, assertion: str = "lower(mean(task_quality)) >= 1.0", extra: str = ""
) -> str:
    cases = [
        {
            "id": f"{language}-{i}",
            "language": language,
            "input": f"say {i}",
            "output": f"text {language} {i}{' borderline' if borderline else ''}",
        }
        for language in LANGUAGES
        for i in range(PER_LANGUAGE)
    ]
    return builders.suite_text(
        "gate", cases, judge=builders.judged(base_url, provider="openai"), head=extra, asserts=(), aggregate=[assertion]
    )


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    found = {}
    for line in result.stdout.lines:
        match = re.search(r"::(\S+\[\w+\]) (PASSED|FAILED|XFAIL|SKIPPED|ERROR)", line)
        if match:
            found[match[1]] = match[2]
    return found


def test_a_clear_gate_stops_early_with_the_full_runs_verdicts_and_a_rerun_sends_nothing(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url))
    full = pytester.runpytest("--llmjudge", "-v", "-p", "no:randomly", "--llmjudge-no-cache")
    assert loopback.stats()["requests"] == len(LANGUAGES) * PER_LANGUAGE
    expected = outcomes(full)
    assert expected["lower(mean(task_quality))[sw]"] == "FAILED"
    assert expected["lower(mean(task_quality))[de]"] == "PASSED"

    report = pytester.path / "run.json"
    seq = pytester.runpytest(
        "--llmjudge",
        "-v",
        "-p",
        "no:randomly",
        "--llmjudge-sequential",
        f"--llmjudge-report=json:{report}",
        "--llmjudge-price",
        "loopback-judge = 1 2",
    )
    sent = loopback.stats()["requests"] - len(LANGUAGES) * PER_LANGUAGE
    assert sent <= len(LANGUAGES) * PER_LANGUAGE // 2, sent
    assert outcomes(seq) == expected
    saved = len(LANGUAGES) * PER_LANGUAGE - sent
    seq.stdout.fnmatch_lines(
        [
            f"llmjudge: sequential: 5 of 5 aggregate row(s) settled in * round(s); {saved} judge call(s) not needed",
            "*sequential: settled after * of 60 cases; anytime-valid 95% bounds*",
            f"judge calls: {sent} provider requests, 0 cache hits*",
            f"*{saved} calls not needed (sequential)*",
        ],
        consecutive=False,
    )
    document = json.loads(report.read_text())
    accounting = document["accounting"]
    assert accounting["not_needed"] == saved
    # What the calls not made would have cost: the run's mean cost per request, times them.
    text = " ".join(" ".join(seq.stdout.lines).split())
    worth = re.search(rf"{saved} calls not needed \(sequential\), about \$(\d+\.\d+) saved", text)
    assert worth, text[-600:]
    per_call = accounting["estimated_cost_usd"] / accounting["provider_calls"]
    assert float(worth[1]) == pytest.approx(saved * per_call, abs=1e-4)
    # The cases never judged: a record each, no score, no verdict, the reason "not needed".
    reasons = [case["unscored_reason"] for case in document["cases"] if case["score"] is None]
    assert all(case["passed"] is None for case in document["cases"] if case["score"] is None)
    assert len(reasons) == saved
    assert all(re.fullmatch(r"not needed: verdict settled after \d+ of (60|240)", r) for r in reasons), reasons[:3]

    # Same seed, same order, same scores from the cache: no request, the same decisions.
    again = pytester.runpytest("--llmjudge", "-v", "-p", "no:randomly", "--llmjudge-sequential")
    assert loopback.stats()["requests"] - len(LANGUAGES) * PER_LANGUAGE == sent
    assert outcomes(again) == expected
    again.stdout.fnmatch_lines([f"llmjudge: sequential: 5 of 5 *; {saved} judge call(s) not needed"])


def test_a_borderline_gate_judges_everything(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, borderline=True))
    result = pytester.runpytest("--llmjudge", "-v", "-p", "no:randomly", "--llmjudge-sequential", "--llmjudge-no-cache")
    # sw settles (far below); every other row sits on the floor and runs to its last case.
    assert loopback.stats()["requests"] >= (len(LANGUAGES) - 1) * PER_LANGUAGE
    result.stdout.fnmatch_lines(["*sequential: not settled after 60 of 60 cases*"])
    assert outcomes(result)["lower(mean(task_quality))[de]"] == "FAILED"


def test_xdist_workers_reach_the_same_decisions(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    """Every worker runs the rounds where the calls are planned: each sends the calls it owns and
    waits for the others' replies, so all see the same scores and stop at the same point."""
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url))
    result = pytester.runpytest_inprocess(
        "--llmjudge", "-p", "no:cacheprovider", "-n", "2", "--llmjudge-sequential", "-v"
    )
    sent = loopback.stats()["requests"]
    assert sent <= len(LANGUAGES) * PER_LANGUAGE // 2, sent
    assert len(loopback.requests) == len({request.last_user_text for request in loopback.requests}), "paid once"
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([f"*{len(LANGUAGES) * PER_LANGUAGE - sent} calls not needed (sequential)*"])


def test_the_suite_setting_turns_it_on_or_off(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, extra="sequential: {round: 10, seed: 1}"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-no-cache")
    first = loopback.stats()["requests"]
    assert first <= len(LANGUAGES) * PER_LANGUAGE // 2
    assert first % 10 == 0, "whole rounds of 10 per language row"
    result.assert_outcomes(passed=4, failed=1)
    # ``sequential: false`` keeps a suite judged in full under --llmjudge-sequential.
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, extra="sequential: false"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-no-cache", "--llmjudge-sequential")
    assert loopback.stats()["requests"] - first == len(LANGUAGES) * PER_LANGUAGE
    result.assert_outcomes(passed=4, failed=1)
    # A bad value names the file, the line and the field.
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, extra="sequential: {round: 0}"))
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["*suite.yaml:*sequential.round*"])


def test_case_items_are_judged_whatever_the_rows_decide(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    """Per-case thresholds are never dropped: every case with one is judged, and a row whose cases are
    all judged anyway is the full run's row (nothing to save, nothing to stop)."""
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, extra="assert: [task_quality >= 1]"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-sequential", "--llmjudge-no-cache", "-p", "no:randomly")
    assert loopback.stats()["requests"] == len(LANGUAGES) * PER_LANGUAGE
    counts = result.parseoutcomes()
    assert counts["passed"] + counts["failed"] == len(LANGUAGES) * PER_LANGUAGE + 5
    result.stdout.fnmatch_lines(["llmjudge: sequential: 0 of 5 aggregate row(s) settled*; 0 judge call(s) not needed"])
    assert "sequential: settled" not in result.stdout.str()
    # Case items on some languages only: the other languages' rows still stop early.
    pytester.makefile(
        ".yaml",
        suite=suite(loopback.openai_base_url).replace("language: sw,", "language: sw, assert: [task_quality >= 1],"),
    )
    before = loopback.stats()["requests"]
    result = pytester.runpytest("--llmjudge", "--llmjudge-sequential", "--llmjudge-no-cache", "-p", "no:randomly")
    sent = loopback.stats()["requests"] - before
    assert PER_LANGUAGE <= sent <= PER_LANGUAGE + 3 * 20 + 20, sent
    result.stdout.fnmatch_lines(["llmjudge: sequential: 4 of 5 aggregate row(s) settled*"])


def test_batch_mode_judges_everything_and_says_so(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    """A batch is sent at once, not in rounds: sequential judging is off there, and the plan says so."""
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", "--llmjudge-batch-poll=0.05", "--llmjudge-sequential")
    assert loopback.stats()["batch"]["batch_requests"] == len(LANGUAGES) * PER_LANGUAGE
    result.stdout.fnmatch_lines(["llmjudge: --llmjudge-sequential is off in batch mode (*): every case is judged"])
    result.assert_outcomes(passed=4, failed=1)
