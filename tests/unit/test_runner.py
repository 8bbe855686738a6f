"""The judge runner with the real OpenAI and Anthropic providers against the loopback server.

Nothing is patched: every judge call goes through the real SDK over a 127.0.0.1 socket to
``pytest_llmjudge.testing.LoopbackServer``, which answers with a ``ScriptedJudge`` and
injects the faults (429, 500, timeouts, resets) the runner must survive. A plugin's provider
(one that doesn't go through the SDK helper) is ``testing.MockProvider``, in process.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.errors import ProviderError, UnscoredError
from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.runner import CallOutcome, JudgeRunner, redact
from pytest_llmjudge.judges.anthropic import AnthropicProvider
from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.judges.parsing import Verdict
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request, reply_schema
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS, Rubric
from pytest_llmjudge.testing import Fault, LoopbackServer, MockProvider, ReceivedRequest, Reply, ScriptedJudge

LA = BUILTIN_RUBRICS["linguistic_acceptability"]
H = BUILTIN_RUBRICS["hallucinations"]
API_KEY = "sk-test-runner-secret-7f3a"
TIMEOUT = 30  # seconds to wait for a future; never reached when things work


@pytest.fixture
def judge() -> ScriptedJudge:
    return ScriptedJudge({"linguistic_acceptability": 2, "hallucinations": 0})


@pytest.fixture
def server(judge: ScriptedJudge) -> Iterator[LoopbackServer]:
    with LoopbackServer(responder=judge, hang_seconds=5.0) as srv:
        yield srv


@pytest.fixture
def make_runner(tmp_path: Path) -> Iterator[Callable[..., JudgeRunner]]:
    runners: list[JudgeRunner] = []

    def make(cache_dir: Path | None = None, **kwargs: Any) -> JudgeRunner:
        kwargs.setdefault("concurrency", 4)
        kwargs.setdefault("max_retries", 2)
        kwargs.setdefault("backoff_base", 0.01)
        runner = JudgeRunner(JudgeCache(cache_dir or tmp_path / "cache"), **kwargs)
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        runner.close()


def openai_provider(runner: JudgeRunner, server: LoopbackServer, timeout: float = 5.0) -> OpenAIProvider:
    provider = OpenAIProvider(api_key=API_KEY, base_url=server.openai_base_url, timeout=timeout)
    runner.track_provider(provider)
    return provider


def anthropic_provider(runner: JudgeRunner, server: LoopbackServer, timeout: float = 5.0) -> AnthropicProvider:
    provider = AnthropicProvider(api_key=API_KEY, base_url=server.anthropic_base_url, timeout=timeout)
    runner.track_provider(provider)
    return provider


def request_for(
    server: LoopbackServer,
    rubrics: list[Rubric] | None = None,
    *,
    provider: str = "openai",
    output: str = "नमस्ते, आप कैसे हैं?",
    **settings: Any,
) -> ProviderRequest:
    base_url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return build_request(
        rubrics or [LA],
        JudgedText(language="hi", output=output, input="Greet the user."),
        JudgeSettings(provider=provider, model="loopback-judge", base_url=base_url, **settings),
    )


def judge_once(
    runner: JudgeRunner, provider: Any, request: ProviderRequest, rubrics: list[Rubric] | None = None, **kw: Any
) -> CallOutcome:
    return runner.submit_judgment(provider, request, rubrics or [LA], **kw).result(timeout=TIMEOUT)


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def verdict(outcome: CallOutcome, name: str = "linguistic_acceptability") -> Verdict:
    value = outcome.results[name]
    assert isinstance(value, Verdict), value
    return value


# --------------------------------------------------------------------------- round trips


def test_openai_round_trip(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    request = request_for(server, structured_output="json_schema")
    outcome = judge_once(runner, openai_provider(runner, server), request)

    assert outcome.error is None
    assert verdict(outcome) == Verdict("linguistic_acceptability", 2.0, "scripted verdict (linguistic_acceptability)")
    assert (outcome.cached, outcome.provider_calls, outcome.model) == (False, 1, "loopback-judge")
    assert outcome.usage.input_tokens > 0 and outcome.usage.output_tokens > 0

    (received,) = server.requests
    assert received.provider == "openai"
    assert received.path == "/v1/chat/completions"
    assert received.model == "loopback-judge"
    assert received.system == request.system
    assert received.messages == [("user", request.user)]
    assert received.temperature == 0.0
    assert received.max_tokens == 1024
    assert "max_tokens" in received.body  # a base_url means an OpenAI-compatible server
    assert "seed" not in received.body
    assert received.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "judgment", "strict": True, "schema": reply_schema([LA])},
    }
    assert received.api_key_present
    assert API_KEY not in json.dumps(received.headers)


@pytest.mark.parametrize(
    ("structured_output", "response_format"), [("json_object", {"type": "json_object"}), ("none", None)]
)
def test_openai_other_response_formats(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], structured_output: str, response_format: Any
) -> None:
    runner = make_runner()
    judge_once(runner, openai_provider(runner, server), request_for(server, structured_output=structured_output))
    assert server.requests[0].response_format == response_format


def test_openai_sends_the_seed(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], judge: ScriptedJudge
) -> None:
    runner = make_runner()
    judge_once(runner, openai_provider(runner, server), request_for(server, seed=41))
    assert server.requests[0].seed == 41
    assert judge.queries[0].seed == 41


def test_the_official_openai_endpoint_gets_max_completion_tokens(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No base_url means api.openai.com; the SDK's own OPENAI_BASE_URL lets us stand in for it.
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    runner = make_runner()
    provider = OpenAIProvider(api_key=API_KEY, base_url=None, timeout=5.0)
    runner.track_provider(provider)
    request = build_request(
        [LA], JudgedText(language="hi", output="x"), JudgeSettings(provider="openai", model="gpt-4o", max_tokens=300)
    )
    assert request.structured_output == "json_schema"
    judge_once(runner, provider, request)

    body = server.requests[0].body
    assert body["max_completion_tokens"] == 300
    assert "max_tokens" not in body
    assert body["response_format"]["type"] == "json_schema"


def test_anthropic_round_trip(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    request = request_for(server, provider="anthropic", structured_output="json_schema", max_tokens=512)
    outcome = judge_once(runner, anthropic_provider(runner, server), request)

    assert outcome.error is None
    assert verdict(outcome).score == 2.0
    assert (outcome.provider_calls, outcome.model) == (1, "loopback-judge")

    (received,) = server.requests
    assert received.provider == "anthropic"
    assert received.path == "/v1/messages"
    assert received.model == "loopback-judge"
    assert received.system == request.system
    assert received.messages == [("user", request.user)]
    assert received.max_tokens == 512
    assert received.response_format == {"type": "json_schema", "schema": reply_schema([LA])}
    assert received.body["output_config"] == {"format": {"type": "json_schema", "schema": reply_schema([LA])}}
    # anthropic 2.x's messages.create takes neither: they live in the cache key only.
    assert "temperature" not in received.body and "seed" not in received.body
    assert received.api_key_present


def test_anthropic_without_structured_output_sends_no_format(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    runner = make_runner()
    judge_once(runner, anthropic_provider(runner, server), request_for(server, provider="anthropic"))
    assert "output_config" not in server.requests[0].body


def test_a_compound_call_scores_every_rubric(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server, [LA, H]), [LA, H])

    assert verdict(outcome, "linguistic_acceptability").score == 2.0
    assert verdict(outcome, "hallucinations").score == 0.0
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- cache


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_a_rerun_with_the_same_cache_makes_no_requests(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], tmp_path: Path, provider_name: str
) -> None:
    make_provider = openai_provider if provider_name == "openai" else anthropic_provider
    request = request_for(server, provider=provider_name)

    first_runner = make_runner(tmp_path / "shared-cache")
    first = judge_once(first_runner, make_provider(first_runner, server), request)
    first_runner.close()
    assert (first.cached, first.provider_calls) == (False, 1)

    server.reset()
    second_runner = make_runner(tmp_path / "shared-cache")
    second = judge_once(second_runner, make_provider(second_runner, server), request)

    assert server.stats()["requests"] == 0
    assert (second.cached, second.provider_calls) == (True, 0)
    assert second.results == first.results
    assert second.usage.input_tokens == 0  # nothing was paid for this time
    assert second_runner.stats.cache_hits == 1
    assert second_runner.stats.provider_calls == 0


def test_cache_mode_refresh_asks_again(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], tmp_path: Path
) -> None:
    request = request_for(server)
    first_runner = make_runner(tmp_path / "c")
    judge_once(first_runner, openai_provider(first_runner, server), request)

    refresh = JudgeRunner(JudgeCache(tmp_path / "c", mode="refresh"), concurrency=2, backoff_base=0.01)
    try:
        outcome = judge_once(refresh, openai_provider(refresh, server), request)
    finally:
        refresh.close()
    assert (outcome.cached, outcome.provider_calls) == (False, 1)
    assert len(server.requests) == 2


# --------------------------------------------------------------------------- retries


def test_429_with_retry_after_then_success(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner(max_retries=3)
    server.inject(Fault.RATE_LIMIT, times=2, retry_after=0.05)
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server))

    assert outcome.error is None
    assert verdict(outcome).score == 2.0
    assert outcome.provider_calls == 1  # one reply, however many attempts it took
    assert runner.stats.retries == 2
    assert runner.stats.provider_calls == 3
    assert server.stats()["by_status"] == {"429": 2, "200": 1}
    times = [r.received_at for r in server.requests]
    # The server asked for 50 ms; the runner waited at least that long (minus clock slack).
    assert times[1] - times[0] >= 0.04
    assert times[2] - times[1] >= 0.04


def test_anthropic_overloaded_is_retried(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    server.inject(Fault.OVERLOADED, times=1)
    outcome = judge_once(runner, anthropic_provider(runner, server), request_for(server, provider="anthropic"))

    assert outcome.error is None
    assert runner.stats.retries == 1
    assert server.stats()["by_status"] == {"529": 1, "200": 1}


def test_persistent_500_fails_the_call_and_unscores_every_rubric(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], tmp_path: Path
) -> None:
    runner = make_runner(max_retries=2)
    server.inject(Fault.SERVER_ERROR, times=3)  # max_retries + 1 attempts
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server, [LA, H]), [LA, H])

    assert outcome.error is not None
    assert "HTTP 500" in outcome.error
    assert "after 3 attempts" in outcome.error
    assert set(outcome.results) == {"linguistic_acceptability", "hallucinations"}
    for value in outcome.results.values():
        assert isinstance(value, UnscoredError)
        assert str(value).startswith("provider failed: ")
    assert len(server.requests) == 3
    assert (runner.stats.retries, runner.stats.failed_calls, runner.stats.unscored) == (2, 1, 2)
    assert DirectoryStore(tmp_path / "cache" / "v1").keys() == []  # nothing to cache


def test_a_400_is_not_retried(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    server.responder = lambda request: Reply(text="max_tokens is too large", status=400)
    runner = make_runner(max_retries=4)
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server))

    assert outcome.error == f"openai:loopback-judge at {server.openai_base_url}: HTTP 400: max_tokens is too large"
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)
    assert len(server.requests) == 1
    assert runner.stats.retries == 0


def test_a_timeout_is_retried(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    server.inject(Fault.TIMEOUT, times=1, hang_seconds=5)
    outcome = judge_once(runner, openai_provider(runner, server, timeout=0.5), request_for(server))

    assert outcome.error is None
    assert verdict(outcome).score == 2.0
    assert runner.stats.retries == 1
    # The hung request is booked when the server notices the client gave up; allow it a moment.
    assert eventually(lambda: server.stats()["by_status"] == {"no_response": 1, "200": 1})


def test_persistent_timeouts_fail_the_call(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner(max_retries=1)
    server.inject(Fault.TIMEOUT, times=2, hang_seconds=5)
    outcome = judge_once(
        runner, anthropic_provider(runner, server, timeout=0.2), request_for(server, provider="anthropic")
    )

    assert (
        outcome.error == f"anthropic:loopback-judge at {server.anthropic_base_url}: request timed out "
        "(no complete reply within 0.2 s: --llmjudge-timeout) after 2 attempts"
    )


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_a_trickling_reply_ends_at_the_timeout_of_the_whole_request(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], provider_name: str
) -> None:
    """A server sending its reply a byte every 30 ms never stalls a read for the 0.2 s timeout,
    but would take ~12 s per reply: each attempt ends at the timeout, as a timeout."""
    server.trickle_interval = 0.03
    server.inject(Fault.TRICKLE, times=2)
    runner = make_runner(max_retries=1)
    make_provider = openai_provider if provider_name == "openai" else anthropic_provider
    base_url = server.openai_base_url if provider_name == "openai" else server.anthropic_base_url
    outcome = judge_once(
        runner, make_provider(runner, server, timeout=0.2), request_for(server, provider=provider_name)
    )

    assert outcome.error == (
        f"{provider_name}:loopback-judge at {base_url}: request timed out (no complete reply within 0.2 s: --llmjudge-timeout) "
        "after 2 attempts"
    )
    assert server.stats()["by_fault"] == {"trickle": 2}


def test_a_trickling_reply_is_retried_and_the_retry_succeeds(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    server.trickle_interval = 0.03
    server.inject(Fault.TRICKLE, times=1)
    runner = make_runner()
    outcome = judge_once(runner, openai_provider(runner, server, timeout=0.2), request_for(server))

    assert outcome.error is None and verdict(outcome).score == 2.0
    assert runner.stats.retries == 1


def test_a_huge_retry_after_waits_no_longer_than_the_back_off_cap(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    """``Retry-After: 999999`` (11 days): the retry and the endpoint's pause both wait the cap
    (``backoff_max``, 30 s by default; 0.05 s here), and the call succeeds."""
    server.inject(Fault.RATE_LIMIT, times=1, retry_after=999999)
    runner = make_runner(backoff_max=0.05)
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server))

    assert outcome.error is None and verdict(outcome).score == 2.0
    assert server.stats()["by_status"] == {"429": 1, "200": 1}
    (budget,) = runner.budgets.all().values()
    assert budget.max_pause == 0.05 and budget.stats.congestion_events == 1


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_a_reply_over_the_size_cap_is_a_failed_call_never_retried_nor_cached(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], tmp_path: Path, provider_name: str
) -> None:
    """A 1.1 MiB reply (a verdict is a few hundred bytes): refused before it is parsed, the case
    unscored with the reason, one request only, nothing in the cache."""
    from pytest_llmjudge.judges.base import MAX_REPLY_BYTES

    server.responder = lambda request: "x" * (MAX_REPLY_BYTES + 100_000)
    runner = make_runner(tmp_path / "cache", max_retries=3)
    make_provider = openai_provider if provider_name == "openai" else anthropic_provider
    outcome = judge_once(runner, make_provider(runner, server), request_for(server, provider=provider_name))

    assert outcome.error is not None and "reply too large: 1," in outcome.error
    assert "over the 1,048,576-byte cap for a judge reply" in outcome.error
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)
    assert len(server.requests) == 1 and runner.stats.retries == 0
    assert DirectoryStore(tmp_path / "cache" / "v1").keys() == []


def test_any_providers_reply_over_the_size_cap_is_refused(
    make_runner: Callable[..., JudgeRunner], tmp_path: Path
) -> None:
    """A plugin's provider (not going through the SDK helper): the runner checks the text's UTF-8 size."""
    from pytest_llmjudge.judges.base import MAX_REPLY_BYTES

    huge = MockProvider(lambda request: "é" * (MAX_REPLY_BYTES // 2 + 1), name="huge")  # 2 bytes each
    runner = make_runner(tmp_path / "cache")
    request = ProviderRequest(provider="huge", model="m", system="s", user="u")
    outcome = judge_once(runner, huge, request)
    assert outcome.error == f"huge:m (default endpoint): reply too large: {MAX_REPLY_BYTES + 2:,} bytes, " + (
        f"over the {MAX_REPLY_BYTES:,}-byte cap for a judge reply"
    )
    assert DirectoryStore(tmp_path / "cache" / "v1").keys() == []


@pytest.mark.parametrize("fault", [Fault.CONNECTION_RESET, Fault.TRUNCATED])
@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_dropped_connections_are_retried(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], fault: Fault, provider_name: str
) -> None:
    runner = make_runner()
    make_provider = openai_provider if provider_name == "openai" else anthropic_provider
    server.inject(fault, times=1)
    outcome = judge_once(runner, make_provider(runner, server), request_for(server, provider=provider_name))

    assert outcome.error is None
    assert verdict(outcome).score == 2.0
    assert runner.stats.retries == 1
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_a_malformed_response_body_is_retried(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], provider_name: str
) -> None:
    runner = make_runner()
    make_provider = openai_provider if provider_name == "openai" else anthropic_provider
    server.inject(Fault.MALFORMED_JSON, times=1)
    outcome = judge_once(runner, make_provider(runner, server), request_for(server, provider=provider_name))

    # A 200 whose body is not JSON is a transient server fault: retried like a dropped connection.
    assert outcome.error is None
    assert verdict(outcome).score == 2.0
    assert runner.stats.retries == 1
    assert len(server.requests) == 2


# --------------------------------------------------------------------------- re-asks


def test_an_unusable_reply_is_re_asked_with_a_note(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], judge: ScriptedJudge
) -> None:
    replies = iter(["I would rate this a 2 out of 2."])
    server.responder = lambda received: next(replies, None) or judge(received)
    runner = make_runner()
    request = request_for(server)
    outcome = judge_once(runner, openai_provider(runner, server), request)

    assert outcome.error is None
    assert verdict(outcome).score == 2.0
    assert outcome.provider_calls == 2
    first, second = server.requests
    assert first.last_user_text == request.user
    assert second.last_user_text.startswith(request.user)
    note = second.last_user_text[len(request.user) :]
    assert "could not be used" in note
    assert "no JSON object" in note
    assert second.system == request.system


def test_empty_content_is_re_asked(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    server.inject(Fault.EMPTY_CONTENT, times=1)
    runner = make_runner()
    outcome = judge_once(runner, anthropic_provider(runner, server), request_for(server, provider="anthropic"))

    assert verdict(outcome).score == 2.0
    assert "empty text" in server.requests[1].last_user_text
    assert runner.stats.retries == 0  # a re-ask, not a retry


def test_an_always_unusable_judge_leaves_the_rubric_unscored(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    server.responder = lambda received: '{"linguistic_acceptability": {"justification": "great", "score": 7}}'
    runner = make_runner()
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server), max_reasks=2)

    assert outcome.error is None  # the provider worked; the replies were unusable
    result = outcome.results["linguistic_acceptability"]
    assert isinstance(result, UnscoredError)
    assert "not on the scale [0, 1, 2]" in str(result)
    assert outcome.provider_calls == 3  # the first ask and two re-asks
    assert len(server.requests) == 3
    assert runner.stats.unscored == 1


def test_max_reasks_zero_never_re_asks(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    server.responder = lambda received: "no json"
    runner = make_runner()
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server), max_reasks=0)
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)
    assert len(server.requests) == 1


def test_valid_verdicts_survive_a_re_ask(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    replies = iter(
        [
            json.dumps(
                {
                    "linguistic_acceptability": {"justification": "a", "score": 2},
                    "hallucinations": {"justification": "b", "score": 5},
                }
            ),
            json.dumps(
                {
                    "linguistic_acceptability": {"justification": "c", "score": 0},
                    "hallucinations": {"justification": "d", "score": 1},
                }
            ),
        ]
    )
    server.responder = lambda received: next(replies)
    runner = make_runner()
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server, [LA, H]), [LA, H])

    assert verdict(outcome, "linguistic_acceptability") == Verdict("linguistic_acceptability", 2.0, "a")
    assert verdict(outcome, "hallucinations") == Verdict("hallucinations", 1.0, "d")
    assert "hallucinations: score 5 is not on the scale [0, 1]" in server.requests[1].last_user_text


def test_re_asks_are_cached_and_an_unparseable_cached_reply_is_asked_again_next_run(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], judge: ScriptedJudge, tmp_path: Path
) -> None:
    replies = iter(["not json"])
    server.responder = lambda received: next(replies, None) or judge(received)
    request = request_for(server)
    first_runner = make_runner(tmp_path / "c")
    judge_once(first_runner, openai_provider(first_runner, server), request)
    assert len(DirectoryStore(tmp_path / "c" / "v1").keys()) == 2  # the unparseable reply and the re-ask's

    # The next run does not replay "not json": it asks the same prompt again, and that
    # reply (now a verdict) replaces the cached one, so the run after that is all cache.
    second_runner = make_runner(tmp_path / "c")
    outcome = judge_once(second_runner, openai_provider(second_runner, server), request)
    assert (outcome.cached, outcome.provider_calls) == (False, 1)
    assert verdict(outcome).score == 2.0
    assert second_runner.stats.cache_unparseable == 1
    assert [r.last_user_text for r in server.requests[-1:]] == [server.requests[0].last_user_text]

    third_runner = make_runner(tmp_path / "c")
    outcome = judge_once(third_runner, openai_provider(third_runner, server), request)
    assert (outcome.cached, outcome.provider_calls, third_runner.stats.cache_unparseable) == (True, 0, 0)
    assert len(server.requests) == 3


def test_a_run_never_pays_twice_for_one_unparseable_prompt(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    # Two calls with the same prompt (different rubric selections share the request): the
    # second finds the first's unparseable reply in the cache and uses it as it is.
    server.responder = lambda received: "still not json"
    runner = make_runner(max_retries=0)
    provider = openai_provider(runner, server)
    request = request_for(server)
    first = runner.submit_judgment(provider, request, [LA], max_reasks=0).result(timeout=TIMEOUT)
    second = runner.submit_judgment(provider, request, [LA], max_reasks=1).result(timeout=TIMEOUT)

    assert isinstance(first.results["linguistic_acceptability"], UnscoredError)
    assert isinstance(second.results["linguistic_acceptability"], UnscoredError)
    assert len(server.requests) == 2  # the prompt once, and the second call's re-ask with a note
    assert "could not be used" in server.requests[1].last_user_text
    assert runner.stats.cache_unparseable == 0


# --------------------------------------------------------------------------- futures and concurrency


def test_identical_submissions_share_one_future(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    runner = make_runner()
    provider = openai_provider(runner, server)
    request = request_for(server)

    first = runner.submit_judgment(provider, request, [LA])
    second = runner.submit_judgment(provider, request_for(server), [LA])  # equal, not the same object
    assert first is second
    first.result(timeout=TIMEOUT)
    assert len(server.requests) == 1
    assert runner.stats.submitted == 1

    other = runner.submit_judgment(provider, request, [LA], max_reasks=0)
    assert other is not first


def test_different_outputs_are_different_calls(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    provider = openai_provider(runner, server)
    futures = [runner.submit_judgment(provider, request_for(server, output=f"text {i}"), [LA]) for i in range(3)]
    assert len({id(f) for f in futures}) == 3
    for future in futures:
        assert future.result(timeout=TIMEOUT).error is None
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
def test_the_concurrency_limit_is_respected(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner], judge: ScriptedJudge, provider_name: str
) -> None:
    concurrency = 3
    arrivals = 0

    async def gated(received: ReceivedRequest) -> str:
        # Hold each request until a full wave of `concurrency` requests has arrived, so the
        # peak reaches the limit exactly when the runner respects it (never assumes timing).
        nonlocal arrivals
        arrivals += 1
        wave_end = -(-arrivals // concurrency) * concurrency
        for _ in range(400):
            if arrivals >= wave_end:
                break
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.02)
        return judge(received)

    server.responder = gated
    runner = make_runner(concurrency=concurrency)
    make_provider = openai_provider if provider_name == "openai" else anthropic_provider
    provider = make_provider(runner, server)
    futures = [
        runner.submit_judgment(provider, request_for(server, provider=provider_name, output=f"case {i}"), [LA])
        for i in range(3 * concurrency)
    ]
    outcomes = [future.result(timeout=TIMEOUT) for future in futures]

    assert all(outcome.error is None for outcome in outcomes)
    stats = server.stats()
    assert stats["requests"] == 3 * concurrency
    assert stats["max_in_flight"] == concurrency


def test_submit_judgment_after_waits_for_the_output(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    runner = make_runner()
    provider = openai_provider(runner, server)

    async def produce() -> str:
        await asyncio.sleep(0.01)
        return "produced output"

    text_future = runner.submit(produce)
    outcome = runner.submit_judgment_after(
        text_future, lambda text: (provider, request_for(server, output=text), [LA], 1)
    ).result(timeout=TIMEOUT)

    assert verdict(outcome).score == 2.0
    assert "produced output" in server.requests[0].last_user_text


# --------------------------------------------------------------------------- secrets and errors


def test_redact() -> None:
    assert redact(f"bad key {API_KEY} (again {API_KEY})", [API_KEY]) == "bad key *** (again ***)"
    assert redact("short abc stays", ["abc"]) == "short abc stays"  # under 4 characters: not a secret
    assert redact("nothing", ["", "sk-x-long"]) == "nothing"
    assert redact("a-key b-key", ["a-key", "b-key"]) == "*** ***"


def test_redact_hides_overlapping_secrets_completely() -> None:
    assert redact("key sk-live-1234-extra", ["sk-live-1234", "sk-live-1234-extra"]) == "key ***"


def test_provider_error_messages_are_redacted(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    server.responder = lambda received: Reply(text=f"Incorrect API key provided: {API_KEY}", status=401)
    runner = make_runner(secrets=[API_KEY])
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server))

    assert (
        outcome.error == f"openai:loopback-judge at {server.openai_base_url}: HTTP 401: Incorrect API key provided: ***"
    )
    assert API_KEY not in str(outcome.results["linguistic_acceptability"])


def test_add_secret_redacts_later_errors(server: LoopbackServer, make_runner: Callable[..., JudgeRunner]) -> None:
    server.responder = lambda received: Reply(text=f"key {API_KEY} revoked", status=403)
    runner = make_runner()
    runner.add_secret(API_KEY)
    runner.add_secret(None)
    outcome = judge_once(runner, anthropic_provider(runner, server), request_for(server, provider="anthropic"))
    assert outcome.error is not None
    assert API_KEY not in outcome.error and "***" in outcome.error


def test_a_provider_bug_becomes_an_error_not_a_crash(make_runner: Callable[..., JudgeRunner]) -> None:
    def broken(request: ProviderRequest) -> str:  # a provider with a bug: raises something other than ProviderCallError
        raise RuntimeError(f"internal state broken near {API_KEY}")

    runner = make_runner(secrets=[API_KEY])
    provider = MockProvider(broken, name="exploding")
    outcome = judge_once(runner, provider, ProviderRequest(provider="exploding", model="m", system="s", user="u"))

    assert outcome.error == "exploding raised RuntimeError: internal state broken near ***"
    assert len(provider.requests) == 1  # a bug is not retried
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)


def test_provider_error_type_carries_status_and_attempts() -> None:
    error = ProviderError("x", status=429, attempts=3)
    assert (error.status, error.attempts) == (429, 3)


# --------------------------------------------------------------------------- lifecycle


def test_close_is_idempotent_and_stops_the_loop(tmp_path: Path) -> None:
    runner = JudgeRunner(JudgeCache(tmp_path), concurrency=1)
    runner.close()
    runner.close()
    assert not runner._thread.is_alive()


def test_concurrency_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        JudgeRunner(JudgeCache(tmp_path), concurrency=0)


def test_a_huge_integer_score_is_unscored_not_an_exception(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    server.responder = lambda received: (
        '{"linguistic_acceptability": {"justification": "j", "score": 1%s}}' % ("0" * 400)
    )
    runner = make_runner()
    outcome = judge_once(runner, openai_provider(runner, server), request_for(server), max_reasks=0)
    assert isinstance(outcome.results["linguistic_acceptability"], UnscoredError)


# --------------------------------------------------------------------------- cache verification, redaction, leases


def _entry(cache_dir: Path, request: ProviderRequest) -> tuple[DirectoryStore, str]:
    """The default store of ``cache_dir`` and ``request``'s key in it."""
    from pytest_llmjudge.execution.cache import cache_key

    return DirectoryStore(cache_dir / "v1"), cache_key(request.cache_payload())


@pytest.mark.parametrize("secret", [None, "cache-secret-for-runner-test"])
def test_a_cached_verdict_edited_from_0_to_2_is_re_asked_not_passed(
    tmp_path: Path, make_runner: Callable[..., JudgeRunner], secret: str | None
) -> None:
    import hashlib

    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 0})) as server:
        request = request_for(server)
        cache_dir = tmp_path / "c"

        def run() -> tuple[CallOutcome, JudgeRunner]:
            runner = JudgeRunner(JudgeCache(cache_dir, secret=secret), concurrency=2, backoff_base=0.01)
            try:
                return judge_once(runner, openai_provider(runner, server), request), runner
            finally:
                runner.close()

        first, _ = run()
        assert verdict(first).score == 0.0
        store, key = _entry(cache_dir, request)
        if secret is not None:  # signed entries live under the secret's key id (stores/namespace.py)
            from pytest_llmjudge.execution.stores.namespace import key_id

            key = key_id(secret) + key
        record = json.loads(store.get(key) or b"")
        record["reply"]["text"] = record["reply"]["text"].replace('"score": 0', '"score": 2')
        assert '"score": 2' in record["reply"]["text"]
        if secret is not None:  # a deliberate forger recomputes the checksum; only the signature stops it
            canonical = json.dumps(record["reply"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            record["reply_sha256"] = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        # Stored back the way the cache writes (canonical JSON), so only the content is judged.
        store.put(key, json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
        store.close()

        second, runner = run()
        assert verdict(second).score == 0.0  # asked again, never the forged 2
        assert (second.cached, second.provider_calls) == (False, 1)
        assert (runner.stats.cache_rejected, runner.stats.cache_hits) == (1, 0)
        assert len(server.requests) == 2

        third, runner = run()  # the entry was repaired by the fresh reply
        assert verdict(third).score == 0.0 and third.cached
        assert (runner.stats.cache_rejected, len(server.requests)) == (0, 2)


def test_a_reply_echoing_the_api_key_is_cached_redacted(
    tmp_path: Path, make_runner: Callable[..., JudgeRunner]
) -> None:
    echo = ScriptedJudge({"linguistic_acceptability": 2}, justification=f"you sent {API_KEY}")
    with LoopbackServer(responder=echo) as server:
        runner = make_runner(cache_dir=tmp_path / "c", secrets=[API_KEY])
        outcome = judge_once(runner, openai_provider(runner, server), request_for(server))
    assert verdict(outcome).justification.startswith("you sent ***")  # what the run uses is what is stored
    files = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert API_KEY.encode() not in path.read_bytes()


def test_base_url_credentials_never_enter_the_cache(tmp_path: Path, make_runner: Callable[..., JudgeRunner]) -> None:
    password = "base-url-pa55word-91"
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        base_url = server.openai_base_url.replace("http://", f"http://judge:{password}@")
        runner = make_runner(cache_dir=tmp_path / "c")
        provider = OpenAIProvider(api_key=API_KEY, base_url=base_url, timeout=5.0)
        runner.track_provider(provider)
        request = build_request(
            [LA],
            JudgedText(language="hi", output="नमस्ते"),
            JudgeSettings(provider="openai", model="loopback-judge", base_url=base_url),
        )
        outcome = judge_once(runner, provider, request)
        assert len(server.requests) == 1  # the credentials went to the SDK, which reached the server
    assert outcome.error is None
    files = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert password.encode() not in path.read_bytes()


class HeldDisk(DirectoryStore):
    """The directory store on a disk whose first write waits until ``go`` is set: the batches it was handed."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.batches: list[int] = []
        self.go = threading.Event()

    def put_many(self, entries: Sequence[tuple[str, bytes]]) -> None:
        if not self.batches:
            self.go.wait(TIMEOUT)
        super().put_many(entries)
        self.batches.append(len(entries))


def test_replies_that_finish_while_a_write_is_in_flight_are_stored_as_one_batch(tmp_path: Path) -> None:
    prompts = 16
    store = HeldDisk(tmp_path / "c")
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        runner = JudgeRunner(JudgeCache(None, store=store), concurrency=prompts, backoff_base=0.01)
        try:
            futures = [
                runner.submit_judgment(openai_provider(runner, server), request_for(server, output=f"उत्तर {i}"), [LA])
                for i in range(prompts)
            ]
            # The first reply's write is held; every other request reaches the server meanwhile,
            # and its reply gets a moment to queue behind that write.
            deadline = time.monotonic() + TIMEOUT
            while len(server.requests) < prompts and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)
            assert not any(future.done() for future in futures)  # nothing is used before it is stored
            store.go.set()
            outcomes = [future.result(timeout=TIMEOUT) for future in futures]
        finally:
            runner.close()
    assert all(verdict(outcome).score == 2.0 and not outcome.cached for outcome in outcomes)
    # One write in flight at a time; the replies that arrived meanwhile went in the next one,
    # together (a write per reply would be 16 writes of one).
    assert sum(store.batches) == prompts
    assert store.batches[0] == 1 and len(store.batches) <= 3
    assert store.syncs == len(store.batches)
    assert len(DirectoryStore(tmp_path / "c").keys()) == prompts  # every reply durable


def test_two_runners_on_one_cache_directory_pay_once_per_prompt(tmp_path: Path) -> None:
    # Two processes' worth of runners (separate caches and leases on one directory): every
    # prompt is paid by whichever claims it first; the other waits for its reply.
    prompts = 30
    with LoopbackServer(latency=0.05, responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        runners = [JudgeRunner(JudgeCache(tmp_path / "shared"), concurrency=8, backoff_base=0.01) for _ in range(2)]
        try:
            futures = [
                runner.submit_judgment(openai_provider(runner, server), request_for(server, output=f"उत्तर {i}"), [LA])
                for i in range(prompts)
                for runner in runners
            ]
            outcomes = [future.result(timeout=TIMEOUT) for future in futures]
        finally:
            for runner in runners:
                runner.close()
    assert all(verdict(outcome).score == 2.0 for outcome in outcomes)
    assert len(server.requests) == prompts
    assert sum(r.stats.provider_calls for r in runners) == prompts
    # The other runner's replies: waited for, or already stored when it submitted.
    assert sum(r.stats.shared_hits + r.stats.cache_hits for r in runners) == prompts
    assert not [p for p in (tmp_path / "shared").rglob("*") if p.name.startswith(".tmp-")]


# --------------------------------------------------------------------------- yielding to the loop


def _block_the_loop(runner: JudgeRunner) -> tuple[threading.Event, threading.Event]:
    """Run a callback on the runner's loop that holds it (no select) until ``release`` is set."""
    started, release = threading.Event(), threading.Event()

    async def hold() -> None:
        started.set()
        release.wait(TIMEOUT)  # blocks the loop's thread itself, as a CPU-bound stretch of calls does

    runner.submit(hold)
    assert started.wait(TIMEOUT)
    return started, release


def test_yield_to_calls_waits_while_the_loop_works(make_runner: Callable[..., JudgeRunner]) -> None:
    # Items wait here so that they don't trade the GIL with a busy loop at every system call.
    runner = make_runner()
    _, release = _block_the_loop(runner)
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (runner.yield_to_calls(timeout=TIMEOUT), returned.set()))
    waiter.start()
    assert not returned.wait(0.2)  # the loop is busy: no item may run yet
    release.set()
    assert returned.wait(TIMEOUT)  # the loop went back to waiting on I/O
    waiter.join(TIMEOUT)


def test_yield_to_calls_returns_while_the_loop_waits_on_the_network(
    server: LoopbackServer, make_runner: Callable[..., JudgeRunner]
) -> None:
    server.hold_after(0)  # every answer is held: the call stays in flight
    runner = make_runner()
    provider = openai_provider(runner, server)
    future = runner.submit_judgment(provider, request_for(server), [LA])
    assert eventually(lambda: server.stats()["in_flight"] == 1)
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (runner.yield_to_calls(timeout=TIMEOUT), returned.set()))
    waiter.start()
    assert returned.wait(TIMEOUT / 3)  # at once, not at the timeout: the loop only waits for the reply
    waiter.join(TIMEOUT)
    assert not future.done()
    server.release()
    assert verdict(future.result(timeout=TIMEOUT)).score == 2.0


def test_yield_to_calls_gives_up_after_its_timeout_and_after_close(make_runner: Callable[..., JudgeRunner]) -> None:
    runner = make_runner()
    _, release = _block_the_loop(runner)
    try:
        runner.yield_to_calls(timeout=0.05)  # a loop busy for longer never stalls an item for good
    finally:
        release.set()
    runner.close()
    runner.yield_to_calls(timeout=TIMEOUT)  # no loop: nothing to wait for
