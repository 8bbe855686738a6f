"""Live-judge suites end to end: pytester runs against the loopback provider server."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_llmjudge.testing import JudgeQuery, LoopbackServer, ScriptedJudge


def live_suite(base_url: str, *, provider: str = "openai", mode: str = "single", extra: str = "") -> str:
    return f"""\
suite: live
judge:
  provider: {provider}
  model: loopback-judge
  base_url: "{base_url}"
  mode: {mode}
{extra}
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


def test_live_suite_passes_and_rerun_is_served_from_cache(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    first = pytester.runpytest("--llmjudge", "-v")
    first.assert_outcomes(passed=7)
    assert loopback.stats()["requests"] == 4
    first.stdout.fnmatch_lines(
        ["llmjudge: 4 judge call(s) planned*", "*judge calls: 4 provider requests, 0 cache hits*"]
    )
    second = pytester.runpytest("--llmjudge")
    second.assert_outcomes(passed=7)
    assert loopback.stats()["requests"] == 4, "a re-run with unchanged inputs must make no provider calls"
    second.stdout.fnmatch_lines(["*judge calls: 0 provider requests, 4 cache hits*"])


def test_anthropic_provider_and_compound_mode(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=live_suite(loopback.anthropic_base_url, provider="anthropic", mode="compound"))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=7)
    requests = loopback.requests
    assert len(requests) == 2, "compound mode asks for all rubrics of a case in one request"
    assert {r.provider for r in requests} == {"anthropic"}
    assert all(
        "linguistic_acceptability" in r.last_user_text and "hallucinations" in r.last_user_text for r in requests
    )


def test_failure_shows_score_threshold_justification_and_output(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda q: (
        0
        if (q.language == "ja" and q.metric == "linguistic_acceptability")
        else (0 if q.metric == "hallucinations" else 2)
    )
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "-v")
    result.assert_outcomes(passed=4, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*FAILED: ja-1 [[]ja[]] linguistic_acceptability = 0, expected >= 1",
            "*judge:*openai:loopback-judge*",
            "*justification: scripted verdict (linguistic_acceptability)",
            "*input:*丁寧に挨拶して",
            "*output:*こんにちは。お元気ですか。",
        ]
    )
    result.stdout.fnmatch_lines(["*FAILED: mean(linguistic_acceptability) for ja = 0, expected >= 1.5*", "*> ja *FAIL"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*site-packages/pytest_llmjudge*")


def test_prompt_names_language_and_asks_for_native_reading(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    pytester.runpytest("--llmjudge", "-k", "ja-1 and linguistic")
    (request,) = loopback.requests
    assert "Japanese" in request.system and "native speaker of Japanese" in request.system
    assert "(language code: ja)" in request.last_user_text
    assert request.temperature == 0


@pytest.mark.parametrize(
    "bad_reply",
    [
        "I think it is fine.",
        '{"linguistic_acceptability": {"justification": "x", "score": NaN}}',
        '{"linguistic_acceptability": {"justification": "x", "score": 7}}',
    ],
)
def test_unparseable_reply_is_reasked_then_unscored_never_a_pass(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge, bad_reply: str
) -> None:
    scripted_judge.scores = lambda q: bad_reply if q.metric == "linguistic_acceptability" else 0
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "-k", "fr-1")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*UNSCORED: fr-1 [[]fr[]] linguistic_acceptability = -, expected >= 1", "*reason:*"])
    la_requests = [r for r in loopback.requests if "linguistic_acceptability" in r.last_user_text]
    assert len(la_requests) == 3, "first request plus the default two re-asks"
    assert "could not be used" in la_requests[1].last_user_text


def test_provider_errors_are_retried_then_reported_per_case(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    from pytest_llmjudge.testing import Fault

    loopback.inject(Fault.SERVER_ERROR, times=100)
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-retries=1", "-k", "fr-1 and linguistic")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*UNSCORED*judge call failed: openai:loopback-judge at {loopback.openai_base_url}: HTTP 500*after 2 attempts"]
    )
    assert loopback.stats()["requests"] == 2


def test_rate_limit_honours_retry_after(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    from pytest_llmjudge.testing import Fault

    loopback.retry_after = 0.3
    loopback.inject(Fault.RATE_LIMIT, times=1)
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "-k", "fr-1 and linguistic")
    result.assert_outcomes(passed=1)
    first, second = loopback.requests[:2] if len(loopback.requests) >= 2 else (None, None)
    assert first is not None and second is not None
    assert second.received_at - first.received_at >= 0.3


def test_missing_key_skips_with_reason_or_fails_when_required(pytester: pytest.Pytester) -> None:
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
    skipped = pytester.runpytest("--llmjudge", "-rs")
    skipped.assert_outcomes(skipped=1)
    skipped.stdout.fnmatch_lines(
        ["*suite.yaml:4: judge openai:gpt-4o-mini needs a live judge: set OPENAI_API_KEY*base_url*"]
    )
    required = pytester.runpytest("--llmjudge", "--llmjudge-require-judge")
    required.assert_outcomes(errors=1)
    required.stdout.no_fnmatch_line("*Traceback*")
    required.stdout.fnmatch_lines(["*OPENAI_API_KEY*llmjudge_require_judge is true, so this fails the run*"])


def test_repeats_assert_on_the_mean_and_report_the_spread(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda q: 2 if (q.seed or 0) % 2 == 0 else 1
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url, extra="  repeats: 3\n  seed: 10"))
    result = pytester.runpytest(
        "--llmjudge", "-k", "fr-1 and linguistic", "--junitxml=r.xml", "--llmjudge-junit-properties"
    )
    result.assert_outcomes(passed=1)
    seeds = sorted(r.seed for r in loopback.requests)
    assert seeds == [10, 11, 12]
    properties = _properties(pytester.path / "r.xml")["suite.yaml::fr-1[linguistic_acceptability]"]
    assert float(properties["score"]) == pytest.approx(5 / 3)
    assert float(properties["spread"]) == 1


def _properties(path: Path) -> dict[str, dict[str, str]]:
    tree = ET.parse(path)
    found = {}
    for case in tree.iter("testcase"):
        name = case.get("classname", "") + "::" + case.get("name", "")
        found[name] = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    return found


def test_junit_records_score_threshold_metric_language_judge_and_cache(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--junitxml=r.xml", "--llmjudge-junit-properties")
    result.assert_outcomes(passed=7)
    result.stdout.no_fnmatch_line("*record_property is incompatible*")
    properties = _properties(pytester.path / "r.xml")
    case = properties["suite.yaml::ja-1[linguistic_acceptability]"]
    assert case["score"] == "2.0"
    assert case["threshold"] == ">= 1"
    assert case["metric"] == "linguistic_acceptability"
    assert case["language"] == "ja"
    assert case["judge"] == "openai:loopback-judge"
    assert case["cached"] == "false"
    aggregate = properties["suite.yaml::mean(linguistic_acceptability)[all]"]
    assert aggregate["n_scored"] == "2" and aggregate["threshold"] == ">= 1.5"
    pytester.runpytest("--llmjudge", "--junitxml=r2.xml", "--llmjudge-junit-properties")
    assert _properties(pytester.path / "r2.xml")["suite.yaml::ja-1[linguistic_acceptability]"]["cached"] == "true"


def test_xdist_gives_the_same_verdicts_and_junit(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda q: (
        0
        if (q.language == "ja" and q.metric == "linguistic_acceptability")
        else (0 if q.metric == "hallucinations" else 2)
    )
    pytester.makefile(".yaml", suite=live_suite(loopback.openai_base_url))
    result = pytester.runpytest_inprocess("--llmjudge", "-n", "2", "--junitxml=r.xml", "--llmjudge-junit-properties")
    result.assert_outcomes(passed=4, failed=3)
    properties = _properties(pytester.path / "r.xml")
    assert len(properties) == 7
    assert properties["suite.yaml::mean(linguistic_acceptability)[all]"]["score"] == "1.0"
    assert loopback.stats()["requests"] == 4, "each judge call is made once per run, whichever worker needs it"
    result.stdout.fnmatch_lines(["*judge calls: 4 provider requests*"])


def test_outputs_from_sync_and_async_targets(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makepyfile(
        my_model="""
import asyncio

def answer(case):
    return {"fr": "Bonjour !", "ja": "こんにちは"}[case.language]

async def answer_async(case):
    await asyncio.sleep(0.01)
    return answer(case) + " :)"
"""
    )
    for name, target in (("sync", "my_model:answer"), ("async", "my_model:answer_async")):
        pytester.makefile(
            ".yaml",
            **{
                name: f"""\
suite: target-{name}
judge: {{model: loopback-judge, base_url: "{loopback.openai_base_url}"}}
outputs: {{target: "{target}"}}
cases:
  - {{id: fr-1, language: fr, reference: "Bonjour !"}}
  - {{id: ja-1, language: ja, reference: "こんにちは"}}
assert: [linguistic_acceptability >= 1, chrf >= 10]
"""
            },
        )
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    outputs = {query.output for query in loopback.responder.queries}  # type: ignore[attr-defined]
    assert outputs == {"Bonjour !", "こんにちは", "Bonjour ! :)", "こんにちは :)"}


def test_failing_target_makes_cases_unscored(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makepyfile(broken_model="def answer(case):\n    raise RuntimeError('model server down')\n")
    pytester.makefile(
        ".yaml",
        suite=f"""\
suite: broken
judge: {{model: loopback-judge, base_url: "{loopback.openai_base_url}"}}
outputs: {{target: "broken_model:answer"}}
cases:
  - {{id: a, language: en}}
assert: [linguistic_acceptability >= 1]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UNSCORED*", "*output target failed: RuntimeError: model server down*"])
    assert loopback.stats()["requests"] == 0


def test_conftest_registers_rubric_metric_and_target_through_hooks(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda q: 3 if q.metric == "politeness" else 2
    pytester.makeconftest(
        """
from pytest_llmjudge import Rubric
from pytest_llmjudge.metrics.base import MetricValue

class Length:
    name = "length"
    higher_is_better = True
    requires = frozenset()
    def compute(self, item):
        return MetricValue(float(len(item.output)))

def pytest_llmjudge_rubrics():
    return {"politeness": Rubric(name="politeness", description="Is it polite?", scale=(1, 2, 3), scoring="1 rude .. 3 polite")}

def pytest_llmjudge_metrics():
    return {"length": lambda: Length()}

def pytest_llmjudge_targets():
    return {"shouty": lambda case: "HELLO THERE"}
"""
    )
    pytester.makefile(
        ".yaml",
        suite=f"""\
suite: hooks
judge: {{model: loopback-judge, base_url: "{loopback.openai_base_url}"}}
outputs: {{target: shouty}}
cases:
  - {{id: a, language: en}}
assert: [politeness >= 3, length == 11]
""",
    )
    result = pytester.runpytest("--llmjudge", "-v")
    result.assert_outcomes(passed=2)
    assert (
        json.loads(
            loopback.requests[0].body["messages"][1]["content"].split("## Metrics\n")[1].split("\n\n## Reply")[0]
        )[0]["name"]
        == "politeness"
    )


def test_llmjudge_judge_fixture_scores_text(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    def by_text(query: JudgeQuery) -> int:
        return 2 if "Bonjour" in query.output else 0

    scripted_judge.scores = by_text
    pytester.makepyfile(
        """
def test_polite(llmjudge_judge):
    assert llmjudge_judge.score("Bonjour, madame.", rubric="linguistic_acceptability", language="fr") >= 1

def test_rude(llmjudge_judge):
    assert llmjudge_judge.score("Salut", rubric="linguistic_acceptability", language="fr") >= 1
"""
    )
    result = pytester.runpytest(
        "--llmjudge", f"--llmjudge-base-url={loopback.openai_base_url}", "--llmjudge-model=loopback-judge"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert "French" in loopback.requests[0].system


def test_the_fixture_verdict_keeps_an_unreadable_reply_as_suite_items_do(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """One verdict-to-score path: the fixture's unscored verdict carries the judge's raw reply and the
    same reason a suite item shows, and a readable one its justification."""
    scripted_judge.scores = lambda query: 2 if "Bonjour" in query.output else "Tres bien, je dirais 2."
    pytester.makepyfile(
        """
def test_verdicts(llmjudge_judge):
    good = llmjudge_judge.verdict("Bonjour, madame.", language="fr")
    assert good.value == 2 and good.justification and good.raw_reply is None
    bad = llmjudge_judge.verdict("Salut", language="fr")
    assert bad.value is None and not bad.scored
    assert bad.raw_reply == "Tres bien, je dirais 2.", bad.raw_reply
    assert bad.error == "the judge reply contains no JSON object", bad.error
"""
    )
    result = pytester.runpytest(
        "--llmjudge", f"--llmjudge-base-url={loopback.openai_base_url}", "--llmjudge-model=loopback-judge"
    )
    result.assert_outcomes(passed=1)


def test_rubric_alias_is_judged_live(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda q: 2 if q.metric == "la" else 0
    pytester.makefile(
        ".yaml",
        suite=f"""\
suite: alias
judge: {{model: loopback-judge, base_url: "{loopback.openai_base_url}"}}
cases:
  - {{id: a, language: fr, output: "Bonjour."}}
assert: [la >= 1]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=1)


def test_unknown_provider_is_a_located_suite_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: unknown-provider
judge: {provider: openia, model: x}
cases:
  - {id: a, language: fr, output: "Bonjour."}
assert: [linguistic_acceptability >= 1]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invalid suite: *suite.yaml:2: judge.provider: unknown judge provider 'openia'*"])
