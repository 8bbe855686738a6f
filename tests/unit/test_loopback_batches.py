"""The loopback server's batch APIs and logprobs, through the real SDKs (``testing/batch_api.py``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest

from pytest_llmjudge.testing import LoopbackServer, ReceivedRequest, Reply


def respond(request: ReceivedRequest) -> Reply | str:
    text = request.last_user_text
    if text == "fail":
        return Reply(text="the judge fell over", status=500)
    if text == "busy":
        return Reply(text="", status=429)
    if text == "slow":
        return Reply(text="late", latency=5.0)
    return f"echo: {text}"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(responder=respond) as srv:
        yield srv


def oai(server: LoopbackServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.openai_base_url, max_retries=0)


def ant(server: LoopbackServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0)


def jsonl(lines: list[dict[str, object]]) -> bytes:
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def chat_line(custom_id: str, text: str) -> dict[str, object]:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": text}]},
    }


def wait_openai(client: openai.OpenAI, batch_id: str) -> openai.types.Batch:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch
        time.sleep(0.02)
    raise AssertionError("the batch never ended")


def test_openai_batch_round_trip(server: LoopbackServer) -> None:
    client = oai(server)
    uploaded = client.files.create(
        file=("in.jsonl", jsonl([chat_line("a", "hello"), chat_line("b", "fail"), chat_line("c", "busy")])),
        purpose="batch",
    )
    assert (uploaded.purpose, uploaded.status, uploaded.filename) == ("batch", "processed", "in.jsonl")
    created = client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata={"k": "v"}
    )
    assert created.status == "validating" and created.metadata == {"k": "v"}
    batch = wait_openai(client, created.id)
    assert batch.status == "completed"
    assert batch.request_counts is not None
    assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (3, 1, 2)
    assert batch.output_file_id and batch.error_file_id
    output = [json.loads(line) for line in client.files.content(batch.output_file_id).text.splitlines()]
    assert [line["custom_id"] for line in output] == ["a"]
    body = output[0]["response"]["body"]
    assert output[0]["response"]["status_code"] == 200
    assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"] == "echo: hello"
    errors = {
        json.loads(line)["custom_id"]: json.loads(line)
        for line in client.files.content(batch.error_file_id).text.splitlines()
    }
    assert errors["b"]["response"]["status_code"] == 500
    assert errors["b"]["response"]["body"]["error"]["message"] == "the judge fell over"
    assert errors["c"]["response"]["status_code"] == 429
    # Batch lines are answered by the responder but are not completion requests.
    assert server.requests == [] and len(server.batch_requests) == 3
    assert server.stats()["batch"] == {"files": 3, "batches_created": 1, "batch_requests": 3}


def test_openai_batch_stays_pending_until_batch_delay(server: LoopbackServer) -> None:
    server.batch_delay = 30.0
    client = oai(server)
    uploaded = client.files.create(file=("in.jsonl", jsonl([chat_line("a", "x")])), purpose="batch")
    created = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    time.sleep(0.1)
    assert client.batches.retrieve(created.id).status == "in_progress"
    server.batch_delay = 0.0
    assert wait_openai(client, created.id).status == "completed"


def test_an_invalid_input_file_fails_the_batch(server: LoopbackServer) -> None:
    client = oai(server)
    lines = jsonl([chat_line("a", "x"), chat_line("a", "y")]) + b"not json\n"
    uploaded = client.files.create(file=("in.jsonl", lines), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert batch.status == "failed"
    assert batch.errors is not None and batch.errors.data is not None
    assert [(e.line, e.message) for e in batch.errors.data] == [
        (2, "custom_id 'a' is repeated"),
        (3, "line is not a JSON object"),
    ]
    assert batch.output_file_id is None and server.batch_requests == []
    with pytest.raises(openai.BadRequestError, match="No such File object"):
        client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_nope")


def test_openai_cancel(server: LoopbackServer) -> None:
    server.batch_delay = 30.0
    client = oai(server)
    uploaded = client.files.create(file=("in.jsonl", jsonl([chat_line("a", "x")])), purpose="batch")
    created = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    cancelled = client.batches.cancel(created.id)
    assert cancelled.status == "cancelled"


def test_anthropic_message_batch_round_trip(server: LoopbackServer) -> None:
    client = ant(server)
    created = client.messages.batches.create(
        requests=[
            {
                "custom_id": f"k{i}",
                "params": {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": t}]},
            }
            for i, t in enumerate(["hi", "fail", "there"])
        ]
    )
    assert created.processing_status == "in_progress" and created.request_counts.processing == 3
    deadline = time.monotonic() + 10
    batch = created
    while batch.processing_status != "ended" and time.monotonic() < deadline:
        time.sleep(0.02)
        batch = client.messages.batches.retrieve(created.id)
    assert batch.processing_status == "ended"
    assert (batch.request_counts.succeeded, batch.request_counts.errored) == (2, 1)
    assert batch.results_url == f"{server.url}/v1/messages/batches/{created.id}/results"
    results = {line.custom_id: line.result for line in client.messages.batches.results(created.id)}
    assert results["k0"].type == "succeeded" and results["k0"].message.content[0].text == "echo: hi"  # type: ignore[union-attr]
    assert results["k1"].type == "errored"
    assert results["k1"].error.error.message == "the judge fell over"  # type: ignore[union-attr]
    assert server.stats()["by_path"]["/v1/messages/batches/{id}/results"] == 1


def test_anthropic_batch_errors(server: LoopbackServer) -> None:
    client = ant(server)
    params = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
    with pytest.raises(anthropic.BadRequestError, match="custom_id"):
        client.messages.batches.create(requests=[{"custom_id": "no spaces allowed", "params": params}])  # type: ignore[typeddict-item]
    with pytest.raises(anthropic.BadRequestError, match="repeated"):
        client.messages.batches.create(
            requests=[{"custom_id": "a", "params": params}, {"custom_id": "a", "params": params}]  # type: ignore[typeddict-item]
        )
    slow = {**params, "messages": [{"role": "user", "content": "slow"}]}
    pending = client.messages.batches.create(requests=[{"custom_id": "a", "params": slow}])  # type: ignore[typeddict-item]
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        client.messages.batches.results(pending.id)
    cancelled = client.messages.batches.cancel(pending.id)
    assert cancelled.processing_status == "ended" and cancelled.request_counts.canceled == 1
    results = list(client.messages.batches.results(pending.id))
    assert [r.result.type for r in results] == ["canceled"]


def test_logprobs_are_given_when_asked(server: LoopbackServer) -> None:
    client = oai(server)
    plain = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert plain.choices[0].logprobs is None
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "score 8"}], logprobs=True, top_logprobs=3
    )
    logprobs = reply.choices[0].logprobs
    assert logprobs is not None and logprobs.content is not None
    tokens = [entry.token for entry in logprobs.content]
    assert "".join(tokens) == "echo: score 8"
    assert "8" in tokens
    assert all(
        len(entry.top_logprobs) == 3 and entry.top_logprobs[0].token == entry.token for entry in logprobs.content
    )
