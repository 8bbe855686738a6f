"""Bradley-Terry strengths and bootstrapped rankings from pairwise judge verdicts.

What it is
    A pairwise judge compares two systems' answers to the same query and says ``"A"``
    (first wins), ``"B"`` (second wins) or ``"tie"``. The Bradley-Terry model gives each
    system ``i`` a log-strength ``theta_i`` and assumes

        P(i beats j) = exp(theta_i) / (exp(theta_i) + exp(theta_j)) = sigmoid(theta_i - theta_j).

    Strengths are fitted by maximum likelihood. MIRAGE-BENCH builds its arena leaderboard
    this way from GPT-4o pairwise verdicts and puts confidence intervals on it by
    bootstrapping the queries (``mirage_bench_rag_arena.md``, sections 4.2, 4.3 and 6.2;
    ``docs/methods.md``, section 5). The model and the MM algorithm are those of
    Hunter (2004), "MM algorithms for generalized Bradley-Terry models", Ann. Statist. 32(1).

Data
    Outcomes become a score matrix ``W[i, j]``: the points ``i`` earned against ``j``, one per
    win and one half per tie (the usual convention: a tie is half a win for each side, so
    ties pull two strengths together without adding a third outcome to the model).
    ``N[i, j] = W[i, j] + W[j, i]`` is the number of games between ``i`` and ``j`` and
    ``w_i = sum_j W[i, j]`` the total score of ``i``. The log-likelihood is

        l(theta) = sum_{i != j} W[i, j] * log sigmoid(theta_i - theta_j).

Prior (``prior = a >= 0``, default 0.1)
    The maximum-likelihood estimate does not exist when some group of items never scores
    against the rest (an item without a single win or tie, for instance: its strength runs
    off to minus infinity). To keep such items finite, ``a`` pseudo-games are added to every
    pair that played at least once, scored as a tie (``a/2`` points to each side). This is a
    symmetric prior that shrinks towards equal strength and never creates a comparison
    between items that were not compared. Its weight is negligible next to real games (with
    100 queries a pair plays 100 games); pass ``prior=0`` for the plain MLE. Both fitting
    methods use ``W``, ``N`` and ``w`` with the pseudo-games included; the reported
    ``log_likelihood`` counts the real games only.

Fitting
    * ``method="mm"`` (Hunter 2004): ``p_i <- w_i / sum_j N[i, j] / (p_i + p_j)``
      with ``p = exp(theta)``, renormalised every step; no step decreases the (prior
      augmented) likelihood. Stops when no log-strength moves by more than ``tol``.
    * ``method="mle"``: minimises ``-l(theta) + (sum theta)^2 / 2`` with L-BFGS-B and the
      analytic gradient ``sum_j N[i, j] * sigmoid(theta_i - theta_j) - w_i + sum theta``. The
      likelihood only depends on differences of strengths; the penalty on the sum picks the
      centred solution without moving the optimum of the likelihood.
    Both return log-strengths centred to mean 0 and agree to optimiser precision.

Degenerate cases (all raise :class:`~pytest_llmjudge.errors.StatisticsError`)
    * Fewer than two items, an index outside ``[0, n_items)``, an item compared with itself,
      an unknown outcome label, no comparisons at all.
    * A disconnected comparison graph (some items were never compared, directly or through
      others, with the rest): strengths of different components share no scale, and any
      ranking across them would be invented by the prior. The message lists the components.
    * ``prior = 0`` and the MLE does not exist (some group never scores against the rest).

Bootstrap (:func:`bootstrap_rankings`)
    Following MIRAGE-BENCH (section 6.2), whole queries are resampled with replacement, so
    all verdicts of one query stay together; each resample is refitted (MM, started from the
    full-data fit) and the percentile interval of each strength and of each rank is reported.
    A resample whose graph is disconnected raises the same error as above; exhaustive pairs
    per query, which the paper recommends (section 6.3), never produce one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, log_expit

from pytest_llmjudge.errors import StatisticsError

__all__ = [
    "BTResult",
    "BootstrapRankings",
    "Comparisons",
    "Matchup",
    "PairwiseOutcomes",
    "bootstrap_rankings",
    "fit_bradley_terry",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Matchup = tuple[int, int, str]

# Points the first item of a matchup earns for each verdict.
_OUTCOME_POINTS = {"a": 1.0, "b": 0.0, "tie": 0.5}


@dataclass(frozen=True)
class PairwiseOutcomes:
    """Pairwise games in canonical form: ``first[k]`` met ``second[k]`` and earned
    ``score_first[k]`` points (1 win, 0 loss, 0.5 tie); ``second`` earned the rest."""

    first: IntArray
    second: IntArray
    score_first: FloatArray

    @classmethod
    def from_winners(cls, winner_idx: npt.ArrayLike, loser_idx: npt.ArrayLike) -> PairwiseOutcomes:
        """Games without ties: ``winner_idx[k]`` beat ``loser_idx[k]``."""
        winners = _index_array(winner_idx, "winner_idx")
        losers = _index_array(loser_idx, "loser_idx")
        if winners.size != losers.size:
            raise StatisticsError(f"winner_idx has {winners.size} entries but loser_idx has {losers.size}")
        return cls(winners, losers, np.ones(winners.size, dtype=np.float64))

    @classmethod
    def from_matchups(cls, matchups: Sequence[Matchup]) -> PairwiseOutcomes:
        """Games as ``(i, j, outcome)`` with outcome ``"A"`` (``i`` wins), ``"B"``
        (``j`` wins) or ``"tie"``; labels are case-insensitive, and an :class:`enum.Enum`
        member counts by its value."""
        first = np.empty(len(matchups), dtype=np.int64)
        second = np.empty(len(matchups), dtype=np.int64)
        score = np.empty(len(matchups), dtype=np.float64)
        for k, matchup in enumerate(matchups):
            if len(matchup) != 3:
                raise StatisticsError(f"matchup {k} must be (i, j, outcome), got {matchup!r}")
            i, j, outcome = matchup
            label = outcome.value if isinstance(outcome, Enum) else outcome
            points = _OUTCOME_POINTS.get(str(label).lower())
            if points is None:
                raise StatisticsError(f"matchup {k}: outcome must be 'A', 'B' or 'tie', got {outcome!r}")
            first[k], second[k], score[k] = _as_index(i), _as_index(j), points
        return cls(first, second, score)

    def score_matrix(self, n_items: int) -> FloatArray:
        """``W[i, j]``: points ``i`` earned against ``j`` (validates the indices)."""
        for name, idx in (("first", self.first), ("second", self.second)):
            bad = (idx < 0) | (idx >= n_items)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise StatisticsError(f"item index {int(idx[k])} (game {k}, {name}) is outside [0, {n_items})")
        same = self.first == self.second
        if same.any():
            k = int(np.flatnonzero(same)[0])
            raise StatisticsError(f"game {k} compares item {int(self.first[k])} with itself")
        scores = np.zeros((n_items, n_items), dtype=np.float64)
        np.add.at(scores, (self.first, self.second), self.score_first)
        np.add.at(scores, (self.second, self.first), 1.0 - self.score_first)
        return scores


Comparisons = PairwiseOutcomes | tuple[npt.ArrayLike, npt.ArrayLike] | Sequence[Matchup]


@dataclass(frozen=True)
class BTResult:
    """Fitted Bradley-Terry model.

    ``strengths``: log-strengths ``theta``, centred to mean 0 (differences are log-odds).
    ``scores``: ``exp(theta) / sum(exp(theta))``, positive and summing to 1.
    ``log_likelihood``: of the observed games only (the prior's pseudo-games excluded).
    """

    strengths: FloatArray
    scores: FloatArray
    iterations: int
    converged: bool
    method: str
    prior: float
    log_likelihood: float

    @property
    def n_items(self) -> int:
        return int(self.strengths.size)

    def win_rate(self, a: int, b: int) -> float:
        """Model probability that item ``a`` beats item ``b`` (a tie counting half)."""
        return float(expit(self.strengths[a] - self.strengths[b]))

    def ranking(self) -> IntArray:
        """Item indices, strongest first (equal strengths keep index order)."""
        order: IntArray = np.argsort(-self.strengths, kind="stable").astype(np.int64)
        return order

    def ranks(self) -> IntArray:
        """Rank of every item, 1 for the strongest."""
        ranks: IntArray = _ranks(self.strengths[None, :])[0]
        return ranks

    def rank_of(self, item: int) -> int:
        """Rank of ``item``, 1 for the strongest."""
        return int(self.ranks()[item])


@dataclass(frozen=True)
class BootstrapRankings:
    """Query-bootstrap of a Bradley-Terry fit.

    ``point`` is the fit on all queries. ``strength_samples`` and ``rank_samples`` have one
    row per resample. Strength intervals are percentile intervals; rank intervals take the
    lower/higher order statistic so that they stay whole ranks.
    """

    point: BTResult
    strength_ci_low: FloatArray
    strength_ci_high: FloatArray
    rank_ci_low: IntArray
    rank_ci_high: IntArray
    confidence: float
    resamples: int
    seed: int
    n_queries: int
    converged: bool
    strength_samples: FloatArray = field(repr=False, compare=False)
    rank_samples: IntArray = field(repr=False, compare=False)


def fit_bradley_terry(
    comparisons: Comparisons,
    n_items: int,
    *,
    method: Literal["mm", "mle"] = "mm",
    max_iter: int = 10_000,
    tol: float = 1e-10,
    prior: float = 0.1,
) -> BTResult:
    """Fit Bradley-Terry log-strengths of ``n_items`` items from pairwise outcomes.

    ``comparisons`` is a :class:`PairwiseOutcomes`, a pair of arrays
    ``(winner_idx, loser_idx)`` (recognised as a 2-tuple of integer arrays), or a sequence
    of ``(i, j, outcome)`` matchups. ``tol`` is the largest change of a log-strength between
    MM steps, or the gradient tolerance of L-BFGS-B. See the module docstring for the prior,
    the algorithms and the errors.
    """
    return _fit_scores(_score_matrix(comparisons, n_items), method, max_iter, tol, _check_prior(prior))


def _fit_scores(scores: FloatArray, method: str, max_iter: int, tol: float, prior: float) -> BTResult:
    n_items = scores.shape[0]
    if max_iter < 1:
        raise StatisticsError(f"max_iter must be at least 1, got {max_iter}")
    if method not in ("mm", "mle"):
        raise StatisticsError(f"method must be 'mm' or 'mle', got {method!r}")
    _check_estimable(scores, prior)
    points, games = _with_prior(scores, prior)
    if method == "mm":
        theta, iterations, converged = _mm(points.sum(axis=1)[None], games[None], np.zeros((1, n_items)), max_iter, tol)
        strengths = theta[0]
    else:
        strengths, iterations, converged = _lbfgs(points, games, max_iter, tol)
    return _result(strengths, scores, iterations, converged, method, prior)


def bootstrap_rankings(
    matchups_by_query: Sequence[Comparisons],
    n_items: int,
    resamples: int = 200,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    prior: float = 0.1,
    max_iter: int = 10_000,
    tol: float = 1e-10,
) -> BootstrapRankings:
    """Bootstrap Bradley-Terry strengths and ranks by resampling queries with replacement.

    ``matchups_by_query[q]`` holds the comparisons of query ``q`` in any form
    :func:`fit_bradley_terry` accepts. Each resample draws as many queries as there are,
    with replacement (``numpy.random.default_rng(seed)``), pools their games and refits by MM.
    """
    n_queries = len(matchups_by_query)
    if n_queries == 0:
        raise StatisticsError("bootstrap_rankings needs at least one query, got 0")
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"confidence must be in (0, 1), got {confidence}")
    per_query = np.stack([_score_matrix(c, n_items) for c in matchups_by_query])
    prior = _check_prior(prior)
    point = _fit_scores(per_query.sum(axis=0), "mm", max_iter, tol, prior)

    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, n_queries, size=(resamples, n_queries))
    # How often each query was drawn in each resample; pooling is then one matrix product.
    counts = np.zeros((resamples, n_queries), dtype=np.float64)
    np.add.at(counts, (np.arange(resamples)[:, None], drawn), 1.0)
    pooled = (counts @ per_query.reshape(n_queries, -1)).reshape(resamples, n_items, n_items)
    for b in range(resamples):
        try:
            _check_estimable(pooled[b], prior)
        except StatisticsError as exc:
            raise StatisticsError(f"bootstrap resample {b}: {exc}") from exc
    points, games = _with_prior(pooled, prior)
    start = np.repeat(point.strengths[None, :], resamples, axis=0)
    samples, _, converged = _mm(points.sum(axis=2), games, start, max_iter, tol)

    lower_q = (1.0 - confidence) / 2.0
    strength_lo, strength_hi = np.quantile(samples, [lower_q, 1.0 - lower_q], axis=0)
    ranks = _ranks(samples)
    rank_lo = np.quantile(ranks, lower_q, axis=0, method="lower").astype(np.int64)
    rank_hi = np.quantile(ranks, 1.0 - lower_q, axis=0, method="higher").astype(np.int64)
    return BootstrapRankings(
        point=point,
        strength_ci_low=strength_lo,
        strength_ci_high=strength_hi,
        rank_ci_low=rank_lo,
        rank_ci_high=rank_hi,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        n_queries=n_queries,
        converged=converged,
        strength_samples=samples,
        rank_samples=ranks,
    )


def _as_index(value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise StatisticsError(f"item indices must be integers, got {value!r}")
    return int(value)


def _index_array(values: npt.ArrayLike, name: str) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise StatisticsError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise StatisticsError(f"{name} must hold integer indices, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _looks_like_winner_arrays(comparisons: object) -> bool:
    # A (winner_idx, loser_idx) pair is a 2-tuple of integer vectors; a sequence of two
    # matchups also has length 2, but its elements carry a string outcome.
    if not (isinstance(comparisons, tuple) and len(comparisons) == 2):
        return False
    for part in comparisons:
        arr = np.asarray(part)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            return False
    return True


def _score_matrix(comparisons: Comparisons, n_items: int) -> FloatArray:
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)):
        raise StatisticsError(f"n_items must be an integer, got {n_items!r}")
    if n_items < 2:
        raise StatisticsError(f"a ranking needs at least two items, got n_items={n_items}")
    if isinstance(comparisons, PairwiseOutcomes):
        outcomes = comparisons
    elif _looks_like_winner_arrays(comparisons):
        winners, losers = comparisons
        outcomes = PairwiseOutcomes.from_winners(winners, losers)
    else:
        outcomes = PairwiseOutcomes.from_matchups(comparisons)  # type: ignore[arg-type]
    return outcomes.score_matrix(int(n_items))


def _check_prior(prior: float) -> float:
    prior = float(prior)
    if not (np.isfinite(prior) and prior >= 0.0):
        raise StatisticsError(f"prior must be a finite number >= 0, got {prior}")
    return prior


def _components(adjacency: npt.NDArray[np.bool_], connection: str) -> IntArray:
    _, labels = connected_components(csr_matrix(adjacency), directed=True, connection=connection)
    return np.asarray(labels, dtype=np.int64)


def _describe_groups(labels: IntArray) -> str:
    groups = [np.flatnonzero(labels == g).tolist() for g in np.unique(labels)]
    return "; ".join(str(g) for g in groups)


def _check_estimable(scores: FloatArray, prior: float) -> None:
    if not (scores > 0).any():
        raise StatisticsError("no pairwise comparisons to fit")
    games = scores + scores.T
    weak = _components(games > 0, "weak")
    if np.unique(weak).size > 1:
        raise StatisticsError(
            "the comparison graph is disconnected, so strengths in different groups "
            f"share no scale; groups of item indices: {_describe_groups(weak)}. "
            "Compare at least one pair across every group."
        )
    if prior == 0.0:
        # Without a prior the MLE exists only if, for every split of the items in two, each
        # side scored at least once against the other (Hunter 2004, Assumption 1): the
        # "scored against" graph must be strongly connected.
        strong = _components(scores > 0, "strong")
        if np.unique(strong).size > 1:
            raise StatisticsError(
                "with prior=0 the maximum-likelihood strengths are infinite: some group "
                "of items never scored (won or tied) against the others; groups of item "
                f"indices: {_describe_groups(strong)}. Use prior > 0."
            )


def _with_prior(scores: FloatArray, prior: float) -> tuple[FloatArray, FloatArray]:
    """Points ``W`` and games ``N`` per ordered pair, pseudo-games of the prior included."""
    games = scores + np.swapaxes(scores, -1, -2)
    if prior > 0.0:
        played = games > 0
        scores = scores + 0.5 * prior * played
        games = games + prior * played
    return scores, games


def _mm(
    wins: FloatArray, games: FloatArray, theta: FloatArray, max_iter: int, tol: float
) -> tuple[FloatArray, int, bool]:
    """Hunter's MM iteration, run on a batch of independent fits at once."""
    theta = theta - theta.mean(axis=1, keepdims=True)
    for iteration in range(1, max_iter + 1):
        strength = np.exp(theta)
        denominators = (games / (strength[:, :, None] + strength[:, None, :])).sum(axis=2)
        updated = np.log(wins / denominators)
        updated -= updated.mean(axis=1, keepdims=True)
        change = float(np.max(np.abs(updated - theta)))
        theta = updated
        if change <= tol:
            return theta, iteration, True
    return theta, max_iter, False


def _lbfgs(points: FloatArray, games: FloatArray, max_iter: int, tol: float) -> tuple[FloatArray, int, bool]:
    """Direct minimisation of the penalised negative log-likelihood with L-BFGS-B."""
    # Imported here: scipy.optimize is slow to import (docs/scale.md), and only this method needs it.
    from scipy.optimize import minimize

    wins = points.sum(axis=1)

    def objective(theta: FloatArray) -> tuple[float, FloatArray]:
        gaps = theta[:, None] - theta[None, :]
        total = float(theta.sum())
        value = -float(np.sum(points * log_expit(gaps))) + 0.5 * total * total
        gradient = (games * expit(gaps)).sum(axis=1) - wins + total
        return value, gradient

    res = minimize(
        objective,
        np.zeros(wins.size),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 0.0},
    )
    theta = np.asarray(res.x, dtype=np.float64)
    iterations, converged = int(res.nit), bool(res.success)
    if not converged:
        # L-BFGS-B's line search can stop ("ABNORMAL") with the gradient near 1e-8, short of a
        # tight gtol, on an objective that is smooth and strictly convex here (scipy 1.15+ does,
        # on data older releases converged on). Newton steps from its point finish the job.
        theta, extra, converged = _newton_polish(theta, points, games, wins, tol)
        iterations += extra
    theta -= theta.mean()
    return theta, iterations, converged


def _newton_polish(
    theta: FloatArray, points: FloatArray, games: FloatArray, wins: FloatArray, tol: float, max_steps: int = 20
) -> tuple[FloatArray, int, bool]:
    """Newton's method on the penalised negative log-likelihood of :func:`_lbfgs`."""
    for step in range(1, max_steps + 1):
        gaps = theta[:, None] - theta[None, :]
        p = expit(gaps)
        gradient = (games * p).sum(axis=1) - wins + theta.sum()
        if float(np.abs(gradient).max()) <= tol:
            return theta, step - 1, True
        weights = games * p * (1.0 - p)
        hessian = np.diag(weights.sum(axis=1)) - weights + 1.0  # the prior 0.5 * sum(theta)^2 adds ones
        try:
            theta = theta - np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return theta, step, False
    gradient = (games * expit(theta[:, None] - theta[None, :])).sum(axis=1) - wins + theta.sum()
    return theta, max_steps, bool(np.abs(gradient).max() <= tol)


def _log_likelihood(strengths: FloatArray, scores: FloatArray) -> float:
    gaps = strengths[:, None] - strengths[None, :]
    return float(np.sum(scores * log_expit(gaps)))


def _result(
    strengths: FloatArray,
    scores: FloatArray,
    iterations: int,
    converged: bool,
    method: str,
    prior: float,
) -> BTResult:
    # Softmax with the maximum subtracted so that large strengths cannot overflow.
    weights = np.exp(strengths - strengths.max())
    return BTResult(
        strengths=strengths,
        scores=weights / weights.sum(),
        iterations=iterations,
        converged=converged,
        method=method,
        prior=prior,
        log_likelihood=_log_likelihood(strengths, scores),
    )


def _ranks(strengths: FloatArray) -> IntArray:
    """Rank (1 = strongest) of every item in every row of a ``(B, K)`` array."""
    order = np.argsort(-strengths, axis=1, kind="stable")
    ranks = np.empty_like(order, dtype=np.int64)
    rows = np.arange(strengths.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, strengths.shape[1] + 1, dtype=np.int64)
    return ranks
