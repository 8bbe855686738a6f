"""``scoring: expected`` end to end: G-Eval's probability-weighted score from the loopback server's logprobs.

The loopback judge writes 2 but gives the score token the alternatives 2 (p 0.6) and 1
(p 0.4): the expected score is 1.6, whatever the sampled integer. Anthropic gives no
log-probabilities: the item says so, unscored or (``scoring_fallback: sampled``) with the
sampled score and a note. A model that refuses ``logprobs`` is an error naming the setting.
"""

from __future__ import annotations

import json
import math

import builders
import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.server import ReceivedRequest, Reply

P2, P1 = 0.6, 0.4


def suite_text(base_url: str, *, provider: str = "openai", threshold: str = ">= 1.5", **judge_options: str) -> str:
    return builders.suite_text(
        "s",
        [{"id": "hi-1", "language": "hi", "output": "नमस्ते"}],
        judge=builders.judged(base_url, provider=provider, **judge_options),
        asserts=[f"linguistic_acceptability {threshold}"],
    )


@pytest.fixture
def uncertain() -> LoopbackServer:
    judge = ScriptedJudge({"linguistic_acceptability": 2}, default=2)

    def respond(request: ReceivedRequest) -> Reply:
        return Reply(text=judge(request), score_logprobs={"2": math.log(P2), "1": math.log(P1)})

    return LoopbackServer(responder=respond)


def test_expected_score_is_the_probability_weighted_mean_and_survives_the_cache(
    pytester: pytest.Pytester, uncertain: LoopbackServer
) -> None:
    with uncertain as server:
        pytester.makefile(".yaml", suite=suite_text(server.openai_base_url, scoring="expected"))
        result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json", "-q")
        result.assert_outcomes(passed=1)
        [request] = server.requests
        assert (request.body["logprobs"], request.body["top_logprobs"]) == (True, 20)
        [case] = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]
        assert case["score"] == pytest.approx(2 * P2 + 1 * P1)
        assert case["detail"]["scoring"] == "expected"
        assert case["detail"]["probabilities"] == {"0": 0.0, "1": pytest.approx(P1), "2": pytest.approx(P2)}
        assert case["detail"]["sampled"] == 2.0

        # From the cache: the same distribution, no request; a threshold above 1.6 fails on it.
        pytester.makefile(".yaml", suite=suite_text(server.openai_base_url, scoring="expected", threshold=">= 1.7"))
        result = pytester.runpytest("--llmjudge", "-q")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*linguistic_acceptability = 1.6, expected >= 1.7*"])
        assert len(server.requests) == 1


def test_a_rubric_asks_for_expected_scoring_on_its_own(pytester: pytest.Pytester, uncertain: LoopbackServer) -> None:
    with uncertain as server:
        text = (
            suite_text(server.openai_base_url)
            .replace(
                "cases:",
                "rubrics:\n  fluency: {description: Fluent?, scale: [0, 1, 2], scoring: expected}\ncases:",
            )
            .replace("linguistic_acceptability >= 1.5", "fluency >= 1.5")
        )
        pytester.makefile(".yaml", suite=text)
        result = pytester.runpytest("--llmjudge", "-q", "--llmjudge-report=json:r.json")
        result.assert_outcomes(passed=1)
        [case] = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]
        assert case["score"] == pytest.approx(1.6)


def test_without_logprobs_the_item_says_so_and_falls_back_as_configured(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    del scripted_judge
    pytester.makefile(
        ".yaml",
        suite=suite_text(loopback.anthropic_base_url, provider="anthropic", scoring="expected"),
    )
    result = pytester.runpytest("--llmjudge", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*scoring: expected: the provider returned no token log-probabilities*"])

    fallback = suite_text(
        loopback.anthropic_base_url, provider="anthropic", scoring="expected", scoring_fallback="sampled"
    )
    pytester.makefile(".yaml", suite=fallback)
    result = pytester.runpytest("--llmjudge", "-q", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=1)
    [case] = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]
    assert case["score"] == 2.0
    assert case["detail"]["scoring"] == "sampled (fallback: the provider returned no token log-probabilities)"


def test_a_model_that_rejects_logprobs_is_an_error_naming_the_setting(pytester: pytest.Pytester) -> None:
    def refuse(request: ReceivedRequest) -> Reply:
        del request
        return Reply(status=400, text="Unsupported parameter: 'logprobs' is not supported with this model.")

    with LoopbackServer(responder=refuse) as server:
        pytester.makefile(".yaml", suite=suite_text(server.openai_base_url, scoring="expected"))
        result = pytester.runpytest("--llmjudge", "-q")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "*model loopback-judge does not return token log-probabilities (logprobs): scoring: expected "
                "needs them; use scoring: sampled for this judge*"
            ]
        )
        assert len(server.requests) == 1, "a refused setting is not retried"
