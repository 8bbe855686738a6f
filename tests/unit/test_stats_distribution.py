"""Class distributions of judge and human labels per agreement level, and the skew."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.annotators import aggregate_labels
from pytest_llmjudge.stats.distribution import class_distribution

HUMAN = [0, 1, 2, 2, 1, 2]
JUDGE = [1, 2, 2, 2, 2, 2]
LEVELS = ["full", "partial", "full", "none", "none", "full"]


def test_hand_computed_distribution() -> None:
    # All six items: judge counts (0, 1, 5), human counts (1, 2, 3).
    # shares judge (0, 1/6, 5/6), human (1/6, 2/6, 3/6)
    # over-prediction = (-1/6, -1/6, 2/6)
    # means: judge (1 + 10)/6 = 11/6, human (2 + 6)/6 = 8/6 -> skew 3/6 = 0.5
    # top share (label 2): judge 5/6, human 3/6
    result = class_distribution(HUMAN, JUDGE, LEVELS, labels=[0, 1, 2])
    overall = result.overall
    assert overall.n == 6
    assert overall.judge_counts.tolist() == [0, 1, 5]
    assert overall.human_counts.tolist() == [1, 2, 3]
    assert overall.over_prediction == pytest.approx([-1 / 6, -1 / 6, 2 / 6])
    assert overall.judge_mean == pytest.approx(11 / 6)
    assert overall.human_mean == pytest.approx(8 / 6)
    assert overall.skew == 0.5
    assert overall.judge_top_share == pytest.approx(5 / 6)
    assert overall.human_top_share == pytest.approx(3 / 6)
    # "none" items: humans (2, 1), judge (2, 2): skew (4 - 3)/2 = 0.5, top share 1 vs 1/2.
    assert list(result.by_level) == ["full", "partial", "none"]
    none = result.by_level["none"]
    assert none.n == 2
    assert none.human_counts.tolist() == [0, 1, 1]
    assert none.judge_counts.tolist() == [0, 0, 2]
    assert none.skew == 0.5
    assert (none.judge_top_share, none.human_top_share) == (1.0, 0.5)


def test_unused_top_score_counts_when_the_scale_is_given() -> None:
    result = class_distribution([0, 1, 1], [1, 1, 1], labels=[0, 1, 2])
    assert result.overall.judge_top_share == 0.0
    assert result.overall.labels == (0, 1, 2)
    # Without the scale, the top score would be 1, which the judge always gives.
    assert class_distribution([0, 1, 1], [1, 1, 1]).overall.judge_top_share == 1.0


def test_without_levels_only_overall_is_filled() -> None:
    result = class_distribution(HUMAN, JUDGE)
    assert result.by_level == {}
    assert result.overall.n == 6


def test_levels_add_up_and_match_a_counter() -> None:
    rng = np.random.default_rng(2)
    ratings = rng.choice(3, p=[0.2, 0.3, 0.5], size=(400, 3)).astype(float)
    ratings[rng.random(ratings.shape) < 0.15] = np.nan
    ratings[:, 0] = rng.integers(0, 3, 400)
    aggregated = aggregate_labels(ratings)
    judge = np.minimum(aggregated.labels + (rng.random(400) < 0.3), 2)
    result = class_distribution(aggregated.labels, judge, aggregated.level, [0, 1, 2])
    total = sum(d.judge_counts for d in result.by_level.values())
    assert np.array_equal(total, result.overall.judge_counts)
    for level, dist in result.by_level.items():
        chosen = aggregated.level == level
        counted = Counter(judge[chosen].tolist())
        assert dist.judge_counts.tolist() == [counted[c] for c in (0, 1, 2)]
        counted = Counter(aggregated.labels[chosen].tolist())
        assert dist.human_counts.tolist() == [counted[c] for c in (0, 1, 2)]
        assert dist.skew == pytest.approx(judge[chosen].mean() - aggregated.labels[chosen].mean())
    assert result.overall.skew > 0


def test_to_dict_is_json_ready() -> None:
    data = json.loads(json.dumps(class_distribution(HUMAN, JUDGE, LEVELS).to_dict()))
    assert list(data) == ["all", "full", "partial", "none"]
    assert data["all"]["judge_counts"] == [0, 1, 5]


def test_errors() -> None:
    with pytest.raises(StatisticsError, match="n = 0"):
        class_distribution([], [])
    with pytest.raises(ValueError, match="3 items but judge has 2"):
        class_distribution([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match=r"unknown agreement levels \['most'\]"):
        class_distribution([0, 1], [0, 1], ["full", "most"])
    with pytest.raises(ValueError, match="levels has 1 entries for 2 items"):
        class_distribution([0, 1], [0, 1], ["full"])
    with pytest.raises(ValueError, match="not in labels"):
        class_distribution([0, 3], [0, 1], labels=[0, 1, 2])
