"""The judge reply cache (``execution.cache``): content-addressed, atomic, never holds keys."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.execution.cache import JudgeCache, cache_key
from pytest_llmjudge.judges.base import ProviderReply, ProviderRequest, Usage
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS

SENTINEL_KEY = "sk-SENTINEL-must-never-be-cached-0123456789"

BASE = ProviderRequest(
    provider="openai",
    model="gpt-4o-mini",
    system="You are a judge.",
    user="Rate this.",
    temperature=0.0,
    max_tokens=1024,
    seed=None,
    json_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
    structured_output="json_schema",
    base_url=None,
)
REPLY = ProviderReply(text='{"score": 2}', model="gpt-4o-mini-2024", usage=Usage(input_tokens=120, output_tokens=9))


def key_of(request: ProviderRequest) -> str:
    return cache_key(request.cache_payload())


def all_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


# --------------------------------------------------------------------------- keys


def test_the_key_is_the_sha256_of_canonical_json() -> None:
    import hashlib

    payload = {"b": [1, "ü"], "a": None}
    canonical = '{"a":null,"b":[1,"ü"]}'
    assert cache_key(payload) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert len(cache_key(payload)) == 64


def test_the_key_ignores_dict_order_at_every_depth() -> None:
    first = {"model": "m", "json_schema": {"type": "object", "properties": {"x": 1, "y": 2}}, "seed": 1}
    second = {"seed": 1, "json_schema": {"properties": {"y": 2, "x": 1}, "type": "object"}, "model": "m"}
    assert cache_key(first) == cache_key(second)

    reordered = dataclasses.replace(BASE, json_schema={"properties": {"a": {"type": "integer"}}, "type": "object"})
    assert key_of(reordered) == key_of(BASE)


def test_the_key_does_not_ignore_list_order() -> None:
    assert cache_key({"required": ["a", "b"]}) != cache_key({"required": ["b", "a"]})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("provider", "anthropic"),
        ("model", "gpt-4o"),
        ("system", "You are a judge!"),
        ("user", "Rate this. "),
        ("temperature", 0.2),
        ("max_tokens", 1025),
        ("seed", 0),
        ("seed", 1),
        ("json_schema", {"type": "object", "properties": {"a": {"type": "number"}}}),
        ("json_schema", None),
        ("structured_output", "json_object"),
        ("base_url", "http://127.0.0.1:8000/v1"),
    ],
)
def test_every_field_of_the_request_changes_the_key(field: str, value: Any) -> None:
    changed = dataclasses.replace(BASE, **{field: value})
    assert key_of(changed) != key_of(BASE)


def test_the_payload_covers_every_request_field() -> None:
    # A new ProviderRequest field must be added to cache_payload (or deliberately left out).
    assert set(BASE.cache_payload()) == {f.name for f in dataclasses.fields(ProviderRequest)}


def test_rubric_text_changes_the_key_through_the_prompt() -> None:
    la = BUILTIN_RUBRICS["linguistic_acceptability"]
    settings = JudgeSettings(provider="openai", model="m")
    edited = dataclasses.replace(la, description=la.description + " Be strict.")
    original = build_request([la], JudgedText(language="hi", output="x"), settings)
    changed = build_request([edited], JudgedText(language="hi", output="x"), settings)
    assert key_of(original) != key_of(changed)


# --------------------------------------------------------------------------- get and put


def test_put_then_get_round_trips(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    assert cache.get(key) is None

    cache.put(key, BASE.cache_payload(), REPLY)
    hit = cache.get(key)

    assert hit is not None
    assert hit.key == key
    assert hit.reply == REPLY
    assert (hit.reply.text, hit.reply.model, hit.reply.usage) == ('{"score": 2}', "gpt-4o-mini-2024", Usage(120, 9))


def test_entry_layout_and_content(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), REPLY)

    path = tmp_path / "v1" / key[:2] / f"{key}.json"
    assert all_files(tmp_path) == [path]
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["key"] == key
    assert record["request"] == json.loads(json.dumps(BASE.cache_payload()))
    assert record["reply"] == {
        "text": REPLY.text,
        "model": REPLY.model,
        "usage": {"input_tokens": 120, "output_tokens": 9},
    }
    assert record["created_at"].endswith("Z")


def test_non_ascii_replies_round_trip(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    reply = ProviderReply(text='{"justification": "स्वाभाविक", "score": 2}', model="m")
    cache.put("ab" * 32, {"user": "日本語"}, reply)
    hit = cache.get("ab" * 32)
    assert hit is not None and hit.reply == reply


def test_a_second_put_replaces_the_entry(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), REPLY)
    cache.put(key, BASE.cache_payload(), ProviderReply(text="new", model="m2"))

    hit = cache.get(key)
    assert hit is not None and hit.reply.text == "new"
    assert len(all_files(tmp_path)) == 1


@pytest.mark.parametrize(
    "content",
    [
        "",
        '{"key": "k", "reply": {"text": "trunc',
        "not json at all",
        "[]",
        '{"key": "k"}',
        '{"reply": {"model": "m"}}',
        '{"reply": {"text": "t", "usage": {"input_tokens": "many"}}}',
    ],
)
def test_a_corrupt_entry_is_a_miss_and_put_overwrites_it(tmp_path: Path, content: str) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    path = tmp_path / "v1" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")

    assert cache.get(key) is None

    cache.put(key, BASE.cache_payload(), REPLY)
    hit = cache.get(key)
    assert hit is not None and hit.reply == REPLY


@pytest.mark.parametrize(
    "content", ['{"reply": null}', '{"reply": "text"}', '{"reply": {"text": "t", "usage": "lots"}}']
)
def test_a_wrongly_shaped_entry_is_a_miss(tmp_path: Path, content: str) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    path = tmp_path / "v1" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(content, encoding="utf-8")

    assert cache.get(key) is None


def test_binary_garbage_is_a_miss(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    path = tmp_path / "v1" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert cache.get(key) is None


def test_an_entry_without_usage_reads_as_zero_usage(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = "cd" * 32
    path = tmp_path / "v1" / "cd" / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"reply": {"text": "t"}}), encoding="utf-8")

    hit = cache.get(key)
    assert hit is not None
    assert hit.reply == ProviderReply(text="t", model="", usage=Usage(0, 0))


# --------------------------------------------------------------------------- modes


def test_mode_use_reads_and_writes(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path, mode="use")
    cache.put("aa" * 32, {}, REPLY)
    assert cache.get("aa" * 32) is not None


def test_mode_refresh_writes_but_never_reads(tmp_path: Path) -> None:
    JudgeCache(tmp_path).put("aa" * 32, {}, REPLY)
    refresh = JudgeCache(tmp_path, mode="refresh")

    assert refresh.get("aa" * 32) is None
    refresh.put("aa" * 32, {}, ProviderReply(text="re-judged", model="m"))
    hit = JudgeCache(tmp_path).get("aa" * 32)
    assert hit is not None and hit.reply.text == "re-judged"


def test_mode_off_neither_reads_nor_writes(tmp_path: Path) -> None:
    JudgeCache(tmp_path).put("aa" * 32, {}, REPLY)
    off = JudgeCache(tmp_path, mode="off")

    assert off.get("aa" * 32) is None
    off.put("bb" * 32, {}, REPLY)
    assert not (tmp_path / "v1" / "bb").exists()


def test_no_root_means_off(tmp_path: Path) -> None:
    cache = JudgeCache(None, mode="use")
    assert cache.mode == "off"
    assert cache.root is None
    cache.put("aa" * 32, {}, REPLY)
    assert cache.get("aa" * 32) is None


def test_the_root_is_created_on_first_write(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "cache"
    cache = JudgeCache(root)
    assert not root.exists()
    cache.put("aa" * 32, {}, REPLY)
    assert (root / "v1" / "aa").is_dir()


# --------------------------------------------------------------------------- secrets


def test_cache_files_never_contain_the_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL_KEY)
    cache = JudgeCache(tmp_path)
    rubric = BUILTIN_RUBRICS["linguistic_acceptability"]
    for provider, base_url in (("openai", None), ("anthropic", None), ("openai", "http://127.0.0.1:1/v1")):
        request = build_request(
            [rubric],
            JudgedText(language="hi", output="नमस्ते", input="greet"),
            JudgeSettings(provider=provider, model="m", base_url=base_url),
        )
        assert SENTINEL_KEY not in json.dumps(request.cache_payload())
        cache.put(key_of(request), request.cache_payload(), REPLY)

    files = all_files(tmp_path)
    assert len(files) == 3
    for path in files:
        assert SENTINEL_KEY.encode() not in path.read_bytes()


def test_a_real_provider_round_trip_caches_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_llmjudge import builtins
    from pytest_llmjudge.execution.runner import JudgeRunner
    from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    factory = builtins.pytest_llmjudge_providers()["openai"]
    rubric = BUILTIN_RUBRICS["linguistic_acceptability"]
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:
        provider = factory.create(factory.api_key(None), server.openai_base_url, 5.0)
        runner = JudgeRunner(JudgeCache(tmp_path), concurrency=2, max_retries=0, backoff_base=0.01)
        runner.track_provider(provider)
        try:
            request = build_request(
                [rubric],
                JudgedText(language="hi", output="x"),
                JudgeSettings(provider="openai", model="loopback-judge", base_url=server.openai_base_url),
            )
            outcome = runner.submit_judgment(provider, request, [rubric]).result(timeout=30)
        finally:
            runner.close()
        assert server.requests[0].api_key_present  # the key was sent ...
    assert outcome.error is None
    files = all_files(tmp_path)
    assert files
    for path in files:  # ... but not stored
        assert SENTINEL_KEY.encode() not in path.read_bytes()


# --------------------------------------------------------------------------- concurrency

WRITES = 200


def _writer(root: str, worker: int, shared_key: str) -> None:
    """Write the shared key and an own key alternately, reading the shared one back."""
    cache = JudgeCache(Path(root))
    own_key = f"{worker:02d}" + "f" * 62
    payload = {"worker": worker}
    for index in range(WRITES):
        if index % 2:
            cache.put(own_key, payload, ProviderReply(text=f"own {worker} {index}", model="m"))
        else:
            # Every writer stores the same reply under the shared key, as real workers would.
            cache.put(shared_key, {"shared": True}, ProviderReply(text="shared reply", model="m"))
        hit = cache.get(shared_key)
        if hit is not None and hit.reply.text != "shared reply":
            raise AssertionError(f"torn shared entry: {hit.reply.text!r}")


def test_concurrent_writers_leave_only_complete_files(tmp_path: Path) -> None:
    shared_key = "ee" * 32
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_writer, args=(str(tmp_path), worker, shared_key)) for worker in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]

    files = all_files(tmp_path)
    assert not [path for path in files if path.name.startswith(".tmp-")]
    assert len(files) == 5  # the shared entry and one per worker
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert path.name == f"{record['key']}.json"
    cache = JudgeCache(tmp_path)
    shared = cache.get(shared_key)
    assert shared is not None and shared.reply.text == "shared reply"
    for worker in range(4):
        own = cache.get(f"{worker:02d}" + "f" * 62)
        assert own is not None and own.reply.text == f"own {worker} {WRITES - 1}"


def test_a_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        cache.put("aa" * 32, {"bad": Unserialisable()}, REPLY)
    assert all_files(tmp_path) == []
    assert cache.get("aa" * 32) is None


def test_writes_do_not_depend_on_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cache = JudgeCache(tmp_path / "cache")
    cache.put("aa" * 32, {}, REPLY)
    assert os.listdir(elsewhere) == []
