"""``testing.MockProvider``: an in-process provider driven by a handler, under the real judge runner.

The runner, cache, retries and reply parsing are the real ones; only the network is gone, so
what a handler's reply or raise does to a case is what a real provider's would do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge import ProviderCallError, ProviderReply, ProviderRequest, Usage
from pytest_llmjudge.errors import UnscoredError
from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.runner import CallOutcome, JudgeRunner
from pytest_llmjudge.judges.parsing import Verdict
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.testing import MockProvider, ScriptedJudge

LA = BUILTIN_RUBRICS["linguistic_acceptability"]
TIMEOUT = 30  # seconds to wait for a future; never reached when things work


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[JudgeRunner]:
    runner = JudgeRunner(JudgeCache(tmp_path / "cache"), concurrency=4, max_retries=2, backoff_base=0.0)
    yield runner
    runner.close()


def request(output: str = "Bonjour, comment allez-vous ?", **settings: Any) -> ProviderRequest:
    return build_request(
        [LA],
        JudgedText(language="fr", output=output, input="Salue l'utilisateur."),
        JudgeSettings(provider="mock", model="mock-judge", **settings),
    )


def judge(runner: JudgeRunner, provider: MockProvider, req: ProviderRequest | None = None) -> CallOutcome:
    return runner.submit_judgment(provider, req or request(), [LA]).result(timeout=TIMEOUT)


def score(outcome: CallOutcome) -> float | None:
    value = outcome.results["linguistic_acceptability"]
    assert isinstance(value, Verdict), value
    return value.score


def test_the_handler_sees_the_request_a_real_provider_would_send(runner: JudgeRunner) -> None:
    scripted = ScriptedJudge({"linguistic_acceptability": 2})
    seen: list[ProviderRequest] = []

    def handler(received: ProviderRequest) -> str:
        seen.append(received)
        return scripted(received)

    mock = MockProvider(handler)
    sent = request(seed=7, temperature=0.5)
    outcome = judge(runner, mock, sent)

    assert outcome.error is None and score(outcome) == 2.0
    assert seen == [sent] and mock.requests == [sent]
    (received,) = seen
    assert (received.provider, received.model, received.seed, received.temperature) == ("mock", "mock-judge", 7, 0.5)
    assert "Bonjour, comment allez-vous ?" in received.user
    assert received.json_schema is not None  # the reply schema the plugin asks for
    # ScriptedJudge reads the request as it reads the loopback server's: language, output, input.
    (query,) = scripted.queries
    assert (query.metric, query.language, query.output, query.input) == (
        "linguistic_acceptability",
        "fr",
        "Bonjour, comment allez-vous ?",
        "Salue l'utilisateur.",
    )


def test_a_reply_object_sets_the_served_model_and_usage(runner: JudgeRunner) -> None:
    mock = MockProvider(
        lambda received: ProviderReply(
            text='{"linguistic_acceptability": {"justification": "ok", "score": 1}}',
            model="served-model-2",
            usage=Usage(input_tokens=120, output_tokens=9),
        )
    )
    outcome = judge(runner, mock)
    assert score(outcome) == 1.0
    assert (outcome.model, outcome.usage) == ("served-model-2", Usage(120, 9))
    assert (runner.stats.input_tokens, runner.stats.output_tokens) == (120, 9)


def test_an_async_handler_is_awaited(runner: JudgeRunner) -> None:
    scripted = ScriptedJudge({"linguistic_acceptability": 0})

    async def handler(received: ProviderRequest) -> str:
        await asyncio.sleep(0)
        return scripted(received)

    assert score(judge(runner, MockProvider(handler))) == 0.0


def test_a_retryable_error_is_retried_like_a_real_providers(runner: JudgeRunner) -> None:
    scripted = ScriptedJudge({"linguistic_acceptability": 2})
    failures = [ProviderCallError("HTTP 429: slow down", retryable=True, status=429, retry_after=0)]

    def handler(received: ProviderRequest) -> str:
        if failures:
            raise failures.pop()
        return scripted(received)

    mock = MockProvider(handler)
    outcome = judge(runner, mock)
    assert outcome.error is None and score(outcome) == 2.0
    assert len(mock.requests) == 2 and runner.stats.retries == 1 and runner.stats.rate_limited == 1


def test_retries_run_out_and_the_case_is_unscored_with_the_reason(runner: JudgeRunner) -> None:
    def handler(received: ProviderRequest) -> str:
        raise ProviderCallError("HTTP 503: overloaded", retryable=True, status=503, retry_after=0)

    mock = MockProvider(handler)
    outcome = judge(runner, mock)
    assert outcome.error == "mock:mock-judge (default endpoint): HTTP 503: overloaded after 3 attempts"
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)
    assert len(mock.requests) == 3  # the first try and max_retries=2


def test_a_non_retryable_error_fails_the_case_at_once(runner: JudgeRunner) -> None:
    def handler(received: ProviderRequest) -> str:
        raise ProviderCallError("HTTP 400: bad request", retryable=False, status=400)

    mock = MockProvider(handler)
    outcome = judge(runner, mock)
    assert outcome.error == "mock:mock-judge (default endpoint): HTTP 400: bad request"
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)
    assert len(mock.requests) == 1 and runner.stats.retries == 0


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        (lambda received: {}["missing"], "mock raised KeyError: 'missing'"),
        (lambda received: 3, "mock raised TypeError: MockProvider handler returned int, not str or ProviderReply"),
    ],
)
def test_anything_else_a_handler_does_is_a_provider_bug_not_retried(
    runner: JudgeRunner, handler: Callable[[ProviderRequest], Any], message: str
) -> None:
    mock = MockProvider(handler)
    outcome = judge(runner, mock)
    assert outcome.error == message
    assert len(mock.requests) == 1
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)


def test_the_factory_hands_out_this_provider_and_needs_no_credentials() -> None:
    mock = MockProvider(lambda received: "", name="house")
    factory = mock.factory()
    assert factory.name == "house" and mock.factory("other").name == "other"
    assert factory.create(None, None, 5.0) is mock
    assert factory.credentials_problem(None, None) is None  # never skipped for a missing key
    asyncio.run(mock.aclose())
    assert mock.closed == 1
