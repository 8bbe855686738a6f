"""The judge reply cache (``execution.cache``): content-addressed, atomic, verified on read, never holds keys."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.execution.cache import JudgeCache, cache_key
from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.stores.namespace import key_id
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
        ("top_logprobs", 20),
    ],
)
def test_every_field_of_the_request_changes_the_key(field: str, value: Any) -> None:
    changed = dataclasses.replace(BASE, **{field: value})
    assert key_of(changed) != key_of(BASE)


def test_the_payload_covers_every_request_field() -> None:
    # A new ProviderRequest field must be added to cache_payload (or deliberately left out).
    # top_logprobs enters only when set, so that every key written before it stays the same.
    asked = dataclasses.replace(BASE, top_logprobs=20)
    assert set(asked.cache_payload()) == {f.name for f in dataclasses.fields(ProviderRequest)}
    assert set(BASE.cache_payload()) == {f.name for f in dataclasses.fields(ProviderRequest)} - {"top_logprobs"}


def test_rubric_text_changes_the_key_through_the_prompt() -> None:
    la = BUILTIN_RUBRICS["linguistic_acceptability"]
    settings = JudgeSettings(provider="openai", model="m")
    edited = dataclasses.replace(
        la, description=la.description + " Be strict.", detailed_description=la.detailed_description + " Be strict."
    )
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


def test_the_served_fingerprint_round_trips_and_entries_without_one_keep_their_checksum(tmp_path: Path) -> None:
    """The drift sentinel's served identity: OpenAI's system_fingerprint is stored with the reply
    when it had one, and an entry without one (every entry written before) reads as before."""
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    printed = dataclasses.replace(REPLY, fingerprint="fp_44709d6fcb")
    cache.put(key, BASE.cache_payload(), printed)
    hit = cache.get(key)
    assert hit is not None and hit.reply == printed
    assert json.loads(read_entry(tmp_path, key))["reply"]["system_fingerprint"] == "fp_44709d6fcb"
    cache.put(key, BASE.cache_payload(), REPLY)
    assert "system_fingerprint" not in json.loads(read_entry(tmp_path, key))["reply"]
    hit = cache.get(key)
    assert hit is not None and hit.reply.fingerprint is None


def test_the_score_tokens_log_probabilities_round_trip(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    tokens = ((12, "2", (("2", -0.51), (" 1", -0.92))),)
    cache.put(key, BASE.cache_payload(), dataclasses.replace(REPLY, digit_tokens=tokens))
    hit = cache.get(key)
    assert hit is not None and hit.reply.digit_tokens == tokens


def test_entry_layout_and_content(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), REPLY)

    assert [path.relative_to(tmp_path).parent for path in all_files(tmp_path)] == [Path("v1/packs")]
    record = json.loads(read_entry(tmp_path, key))
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
    key = cache_key({"user": "日本語"})
    cache.put(key, {"user": "日本語"}, reply)
    hit = cache.get(key)
    assert hit is not None and hit.reply == reply


def test_a_second_put_replaces_the_entry(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), REPLY)
    cache.put(key, BASE.cache_payload(), ProviderReply(text="new", model="m2"))

    hit = cache.get(key)
    assert hit is not None and hit.reply.text == "new"
    assert len(all_files(tmp_path)) == 1  # one pack file


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


# --------------------------------------------------------------------------- modes


EMPTY = cache_key({})
OTHER = cache_key({"other": 1})


def test_mode_use_reads_and_writes(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path, mode="use")
    cache.put(EMPTY, {}, REPLY)
    assert cache.get(EMPTY) is not None


def test_mode_refresh_writes_but_never_reads(tmp_path: Path) -> None:
    JudgeCache(tmp_path).put(EMPTY, {}, REPLY)
    refresh = JudgeCache(tmp_path, mode="refresh")

    assert refresh.get(EMPTY) is None
    refresh.put(EMPTY, {}, ProviderReply(text="re-judged", model="m"))
    hit = JudgeCache(tmp_path).get(EMPTY)
    assert hit is not None and hit.reply.text == "re-judged"


def test_mode_off_neither_reads_nor_writes(tmp_path: Path) -> None:
    JudgeCache(tmp_path).put(EMPTY, {}, REPLY)
    off = JudgeCache(tmp_path, mode="off")

    assert off.get(EMPTY) is None
    off.put(OTHER, {"other": 1}, REPLY)
    assert not (tmp_path / "v1" / OTHER[:2]).exists()


def test_no_root_means_off(tmp_path: Path) -> None:
    cache = JudgeCache(None, mode="use")
    assert cache.mode == "off"
    assert cache.root is None
    cache.put(EMPTY, {}, REPLY)
    assert cache.get(EMPTY) is None


def test_the_root_is_created_on_first_write(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "cache"
    cache = JudgeCache(root)
    assert not root.exists()
    cache.put(EMPTY, {}, REPLY)
    assert (root / "v1" / "packs").is_dir()


def test_a_key_that_is_not_the_requests_hash_is_refused_on_write(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not the hash of the request"):
        JudgeCache(tmp_path).put("aa" * 32, {}, REPLY)
    assert all_files(tmp_path) == []


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
    assert len(files) == 1 and len(DirectoryStore(tmp_path / "v1").keys()) == 3
    for path in files:
        assert SENTINEL_KEY.encode() not in path.read_bytes()


def test_a_real_provider_round_trip_caches_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_llmjudge import builtin_plugins
    from pytest_llmjudge.execution.runner import JudgeRunner
    from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    factory = builtin_plugins.pytest_llmjudge_providers()["openai"]
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
SHARED = {"shared": True}


def _writer(root: str, worker: int, shared_key: str) -> None:
    """Write the shared key and an own key alternately, reading the shared one back."""
    cache = JudgeCache(Path(root))
    payload = {"worker": worker}
    own_key = cache_key(payload)
    for index in range(WRITES):
        if index % 2:
            cache.put(own_key, payload, ProviderReply(text=f"own {worker} {index}", model="m"))
        else:
            # Every writer stores the same reply under the shared key, as real workers would.
            cache.put(shared_key, SHARED, ProviderReply(text="shared reply", model="m"))
        hit = cache.get(shared_key)
        if hit is not None and hit.reply.text != "shared reply":
            raise AssertionError(f"torn shared entry: {hit.reply.text!r}")


def test_concurrent_writers_leave_only_complete_files(tmp_path: Path) -> None:
    shared_key = cache_key(SHARED)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_writer, args=(str(tmp_path), worker, shared_key)) for worker in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]

    files = all_files(tmp_path)
    assert [path.parent.name for path in files] == ["packs"] * 4  # one pack per writer, nothing else
    store = DirectoryStore(tmp_path / "v1")
    assert store.keys() == sorted([shared_key, *(cache_key({"worker": worker}) for worker in range(4))])
    for key in store.keys():
        data = store.get(key)
        assert data is not None and json.loads(data)["key"] == key
    cache = JudgeCache(tmp_path)
    shared = cache.get(shared_key)
    assert shared is not None and shared.reply.text == "shared reply"
    for worker in range(4):
        own = cache.get(cache_key({"worker": worker}))
        assert own is not None and own.reply.text == f"own {worker} {WRITES - 1}"


def test_a_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        cache.put("aa" * 32, {"bad": Unserialisable()}, REPLY)
    assert all_files(tmp_path) == []
    assert cache.get("aa" * 32) is None

    # A failure in the store's write (after the record is built) stores nothing: the cache says
    # why, stops writing, and keeps the reply (paid for) in memory for the rest of the run.
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "packs").write_bytes(b"")  # a file where the packs' directory belongs
    assert cache.put(EMPTY, {}, REPLY) == REPLY
    assert all_files(tmp_path) == [tmp_path / "v1" / "packs"]
    assert cache.failure == f"not a directory: {tmp_path / 'v1' / 'packs'}, found on write"
    hit = cache.get(EMPTY)
    assert hit is not None and hit.reply == REPLY and cache.kept == 1 and not cache.writable


class _FailingStore(DirectoryStore):
    """A directory store whose writes fail with ``errno``: a full or read-only disk, injected."""

    def __init__(self, root: Path, errno_: int) -> None:
        super().__init__(root)
        self.errno = errno_

    def put_many(self, entries: Any) -> None:
        raise OSError(self.errno, os.strerror(self.errno))


@pytest.mark.parametrize(
    ("errno_", "cause"),
    [(28, "no space left on device"), (30, "read-only file system"), (122, "disk quota exceeded")],
)
def test_a_full_or_read_only_store_still_serves_its_entries_and_keeps_new_replies_in_memory(
    tmp_path: Path, errno_: int, cause: str
) -> None:
    import errno

    assert (errno.ENOSPC, errno.EROFS, errno.EDQUOT) == (28, 30, 122)
    JudgeCache(tmp_path).put(key_of(BASE), BASE, REPLY)  # an earlier run's entry
    cache = JudgeCache(tmp_path, store=_FailingStore(tmp_path / "v1", errno_))
    other = dataclasses.replace(BASE, user="Rate that.")
    assert cache.put(key_of(other), other, REPLY) == REPLY
    assert cache.failure == f"{cause}, found on write"
    served, kept = cache.get(key_of(BASE)), cache.get(key_of(other))
    assert served is not None and kept is not None and kept.reply == REPLY  # the old entry, and the new reply
    assert cache.lease(key_of(other), 60) is not None  # nothing to coordinate through: granted
    assert DirectoryStore(tmp_path / "v1").get(key_of(other)) is None  # never on disk


def test_a_file_where_the_cache_directory_belongs_fails_at_the_lease_before_anything_is_paid(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("not a directory")
    cache = JudgeCache(tmp_path / "cache")
    assert cache.get(EMPTY) is None  # reads find nothing, quietly
    lease = cache.lease(EMPTY, 60)
    assert lease is not None and cache.failure == f"not a directory: {tmp_path / 'cache' / 'v1'}, found on lease"
    assert cache.put(EMPTY, {}, REPLY) == REPLY and cache.get(EMPTY) is not None
    assert (tmp_path / "cache").read_text() == "not a directory"


@pytest.mark.parametrize("where", ["cache", "cache/below", "ok/v1/packs"])
def test_check_location_finds_a_file_on_the_path_without_writing(tmp_path: Path, where: str) -> None:
    (tmp_path / "cache").write_text("not a directory")
    (tmp_path / "ok" / "v1").mkdir(parents=True)
    (tmp_path / "ok" / "v1" / "packs").write_text("not a directory either")
    root = tmp_path / where.removesuffix("/v1/packs")
    cache = JudgeCache(root)
    cache.check_location()
    assert cache.failure is not None and cache.failure.startswith("not a directory: ")
    assert cache.failure.endswith(", found at start") and not cache.writable
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["cache", "ok", "packs", "v1"]  # nothing written
    fine = JudgeCache(tmp_path / "fresh" / "deeper")
    fine.check_location()
    assert fine.failure is None and fine.writable and not (tmp_path / "fresh").exists()


def test_writes_do_not_depend_on_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cache = JudgeCache(tmp_path / "cache")
    cache.put(EMPTY, {}, REPLY)
    assert os.listdir(elsewhere) == []


# --------------------------------------------------------------------------- verification on read


def entry_path(root: Path, key: str) -> Path:
    """Where the old layout (one file per entry, still read) keeps ``key``'s entry."""
    return root / "v1" / key[:2] / f"{key}.json"


def read_entry(root: Path, key: str) -> str:
    """The stored bytes of ``key``'s entry, read through the default store, as text."""
    data = DirectoryStore(root / "v1").get(key)
    assert data is not None
    return data.decode("utf-8")


def rejecting(cache: JudgeCache) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    cache.on_reject = lambda key, reason: seen.append((key, reason))
    return seen


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def recompute_checksum(record: dict[str, Any]) -> None:
    """What a deliberate forger without the secret does after editing a reply."""
    import hashlib

    record["reply_sha256"] = hashlib.sha256(canonical(record["reply"]).encode("utf-8")).hexdigest()


def write_record(root: Path, key: str, record: dict[str, Any]) -> None:
    """Store an entry the way the cache does (canonical JSON), so only its content is judged."""
    DirectoryStore(root / "v1").put(key, canonical(record).encode("utf-8"))


def test_an_entry_stores_a_checksum_of_its_reply(tmp_path: Path) -> None:
    import hashlib

    key = key_of(BASE)
    JudgeCache(tmp_path).put(key, BASE.cache_payload(), REPLY)
    record = json.loads(read_entry(tmp_path, key))
    assert record["reply_sha256"] == hashlib.sha256(canonical(record["reply"]).encode("utf-8")).hexdigest()
    assert "hmac_sha256" not in record
    # The request is stored as the very bytes its key was hashed from.
    assert read_entry(tmp_path, key) == canonical(record)


def test_a_misplaced_entry_is_rejected_and_repaired(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    other = dataclasses.replace(BASE, user="Rate that.")
    cache.put(key_of(other), other.cache_payload(), ProviderReply(text='{"score": 0}', model="m"))
    # A file copied (or restored) under another request's key: intact, but not the answer to BASE.
    key = key_of(BASE)
    DirectoryStore(tmp_path / "v1").put(key, read_entry(tmp_path, key_of(other)).encode("utf-8"))
    seen = rejecting(cache)

    assert cache.get(key) is None
    assert seen == [(key, "its request does not hash to its key (a copied or misplaced entry)")]
    cache.put(key, BASE.cache_payload(), REPLY)
    hit = cache.get(key)
    assert hit is not None and hit.reply == REPLY


def test_a_verdict_edited_from_0_to_2_is_rejected(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), ProviderReply(text='{"score": 0}', model="m"))
    (pack,) = (tmp_path / "v1" / "packs").iterdir()
    pack.write_bytes(pack.read_bytes().replace(b'\\"score\\": 0', b'\\"score\\": 2'))  # edited in place
    assert b'\\"score\\": 2' in pack.read_bytes()  # the edit landed
    seen = rejecting(cache)

    assert cache.get(key) is None
    assert [reason for _, reason in seen] == ["its reply does not match its checksum (edited or damaged)"]
    # A process that scans the pack afresh doesn't even see it: its record fails the pack's CRC.
    assert JudgeCache(tmp_path).get(key) is None


def test_without_a_secret_a_recomputed_checksum_is_accepted(tmp_path: Path) -> None:
    # Documented limit (docs/cache.md): the checksum catches accidents and naive edits, not
    # a forger who recomputes it. That is what signing is for (next tests).
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), ProviderReply(text='{"score": 0}', model="m"))
    record = json.loads(read_entry(tmp_path, key))
    record["reply"]["text"] = '{"score": 2}'
    recompute_checksum(record)
    write_record(tmp_path, key, record)

    hit = cache.get(key)
    assert hit is not None and hit.reply.text == '{"score": 2}'


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("text", None),
        ("text", 2),
        ("model", None),
        ("usage", None),
        ("usage", {"input_tokens": "many", "output_tokens": 1}),
        ("usage", {"input_tokens": True, "output_tokens": 1}),
    ],
)
def test_a_wrongly_shaped_reply_is_rejected_even_with_a_matching_checksum(
    tmp_path: Path, field: str, value: Any
) -> None:
    cache = JudgeCache(tmp_path)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), REPLY)
    record = json.loads(read_entry(tmp_path, key))
    record["reply"][field] = value
    recompute_checksum(record)
    write_record(tmp_path, key, record)
    seen = rejecting(cache)

    assert cache.get(key) is None
    assert len(seen) == 1


def test_an_entry_without_a_checksum_is_rejected(tmp_path: Path) -> None:
    # The format before checksums: read once as a miss, re-asked and rewritten.
    key = key_of(BASE)
    path = entry_path(tmp_path, key)
    path.parent.mkdir(parents=True)
    legacy = {"key": key, "request": BASE.cache_payload(), "reply": {"text": "t", "model": "m"}}
    path.write_text(canonical(legacy), encoding="utf-8")
    cache = JudgeCache(tmp_path)
    seen = rejecting(cache)
    assert cache.get(key) is None
    assert seen == [(key, "not a cache entry")]


# --------------------------------------------------------------------------- signing

SECRET = "cache-signing-secret-0123456789"


def test_a_signed_entry_round_trips_and_the_secret_is_stored_nowhere(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path, secret=SECRET)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), REPLY)
    hit = cache.get(key)
    assert hit is not None and hit.reply == REPLY
    record = json.loads(read_entry(tmp_path, key_id(SECRET) + key))  # under the secret's key id
    assert len(record["hmac_sha256"]) == 64
    for path in all_files(tmp_path):
        assert SECRET.encode() not in path.read_bytes()


def test_with_a_secret_an_unsigned_entry_is_rejected(tmp_path: Path) -> None:
    key = key_of(BASE)
    unsigned = JudgeCache(tmp_path)
    unsigned.put(key, BASE.cache_payload(), REPLY)  # written without the secret: under the plain key
    signed = JudgeCache(tmp_path, secret=SECRET)
    seen = rejecting(signed)
    assert signed.get(key) is None and seen == []  # not in the signed namespace: a miss

    # Planted under the secret's key id by someone who can write the store but has no secret.
    write_record(tmp_path, key_id(SECRET) + key, json.loads(read_entry(tmp_path, key)))
    assert signed.get(key) is None
    assert seen == [(key, "unsigned, and a cache secret is set")]

    signed.put(key, BASE.cache_payload(), REPLY)  # the repair is signed
    assert signed.get(key) is not None
    assert unsigned.get(key) is not None  # and the unsigned job's entry is untouched


def test_jobs_with_different_secrets_keep_apart_and_a_foreign_signature_is_rejected(tmp_path: Path) -> None:
    key = key_of(BASE)
    other = JudgeCache(tmp_path, secret="some-other-secret-42")
    other.put(key, BASE.cache_payload(), REPLY)
    signed = JudgeCache(tmp_path, secret=SECRET)
    seen = rejecting(signed)
    assert signed.get(key) is None and seen == []  # another key id's namespace: neither read nor overwritten
    signed.put(key, BASE.cache_payload(), REPLY)
    assert other.get(key) is not None and signed.get(key) is not None

    # The other job's signed entry copied into this secret's namespace does not verify.
    write_record(tmp_path, key_id(SECRET) + key, json.loads(read_entry(tmp_path, key_id("some-other-secret-42") + key)))
    assert signed.get(key) is None
    assert seen == [(key, "its signature does not verify with this cache secret")]


def test_with_a_secret_a_forged_verdict_with_a_recomputed_checksum_is_rejected(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path, secret=SECRET)
    key = key_of(BASE)
    cache.put(key, BASE.cache_payload(), ProviderReply(text='{"score": 0}', model="m"))
    record = json.loads(read_entry(tmp_path, key_id(SECRET) + key))
    record["reply"]["text"] = '{"score": 2}'
    recompute_checksum(record)
    write_record(tmp_path, key_id(SECRET) + key, record)
    seen = rejecting(cache)

    assert cache.get(key) is None
    assert seen == [(key, "its signature does not verify with this cache secret")]


def test_the_secret_comes_from_the_environment() -> None:
    from pytest_llmjudge.execution.cache import secret_from_environment

    assert secret_from_environment({"LLMJUDGE_CACHE_SECRET": SECRET}) == SECRET
    assert secret_from_environment({"LLMJUDGE_CACHE_SECRET": ""}) is None
    assert secret_from_environment({}) is None


# --------------------------------------------------------------------------- redaction and URLs


def test_secrets_are_redacted_from_a_reply_before_it_is_stored(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    cache.add_secret(SENTINEL_KEY)
    key = key_of(BASE)
    stored = cache.put(key, BASE.cache_payload(), ProviderReply(text=f'{{"j": "key {SENTINEL_KEY}"}}', model="m"))
    assert stored.text == '{"j": "key ***"}'
    hit = cache.get(key)
    assert hit is not None and hit.reply == stored
    assert SENTINEL_KEY not in read_entry(tmp_path, key)


@pytest.mark.parametrize(
    ("url", "public"),
    [
        ("http://user:pa55word@127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://host/v1?api-key=pa55word&api-version=2024-06-01", "https://host/v1?api-version=2024-06-01"),
        ("https://host/v1?key=pa55word", "https://host/v1"),
        ("https://Host.Example/v1?api-version=1", "https://Host.Example/v1?api-version=1"),
        (None, None),
    ],
)
def test_the_payload_holds_the_endpoint_without_credentials(url: str | None, public: str | None) -> None:
    payload = dataclasses.replace(BASE, base_url=url).cache_payload()
    assert payload["base_url"] == public
    assert "pa55word" not in json.dumps(payload)


# --------------------------------------------------------------------------- the store seam


def test_the_checks_hold_over_another_store(tmp_path: Path) -> None:
    # The verification, signing and lease layer is store-agnostic: the same over SQLite.
    from pytest_llmjudge.execution.stores import SQLiteStore

    store = SQLiteStore(tmp_path / "cache.db")
    cache = JudgeCache(None, store=store, secret=SECRET)
    try:
        key = key_of(BASE)
        cache.put(key, BASE.cache_payload(), ProviderReply(text='{"score": 0}', model="m"))
        hit = cache.get(key)
        assert hit is not None and hit.reply.text == '{"score": 0}'

        forged = store.get(key_id(SECRET) + key)
        assert forged is not None
        store.put(key_id(SECRET) + key, forged.replace(b'\\"score\\": 0', b'\\"score\\": 2'))
        seen = rejecting(cache)
        assert cache.get(key) is None
        assert [reason for _, reason in seen] == ["its reply does not match its checksum (edited or damaged)"]

        lease = cache.lease(key, 60)
        assert lease is not None and cache.lease(key, 60) is None
        lease.release()
        assert cache.lease(key, 60) is not None
    finally:
        cache.close()


def test_a_lone_surrogate_in_a_prompt_is_sent_escaped_and_keys_of_other_text_are_unchanged(tmp_path: Path) -> None:
    """``"\\ud800"`` from a JSONL file has no UTF-8 form: the request carries it as visible
    ``\\ud800`` (so the SDK can send it), the key and the entry are plain UTF-8, and it round-trips."""
    request = dataclasses.replace(BASE, user="Rate \ud800 this.")
    assert request.user == "Rate \\ud800 this."
    assert BASE.canonical_payload == json.dumps(
        BASE.cache_payload(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    cache = JudgeCache(tmp_path)
    reply = ProviderReply(text='{"justification": "half \ud83d"}', model="m")  # a judge's lone half
    cache.put(request.cache_key, request, reply)
    hit = cache.get(request.cache_key)
    assert hit is not None and hit.reply.text == reply.text
