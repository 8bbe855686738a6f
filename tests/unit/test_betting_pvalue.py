"""The p-value of a lower()/upper() bound check on a mean (stats/betting.py, betting_pvalue)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmjudge.stats.betting import betting_interval, betting_lower_bounds, betting_pvalue

SCORES = [2, 2, 1, 2, 0, 2, 1, 2, 2, 1, 2, 2, 0, 2, 1, 2, 2, 2, 1, 2]


@pytest.mark.parametrize("level", [0.025, 0.005, 0.1])
def test_equals_the_design_level_where_the_bound_touches_the_threshold(level: float) -> None:
    bound = float(betting_lower_bounds([SCORES], 0, 2, level=level)[0])
    assert betting_pvalue(SCORES, 0, 2, bound, design_level=level) == pytest.approx(level, rel=1e-4)
    # Just below the bound the test rejects at the level, just above it does not.
    assert betting_pvalue(SCORES, 0, 2, bound - 1e-3, design_level=level) < level
    assert betting_pvalue(SCORES, 0, 2, bound + 1e-3, design_level=level) > level


def test_upper_side_mirrors_the_interval_upper_end() -> None:
    high = betting_interval(SCORES, 0, 2, confidence=0.95).high
    assert betting_pvalue(SCORES, 0, 2, high, side="upper") == pytest.approx(0.025, rel=1e-4)
    assert betting_pvalue(SCORES, 0, 2, high + 1e-3, side="upper") < 0.025


def test_monotone_in_the_threshold_and_in_unit_interval() -> None:
    thresholds = np.linspace(-0.5, 2.5, 61)
    lower = [betting_pvalue(SCORES, 0, 2, t) for t in thresholds]
    upper = [betting_pvalue(SCORES, 0, 2, t, side="upper") for t in thresholds]
    assert all(0.0 <= p <= 1.0 for p in lower + upper)
    assert all(a <= b for a, b in zip(lower, lower[1:], strict=False))
    assert all(a >= b for a, b in zip(upper, upper[1:], strict=False))
    # Off the scale: every bound clears a threshold below it; none reaches one at the top.
    assert lower[0] == 0.0 and lower[-1] == 1.0


def test_hand_computed_capital() -> None:
    # Two scores on [0, 1], seed None (kept order), threshold m = 0.5, design level 0.025:
    # sigma2_0 = 1/4, lam_1 = sqrt(2 log 40 / (2 * 1/4)); x_1 = 1: mu_1 = 3/4,
    # sigma2_1 = (1/4 + 1/16) / 2 = 5/32, lam_2 = sqrt(2 log 40 / (2 * 5/32)); both truncated at 0.75 / 0.5.
    lam1 = min(math.sqrt(2 * math.log(40) / (2 * 0.25)), 1.5)
    lam2 = min(math.sqrt(2 * math.log(40) / (2 * 5 / 32)), 1.5)
    k1 = 1 + lam1 * 0.5
    k2 = k1 * (1 + lam2 * 0.5)
    assert betting_pvalue([1.0, 1.0], 0, 1, 0.5, shuffle_seed=None) == pytest.approx(1 / max(k1, k2), rel=1e-12)
    assert betting_pvalue([], 0, 1, 0.5) == 1.0


def test_valid_under_the_null_at_the_threshold() -> None:
    # Scores with mean exactly at the threshold (heavy skew, n = 10): P(p <= a) <= a.
    rng = np.random.default_rng(7)
    probs = np.array([0.02, 0.08, 0.90])
    mean = float(probs @ np.arange(3))
    ps = np.array([betting_pvalue(rng.choice(3, 10, p=probs), 0, 2, mean) for _ in range(400)])
    assert (ps <= 0.025).mean() <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / 400)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="side"):
        betting_pvalue(SCORES, 0, 2, 1.0, side="both")
    with pytest.raises(ValueError, match="design_level"):
        betting_pvalue(SCORES, 0, 2, 1.0, design_level=0.0)
    with pytest.raises(ValueError, match="scale"):
        betting_pvalue([3.0], 0, 2, 1.0)
