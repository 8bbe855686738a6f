"""open_store: cache URLs to stores, and the errors for bad URLs and missing extras."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.errors import ConfigError, MissingDependencyError
from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.execution.stores import CacheStore, SQLiteStore, open_store
from pytest_llmjudge.execution.stores.s3_store import S3Store


def _round_trip(store: CacheStore) -> None:
    try:
        store.put("k" * 64, b"entry\x00bytes")
        assert store.get("k" * 64) == b"entry\x00bytes"
    finally:
        store.close()


def test_sqlite_url_relative_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    relative = open_store("sqlite:///sub/cache.db")
    assert isinstance(relative, SQLiteStore) and relative.path == Path("sub/cache.db")
    _round_trip(relative)
    assert (tmp_path / "sub" / "cache.db").is_file()
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db")
    assert isinstance(absolute, SQLiteStore) and absolute.path == tmp_path / "abs.db"
    _round_trip(absolute)


def test_redis_url_with_prefix(redis_url: str, fresh_prefix: str) -> None:
    import redis

    store = open_store(f"{redis_url}/3?prefix={fresh_prefix}:")
    _round_trip(store)
    raw = redis.Redis.from_url(f"{redis_url}/3")
    assert raw.get(f"{fresh_prefix}:e:" + "k" * 64) == b"entry\x00bytes"  # database 3, under the prefix
    raw.close()


def test_s3_url_with_endpoint_and_region(s3_server: Any, fresh_prefix: str) -> None:
    store = open_store(
        f"s3://{s3_server.bucket}/{fresh_prefix}/cache?endpoint_url={s3_server.endpoint}&region=us-east-1"
    )
    _round_trip(store)
    body = s3_server.client.get_object(Bucket=s3_server.bucket, Key=f"{fresh_prefix}/cache/entries/" + "k" * 64)["Body"]
    assert body.read() == b"entry\x00bytes"


def test_stores_with_different_prefixes_do_not_see_each_other(redis_url: str, s3_server: Any) -> None:
    pytest.importorskip("boto3")
    for one, two in (
        (open_store(f"{redis_url}/0?prefix=iso-one:"), open_store(f"{redis_url}/0?prefix=iso-two:")),
        (
            S3Store(s3_server.client, s3_server.bucket, "iso-one"),
            S3Store(s3_server.client, s3_server.bucket, "iso-two"),
        ),
    ):
        try:
            one.put("shared-key", b"one's")
            assert two.get("shared-key") is None
            assert one.try_lease("shared-key", "a", 30)
            assert two.try_lease("shared-key", "b", 30)  # a lease under another prefix is another lease
            two.put("shared-key", b"two's")
            assert one.get("shared-key") == b"one's"
        finally:
            one.release("shared-key", "a")
            two.release("shared-key", "b")
            one.close()
            two.close()


def test_a_path_or_file_url_is_the_directory_store_on_its_v1_layout(tmp_path: Path) -> None:
    for url in (str(tmp_path / "plain"), f"file://{tmp_path}/file-url"):
        store = open_store(url)
        store.put("ab" + "0" * 62, b"entry")
        store.close()
        assert DirectoryStore(Path(url.removeprefix("file://")) / "v1").get("ab" + "0" * 62) == b"entry"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("memcached://localhost:11211", "unknown cache URL scheme 'memcached'"),
        ("sqlite://", "has no path"),
        ("s3:///prefix-without-bucket", "names no bucket"),
        ("s3://bucket/p?endpoint=http://x", "unknown option"),
    ],
)
def test_bad_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url)


@pytest.mark.parametrize(
    ("module", "url", "extra"),
    [("redis", "redis://127.0.0.1:1/0", "redis"), ("boto3", "s3://bucket/prefix", "s3")],
)
def test_missing_client_library_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, url: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import <module>` raise ImportError
    with pytest.raises(MissingDependencyError, match=rf'pip install "pytest-llmjudge\[{extra}\]"'):
        open_store(url)
