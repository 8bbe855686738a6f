"""Betting confidence bounds for bounded means (stats/betting.py), against a direct slow
implementation of Waudby-Smith and Ramdas (2024)'s definitions, hand-computed cases, and a
small seeded coverage simulation. (The authors' ``confseq`` package does not build here: its
C++ extension needs Boost, so the reference is written out below, loop by loop.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmjudge.stats.betting import (
    TRUNCATION,
    betting_confidence_sequence,
    betting_interval,
    betting_intervals,
    betting_lower_bounds,
)


def _slow_lower(x: list[float], a: float, c: float, anytime: bool = False) -> float:
    """The paper's lower bound on [0, 1], term by term: sigma2 from the regularised running
    moments, the plug-in bet, K_t^+(m), and bisection for sup {m : max_t K_t^+(m) >= 1/a}."""
    n = len(x)
    sigma2_prev = [0.25]
    total, squares = 0.0, 0.0
    for t, value in enumerate(x, start=1):
        total += value
        mu_t = (0.5 + total) / (t + 1)
        squares += (value - mu_t) ** 2
        sigma2_prev.append((0.25 + squares) / (t + 1))
    bets = []
    for t in range(1, n + 1):
        horizon = t * math.log(1 + t) if anytime else n
        bets.append(math.sqrt(2 * math.log(1 / a) / (horizon * sigma2_prev[t - 1])))

    def rejected(m: float) -> bool:
        capital, best = 1.0, 1.0
        for value, bet in zip(x, bets):
            capital *= 1 + min(bet, c / m) * (value - m)
            best = max(best, capital)
        return best >= 1 / a

    below, above = 0.0, sum(x) / n
    if above == 0:  # every score at the bottom: nothing below the mean to reject
        return 0.0
    for _ in range(60):
        m = (below + above) / 2
        if rejected(m):
            below = m
        else:
            above = m
    return below


@pytest.mark.parametrize(
    "scores",
    [[2, 2, 1, 2, 2, 1], [0, 1, 2, 2, 2, 2, 1, 2, 2, 2, 0, 2], [2] * 10, [1, 1, 0, 2], [0.3, 1.7, 1.1]],
)
def test_interval_equals_the_papers_definition_computed_term_by_term(scores: list[float]) -> None:
    x = [s / 2 for s in scores]
    expected_low = 2 * _slow_lower(x, 0.025, TRUNCATION)
    expected_high = 2 * (1 - _slow_lower([1 - v for v in x], 0.025, TRUNCATION))
    interval = betting_interval(scores, 0, 2, shuffle_seed=None)
    assert interval.low == pytest.approx(expected_low, abs=1e-12)
    assert interval.high == pytest.approx(expected_high, abs=1e-12)
    # By default the scores are put in the order numpy's generator seeded with 0 draws.
    order = np.random.default_rng(0).permutation(len(x))
    shuffled = [x[i] for i in order]
    default = betting_interval(scores, 0, 2)
    assert default.low == pytest.approx(2 * _slow_lower(shuffled, 0.025, TRUNCATION), abs=1e-12)
    assert default.high == pytest.approx(2 * (1 - _slow_lower([1 - v for v in shuffled], 0.025, TRUNCATION)), abs=1e-12)


def test_blocks_of_similar_cases_are_shuffled_apart() -> None:
    # 50 cases scoring 2 then 50 scoring 1 (mean 1.5), as a file grouped by language or task
    # puts them: in that order the capital grows on the first block and the lower bound
    # reaches the mean; in the seeded random order (the default) the mean is well inside.
    blocks = [2.0] * 50 + [1.0] * 50
    assert betting_interval(blocks, 0, 2, shuffle_seed=None).low >= 1.5 - 1e-9
    assert betting_interval(blocks[::-1], 0, 2, shuffle_seed=None).high <= 1.5 + 1e-9
    for scores in (blocks, blocks[::-1]):
        shuffled = betting_interval(scores, 0, 2)
        assert shuffled.low < 1.4 and shuffled.high > 1.6
        assert shuffled == betting_interval(scores, 0, 2)  # the same on every run


def test_all_scores_at_the_top_give_the_closed_form_bound_and_keep_a_width() -> None:
    # Ten 2s on 0-2: every bet is capped at c/m, so K_10(m) = (1 - c + c/m)^10 and the lower
    # bound solves (1 - c + c/m)^10 = 40: m = c / (40^(1/10) - 1 + c), times 2 for the scale.
    c = TRUNCATION
    expected = 2 * c / (40 ** (1 / 10) - 1 + c)
    interval = betting_interval([2] * 10, 0, 2)
    assert interval.low == pytest.approx(expected, abs=1e-12)
    assert interval.low == pytest.approx(1.2540, abs=1e-4)
    assert interval.high == 2.0
    low, high = betting_interval([0] * 10, 0, 2)
    assert (low, high) == (0.0, pytest.approx(2 - expected, abs=1e-12))


def test_degenerate_sizes() -> None:
    assert betting_interval([], 0, 2) == (0.0, 2.0)
    # One score: the first bet (sqrt(2 log 40 / (1/4)) = 5.43) can grow the capital to at most
    # 6.4 < 40, so no mean is rejected: the whole scale, never the point.
    assert betting_interval([2], 0, 2) == (0.0, 2.0)
    assert betting_interval([1], 0, 2) == (0.0, 2.0)
    three = betting_interval([2, 2, 2], 0, 2)
    assert 0.0 < three.low < 2.0 and three.high == 2.0


def test_bounds_stay_on_the_scale_contain_the_mean_and_mirror() -> None:
    rng = np.random.default_rng(7)
    samples = rng.choice([0.0, 1.0, 2.0], p=[0.02, 0.08, 0.90], size=(200, 12))
    lows, highs = betting_intervals(samples, 0, 2)
    means = samples.mean(axis=1)
    assert np.all((lows >= 0) & (lows <= means) & (means <= highs) & (highs <= 2))
    assert np.all(highs - lows > 0)
    lows, highs = betting_intervals(samples, 0, 2, shuffle_seed=None)
    mirrored_lows, mirrored_highs = betting_intervals(2 - samples, 0, 2, shuffle_seed=None)
    np.testing.assert_allclose(mirrored_lows, 2 - highs, atol=1e-12)
    np.testing.assert_allclose(mirrored_highs, 2 - lows, atol=1e-12)
    # A 0-100 metric gives the 0-1 interval scaled by 100.
    scaled = betting_interval(samples[0] * 50, 0, 100)
    unit = betting_interval(samples[0] / 2, 0, 1)
    assert scaled.low == pytest.approx(100 * unit.low, abs=1e-9)
    assert scaled.high == pytest.approx(100 * unit.high, abs=1e-9)


def test_a_higher_confidence_never_gives_a_narrower_interval() -> None:
    rng = np.random.default_rng(3)
    for n in (5, 20, 60):
        samples = rng.choice([0.0, 1.0, 2.0], p=[0.2, 0.3, 0.5], size=(50, n))
        previous = None
        for confidence in (0.5, 0.8, 0.9, 0.95, 0.99):
            lows, highs = betting_intervals(samples, 0, 2, confidence=confidence)
            if previous is not None:
                assert np.all(lows <= previous[0] + 1e-12) and np.all(highs >= previous[1] - 1e-12)
            previous = (lows, highs)


def test_one_sided_bound_is_the_two_sided_intervals_lower_end_at_half_the_level() -> None:
    rng = np.random.default_rng(5)
    samples = rng.uniform(0, 2, size=(20, 15))
    lows, _ = betting_intervals(samples, 0, 2, confidence=0.95)
    np.testing.assert_allclose(betting_lower_bounds(samples, 0, 2, level=0.025), lows, atol=1e-14)


def test_coverage_holds_under_heavy_skew_in_a_small_seeded_simulation() -> None:
    # 1000 samples of n = 10 from p = (.02, .08, .90) on 0-2 (true mean 1.88), where the
    # bootstrap covered 66.6%: the betting interval covers at least 95% and its lower bound
    # exceeds the mean at most 2.5% of the time (with binomial slack for 1000 draws).
    rng = np.random.default_rng(2024)
    samples = rng.choice([0.0, 1.0, 2.0], p=[0.02, 0.08, 0.90], size=(1000, 10))
    lows, highs = betting_intervals(samples, 0, 2)
    assert np.mean((lows <= 1.88) & (1.88 <= highs)) >= 0.95
    assert np.mean(lows > 1.88) <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / 1000)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        betting_interval([3], 0, 2)
    with pytest.raises(ValueError, match="low < high"):
        betting_interval([1], 2, 2)
    with pytest.raises(ValueError, match="finite"):
        betting_interval([float("nan")], 0, 2)
    with pytest.raises(ValueError, match="confidence"):
        betting_interval([1], 0, 2, confidence=1.0)
    # A rounding step past the end is the end.
    assert betting_interval([100.00000000000001] * 3, 0, 100).high == 100.0


def test_confidence_sequence_equals_the_definition_and_only_narrows() -> None:
    scores = [2, 2, 1, 2, 0, 2, 2, 2, 1, 2, 2, 2, 2, 2, 1, 2]
    lows, highs = betting_confidence_sequence(scores, 0, 2)
    x = [s / 2 for s in scores]
    per_time = [2 * _slow_lower(x[:t], 0.025, TRUNCATION, anytime=True) for t in range(1, len(x) + 1)]
    # _slow_lower with anytime bets at prefix t is the per-time bound; the sequence is their running max.
    np.testing.assert_allclose(lows, np.maximum.accumulate(per_time), atol=1e-12)
    mirrored = [2 * (1 - _slow_lower([1 - v for v in x[:t]], 0.025, TRUNCATION, anytime=True)) for t in range(1, 17)]
    np.testing.assert_allclose(highs, np.minimum.accumulate(mirrored), atol=1e-12)
    assert np.all(np.diff(lows) >= 0) and np.all(np.diff(highs) <= 0)
    fixed = betting_interval(scores, 0, 2, shuffle_seed=None)
    assert lows[-1] <= fixed.low and fixed.high <= highs[-1]  # looking at every t costs width
    assert betting_confidence_sequence([], 0, 2)[0].size == 0


def test_confidence_sequence_covers_at_every_time_at_once() -> None:
    rng = np.random.default_rng(11)
    misses = 0
    for _ in range(150):
        scores = rng.choice([0.0, 1.0, 2.0], p=[0.02, 0.08, 0.90], size=40)
        lows, highs = betting_confidence_sequence(scores, 0, 2)
        misses += bool(np.any((lows > 1.88) | (highs < 1.88)))
    assert misses / 150 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 150)
