"""Shard assignment (selection/sharding.py), and the cache store named in the summary without its credentials."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pytest_llmjudge.errors import ConfigError, StoreUnavailableError
from pytest_llmjudge.execution.scorer import Scorer, lease_ttl
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.selection.sharding import Shard, shard_key, shard_of
from pytest_llmjudge.settings import Settings


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1/0", "2", "a/b", "-1/3"])
def test_bad_shard_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError, match="--llmjudge-shard"):
        Shard.parse(spec)


def test_every_case_is_in_exactly_one_shard_and_the_split_is_even_and_fixed() -> None:
    keys = [shard_key("suites/qa.yaml", f"case-{i}") for i in range(3000)]
    shards = [Shard.parse(f"{i}/3") for i in (1, 2, 3)]
    owners = [[shard.index for shard in shards if shard.owns(key)] for key in keys]
    assert all(len(found) == 1 for found in owners)
    sizes = Counter(found[0] for found in owners)
    assert all(900 <= size <= 1100 for size in sizes.values()), sizes  # 1000 +- 3.9 sigma
    # sha256, not the per-process salted hash(): a fixed value, the same on every machine and run.
    assert [shard_of(shard_key("suites/qa.yaml", f"case-{i}"), 3) for i in range(3)] == [2, 1, 3]
    assert Shard.parse(" 2 / 3 ") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"
    assert all(Shard(1, 1).owns(key) for key in keys[:50])


def test_cache_description_masks_the_credentials_of_the_store_url(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    url = "redis://:hunter2-secret-password@127.0.0.1:1/0?prefix=ci:"
    # Nothing listens on port 1: the start-up probe fails, and says so with the password masked.
    with pytest.raises(
        StoreUnavailableError, match=r"cache store redis://\*\*\*@127\.0\.0\.1:1/0\?prefix=ci: is"
    ) as info:
        Scorer(Registry(), Settings(cache_dir=tmp_path, cache_url=url))
    assert "hunter2" not in str(info.value)
    board = Scorer(Registry(), Settings(cache_dir=tmp_path, cache_url=url, cache_fallback="local"))
    assert board.cache_description == "use (redis://***@127.0.0.1:1/0?prefix=ci:)"
    assert board.store_failure is not None and board.store_failure.startswith("at start: put failed: ConnectionError")
    assert Scorer(Registry(), Settings(cache_dir=tmp_path)).cache_description == f"use ({tmp_path})"
    assert Scorer(Registry(), Settings(cache_dir=tmp_path, cache_url=url, cache_mode="off")).cache_description == "off"


def test_the_lease_outlasts_the_longest_honest_call() -> None:
    settings = Settings(timeout=60.0, max_retries=4)
    assert lease_ttl(settings) > 60.0 * 5 + 30.0 * 4
