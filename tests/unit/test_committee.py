"""Committee combinations (``stats/committee.py``, used by juries), hand-computed."""

from __future__ import annotations

import math

from pytest_llmjudge.stats.committee import combine_scores

NAN = math.nan


def test_majority_mean_and_weighted_combinations() -> None:
    scores = {"a": [0.0, 2.0, 1.0, NAN, NAN], "b": [1.0, 2.0, 2.0, 1.0, NAN], "c": [2.0, 0.0, 2.0, NAN, NAN]}
    scale = (0, 1, 2)
    # item 0: 0, 1, 2 all once -> the lower; item 1: 2 twice; item 3: only b; item 4: nobody.
    majority = combine_scores(scores, "majority", {}, scale)
    assert majority[:4] == [0.0, 2.0, 2.0, 1.0] and math.isnan(majority[4])
    # means 1.0, 1.333 -> 1, 1.667 -> 2, 1.0
    assert combine_scores(scores, "mean", {}, scale)[:4] == [1.0, 1.0, 2.0, 1.0]
    # weights a 0.9, b 0.1, c 0.0: item 0 = 0.1 -> 0; item 1 = 2.0; item 2 = (0.9 + 0.2) / 1.0 = 1.1 -> 1
    weighted = combine_scores(scores, "weighted", {"a": 0.9, "b": 0.1, "c": 0.0}, scale)
    assert weighted[:4] == [0.0, 2.0, 1.0, 1.0]


def test_a_mean_half_way_rounds_up() -> None:
    assert combine_scores({"a": [1.0], "b": [2.0]}, "mean", {}, (0, 1, 2)) == [2.0]
