"""The spend cap's arithmetic (``execution/spend.py``): reservations, settling, xdist shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.errors import ProviderError, SpendCapReached
from pytest_llmjudge.execution.scorer import Scorer
from pytest_llmjudge.execution.spend import MESSAGE_OVERHEAD, SpendCap, SpendLimits, token_bound
from pytest_llmjudge.execution.xdist_sharing import WorkerShare
from pytest_llmjudge.judges.base import ProviderRequest, Usage
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings


def request(user: str = "x" * 100, max_tokens: int = 50) -> ProviderRequest:
    return ProviderRequest(provider="openai", model="m", system="sys", user=user, max_tokens=max_tokens)


def test_token_bound_is_utf8_bytes_plus_overhead_and_max_tokens() -> None:
    assert token_bound(request("नमस्ते", max_tokens=7)) == (3 + len("नमस्ते".encode()) + 2 * MESSAGE_OVERHEAD, 7)


@pytest.mark.parametrize(("cap", "parts"), [(100, 2), (7, 3), (1, 4), (0, 2), (301, 7)])
def test_worker_shares_add_up_to_the_runs_cap(cap: int, parts: int) -> None:
    limits = SpendLimits(max_calls=cap, max_tokens=cap * 10, max_cost=cap / 100)
    shares = [limits.share(i, parts) for i in range(parts)]
    assert sum(share.max_calls or 0 for share in shares) == cap
    assert max(s.max_calls or 0 for s in shares) - min(s.max_calls or 0 for s in shares) <= 1
    assert sum(share.max_tokens or 0 for share in shares) == cap * 10
    assert sum(share.max_cost or 0.0 for share in shares) == pytest.approx(cap / 100)


def test_calls_cap_refuses_the_request_past_it_and_names_it() -> None:
    cap = SpendCap(SpendLimits(max_calls=2))
    cap.planned = 5
    cap.reserve(request())
    cap.reserve(request())
    with pytest.raises(SpendCapReached, match=r"^not judged: --llmjudge-max-calls 2 reached \(2 requests sent; 5 "):
        cap.reserve(request())
    assert isinstance(SpendCapReached("x"), ProviderError)  # the runner's failure path handles it
    assert (cap.calls, cap.refused) == (2, 1)


def test_tokens_are_reserved_as_the_bound_then_settled_to_the_reported_usage() -> None:
    bound = sum(token_bound(request()))
    cap = SpendCap(SpendLimits(max_tokens=2 * bound))
    first = cap.reserve(request())
    second = cap.reserve(request())
    with pytest.raises(SpendCapReached, match="--llmjudge-max-tokens"):
        cap.reserve(request())  # both reservations in flight fill the cap
    cap.settle(first, request(), Usage(40, 10), refused=False)
    assert cap.tokens == bound + 50
    cap.settle(second, request(), None, refused=True)  # refused by the provider: refunded (the call still counts)
    assert (cap.tokens, cap.calls) == (50, 2)
    third = cap.reserve(request())
    cap.settle(third, request(), None, refused=False)  # no usage reported: the reservation stands
    assert cap.tokens == 50 + bound


def test_cost_uses_the_price_table_and_refuses_an_unpriced_model() -> None:
    price = {"m": (1.0, 2.0)}.get
    cap = SpendCap(SpendLimits(max_cost=1.0), price=price)
    reservation = cap.reserve(request())
    inputs, outputs = token_bound(request())
    assert reservation.cost == pytest.approx((inputs * 1.0 + outputs * 2.0) / 1e6)
    cap.settle(reservation, request(), Usage(1_000, 500), refused=False)
    assert cap.cost == pytest.approx((1_000 * 1.0 + 500 * 2.0) / 1e6)
    unpriced = SpendCap(SpendLimits(max_cost=1.0), price=lambda model: None)
    with pytest.raises(SpendCapReached, match="model 'm' has no price"):
        unpriced.reserve(request())


def test_zero_cap_sends_nothing() -> None:
    with pytest.raises(SpendCapReached):
        SpendCap(SpendLimits(max_calls=0)).reserve(request())


def test_each_xdist_worker_enforces_its_share_of_the_runs_cap(tmp_path: Path) -> None:
    """The scorer of worker i of n gets share i (the end-to-end run: ``benchmarks/spend.py``,
    ``-n 2`` with ``--llmjudge-max-calls 100`` on 300 calls made 100 requests)."""
    registry = Registry(providers=dict(builtin_plugins.pytest_llmjudge_providers()), rubrics={})
    settings = Settings(cache_mode="off", cache_dir=tmp_path, max_calls=5, max_cost=1.0)
    shares = []
    for index in range(2):
        board = Scorer(registry, settings, share=WorkerShare(index, 2, "run", wait_seconds=1.0))
        assert board.spend is not None and board.spend.run_limits == SpendLimits(max_calls=5, max_cost=1.0)
        shares.append(board.spend.limits)
    assert [share.max_calls for share in shares] == [3, 2]
    assert [share.max_cost for share in shares] == [0.5, 0.5]
    assert Scorer(registry, Settings(cache_mode="off", cache_dir=tmp_path)).spend is None
