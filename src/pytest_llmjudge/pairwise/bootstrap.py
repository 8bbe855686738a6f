"""Bootstrap of Bradley-Terry leaderboards over cases, refitted by batched Newton-Raphson.

What it is
    The same statistic as :func:`pytest_llmjudge.stats.bradley_terry.bootstrap_rankings`
    (MIRAGE-BENCH sec. 6.2: resample whole queries with replacement, refit, take percentile
    intervals of strengths and order-statistic intervals of ranks), with the same draws
    (``numpy.random.default_rng(seed).integers(0, n_cases, size=(resamples, n_cases))``),
    the same prior and the same point fit. Only the refits differ: instead of Hunter's MM
    iteration, which converges linearly and, batched, runs until its slowest resample has
    converged (seconds for 200 resamples of 20 sparse systems), each resample is refitted by
    Newton-Raphson on the concave log-likelihood, started from the full-data fit:

        l(theta) = sum_{i != j} W_ij log sigmoid(theta_i - theta_j)
        g_i = w_i - sum_j N_ij p_ij,            p_ij = sigmoid(theta_i - theta_j)
        L_ii = sum_j N_ij p_ij p_ji,   L_ij = -N_ij p_ij p_ji   (the negative Hessian)
        theta <- theta + delta,   (L + 1 1^T) delta = g

    with ``W``, ``N`` and ``w`` including the prior's tie pseudo-games (``bradley_terry``'s
    module docstring; Hunter 2004 for the model). ``L`` is a weighted graph Laplacian, so it
    is singular along ``1`` (strengths are defined up to a constant); since ``sum g = 0`` the
    added ``1 1^T`` picks the centred step. A step that lowers the likelihood is halved (at
    most 30 times). Newton converges quadratically near the optimum, so a dozen iterations
    reach ``|delta| < 1e-10`` for every resample at once.

Degenerate cases: a resample whose comparison graph is disconnected raises
:class:`~pytest_llmjudge.errors.StatisticsError` naming it, as ``bootstrap_rankings`` does;
with ``prior = 0`` a resample without a finite maximum-likelihood estimate does too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy.special import expit, log_expit

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.bradley_terry import BootstrapRankings, Matchup, PairwiseOutcomes, fit_bradley_terry

FloatArray = npt.NDArray[np.float64]


def _log_likelihood(points: FloatArray, theta: FloatArray) -> FloatArray:
    gaps = theta[:, :, None] - theta[:, None, :]
    return np.asarray(np.sum(points * log_expit(gaps), axis=(1, 2)), dtype=np.float64)


def _disconnected(games: FloatArray, present: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.bool_]:
    """For each ``(k, k)`` games matrix of a batch: is its comparison graph disconnected?

    Reachability by repeated squaring of ``(A + I) > 0`` (``ceil(log2 k)`` batched products).
    With ``present`` (``(batch, k)``), only the present systems need to reach each other.
    """
    k = games.shape[1]
    reach = ((games + np.swapaxes(games, 1, 2)) > 0) | np.eye(k, dtype=bool)
    steps = 1
    while steps < k:
        reach = (reach.astype(np.float64) @ reach.astype(np.float64)) > 0
        steps *= 2
    if present is None:
        return np.asarray(~reach[:, 0, :].all(axis=1))
    first = np.argmax(present, axis=1)  # reachability is symmetric: from one present system to all
    return np.asarray(~(reach[np.arange(len(reach)), first, :] | ~present).all(axis=1))


def newton_refit(
    points: FloatArray,
    games: FloatArray,
    start: FloatArray,
    *,
    present: npt.NDArray[np.bool_] | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> tuple[FloatArray, bool]:
    """Maximum-likelihood log-strengths of every ``(k, k)`` problem of a batch, centred.

    ``present`` (``(batch, k)``, default all) marks the systems each problem fits; an absent
    one has no games and stays at 0. The system is then ``(L + m m^T + diag(1 - m)) delta = g``
    with ``m`` the problem's mask: its present block is the problem without the absent
    systems, its absent block the identity (``g = 0`` there), so problems with different
    players share one batched solve.
    """
    mask = np.ones(start.shape, dtype=bool) if present is None else present
    weight = mask.astype(np.float64)
    counts = weight.sum(axis=1, keepdims=True)

    def centred(values: FloatArray) -> FloatArray:
        return np.asarray((values - (values * weight).sum(axis=1, keepdims=True) / counts) * weight, dtype=np.float64)

    theta = centred(start)
    wins = points.sum(axis=2)
    idx = np.arange(theta.shape[1])
    fixed = weight[:, :, None] * weight[:, None, :]
    fixed[:, idx, idx] += 1.0 - weight
    current = _log_likelihood(points, theta)
    for _ in range(max_iter):
        p = expit(theta[:, :, None] - theta[:, None, :])
        gradient = wins - np.sum(games * p, axis=2)
        weights = games * p * np.swapaxes(p, 1, 2)
        laplacian = -weights
        laplacian[:, idx, idx] = weights.sum(axis=2)
        step = np.linalg.solve(laplacian + fixed, gradient[:, :, None])[:, :, 0]
        candidate = theta + step
        value = _log_likelihood(points, candidate)
        for _ in range(30):
            worse = value < current - 1e-12 * np.abs(current)
            if not worse.any():
                break
            step[worse] *= 0.5
            candidate[worse] = theta[worse] + step[worse]
            value[worse] = _log_likelihood(points[worse], candidate[worse])
        theta = centred(candidate)
        current = value
        if float(np.max(np.abs(step))) < tol:
            return theta, True
    return theta, False


def bootstrap_leaderboard(
    matchups_by_case: Sequence[Sequence[Matchup]],
    n_items: int,
    resamples: int = 200,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    prior: float = 0.1,
) -> BootstrapRankings:
    """Like :func:`~pytest_llmjudge.stats.bradley_terry.bootstrap_rankings` (same draws), refitted by Newton."""
    n_cases = len(matchups_by_case)
    if n_cases == 0:
        raise StatisticsError("a bootstrap needs at least one case, got 0")
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"confidence must be in (0, 1), got {confidence}")
    per_case = np.stack([PairwiseOutcomes.from_matchups(list(m)).score_matrix(n_items) for m in matchups_by_case])
    all_matchups = [m for case in matchups_by_case for m in case]
    point = fit_bradley_terry(all_matchups, n_items, prior=prior)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, n_cases, size=(resamples, n_cases))
    counts = np.zeros((resamples, n_cases), dtype=np.float64)
    np.add.at(counts, (np.arange(resamples)[:, None], drawn), 1.0)
    pooled = (counts @ per_case.reshape(n_cases, -1)).reshape(resamples, n_items, n_items)
    games = pooled + np.swapaxes(pooled, 1, 2)
    disconnected = np.flatnonzero(_disconnected(games))
    if disconnected.size:
        raise StatisticsError(
            f"bootstrap resample {int(disconnected[0])}: the comparison graph is disconnected, so strengths in "
            "different groups share no scale (some system's battles were all left out of the resample)"
        )
    if prior > 0:
        played = games > 0
        pooled = pooled + 0.5 * prior * played
        games = games + prior * played
    elif np.any(pooled.sum(axis=2) == 0):
        raise StatisticsError("with prior=0 a resample has an item that never scored: its strength is infinite")
    start = np.repeat(point.strengths[None, :], resamples, axis=0)
    samples, converged = newton_refit(pooled, games, start)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    order = np.argsort(-samples, axis=1, kind="stable")
    ranks = np.empty_like(order)
    ranks[np.arange(resamples)[:, None], order] = np.arange(1, n_items + 1)
    return BootstrapRankings(
        point=point,
        strength_ci_low=low,
        strength_ci_high=high,
        rank_ci_low=np.quantile(ranks, tail, axis=0, method="lower").astype(np.int64),
        rank_ci_high=np.quantile(ranks, 1.0 - tail, axis=0, method="higher").astype(np.int64),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        n_queries=n_cases,
        converged=converged,
        strength_samples=samples,
        rank_samples=ranks.astype(np.int64),
    )
