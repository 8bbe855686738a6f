"""Structured outputs on the wire: OpenAI ``response_format`` json_schema and Anthropic's forced tool.

Requests are made by the real SDKs against the loopback server. The bodies the providers
build are also handed to the SDKs' typed ``create`` methods, so the SDKs' own signatures
and response models check the wire shapes (a ``tool_use`` block parses as the SDK's
``ToolUseBlock``), not a guess of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_type_hints

import anthropic
import openai
import pytest
from anthropic.types import ToolChoiceToolParam, ToolParam, ToolUseBlock
from openai.types.shared_params import ResponseFormatJSONSchema
from openai.types.shared_params.response_format_json_schema import JSONSchema

from pytest_llmjudge.errors import UnscoredError
from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.runner import CallOutcome, JudgeRunner
from pytest_llmjudge.judges.anthropic import JUDGMENT_TOOL, AnthropicProvider
from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.judges.parsing import Verdict
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request, reply_schema
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

LA = BUILTIN_RUBRICS["linguistic_acceptability"]
KEY = "sk-structured-test"


@pytest.fixture
def judge() -> ScriptedJudge:
    return ScriptedJudge({"linguistic_acceptability": 2})


@pytest.fixture
def server(judge: ScriptedJudge) -> Iterator[LoopbackServer]:
    with LoopbackServer(responder=judge, hang_seconds=5.0) as srv:
        yield srv


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[JudgeRunner]:
    made = JudgeRunner(JudgeCache(tmp_path / "cache"), concurrency=2, max_retries=1, backoff_base=0.01)
    yield made
    made.close()


def request_for(server: LoopbackServer, provider: str, structured_output: str) -> ProviderRequest:
    base_url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    settings = JudgeSettings(
        provider=provider, model="loopback-judge", base_url=base_url, structured_output=structured_output
    )
    return build_request([LA], JudgedText(language="hi", output="नमस्ते"), settings)


def judge_with(runner: JudgeRunner, provider: Any, request: ProviderRequest) -> CallOutcome:
    runner.track_provider(provider)
    return runner.submit_judgment(provider, request, [LA]).result(timeout=30)


def typed_keys(cls: type) -> set[str]:
    return set(get_type_hints(cls))


# --------------------------------------------------------------------------- OpenAI


def test_openai_json_schema_goes_over_the_wire_strict(server: LoopbackServer, runner: JudgeRunner) -> None:
    request = request_for(server, "openai", "json_schema")
    outcome = judge_with(runner, OpenAIProvider(api_key=KEY, base_url=server.openai_base_url), request)

    assert isinstance(outcome.results["linguistic_acceptability"], Verdict)
    form = server.requests[0].body["response_format"]
    assert form == {
        "type": "json_schema",
        "json_schema": {"name": "judgment", "strict": True, "schema": reply_schema([LA])},
    }
    # The SDK's own types: every key is one it declares, the required ones are there.
    assert set(form) <= typed_keys(ResponseFormatJSONSchema)
    assert set(form["json_schema"]) <= typed_keys(JSONSchema)
    # Strict mode demands every property required and no others allowed, at every level.
    schema = form["json_schema"]["schema"]
    for level in (schema, schema["properties"]["linguistic_acceptability"]):
        assert level["additionalProperties"] is False
        assert set(level["required"]) == set(level["properties"])


def test_the_openai_sdk_accepts_the_body_as_create_arguments(server: LoopbackServer) -> None:
    body = OpenAIProvider(api_key=KEY, base_url=server.openai_base_url).request_body(
        request_for(server, "openai", "json_schema")
    )
    with openai.OpenAI(api_key=KEY, base_url=server.openai_base_url, max_retries=0) as client:
        completion = client.chat.completions.create(**body)
    assert json.loads(completion.choices[0].message.content or "")["linguistic_acceptability"]["score"] == 2


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_forced_tool_goes_over_the_wire_and_its_input_is_the_verdict(
    server: LoopbackServer, runner: JudgeRunner
) -> None:
    request = request_for(server, "anthropic", "tool")
    outcome = judge_with(runner, AnthropicProvider(api_key=KEY, base_url=server.anthropic_base_url), request)

    verdict = outcome.results["linguistic_acceptability"]
    assert isinstance(verdict, Verdict) and verdict.score == 2.0
    received = server.requests[0]
    (tool,) = received.body["tools"]
    assert tool["name"] == JUDGMENT_TOOL and tool["input_schema"] == reply_schema([LA])
    assert set(tool) <= typed_keys(ToolParam)
    assert received.body["tool_choice"] == {"type": "tool", "name": JUDGMENT_TOOL, "disable_parallel_tool_use": True}
    assert set(received.body["tool_choice"]) <= typed_keys(ToolChoiceToolParam)
    assert received.forced_tool == JUDGMENT_TOOL
    assert "output_config" not in received.body


def test_the_anthropic_sdk_reads_the_loopback_tool_use_reply(server: LoopbackServer) -> None:
    body = AnthropicProvider(api_key=KEY, base_url=server.anthropic_base_url).request_body(
        request_for(server, "anthropic", "tool")
    )
    with anthropic.Anthropic(api_key=KEY, base_url=server.anthropic_base_url, max_retries=0) as client:
        message = client.messages.create(**body)
    (block,) = message.content
    assert isinstance(block, ToolUseBlock)
    assert block.name == JUDGMENT_TOOL
    assert block.input == {
        "linguistic_acceptability": {"justification": "scripted verdict (linguistic_acceptability)", "score": 2}
    }
    assert message.stop_reason == "tool_use"


def test_a_batch_line_with_a_forced_tool_is_answered_with_tool_use(server: LoopbackServer) -> None:
    request = request_for(server, "anthropic", "tool")
    provider = AnthropicProvider(api_key=KEY, base_url=server.anthropic_base_url)
    with anthropic.Anthropic(api_key=KEY, base_url=server.anthropic_base_url, max_retries=0) as client:
        batch = client.messages.batches.create(requests=[{"custom_id": "k", "params": provider.request_body(request)}])  # type: ignore[typeddict-item]
        for _ in range(500):  # the loopback ends a batch once its lines are answered
            if batch.processing_status == "ended":
                break
            batch = client.messages.batches.retrieve(batch.id)
        (line,) = client.messages.batches.results(batch.id)
    assert line.result.type == "succeeded"
    message = line.result.message  # type: ignore[union-attr]
    assert isinstance(message.content[0], ToolUseBlock)
    reply = AnthropicProvider.parse_body(message.model_dump(), request)
    assert json.loads(reply.text)["linguistic_acceptability"]["score"] == 2


def test_two_disagreeing_tool_calls_are_unscored(server: LoopbackServer, runner: JudgeRunner) -> None:
    server.responder = lambda request: json.dumps(
        [{"score": 2, "justification": "a"}, {"score": 0, "justification": "b"}]
    )
    request = request_for(server, "anthropic", "tool")
    outcome = judge_with(runner, AnthropicProvider(api_key=KEY, base_url=server.anthropic_base_url), request)

    result = outcome.results["linguistic_acceptability"]
    assert isinstance(result, UnscoredError)
    assert "the reply holds 2 verdicts that disagree: linguistic_acceptability 2 vs 0" in str(result)
    assert len(server.requests) == 3  # asked, then re-asked twice like any unusable reply


def test_a_reply_without_the_tool_falls_back_to_the_text(server: LoopbackServer, runner: JudgeRunner) -> None:
    # A proxy that drops tools answers in prose: the free-text parser still reads it.
    server.responder = lambda request: 'Here it is: {"linguistic_acceptability": {"justification": "j", "score": 1}}'
    request = request_for(server, "anthropic", "tool")
    outcome = judge_with(runner, AnthropicProvider(api_key=KEY, base_url=server.anthropic_base_url), request)
    assert outcome.results["linguistic_acceptability"] == Verdict("linguistic_acceptability", 1.0, "j")


def test_a_pairwise_verdict_comes_through_the_forced_tool_and_disagreeing_ones_are_unjudged(
    runner: JudgeRunner,
) -> None:
    from pytest_llmjudge.pairwise.prompts import PairwiseText, build_pairwise_request, parse_pairwise_reply
    from pytest_llmjudge.testing import ScriptedPairwiseJudge

    with LoopbackServer(responder=ScriptedPairwiseJudge(quality={"good": 2, "bad": 0})) as server:
        provider = AnthropicProvider(api_key=KEY, base_url=server.anthropic_base_url)
        runner.track_provider(provider)
        settings = JudgeSettings(
            provider="anthropic", model="loopback-judge", base_url=server.anthropic_base_url, structured_output="tool"
        )
        request = build_pairwise_request(PairwiseText(language="en", answer_a="bad", answer_b="good"), settings)
        result = runner.submit_call(provider, request, parse_pairwise_reply).result(timeout=30)
        assert result.value is not None and result.value.verdict == "B"
        assert server.requests[0].forced_tool == JUDGMENT_TOOL

        server.responder = lambda request: json.dumps([{"verdict": "A"}, {"verdict": "B"}])
        other = build_pairwise_request(PairwiseText(language="en", answer_a="x", answer_b="y"), settings)
        failed = runner.submit_call(provider, other, parse_pairwise_reply, max_reasks=0).result(timeout=30)
        assert failed.value is None and '2 verdicts that disagree: verdict "A" vs "B"' in str(failed.error)


# --------------------------------------------------------------------------- servers that refuse


def test_a_server_without_structured_outputs_refuses_them_and_auto_stays_off(
    judge: ScriptedJudge, runner: JudgeRunner
) -> None:
    with LoopbackServer(responder=judge, reject_structured_output=True) as server:
        provider = OpenAIProvider(api_key=KEY, base_url=server.openai_base_url)
        refused = judge_with(runner, provider, request_for(server, "openai", "json_schema"))
        assert refused.error is not None and "HTTP 400: response_format is not supported" in str(refused.error)
        assert len(server.requests) == 1, "a 400 is not retried"

        # auto with a base_url asks for nothing the server may not know: the call works.
        request = request_for(server, "openai", "auto")
        assert request.structured_output == "none"
        assert isinstance(judge_with(runner, provider, request).results["linguistic_acceptability"], Verdict)
        assert "response_format" not in server.requests[-1].body


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tool_choice": {"type": "tool", "name": "x"}, "tools": []}, "Tool 'x' not found"),
        ({"tool_choice": {"type": "tool", "name": "x"}, "tools": [{"name": "x"}]}, "input_schema: Field required"),
        ({"tool_choice": {"type": "tool"}}, "tool_choice.name: Field required"),
    ],
)
def test_the_loopback_refuses_an_anthropic_tool_choice_the_api_refuses(
    server: LoopbackServer, body: dict[str, Any], message: str
) -> None:
    with anthropic.Anthropic(api_key=KEY, base_url=server.anthropic_base_url, max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError, match=message):
            client.post(
                "/v1/messages",
                body={"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "x"}], **body},
                cast_to=object,
            )


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"type": "json_schema", "json_schema": {"schema": {}}}, "json_schema.name"),
        ({"type": "json_schema", "json_schema": {"name": "n", "schema": "x"}}, "expected an object"),
        ({"type": "yaml"}, "response_format.type"),
    ],
)
def test_the_loopback_refuses_a_response_format_the_api_refuses(
    server: LoopbackServer, form: dict[str, Any], message: str
) -> None:
    with openai.OpenAI(api_key=KEY, base_url=server.openai_base_url, max_retries=0) as client:
        with pytest.raises(openai.BadRequestError, match=message):
            client.post(
                "/chat/completions",
                body={"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": form},
                cast_to=object,
            )


# --------------------------------------------------------------------------- the suite setting


@pytest.mark.parametrize(
    ("judge", "resolved"),
    [
        ("{provider: anthropic, model: m, structured_output: tool}", "tool"),
        ("{provider: openai, model: m, structured_output: off}", "none"),
        ("{provider: anthropic, model: m}", "tool"),
        ('{provider: anthropic, model: m, base_url: "http://127.0.0.1:9"}', "none"),
    ],
)
def test_the_suite_setting_reaches_the_request(tmp_path: Path, judge: str, resolved: str) -> None:
    from pytest_llmjudge import builtin_plugins
    from pytest_llmjudge.registry import Registry
    from pytest_llmjudge.suite.build import build_suite

    path = tmp_path / "s.yaml"
    path.write_text(f"suite: s\njudge: {judge}\ncases: [{{id: a, language: hi, output: x}}]\n", encoding="utf-8")
    suite = build_suite(path, Registry(rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics())))
    settings = JudgeSettings(
        provider=suite.judge.provider,
        model=suite.judge.model,
        base_url=suite.judge.base_url,
        structured_output=suite.judge.structured_output,
    )
    assert build_request([LA], JudgedText(language="hi", output="x"), settings).structured_output == resolved


def test_tool_for_an_openai_judge_is_a_suite_error_naming_the_line(tmp_path: Path) -> None:
    from pytest_llmjudge import builtin_plugins
    from pytest_llmjudge.errors import SuiteError
    from pytest_llmjudge.registry import Registry
    from pytest_llmjudge.suite.build import build_suite

    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: s\njudge:\n  model: gpt-4o\n  structured_output: tool\ncases: [{id: a, language: hi, output: x}]\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteError, match=r"s\.yaml:4: judge\.structured_output: .*tool is Anthropic's forced tool use"):
        build_suite(path, Registry(rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics())))
