"""Lease identities and holder descriptions (``execution/leasing.py``); the leases themselves run
against a real Redis and moto in tests/stores/test_leases_shared.py."""

from __future__ import annotations

import socket

from pytest_llmjudge.execution.leasing import Holder, run_identity


def test_the_identity_is_the_same_for_a_rerun_of_one_shard_and_differs_between_shards_and_jobs() -> None:
    github = {"GITHUB_RUN_ID": "991", "GITHUB_WORKFLOW": "llm-eval", "GITHUB_JOB": "shard", "GITHUB_RUN_ATTEMPT": "2"}
    first = run_identity(github, shard="2/3", worker=None, where="/a")
    assert first == "991:llm-eval:shard shard 2/3"
    assert run_identity({**github, "GITHUB_RUN_ATTEMPT": "3"}, shard="2/3", worker=None, where="/b") == first
    assert run_identity(github, shard="1/3", worker=None, where="/a") != first
    assert run_identity({**github, "GITHUB_JOB": "merge"}, shard=None, worker=None, where="/a").endswith("unsharded")
    gitlab = {"CI_PIPELINE_ID": "77", "CI_JOB_NAME": "llm-eval-shard 1/3"}
    assert run_identity(gitlab, shard="1/3", worker="gw1", where="/a") == "77:llm-eval-shard 1/3 shard 1/3 gw1"
    # An explicit run id wins, and a '|' (the owner-id separator) can't break the format.
    assert run_identity({**github, "LLMJUDGE_RUN_ID": "nightly|7"}, shard=None, worker=None, where="/a") == (
        "nightly/7 unsharded"
    )
    local = run_identity({}, shard=None, worker=None, where="/repo")
    assert local.startswith(socket.gethostname() + ":") and local == run_identity(
        {}, shard=None, worker=None, where="/repo"
    )
    assert local != run_identity({}, shard=None, worker=None, where="/other-checkout")


def test_a_holder_is_described_by_identity_process_since_and_take_over_time() -> None:
    holder = Holder("ci 5 shard 2/3|runner-7:4242:c0ffee:12|1800000000", 25.0)
    assert (holder.identity, holder.process) == ("ci 5 shard 2/3", "runner-7:4242:c0ffee")
    assert holder.describe(1800000010.0) == (
        "ci 5 shard 2/3 (runner-7:4242:c0ffee) since 08:00:00 UTC; taken over at 08:00:35 UTC unless its holder renews it"
    )
    assert Holder("someone-else", None).describe(0.0) == "'someone-else'"  # an owner id of another program
