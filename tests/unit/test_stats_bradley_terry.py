"""Bradley-Terry fitting (MM and direct MLE) and the query bootstrap of rankings."""

from __future__ import annotations

import math
from enum import Enum
from typing import Literal

import numpy as np
import pytest
from scipy import optimize, stats

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.bradley_terry import (
    PairwiseOutcomes,
    bootstrap_rankings,
    fit_bradley_terry,
)

Game = tuple[int, int, float]  # (i, j, points of i): 1 win, 0 loss, 0.5 tie


def simulate_round_robin(
    strengths: np.ndarray, n_queries: int, seed: int, tie_band: float = 0.0
) -> list[list[tuple[int, int, str]]]:
    """Every query judges every pair once. With ``tie_band`` > 0, a draw within that
    distance of the win probability becomes a tie, which keeps the expected score of
    ``i`` equal to ``P(i beats j)``."""
    rng = np.random.default_rng(seed)
    k = strengths.size
    queries = []
    for _ in range(n_queries):
        matchups = []
        for i in range(k):
            for j in range(i + 1, k):
                p = 1.0 / (1.0 + math.exp(strengths[j] - strengths[i]))
                u = rng.random()
                if abs(u - p) < tie_band:
                    outcome = "tie"
                else:
                    outcome = "A" if u < p else "B"
                # Put the pair in random order, as a position-debiased judge would.
                matchups.append((i, j, outcome) if rng.random() < 0.5 else swap(i, j, outcome))
        queries.append(matchups)
    return queries


def swap(i: int, j: int, outcome: str) -> tuple[int, int, str]:
    return j, i, {"A": "B", "B": "A", "tie": "tie"}[outcome]


def flatten(queries: list[list[tuple[int, int, str]]]) -> list[tuple[int, int, str]]:
    return [m for q in queries for m in q]


def reference_fit(games: list[Game], n_items: int, prior: float) -> np.ndarray:
    """Independent reference: a plain-Python negative log-likelihood over single games,
    the prior as ``prior`` tied pseudo-games per compared pair, item 0 pinned at 0."""
    pairs = {(min(i, j), max(i, j)) for i, j, _ in games}
    weighted = [(i, j, s, 1.0) for i, j, s in games]
    weighted += [(i, j, 0.5, prior) for i, j in sorted(pairs)]

    def nll(free: np.ndarray) -> float:
        theta = [0.0, *free]
        total = 0.0
        for i, j, s, weight in weighted:
            p_i = 1.0 / (1.0 + math.exp(theta[j] - theta[i]))
            total -= weight * (s * math.log(p_i) + (1.0 - s) * math.log(1.0 - p_i))
        return total

    res = optimize.minimize(nll, np.zeros(n_items - 1), method="BFGS", options={"gtol": 1e-9})
    theta = np.array([0.0, *res.x])
    centred: np.ndarray = theta - theta.mean()
    return centred


# --- hand-computed cases ------------------------------------------------------------


@pytest.mark.parametrize("method", ["mm", "mle"])
def test_two_players_closed_form(method: Literal["mm", "mle"]) -> None:
    # Two items: the MLE of P(0 beats 1) is wins / (wins + losses) = 7 / 10, so
    # theta_0 - theta_1 = log(7/3), split evenly around 0.
    winners = [0] * 7 + [1] * 3
    losers = [1] * 7 + [0] * 3
    res = fit_bradley_terry((winners, losers), 2, method=method, prior=0.0)
    assert res.converged
    assert res.win_rate(0, 1) == pytest.approx(0.7, abs=1e-9)
    assert res.strengths == pytest.approx([math.log(7 / 3) / 2, -math.log(7 / 3) / 2], abs=1e-9)
    assert res.scores == pytest.approx([0.7, 0.3], abs=1e-9)
    # log-likelihood at the optimum: 7 log 0.7 + 3 log 0.3
    assert res.log_likelihood == pytest.approx(7 * math.log(0.7) + 3 * math.log(0.3))


@pytest.mark.parametrize("method", ["mm", "mle"])
def test_two_players_with_ties(method: Literal["mm", "mle"]) -> None:
    # 5 wins, 2 losses, 2 ties: item 0 scores 5 + 2/2 = 6 of 9 points -> p = 2/3.
    matchups = [(0, 1, "A")] * 5 + [(1, 0, "A")] * 2 + [(0, 1, "tie"), (1, 0, "TIE")]
    res = fit_bradley_terry(matchups, 2, method=method, prior=0.0)
    assert res.win_rate(0, 1) == pytest.approx(2 / 3, abs=1e-9)


def test_a_cycle_gives_equal_strengths() -> None:
    # 0 beats 1, 1 beats 2, 2 beats 0: every item has one win and one loss.
    res = fit_bradley_terry(([0, 1, 2], [1, 2, 0]), 3, prior=0.0)
    assert res.strengths == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert res.ranking().tolist() == [0, 1, 2]  # equal strengths keep index order


def test_two_ties_equal_one_win_each_way() -> None:
    ties = [(0, 1, "tie"), (0, 1, "tie"), (1, 2, "A"), (2, 1, "A")]
    split = [(0, 1, "A"), (0, 1, "B"), (1, 2, "A"), (2, 1, "A")]
    for method in ("mm", "mle"):
        a = fit_bradley_terry(ties, 3, method=method, prior=0.0)
        b = fit_bradley_terry(split, 3, method=method, prior=0.0)
        np.testing.assert_allclose(a.strengths, b.strengths, atol=1e-9)


def test_input_forms_are_equivalent() -> None:
    winners = np.array([0, 0, 1, 2, 2, 0, 1])
    losers = np.array([1, 2, 2, 0, 1, 1, 0])
    matchups = [(int(w), int(lo), "A") for w, lo in zip(winners, losers)]
    mirrored = [(int(lo), int(w), "b") for w, lo in zip(winners, losers)]

    class Verdict(Enum):
        FIRST = "A"

    as_enum = [(int(w), int(lo), Verdict.FIRST) for w, lo in zip(winners, losers)]
    results = [
        fit_bradley_terry((winners, losers), 3),
        fit_bradley_terry(matchups, 3),
        fit_bradley_terry(tuple(matchups), 3),
        fit_bradley_terry(mirrored, 3),
        fit_bradley_terry(as_enum, 3),  # type: ignore[arg-type]
        fit_bradley_terry(PairwiseOutcomes.from_winners(winners, losers), 3),
    ]
    for res in results[1:]:
        np.testing.assert_allclose(res.strengths, results[0].strengths, atol=1e-12)


# --- against the truth and an independent reference -------------------------------


def test_recovers_known_ranking() -> None:
    truth = np.array([1.2, -0.4, 0.5, -1.1, 0.0, 0.8])
    truth -= truth.mean()
    games = flatten(simulate_round_robin(truth, n_queries=400, seed=1))
    res = fit_bradley_terry(games, truth.size)
    assert stats.kendalltau(res.strengths, truth).statistic == pytest.approx(1.0)
    assert stats.spearmanr(res.strengths, truth).statistic == pytest.approx(1.0)
    # 400 games per pair: a standard error of about 0.06 for the extreme items.
    np.testing.assert_allclose(res.strengths, truth, atol=0.25)
    assert res.ranking().tolist() == np.argsort(-truth).tolist()
    assert res.rank_of(0) == 1 and res.rank_of(3) == 6
    assert res.ranks().tolist() == [1, 5, 3, 6, 4, 2]


@pytest.mark.parametrize("prior", [0.0, 0.1, 2.0])
def test_mm_mle_and_reference_agree(prior: float) -> None:
    truth = np.array([0.6, -0.2, 0.1, -0.5])
    queries = simulate_round_robin(truth, n_queries=25, seed=2, tie_band=0.05)
    matchups = flatten(queries)
    mm = fit_bradley_terry(matchups, 4, method="mm", prior=prior)
    mle = fit_bradley_terry(matchups, 4, method="mle", prior=prior)
    points = {"A": 1.0, "B": 0.0, "tie": 0.5}
    reference = reference_fit([(i, j, points[o]) for i, j, o in matchups], 4, prior)
    assert mm.converged and mle.converged
    assert abs(mm.strengths.mean()) < 1e-12 and abs(mle.strengths.mean()) < 1e-12
    np.testing.assert_allclose(mm.strengths, mle.strengths, atol=1e-4)
    np.testing.assert_allclose(mm.strengths, reference, atol=1e-4)
    np.testing.assert_allclose(mle.strengths, reference, atol=1e-4)


# --- priors and degenerate inputs ---------------------------------------------------


def test_item_without_wins_needs_the_prior() -> None:
    # Item 2 loses every game: its MLE strength is minus infinity.
    winners, losers = [0, 1, 0, 1, 0, 1], [1, 0, 2, 2, 2, 2]
    with pytest.raises(StatisticsError, match=r"prior=0.*\[2\]"):
        fit_bradley_terry((winners, losers), 3, prior=0.0)
    for method in ("mm", "mle"):
        res = fit_bradley_terry((winners, losers), 3, prior=0.1, method=method)
        assert res.converged and np.all(np.isfinite(res.strengths))
        assert res.rank_of(2) == 3
        assert res.strengths[0] == pytest.approx(res.strengths[1])


def test_disconnected_graph_is_rejected() -> None:
    # {0, 1} and {2, 3} never meet: their strengths share no scale.
    matchups = [(0, 1, "A"), (1, 0, "A"), (2, 3, "A"), (3, 2, "tie")]
    with pytest.raises(StatisticsError, match=r"disconnected.*\[0, 1\]; \[2, 3\]"):
        fit_bradley_terry(matchups, 4)
    # An item that never played makes the graph disconnected as well.
    with pytest.raises(StatisticsError, match="disconnected"):
        fit_bradley_terry([(0, 1, "A"), (1, 0, "A")], 3)


@pytest.mark.parametrize(
    ("comparisons", "n_items", "message"),
    [
        ([(0, 1, "A")], 1, "at least two items"),
        ([], 3, "no pairwise comparisons"),
        ([(0, 3, "A")], 3, "outside"),
        ([(1, 1, "A")], 3, "with itself"),
        ([(0, 1, "draw")], 2, "outcome must be"),
        ([(0, 1)], 2, r"must be \(i, j, outcome\)"),
        ([(0.0, 1, "A")], 2, "integers"),
        (([0, 1], [1]), 2, "entries"),
    ],
)
def test_invalid_input(comparisons: object, n_items: int, message: str) -> None:
    with pytest.raises(StatisticsError, match=message):
        fit_bradley_terry(comparisons, n_items)  # type: ignore[arg-type]


def test_invalid_options() -> None:
    with pytest.raises(StatisticsError, match="method"):
        fit_bradley_terry([(0, 1, "A")], 2, method="newton")  # type: ignore[arg-type]
    with pytest.raises(StatisticsError, match="prior"):
        fit_bradley_terry([(0, 1, "A")], 2, prior=-1.0)


def test_non_convergence_is_reported() -> None:
    truth = np.array([2.0, 0.0, -2.0])
    res = fit_bradley_terry(flatten(simulate_round_robin(truth, 30, seed=3)), 3, max_iter=2)
    assert not res.converged and res.iterations == 2


# --- bootstrap over queries --------------------------------------------------------


def test_bootstrap_intervals_cover_the_truth() -> None:
    truth = np.array([1.0, 0.5, 0.0, -0.5, -1.0])
    queries = simulate_round_robin(truth, n_queries=150, seed=4, tie_band=0.05)
    boot = bootstrap_rankings(queries, 5, resamples=200, seed=0)
    assert boot.converged and boot.n_queries == 150
    assert boot.strength_samples.shape == (200, 5)
    assert np.all(boot.strength_ci_low <= truth) and np.all(truth <= boot.strength_ci_high)
    true_ranks = np.arange(1, 6)
    assert np.all(boot.rank_ci_low <= true_ranks) and np.all(true_ranks <= boot.rank_ci_high)
    # The point estimate is the plain fit on all queries.
    pooled = fit_bradley_terry(flatten(queries), 5)
    np.testing.assert_allclose(boot.point.strengths, pooled.strengths, atol=1e-8)
    # Well separated items: the strongest is ranked first in (almost) every resample.
    assert boot.rank_ci_low[0] == 1 and boot.rank_ci_high[0] <= 2


def test_bootstrap_resamples_whole_queries() -> None:
    # Every query has the same verdicts, so every resample of queries pools the same
    # proportions: the intervals collapse. Resampling single games would not.
    query = [(0, 1, "A"), (1, 2, "A"), (2, 0, "A"), (0, 2, "A"), (0, 1, "B")]
    boot = bootstrap_rankings([query] * 30, 3, resamples=50, seed=1)
    np.testing.assert_allclose(boot.strength_ci_low, boot.strength_ci_high, atol=1e-8)
    np.testing.assert_array_equal(boot.rank_ci_low, boot.rank_ci_high)


def test_bootstrap_is_reproducible() -> None:
    truth = np.array([0.3, 0.0, -0.3])
    queries = simulate_round_robin(truth, n_queries=40, seed=5)
    first = bootstrap_rankings(queries, 3, resamples=60, seed=7)
    again = bootstrap_rankings(queries, 3, resamples=60, seed=7)
    other = bootstrap_rankings(queries, 3, resamples=60, seed=8)
    np.testing.assert_array_equal(first.strength_samples, again.strength_samples)
    assert not np.array_equal(first.strength_samples, other.strength_samples)


def test_bootstrap_degenerate_inputs() -> None:
    with pytest.raises(StatisticsError, match="at least one query"):
        bootstrap_rankings([], 3)
    # Sparse design: each query compares a single pair, so some resamples miss a pair.
    queries = [[(0, 1, "A")], [(1, 2, "A")]]
    with pytest.raises(StatisticsError, match="bootstrap resample .*disconnected"):
        bootstrap_rankings(queries, 3, resamples=50, seed=0)
