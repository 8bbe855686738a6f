"""Bias and coverage of the ``pass_at_k``/``pass_hat_k`` aggregates, by simulation.

What it measures, with the plugin's own code (``aggregate.pass_k_cases`` and
``compute_row`` for the rows, and the batch form of the same betting code,
``stats.betting.betting_intervals``, for the intervals of many rows at once):

A suite of ``m`` cases drawn from a population whose per-case pass probability ``p`` is
``Beta(a, b)``; each case judged ``n`` times, each judgment passing with its case's ``p``
(independently). The targets are the population's

    pass^k = E[p^k]            = prod_{j<k} (a + j) / (a + b + j)
    pass@k = 1 - E[(1 - p)^k]  = 1 - prod_{j<k} (b + j) / (a + b + j)

(moments of the Beta law). Per row of the table, ``REPLICATIONS`` suites:

* bias: the mean of the row values minus the target (the per-case estimators are unbiased,
  so this is simulation noise; the plug-in ``(c/n)^k`` for pass^k is shown beside it);
* coverage: how often the 95% interval holds the target (nominal: at least 95%), how often
  its lower end lies above the target (what ``lower(pass_hat_k(...)) >= target`` passing
  would be; nominal at most 2.5%) and its upper end below it (at most 2.5%);
* the mean lower bound, i.e. what a ``lower(...)`` gate can promise at that size.

Populations: "reliable" ``Beta(9, 1)`` (mean p 0.9, most cases pass nearly always), "flaky"
``Beta(2, 2)`` (mean 0.5, spread out), "two-point" ``Beta(0.2, 0.2)`` (cases pass almost
always or almost never). ``n = 3, 5`` repeats, ``k = 2`` and ``k = n``, ``m = 10, 30, 100``
cases. Also checks, once, that ``compute_row`` on the first simulated suite of each
setting gives the same value and interval as the batch code.

Seeded (``SEED``), so a run prints the same numbers every time.

Run: ``python benchmarks/pass_k_coverage.py [--replications N]``
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from pytest_llmjudge.stats.betting import betting_intervals
from pytest_llmjudge.stats.pass_k import pass_at_k, pass_hat_k
from pytest_llmjudge.suite.aggregate import ScoredValue, compute_row
from pytest_llmjudge.suite.expressions import parse_aggregate

REPLICATIONS = 2000
SEED = 30
POPULATIONS = {"reliable": (9.0, 1.0), "flaky": (2.0, 2.0), "two-point": (0.2, 0.2)}
REPEATS = (3, 5)
CASES = (10, 30, 100)


def target(stat: str, a: float, b: float, k: int) -> float:
    if stat == "pass_hat_k":
        return math.prod((a + j) / (a + b + j) for j in range(k))
    return 1.0 - math.prod((b + j) / (a + b + j) for j in range(k))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=REPLICATIONS)
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    print(
        f"{'population':<10} {'stat':<10} {'n':>2} {'k':>2} {'m':>4} {'target':>7} {'bias':>8} {'plug-in':>8} "
        f"{'cover':>6} {'low>t':>6} {'up<t':>6} {'mean low':>8}"
    )
    worst_cover, worst_side, worst_bias, mismatches = 1.0, 0.0, 0.0, 0
    for name, (a, b) in POPULATIONS.items():
        for n in REPEATS:
            for k in sorted({2, n}):
                for m in CASES:
                    p = rng.beta(a, b, size=(args.replications, m))
                    passing = rng.binomial(n, p)  # c per case
                    for stat, estimator in (("pass_hat_k", pass_hat_k), ("pass_at_k", pass_at_k)):
                        table = np.array([estimator(n, c, k) for c in range(n + 1)])
                        estimates = table[passing]
                        values = estimates.mean(axis=1)
                        lows, highs = betting_intervals(estimates, 0.0, 1.0, confidence=0.95)
                        truth = target(stat, a, b, k)
                        cover = float(np.mean((lows <= truth) & (truth <= highs)))
                        low_above = float(np.mean(lows > truth))
                        high_below = float(np.mean(highs < truth))
                        bias = float(values.mean() - truth)
                        plug = (passing / n) ** k if stat == "pass_hat_k" else 1 - (1 - passing / n) ** k
                        plug_bias = float(plug.mean() - truth)
                        worst_cover = min(worst_cover, cover)
                        worst_side = max(worst_side, low_above, high_below)
                        worst_bias = max(worst_bias, abs(bias))
                        mismatches += _row_differs(stat, n, k, passing[0], values[0], lows[0], highs[0])
                        print(
                            f"{name:<10} {stat:<10} {n:>2} {k:>2} {m:>4} {truth:>7.4f} {bias:>+8.4f} {plug_bias:>+8.4f} "
                            f"{cover:>6.3f} {low_above:>6.3f} {high_below:>6.3f} {float(lows.mean()):>8.3f}"
                        )
    print(f"({args.replications} replications per row, seed {SEED}, {time.perf_counter() - started:.0f} s)")
    print(
        f"min_coverage={worst_cover:.3f} max_side_error={worst_side:.3f} max_abs_bias={worst_bias:.4f} "
        f"compute_row_mismatches={mismatches}"
    )


def _row_differs(stat: str, n: int, k: int, passing: np.ndarray, value: float, low: float, high: float) -> int:
    """1 when ``compute_row`` on one simulated suite disagrees with the batch computation."""
    values = []
    for index, c in enumerate(passing):
        samples = tuple([2.0] * int(c) + [0.0] * (n - int(c)))
        values.append(ScoredValue("xx", sum(samples) / n, True, samples=samples, case=str(index)))
    row = compute_row("xx", parse_aggregate(f"{stat}(q >= 1, k={k}) >= 0"), values)
    same = row.value is not None and math.isclose(row.value, value, abs_tol=1e-12)
    same = same and row.ci_low is not None and math.isclose(row.ci_low, low, abs_tol=1e-9)
    same = same and row.ci_high is not None and math.isclose(row.ci_high, high, abs_tol=1e-9)
    return 0 if same else 1


if __name__ == "__main__":
    main()
