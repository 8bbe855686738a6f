"""A calibration jury (``jury:``) end to end: three loopback judges told apart by model name.

``truthful`` gives the human label, ``generous`` gives 2 to everything, ``shifted`` one class
higher than the truth. Per language the jury item shows each judge's agreement, alpha among
them (checked against the ``krippendorff`` package), their error correlation, and the judge
a language uses (the best-agreeing one that passes).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import builders
import krippendorff
import numpy as np
import pytest

from pytest_llmjudge.testing import JudgeQuery, LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.server import ReceivedRequest

TRUTH = (0, 1, 2, 2, 1, 2, 2, 0, 2, 1)
N = 20
BEHAVIOUR = {"truthful": lambda t: t, "generous": lambda t: 2, "shifted": lambda t: min(t + 1, 2)}


def truth_of(query: JudgeQuery) -> int:
    match = re.search(r"quality (\d)", query.output)
    return int(match[1]) if match else 2


@pytest.fixture
def jury_server() -> LoopbackServer:
    judges = {name: ScriptedJudge(lambda q, behave=behave: behave(truth_of(q))) for name, behave in BEHAVIOUR.items()}

    def respond(request: ReceivedRequest) -> str:
        return judges[request.model](request)

    return LoopbackServer(responder=respond)


def write_set(root: Path, base_url: str, jury_extra: str = "") -> None:
    lines = []
    for i in range(N):
        t = TRUTH[i % len(TRUTH)]
        human = {"linguistic_acceptability": {"a1": t, "a2": t, "a3": t}}
        lines.append(
            json.dumps({"id": f"fr-{i:03d}", "language": "fr", "output": f"answer {i} quality {t}", "human": human})
        )
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    judges = "\n".join(f'    - {{provider: openai, model: {name}, base_url: "{base_url}"}}' for name in BEHAVIOUR)
    (root / "cal.yaml").write_text(
        "calibration: tiny\nitems_file: items.jsonl\nscores: judge\n"
        f'judge: {{provider: openai, model: truthful, base_url: "{base_url}"}}\n'
        f"jury:\n  judges:\n{judges}\n{jury_extra}gate:\n  threshold: 0.7\n  min_items: 10\n",
        encoding="utf-8",
    )


def test_the_jury_reports_each_judge_alpha_and_the_judge_used(
    pytester: pytest.Pytester, jury_server: LoopbackServer
) -> None:
    with jury_server as server:
        write_set(pytester.path, server.openai_base_url)
        result = pytester.runpytest("--llmjudge", "-v", "--llmjudge-report=json:r.json")
        result.assert_outcomes(passed=2)  # the set's own gate and the jury
        assert server.stats()["requests"] == 3 * N, "each judge scores each item once (the gate's judge shares)"
        report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
        [jury] = [r for r in report["other"] if r["kind"] == "jury"]
        by_judge = {j["judge"]: j for j in jury["judges"]}
        assert by_judge["openai:truthful"]["f1"] == 1.0 and by_judge["openai:truthful"]["passed"]
        assert not by_judge["openai:generous"]["passed"]
        assert by_judge["openai:truthful"]["calls"] == N
        assert jury["chosen"] == "openai:truthful"
        truth = [TRUTH[i % len(TRUTH)] for i in range(N)]
        ratings = np.array([[BEHAVIOUR[name](t) for t in truth] for name in BEHAVIOUR], dtype=float)
        expected = krippendorff.alpha(reliability_data=ratings, level_of_measurement="ordinal")
        assert jury["alpha"] == pytest.approx(expected)
        assert jury["combined_f1"]["best"] == 1.0
        # generous errs on every item below 2, shifted on the same ones: their errors correlate.
        assert jury["error_correlation"]["openai:generous | openai:shifted"] > 0.5


def test_min_alpha_fails_a_jury_that_disagrees(pytester: pytest.Pytester, jury_server: LoopbackServer) -> None:
    with jury_server as server:
        write_set(pytester.path, server.openai_base_url, "  min_alpha: 0.9\n  combine: majority\n")
        result = pytester.runpytest("--llmjudge", "-k", "jury")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "*tiny: jury, fr linguistic_acceptability: the jury's majority verdict has weighted F1 0.* < threshold "
                "0.700; Krippendorff's alpha (ordinal) among the judges 0.* < min_alpha 0.9*",
                "*openai:truthful*weighted F1 1.000, passes its gate*",
            ]
        )


def test_a_jury_needs_live_scores(pytester: pytest.Pytester) -> None:
    (pytester.path / "items.jsonl").write_text(
        json.dumps({"id": "a", "language": "fr", "output": "x", "human": {"linguistic_acceptability": {"a1": 1}}})
        + "\n"
    )
    pytester.makefile(
        ".yaml",
        cal="calibration: t\nitems_file: items.jsonl\njury: {judges: [{model: a}, {model: b}]}\ngate: {threshold: 0.5}\n",
    )
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["*a jury asks its judges live: set scores: judge*"])


def suite_text(base_url: str, cases: list[dict[str, str]] | None = None) -> str:
    cases = cases or [
        {"id": "good", "language": "fr", "output": "a reply of quality 2"},
        {"id": "poor", "language": "fr", "output": "a reply of quality 0"},
    ]
    judge = builders.judged(base_url, provider="openai", model="unused", calibration="cal.yaml", jury=True)
    return builders.suite_text("s", cases, judge=judge)


@pytest.mark.parametrize("combine", ["best", "majority"])
def test_a_suite_scores_each_language_with_its_jury(
    pytester: pytest.Pytester, jury_server: LoopbackServer, combine: str
) -> None:
    with jury_server as server:
        write_set(pytester.path, server.openai_base_url, f"  combine: {combine}\n")
        pytester.makefile(".yaml", suite=suite_text(server.openai_base_url))
        result = pytester.runpytest("--llmjudge", "suite.yaml", "-v", "--llmjudge-report=json:r.json")
        cases = {c["case"]: c for c in json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]}
        assert "unused" not in {r.model for r in server.requests}, "the suite's own judge is never asked"
        if combine == "best":
            result.assert_outcomes(passed=1, failed=1)  # the truthful judge: poor is 0
            assert cases["poor"]["judge"] == "jury best: openai:truthful" and cases["poor"]["score"] == 0
            assert {r.model for r in server.requests} == set(BEHAVIOUR)  # the gates asked all three
        else:
            # majority of (0, 2, 1) for the poor reply is a tie: the lower, 0; the good one 2. On the
            # calibration items the majority agrees too little (F1 0.585): the language is not calibrated.
            result.assert_outcomes(failed=2)
            result.stdout.fnmatch_lines(
                [
                    "jury is not calibrated for fr: the jury's majority verdict has weighted F1 0.585 < threshold 0.700*",
                    "UNTRUSTED: poor [[]fr[]] linguistic_acceptability = 0, expected >= 1",
                    "  judge:         jury majority: openai:truthful, openai:generous, openai:shifted [[]judge[]]",
                    "  jury:          {'openai:truthful': 0.0, 'openai:generous': 2.0, 'openai:shifted': 1.0}",
                ],
                consecutive=False,
            )


def test_a_jury_suite_plans_its_case_calls_up_front(pytester: pytest.Pytester) -> None:
    """The chosen judge's calls of all 12 cases are submitted at once when the gates are known:
    they run 4 at a time (about ceil(12 / 4) round trips, not one per item), and are cached."""
    cases, concurrency = 12, 4
    judges = {name: ScriptedJudge(lambda q, behave=behave: behave(truth_of(q))) for name, behave in BEHAVIOUR.items()}
    arrivals, in_flight, peak = 0, 0, 0

    async def gated(request: ReceivedRequest) -> str:
        # Hold each case request until a wave of `concurrency` case requests has arrived (never
        # assumes timing): the peak reaches the limit only when the calls were submitted together.
        nonlocal arrivals, in_flight, peak
        if "case-" not in request.last_user_text:
            return judges[request.model](request)
        arrivals += 1
        in_flight += 1
        peak = max(peak, in_flight)
        wave_end = -(-arrivals // concurrency) * concurrency
        for _ in range(400):
            if arrivals >= wave_end:
                break
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return judges[request.model](request)

    listed = [{"id": f"c{i}", "language": "fr", "output": f"case-{i} of quality 2"} for i in range(cases)]
    with LoopbackServer(responder=gated) as server:
        write_set(pytester.path, server.openai_base_url)
        pytester.makefile(".yaml", suite=suite_text(server.openai_base_url, listed))
        args = ("--llmjudge", "suite.yaml", f"--llmjudge-concurrency={concurrency}")
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=cases)
        result.stdout.fnmatch_lines([f"*{cases} jury-scored case metric(s) planned once their jury has chosen*"])
        case_requests = [r for r in server.requests if "case-" in r.last_user_text]
        assert len(case_requests) == cases and {r.model for r in case_requests} == {"truthful"}
        assert peak == concurrency, "the jury's case calls run concurrently, not one per item"
        server.reset()
        rerun = pytester.runpytest(*args)
        rerun.assert_outcomes(passed=cases)
        assert server.stats()["requests"] == 0, "a re-run is answered from the cache"


def test_batch_mode_batches_a_jury_suites_case_calls_after_the_gates(
    pytester: pytest.Pytester, jury_server: LoopbackServer
) -> None:
    """The gates' calls go in a first batch; once they chose the judge, its case calls go in a second."""
    with jury_server as server:
        write_set(pytester.path, server.openai_base_url)
        pytester.makefile(".yaml", suite=suite_text(server.openai_base_url))
        result = pytester.runpytest("--llmjudge", "suite.yaml", "--llmjudge-batch", "--llmjudge-batch-poll=0.05")
        result.assert_outcomes(passed=1, failed=1)  # as without batch mode: the truthful judge gives poor a 0
        assert server.requests == [], "no call went online"
        assert server.stats()["batch"]["batch_requests"] == 3 * N + 2, "the gates' calls, then the two cases'"
        result.stdout.fnmatch_lines(["*batch mode: 62 uncached request(s), 0 cached; 62 submitted*"])
