"""The prediction-powered mean (stats/prediction_powered.py) against ppi_py and by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.prediction_powered import (
    MeanEstimate,
    labels_needed,
    power_tuned_lambda,
    ppi_mean,
    stratified,
)

ppi_py = pytest.importorskip("ppi_py")

PARIKSHA = Path(__file__).resolve().parents[2] / "example_suites" / "data" / "pariksha"


def _reference(labels: np.ndarray, judged: np.ndarray, judged_all: np.ndarray, lam: float | None) -> tuple[float, ...]:
    """ppi_py's estimate and 95% interval, with every case as the "unlabelled" set (our convention)."""
    point = float(np.asarray(ppi_py.ppi_mean_pointestimate(labels, judged, judged_all, lam=lam)).squeeze())
    low, high = ppi_py.ppi_mean_ci(labels, judged, judged_all, alpha=0.05, lam=lam)
    return point, float(np.asarray(low).squeeze()), float(np.asarray(high).squeeze())


def _compare(labels: np.ndarray, judged: np.ndarray, judged_all: np.ndarray) -> None:
    for lam in (None, 1.0, 0.0):
        ours = ppi_mean(list(labels), list(judged), list(judged_all), lam=lam)
        point, low, high = _reference(labels, judged, judged_all, lam)
        assert ours.estimate.value == pytest.approx(point, abs=1e-12)
        assert ours.estimate.ci_low == pytest.approx(low, abs=1e-12)
        assert ours.estimate.ci_high == pytest.approx(high, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_matches_ppi_py_on_generated_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    big_n = int(rng.integers(40, 400))
    n = int(rng.integers(5, big_n // 2))
    truth = rng.integers(0, 3, big_n).astype(float)
    # A judge that agrees with the humans most of the time and is biased upwards.
    judge = np.clip(truth + rng.choice([0.0, 0.0, 1.0, -1.0, 1.0], big_n), 0, 2)
    chosen = rng.choice(big_n, n, replace=False)
    _compare(truth[chosen], judge[chosen], judge)


def test_lambda_matches_ppi_py() -> None:
    from ppi_py.ppi import _calc_lam_glm

    rng = np.random.default_rng(7)
    judge = rng.normal(size=120)
    chosen = rng.choice(120, 30, replace=False)
    labels = judge[chosen] * 0.4 + rng.normal(size=30)
    point = ppi_py.ppi_mean_pointestimate(labels, judge[chosen], judge, lam=1)
    reference = _calc_lam_glm(
        (labels - point)[:, None], (judge[chosen] - point)[:, None], (judge - point)[:, None], np.eye(1), clip=True
    )
    assert power_tuned_lambda(list(labels), list(judge[chosen]), list(judge)) == pytest.approx(float(reference))


@pytest.mark.parametrize("language", ["hi", "ta", "bn"])
@pytest.mark.parametrize("metric", ["task_quality", "hallucinations"])
def test_matches_ppi_py_on_pariksha(language: str, metric: str) -> None:
    records = [json.loads(line) for line in (PARIKSHA / f"individual_{language}.jsonl").read_text("utf-8").splitlines()]
    judge = np.array([r["recorded"][metric]["score"] for r in records], dtype=float)
    # The mean of the annotators, a non-integer label: ppi_py is indifferent to the label's kind.
    human = np.array([np.mean(list(r["human"][metric].values())) for r in records])
    chosen = np.random.default_rng(3).choice(len(records), 10, replace=False)
    _compare(human[chosen], judge[chosen], judge)


def test_hand_computed_case() -> None:
    # N = 4 judge scores 2, 2, 1, 2 (mean 1.75); cases 0 and 2 labelled 1 and 1.
    labels, judged, judged_all = [1.0, 1.0], [2.0, 1.0], [2.0, 2.0, 1.0, 2.0]
    plain = ppi_mean(labels, judged, judged_all, lam=1.0)
    # theta = 1.75 + mean(1 - 2, 1 - 1) = 1.75 - 0.5 = 1.25
    assert plain.estimate.value == pytest.approx(1.25)
    # se^2 = var0(2,2,1,2) / 4 + var0(-1, 0) / 2 = 0.1875 / 4 + 0.25 / 2 = 0.171875
    assert plain.estimate.se == pytest.approx(math.sqrt(0.171875))
    half = 1.959963984540054 * math.sqrt(0.171875)
    assert plain.estimate.ci_low == pytest.approx(1.25 - half)
    assert plain.estimate.ci_high == pytest.approx(1.25 + half)
    assert plain.judge_mean == pytest.approx(1.75)
    assert plain.bias == pytest.approx(0.5)
    assert plain.human_only.value == pytest.approx(1.0)
    # lambda: cov0 of (1, 1) with (2, 1) is 0, so PPI++ falls back on the human-only mean.
    assert ppi_mean(labels, judged, judged_all).lam == 0.0


def test_hand_computed_lambda() -> None:
    # labels (0, 2), judge on them (1, 2), all judge scores (1, 2, 2, 2): cov0 = 0.5,
    # var1 of (1, 2, 1, 2, 2, 2) = 4/3 * ... : mean 5/3, squares (4/9*2 + 1/9*4) = 12/9, / 5 = 4/15.
    # lambda = 0.5 / ((1 + 2/4) * 4/15) = 0.5 / 0.4 = 1.25 -> clipped to 1.
    assert power_tuned_lambda([0.0, 2.0], [1.0, 2.0], [1.0, 2.0, 2.0, 2.0]) == 1.0
    # labels (0, 1), judge (1, 2): cov0 = 0.25 -> 0.25 / 0.4 = 0.625.
    assert power_tuned_lambda([0.0, 1.0], [1.0, 2.0], [1.0, 2.0, 2.0, 2.0]) == pytest.approx(0.625)


def test_constant_judge_gives_the_human_only_estimate() -> None:
    result = ppi_mean([0.0, 1.0, 2.0], [2.0, 2.0, 2.0], [2.0] * 10)
    assert result.lam == 0.0
    assert result.estimate == result.human_only


def test_agreeing_labels_keep_a_width_on_a_known_scale() -> None:
    labels = [0.0] * 10
    bare = ppi_mean(labels, [0.0] * 10, [0.0] * 10 + [1.0] * 5)
    assert bare.estimate.ci_low == bare.estimate.ci_high == 0.0
    floored = ppi_mean(labels, [0.0] * 10, [0.0] * 10 + [1.0] * 5, scale=(0.0, 1.0))
    # var = 1 * 9 / 100, half-width = 1.96 * 0.3 / sqrt(10) = 0.186
    assert floored.estimate.ci_low == 0.0
    assert floored.estimate.ci_high == pytest.approx(1.959963984540054 * 0.3 / math.sqrt(10))


def test_interval_is_clipped_to_the_scale() -> None:
    result = ppi_mean([2.0, 2.0, 1.0], [2.0, 2.0, 2.0], [2.0] * 20, scale=(0.0, 2.0))
    assert result.estimate.ci_high == 2.0
    assert result.estimate.ci_low is not None and result.estimate.ci_low < result.estimate.value


def test_degenerate_inputs() -> None:
    with pytest.raises(StatisticsError):
        ppi_mean([], [], [1.0])
    with pytest.raises(StatisticsError):
        ppi_mean([1.0], [1.0], [float("nan")])
    with pytest.raises(ValueError):
        ppi_mean([1.0, 2.0], [1.0], [1.0, 2.0])
    one = ppi_mean([1.0], [2.0], [2.0, 1.0])
    assert one.estimate.ci_low is None and one.estimate.value == pytest.approx(1.0 * 0 + 1.0)


def test_stratified_combination() -> None:
    a, b = MeanEstimate(1.0, 0.1, None, None), MeanEstimate(2.0, 0.2, None, None)
    combined = stratified([(30, a), (10, b)])
    assert combined.value == pytest.approx(0.75 * 1.0 + 0.25 * 2.0)
    assert combined.se == pytest.approx(math.sqrt(0.75**2 * 0.01 + 0.25**2 * 0.04))
    assert stratified([(30, a), (10, MeanEstimate(2.0, None, None, None))]).ci_low is None


def test_labels_needed_inverts_the_width() -> None:
    n = labels_needed(0.2, residual_variance=0.5, judge_variance=0.4, lam=0.5, N=1000)
    assert n is not None
    # The width at n (and not at n - 1) is within the target.
    z = 1.959963984540054
    width = lambda k: 2 * z * math.sqrt(0.25 * 0.4 / 1000 + 0.5 / k)  # noqa: E731
    assert width(n) <= 0.2 < width(n - 1)
    assert labels_needed(0.01, residual_variance=0.5, judge_variance=1.0, lam=1.0, N=10) is None


def test_student_variant_is_ppi_py_at_the_matching_alpha() -> None:
    from scipy.stats import norm, t

    rng = np.random.default_rng(11)
    judge = rng.integers(0, 3, 60).astype(float)
    chosen = rng.choice(60, 12, replace=False)
    labels = np.clip(judge[chosen] - rng.integers(0, 2, 12), 0, 2)
    ours = ppi_mean(list(labels), list(judge[chosen]), list(judge), student=True)
    # The alpha whose normal quantile is t_{11}'s 97.5% quantile.
    alpha = 2 * norm.sf(t.ppf(0.975, 11))
    low, high = ppi_py.ppi_mean_ci(labels, judge[chosen], judge, alpha=alpha, lam=None)
    assert ours.estimate.ci_low == pytest.approx(float(np.asarray(low).squeeze()), abs=1e-9)
    assert ours.estimate.ci_high == pytest.approx(float(np.asarray(high).squeeze()), abs=1e-9)


def test_residual_variance_floor_on_a_scale() -> None:
    # Residuals with a tiny variance: the floor (high - low)^2 (n - 1) / n^2 takes over.
    labels = [1.0] + [0.0] * 9
    judged = [1.0] + [0.0] * 9
    result = ppi_mean(labels, judged, judged + [0.0] * 40, scale=(0.0, 1.0))
    assert result.lam > 0.5
    floor_se = math.sqrt(result.lam**2 * _var0(judged + [0.0] * 40) / 50 + 0.09 / 10)
    assert result.estimate.se == pytest.approx(floor_se)


def _var0(values: list[float]) -> float:
    return float(np.var(values))


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 10, 39, 200, 3001])
def test_student_quantile_matches_scipy(df: int) -> None:
    from scipy.stats import t

    from pytest_llmjudge.stats.prediction_powered import _quantile

    for confidence in (0.9, 0.95, 0.99):
        assert _quantile(confidence, df) == pytest.approx(t.ppf(0.5 + confidence / 2, df), abs=1e-9)
