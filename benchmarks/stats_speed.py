"""Speed of the paired bootstrap used by regression gating, against SciPy's.

Both compute the percentile interval of the mean paired difference ``candidate - baseline``
on the same 10,000 cases with 1,000 resamples: ours with
:func:`pytest_llmjudge.stats.paired.paired_bootstrap`, SciPy's with
``scipy.stats.bootstrap((candidate, baseline), paired=True, vectorized=True,
method="percentile")``. Each is run once to warm up, then three times, alternating so that
background load hits both alike; the best time of each counts. The last line printed is
``bootstrap_vs_scipy=<ours / scipy>`` (below 1.0 means ours is faster).

Run: ``python benchmarks/stats_speed.py``
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy import stats

from pytest_llmjudge.stats.paired import paired_bootstrap

N_CASES = 10_000
RESAMPLES = 1_000
REPEATS = 3
SEED = 0

FloatArray = npt.NDArray[np.float64]


def make_scores(n: int, seed: int) -> tuple[FloatArray, FloatArray]:
    """Judge-like scores in [0, 1]: a per-case difficulty shared by both systems, plus
    noise, with the candidate 0.01 worse on average."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(4.0, 2.0, size=n)
    baseline = np.clip(difficulty + rng.normal(0.0, 0.1, size=n), 0.0, 1.0)
    candidate = np.clip(difficulty - 0.01 + rng.normal(0.0, 0.1, size=n), 0.0, 1.0)
    return candidate, baseline


def mean_difference(cand: FloatArray, base: FloatArray, axis: int = -1) -> FloatArray:
    diff: FloatArray = np.mean(cand, axis=axis) - np.mean(base, axis=axis)
    return diff


def scipy_bootstrap(cand: FloatArray, base: FloatArray) -> tuple[float, float]:
    # SciPy 1.15 renamed ``random_state`` to ``rng``; accept either.
    params = inspect.signature(stats.bootstrap).parameters
    seed_arg = "rng" if "rng" in params else "random_state"
    res = stats.bootstrap(
        (cand, base),
        mean_difference,
        paired=True,
        vectorized=True,
        n_resamples=RESAMPLES,
        method="percentile",
        confidence_level=0.95,
        **{seed_arg: np.random.default_rng(SEED)},
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def ours_bootstrap(cand: FloatArray, base: FloatArray) -> tuple[float, float]:
    res = paired_bootstrap(cand, base, resamples=RESAMPLES, confidence=0.95, seed=SEED)
    return res.ci_low, res.ci_high


def timed(func: Callable[[], tuple[float, float]]) -> tuple[float, tuple[float, float]]:
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def main() -> None:
    cand, base = make_scores(N_CASES, SEED)
    runners: dict[str, Callable[[], tuple[float, float]]] = {
        "ours": lambda: ours_bootstrap(cand, base),
        "scipy": lambda: scipy_bootstrap(cand, base),
    }
    for run in runners.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runners}
    intervals: dict[str, tuple[float, float]] = {}
    for _ in range(REPEATS):
        for name, run in runners.items():
            elapsed, intervals[name] = timed(run)
            times[name].append(elapsed)

    print(f"cases={N_CASES} resamples={RESAMPLES} repeats={REPEATS} (best of each)")
    print(f"observed mean difference={float(np.mean(cand - base)):+.5f}")
    for name in runners:
        low, high = intervals[name]
        runs = ", ".join(f"{t * 1e3:.1f}" for t in times[name])
        print(f"{name:>5}: best {min(times[name]) * 1e3:7.1f} ms  (runs: {runs} ms)  95% CI [{low:+.5f}, {high:+.5f}]")
    print(f"bootstrap_vs_scipy={min(times['ours']) / min(times['scipy']):.3f}")


if __name__ == "__main__":
    main()
