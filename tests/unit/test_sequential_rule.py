"""The sequential decision rule (``execution/sequential.py``) against the confidence sequence it reads."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_llmjudge.execution.sequential import RowRun, decide, order_key, run_rounds, settle
from pytest_llmjudge.stats.betting import betting_confidence_sequence


@pytest.mark.parametrize("op", [">=", ">", "<=", "<"])
@pytest.mark.parametrize("threshold", [0.4, 1.0, 1.6])
def test_decide_reads_the_last_bounds_of_the_confidence_sequence(op: str, threshold: float) -> None:
    rng = np.random.default_rng(7)
    for p in (0.1, 0.5, 0.9):
        values = list(rng.choice([0.0, 1.0, 2.0], size=40, p=[(1 - p) / 2, (1 - p) / 2, p]))
        lows, highs = betting_confidence_sequence(values, 0.0, 2.0)
        decision = decide(values, op, threshold, (0.0, 2.0))
        assert (decision.low, decision.high) == (lows[-1], highs[-1])
        claim, other = (lows[-1], highs[-1]) if op in (">=", ">") else (highs[-1], lows[-1])
        holds = {">=": np.greater_equal, ">": np.greater, "<=": np.less_equal, "<": np.less}[op]
        expected = True if holds(claim, threshold) else (False if not holds(other, threshold) else None)
        assert decision.passed is expected


def test_hand_cases() -> None:
    # Forty 2s on 0-2 clear a floor of 1; forty 0s miss it; alternating 0/2 (mean 1) settles neither way.
    assert decide([2.0] * 40, ">=", 1.0, (0.0, 2.0)).passed is True
    assert decide([0.0] * 40, ">=", 1.0, (0.0, 2.0)).passed is False
    assert decide([0.0, 2.0] * 20, ">=", 1.0, (0.0, 2.0)).passed is None
    # One value never settles a 95% row; min_cases holds a settled row open.
    assert decide([2.0], ">=", 1.0, (0.0, 2.0)).passed is None
    assert decide([2.0] * 40, ">=", 1.0, (0.0, 2.0), min_cases=41).passed is None
    with pytest.raises(ValueError, match="one-sided"):
        decide([1.0], "==", 1.0, (0.0, 2.0))


def test_a_decision_never_changes_once_made() -> None:
    rng = np.random.default_rng(3)
    values = list(rng.choice([0.0, 2.0], size=120, p=[0.3, 0.7]))
    verdicts = [decide(values[:t], ">=", 1.0, (0.0, 2.0)).passed for t in range(1, 121)]
    first = next(i for i, v in enumerate(verdicts) if v is not None)
    assert set(verdicts[first:]) == {verdicts[first]}


def test_rounds_stop_settled_rows_and_judge_an_unscored_row_in_full() -> None:
    scores = {f"a{i}": 2.0 for i in range(100)} | {f"b{i}": (None if i == 3 else 2.0) for i in range(100)}
    rows = [RowRun(name, [f"{name}{i}" for i in range(100)], ">=", 1.0, (0.0, 2.0), size=10) for name in "ab"]
    asked: list[int] = []

    def judge(batch: list[tuple[RowRun, list[str]]]) -> list[list[float | None]]:
        asked.append(sum(len(keys) for _, keys in batch))
        return [[scores[k] for k in keys] for _, keys in batch]

    rounds = run_rounds(rows, judge)
    a, b = rows
    assert a.decision is not None and a.decision.passed is True and a.judged < 100
    assert len(a.not_needed) == 100 - a.judged and a.reason == f"not needed: verdict settled after {a.judged} of 100"
    assert b.full and b.judged == 100 and b.not_needed == []
    assert rounds == len(asked) and sum(asked) == a.judged + 100


def test_the_order_is_seeded_and_stable() -> None:
    keys = [f"s::c{i}" for i in range(50)]
    one = sorted(keys, key=lambda k: order_key(0, k))
    assert one == sorted(keys, key=lambda k: order_key(0, k)) != keys
    assert one != sorted(keys, key=lambda k: order_key(1, k))


def test_the_sequence_at_a_look_is_the_sequence_of_the_prefix() -> None:
    """What lets the benchmark read every look off one sequence: bounds at t use the first t values only."""
    rng = np.random.default_rng(11)
    values = rng.choice([0.0, 1.0, 2.0], size=60)
    lows, highs = betting_confidence_sequence(values, 0.0, 2.0)
    for t in (1, 20, 37, 60):
        prefix_lows, prefix_highs = betting_confidence_sequence(values[:t], 0.0, 2.0)
        assert prefix_lows[-1] == pytest.approx(lows[t - 1], abs=1e-12)
        assert prefix_highs[-1] == pytest.approx(highs[t - 1], abs=1e-12)
        assert decide(list(values[:t]), ">=", 1.0, (0.0, 2.0)).passed is settle(lows[t - 1], highs[t - 1], ">=", 1.0)


def test_a_look_that_extends_the_last_one_has_the_bounds_of_the_whole_sequence() -> None:
    rng = np.random.default_rng(5)
    values = list(rng.choice([0.0, 1.0, 2.0], size=90, p=[0.2, 0.3, 0.5]))
    lows, highs = betting_confidence_sequence(values, 0.0, 2.0)
    decision = None
    for k in (1, 20, 40, 41, 90):
        decision = decide(values[:k], ">=", 1.5, (0.0, 2.0), previous=decision)
        assert (decision.low, decision.high) == pytest.approx((lows[k - 1], highs[k - 1]), abs=1e-12)
