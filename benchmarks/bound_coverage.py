"""Coverage of the aggregates' mean interval and error rate of ``lower()``, by simulation.

What it measures, with the plugin's own code (``aggregate.mean_ci`` and ``compute_row``, and
the batch form of the same betting code, ``stats.betting.betting_intervals``):

1. For score distributions on a 0-2 rubric (heavy skew ``p = (.02, .08, .90)``, true mean
   1.88; symmetric ``p = (.25, .5, .25)``, mean 1; two-point ``p = (.5, 0, .5)``, mean 1) and
   a continuous 0-100 metric skewed to the top (``100 * Beta(8, 1)``, mean 88.9), and
   ``n = 5, 10, 20, 30, 100`` cases, ``REPLICATIONS`` samples each: how often the 95%
   interval covers the true mean (nominal: at least 95%), how often its lower end lies above
   the true mean (what ``lower(mean(...)) >= true mean`` passing would be; nominal: at most
   2.5%) and its upper end below it (at most 2.5%), and the mean width. For the betting
   interval (the default on a known scale) and the percentile bootstrap (the interval
   without a known scale, and the default before).
2. The gate itself: ``lower(mean(task_quality)) >= 1.88`` evaluated by ``compute_row`` on
   suites of 10 cases drawn from the heavy skew (true mean exactly 1.88): passes among 40
   suites (issue 23's target: at most 4) and among ``REPLICATIONS`` (nominal: at most 2.5%).
3. ``pass_rate``'s interval: the exact probability (binomial pmf, no simulation) that the
   lower end lies above the true rate, or the upper end below it, maximised over rates
   0.005-0.995, for the Clopper-Pearson interval the aggregates use and the Wilson interval
   they used before (nominal: at most 2.5% each).
4. The agreement gate's weighted-F1 interval (``stats.resampling.posterior_confusion_ci``
   with the gate's defaults: 1,000 draws, seed 0) against the percentile bootstrap it
   replaced, on a judge right 95%, 80% or 70% of the time (a wrong answer is one of the two
   other labels at random) with human labels skewed ``(.1, .2, .7)`` on 0-2, ``n = 4, 10,
   20, 50`` items: coverage of the population F1 and how often the lower bound lies above it
   (what ``ci_lower_bound: true`` passing a judge at its true F1 would be; nominal 2.5%).
5. With ``--e2e``: the same 40 suites written as YAML files with recorded scores and run
   through ``pytest --llmjudge`` in a subprocess; counts the ``lower(...)`` items that pass.

Seeded (``SEED``), so a run prints the same numbers every time.

Run: ``python benchmarks/bound_coverage.py [--e2e] [--replications N]``
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.stats.agreement import weighted_f1_from_confusion
from pytest_llmjudge.stats.betting import betting_intervals
from pytest_llmjudge.stats.proportion import clopper_pearson_interval, wilson_interval
from pytest_llmjudge.stats.resampling import bootstrap_confusion_ci, posterior_confusion_ci
from pytest_llmjudge.suite.aggregate import ScoredValue, compute_row, mean_ci
from pytest_llmjudge.suite.expressions import parse_aggregate

REPLICATIONS = 2000
SIZES = (5, 10, 20, 30, 100)
SEED = 23
CONFIDENCE = 0.95
SUITES = 40
SUITE_CASES = 10

FloatArray = npt.NDArray[np.float64]
Sampler = Callable[[np.random.Generator, tuple[int, int]], FloatArray]


def _discrete(p: tuple[float, float, float]) -> Sampler:
    def draw(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
        return np.asarray(rng.choice([0.0, 1.0, 2.0], p=p, size=shape), dtype=float)

    return draw


def _beta_top(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    return np.asarray(100.0 * rng.beta(8.0, 1.0, size=shape), dtype=float)


# name -> (sampler, true mean, scale)
DISTRIBUTIONS: dict[str, tuple[Sampler, float, tuple[float, float]]] = {
    "skew .02/.08/.90 on 0-2": (_discrete((0.02, 0.08, 0.90)), 1.88, (0.0, 2.0)),
    "symmetric .25/.5/.25 on 0-2": (_discrete((0.25, 0.5, 0.25)), 1.0, (0.0, 2.0)),
    "two-point .5/0/.5 on 0-2": (_discrete((0.5, 0.0, 0.5)), 1.0, (0.0, 2.0)),
    "100*Beta(8,1) on 0-100": (_beta_top, 800.0 / 9.0, (0.0, 100.0)),
}


def _bootstrap(samples: FloatArray) -> tuple[FloatArray, FloatArray]:
    lows, highs = np.empty(len(samples)), np.empty(len(samples))
    for i, row in enumerate(samples):
        ci = mean_ci(row.tolist(), CONFIDENCE)  # no scale: the percentile bootstrap
        lows[i], highs[i] = ci if ci is not None else (row.mean(), row.mean())
    return lows, highs


def coverage_table(replications: int, bootstrap: bool) -> dict[str, float]:
    rng = np.random.default_rng(SEED)
    worst = {"betting_coverage": 1.0, "betting_lower_error": 0.0, "bootstrap_coverage": 1.0}
    header = f"{'distribution':<28} {'n':>4} {'method':<9} {'coverage':>9} {'lower>mu':>9} {'upper<mu':>9} {'width':>8}"
    print(f"{replications} replications per row; nominal: coverage >= {CONFIDENCE:.3f}, each side <= 0.025")
    print(header)
    for name, (draw, mu, (low, high)) in DISTRIBUTIONS.items():
        for n in SIZES:
            samples = draw(rng, (replications, n))
            methods = [("betting", betting_intervals(samples, low, high, confidence=CONFIDENCE))]
            if bootstrap:
                methods.append(("bootstrap", _bootstrap(samples)))
            for method, (lows, highs) in methods:
                covered = float(np.mean((lows <= mu) & (mu <= highs)))
                above = float(np.mean(lows > mu))
                below = float(np.mean(highs < mu))
                width = float(np.mean(highs - lows))
                print(f"{name:<28} {n:>4} {method:<9} {covered:>9.3f} {above:>9.3f} {below:>9.3f} {width:>8.3f}")
                if method == "betting":
                    worst["betting_coverage"] = min(worst["betting_coverage"], covered)
                    worst["betting_lower_error"] = max(worst["betting_lower_error"], above, below)
                else:
                    worst["bootstrap_coverage"] = min(worst["bootstrap_coverage"], covered)
    return worst


def pass_rate_table() -> dict[str, float]:
    from scipy import stats

    worst = {"clopper_pearson": 0.0, "wilson": 0.0}
    print(
        "\npass_rate interval: max over true rates 0.005-0.995 of P(lower > p) / P(upper < p), exact; nominal <= 0.025"
    )
    print(f"{'n':>4} {'Clopper-Pearson':>18} {'Wilson':>18}")
    rates = np.linspace(0.005, 0.995, 199)
    for n in SIZES:
        k = np.arange(n + 1)
        cells = []
        for name, interval in (("clopper_pearson", clopper_pearson_interval), ("wilson", wilson_interval)):
            bounds = np.array([interval(int(i), n) for i in k])
            pmf = stats.binom.pmf(k[np.newaxis, :], n, rates[:, np.newaxis])
            above = float((pmf * (bounds[:, 0] > rates[:, np.newaxis])).sum(axis=1).max())
            below = float((pmf * (bounds[:, 1] < rates[:, np.newaxis])).sum(axis=1).max())
            worst[name] = max(worst[name], above, below)
            cells.append(f"{above:.3f} / {below:.3f}")
        print(f"{n:>4} {cells[0]:>18} {cells[1]:>18}")
    return worst


F1_SIZES = (4, 10, 20, 50)
F1_ACCURACIES = (0.95, 0.8, 0.7)
F1_LABELS = (0.1, 0.2, 0.7)


def f1_table(replications: int) -> dict[str, float]:
    rng = np.random.default_rng(SEED + 3)
    worst = {"posterior": 0.0, "bootstrap": 0.0}
    print(f"\nweighted F1 interval, {replications} replications per row; nominal: coverage >= 0.950, lower>F1 <= 0.025")
    print(f"{'judge accuracy':<15} {'true F1':>7} {'n':>4} {'method':<9} {'coverage':>9} {'lower>F1':>9} {'width':>8}")
    for accuracy in F1_ACCURACIES:
        cells = np.where(np.eye(3, dtype=bool), accuracy, (1 - accuracy) / 2) * np.array(F1_LABELS)[:, np.newaxis]
        truth = float(weighted_f1_from_confusion(cells))
        for n in F1_SIZES:
            matrices = rng.multinomial(n, cells.ravel(), size=replications).reshape(replications, 3, 3)
            for method, interval in (("posterior", posterior_confusion_ci), ("bootstrap", bootstrap_confusion_ci)):
                bounds = np.array([interval(m, weighted_f1_from_confusion)[:2] for m in matrices])
                covered = float(np.mean((bounds[:, 0] <= truth) & (truth <= bounds[:, 1])))
                above = float(np.mean(bounds[:, 0] > truth))
                width = float(np.mean(bounds[:, 1] - bounds[:, 0]))
                print(f"{accuracy:<15} {truth:>7.3f} {n:>4} {method:<9} {covered:>9.3f} {above:>9.3f} {width:>8.3f}")
                worst[method] = max(worst[method], above)
    return worst


def _gate_passes(samples: FloatArray, scale: tuple[float, float] | None = (0.0, 2.0)) -> int:
    """``lower(mean(task_quality)) >= 1.88`` passes among the rows; ``scale=None`` is the bootstrap."""
    spec = parse_aggregate("lower(mean(task_quality)) >= 1.88")
    passes = 0
    for row in samples:
        values = [ScoredValue("hi", float(v), True) for v in row]
        passes += compute_row("hi", spec, values, scale=scale).passed
    return passes


def _suite_samples() -> FloatArray:
    draw = DISTRIBUTIONS["skew .02/.08/.90 on 0-2"][0]
    return draw(np.random.default_rng(SEED + 1), (SUITES, SUITE_CASES))


def end_to_end(samples: FloatArray) -> int:
    """Write one suite per sample and run them all through ``pytest --llmjudge``."""
    with tempfile.TemporaryDirectory() as directory:
        for index, row in enumerate(samples):
            cases = "\n".join(
                f'  - {{id: c{index}-{k}, language: hi, output: "x", recorded: {{task_quality: {int(v)}}}}}'
                for k, v in enumerate(row)
            )
            Path(directory, f"suite_{index:02d}.yaml").write_text(
                f"suite: s{index:02d}\ncases:\n{cases}\naggregate:\n  - lower(mean(task_quality)) >= 1.88\n",
                encoding="utf-8",
            )
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--llmjudge", "-q", "-p", "no:cacheprovider", "-k", "hi"],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
        )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    if "ERROR" in result.stdout:  # a row error would fail the item without testing the bound
        raise SystemExit(f"an aggregate row errored:\n{result.stdout}")
    passed = re.search(r"(\d+) passed", summary)
    failed = re.search(r"(\d+) failed", summary)
    total = (int(passed[1]) if passed else 0) + (int(failed[1]) if failed else 0)
    if total != len(samples):
        raise SystemExit(f"expected {len(samples)} aggregate items, pytest said: {summary}")
    print(f"end to end: pytest --llmjudge on {len(samples)} suite files: {summary}")
    return int(passed[1]) if passed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--replications", type=int, default=REPLICATIONS)
    parser.add_argument("--e2e", action="store_true", help="also run the 40 suites through pytest --llmjudge")
    parser.add_argument("--no-bootstrap", action="store_true", help="skip the (slow) bootstrap rows")
    parser.add_argument("--no-f1", action="store_true", help="skip the agreement gate's F1 interval")
    args = parser.parse_args()
    start = time.perf_counter()
    worst = coverage_table(args.replications, not args.no_bootstrap)

    suites = _suite_samples()
    in_40 = _gate_passes(suites)
    bootstrap_in_40 = _gate_passes(suites, scale=None)
    many = _discrete((0.02, 0.08, 0.90))(np.random.default_rng(SEED + 2), (args.replications, SUITE_CASES))
    rate = _gate_passes(many) / args.replications
    print(
        f"lower(mean(task_quality)) >= 1.88 at the true mean 1.88, {SUITE_CASES} cases, heavy skew: "
        f"passes {in_40} of {SUITES} suites (target <= 4); {rate:.4f} of {args.replications} (nominal <= 0.025); "
        f"with the bootstrap {bootstrap_in_40} of {SUITES}"
    )
    rates = pass_rate_table()
    f1 = None if args.no_f1 else f1_table(args.replications)
    e2e = end_to_end(suites) if args.e2e else None
    print(f"seconds={time.perf_counter() - start:.1f}")
    parts = [
        f"betting_min_coverage={worst['betting_coverage']:.3f}",
        f"betting_max_side_error={worst['betting_lower_error']:.3f}",
    ]
    if not args.no_bootstrap:
        parts.append(f"bootstrap_min_coverage={worst['bootstrap_coverage']:.3f}")
    parts += [
        f"gate_passes_of_40={in_40}",
        f"gate_pass_rate={rate:.4f}",
        f"bootstrap_gate_passes_of_40={bootstrap_in_40}",
    ]
    parts += [
        f"pass_rate_cp_max_side_error={rates['clopper_pearson']:.3f}",
        f"pass_rate_wilson_max_side_error={rates['wilson']:.3f}",
    ]
    if f1 is not None:
        parts += [
            f"f1_posterior_max_lower_error={f1['posterior']:.3f}",
            f"f1_bootstrap_max_lower_error={f1['bootstrap']:.3f}",
        ]
    if e2e is not None:
        parts.append(f"e2e_passes_of_40={e2e}")
    print(" ".join(parts))


if __name__ == "__main__":
    main()
