"""Agreement gates in the release family, by simulation with the plugin's own code.

A gate that joined the release family (``gate: {family: release}`` or
``--llmjudge-family-include=gates``) passes its F1 criterion only when its p-value of H0
"weighted F1 < threshold", corrected with the family's other comparisons, is ``<= alpha``.
That p-value is the posterior probability that F1 is at most the threshold, read off the
Dirichlet posterior of the confusion cells with Perks' prior
(``stats.resampling.posterior_confusion_pvalue``, called by ``calibration.agreement_gate.release_pvalue``
with 20,000 draws): a Bayesian tail probability, not an exact test. This script measures how
often it wrongly shows F1 above the threshold, which is its type-I error.

The data. A judge and the humans' aggregate label on a 0-2 scale: the human label has
shares ``labels`` ((0.1, 0.2, 0.7) skewed, as in PARIKSHA-like data, or (1/3, 1/3, 1/3));
the judge gives the human label with probability ``accuracy`` and either other label
otherwise. The gate's threshold is set to the **population** weighted F1 of that joint
distribution (the statistic the posterior is about), so H0 holds at its boundary, the
hardest case: every pass is a false pass.

What it prints, measured next to nominal, with replications:

1. one gate at its threshold: the share of p-values ``<= 0.05`` and ``<= 0.05 / 32`` (the
   level Holm's first step asks of each of 32 comparisons), per judge accuracy, label shares
   and number of items (30, 100, 300);
2. the family: 8 gates at their thresholds (skewed labels, accuracy 0.8, 100 items each)
   joined with 24 unchanged regression items (``verdict_calibration.release``, 20 cases per
   language): the share of runs with a false pass or a false regression failure, Holm
   (``regression.compare.decide_joined``), nominal 0.05; and beside it the same 8 gates with
   the plain point rule ``F1 >= threshold`` (about half pass falsely each);
3. power: 8 gates whose population F1 is 0.1 above the threshold, at 100 and 300 items: the
   share of gates that pass in the family.

Run: ``python benchmarks/family_gates.py`` (about ten minutes on 2 loaded cores; ``--reps
500`` for a quick look; ``--prior 0.3333`` for a stronger prior than the gate's). The last line is ``gate_type1_max_005=<share>
gate_type1_max_family_level=<share> fwer_family=<share> power_100=<share> power_300=<share>``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_calibration import KEEP, release, row  # noqa: E402

from pytest_llmjudge.calibration.agreement_gate import RELEASE_DRAWS  # noqa: E402
from pytest_llmjudge.regression.compare import RegressionSettings, decide_joined  # noqa: E402
from pytest_llmjudge.stats.agreement import weighted_f1_from_confusion  # noqa: E402
from pytest_llmjudge.stats.resampling import posterior_confusion_pvalue  # noqa: E402

ALPHA = 0.05
FAMILY = 32  # 24 regression items + 8 gates
LABELS = {"skewed": (0.1, 0.2, 0.7), "even": (1 / 3, 1 / 3, 1 / 3)}


def cells(accuracy: float, labels: tuple[float, ...]) -> np.ndarray:
    k = len(labels)
    off = (1.0 - accuracy) / (k - 1)
    return np.where(np.eye(k, dtype=bool), accuracy, off) * np.array(labels)[:, np.newaxis]


def population_f1(probabilities: np.ndarray) -> float:
    return float(weighted_f1_from_confusion(probabilities[np.newaxis])[0])


PRIOR: float | None = None
"""``--prior``: the Dirichlet concentration per cell (None: Perks' 1/K^2, what the gate uses)."""


def gate_pvalue(rng: np.random.Generator, probabilities: np.ndarray, n: int, threshold: float, seed: int) -> float:
    k = probabilities.shape[0]
    confusion = rng.multinomial(n, probabilities.ravel()).reshape(k, k)
    return posterior_confusion_pvalue(
        confusion, weighted_f1_from_confusion, threshold, n_draws=RELEASE_DRAWS, rng=seed, prior=PRIOR
    )


def one_gate(reps: int, seed: int) -> tuple[float, float]:
    print(f"\n1. one gate whose population F1 equals its threshold ({RELEASE_DRAWS} posterior draws per p-value)")
    print(
        f"  {'judge accuracy':<15}{'labels':<8}{'F1':>6}{'n':>5}   p <= 0.05 (nominal 0.05)   p <= 0.05/32 (nominal 0.0016)"
    )
    worst = worst_family = 0.0
    rng = np.random.default_rng(seed)
    for accuracy in (0.6, 0.8, 0.95):
        for name, labels in LABELS.items():
            probabilities = cells(accuracy, labels)
            threshold = population_f1(probabilities)
            for n in (30, 100, 300):
                ps = np.array([gate_pvalue(rng, probabilities, n, threshold, r) for r in range(reps)])
                at_05 = float(np.mean(ps <= ALPHA))
                at_family = float(np.mean(ps <= ALPHA / FAMILY))
                worst, worst_family = max(worst, at_05), max(worst_family, at_family)
                se05 = math.sqrt(max(at_05 * (1 - at_05), 1e-12) / reps)
                sef = math.sqrt(max(at_family * (1 - at_family), 1e-12) / reps)
                print(
                    f"  {accuracy:<15}{name:<8}{threshold:6.3f}{n:5d}   {at_05:.4f} ± {se05:.4f}"
                    f"            {at_family:.4f} ± {sef:.4f}   ({reps} gates)"
                )
    return worst, worst_family


def family(sims: int, seed: int, shift: float = 0.0, n: int = 100) -> tuple[float, float, float]:
    """(share of runs with a false result, share of runs where a gate passes by the point rule,
    share of gates that pass in the family)."""
    rng = np.random.default_rng(seed)
    probabilities = cells(0.8, LABELS["skewed"])
    threshold = population_f1(probabilities) - shift
    errors = point_errors = passes = 0
    for run in range(sims):
        measured = release(rng, 20, KEEP, RegressionSettings())
        raw: list[float | None] = []
        point = False
        for gate in range(8):
            k = probabilities.shape[0]
            confusion = rng.multinomial(n, probabilities.ravel()).reshape(k, k)
            point |= population_f1(confusion.astype(float)) >= threshold
            raw.append(
                posterior_confusion_pvalue(
                    confusion,
                    weighted_f1_from_confusion,
                    threshold,
                    n_draws=RELEASE_DRAWS,
                    rng=run * 8 + gate,
                    prior=PRIOR,
                )
            )
        decided = decide_joined(measured, raw, bounds=False)
        gate_passes = [p is not None and p <= ALPHA for p in decided.joined_adjusted]
        passes += sum(gate_passes)
        errors += any(r.fails_run for r in decided.results) or any(gate_passes)
        point_errors += point
    return errors / sims, point_errors / sims, passes / (8 * sims)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="gates per cell of part 1 (default 2000)")
    parser.add_argument("--sims", type=int, default=400, help="runs per family cell (default 400)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--prior", type=float, default=None, help="Dirichlet concentration per cell (default Perks' 1/K^2, the gate's)"
    )
    args = parser.parse_args()
    global PRIOR
    PRIOR = args.prior
    started = time.perf_counter()
    print("agreement gates in the release family: measured share ± binomial standard error (replications)")
    worst, worst_family = one_gate(args.reps, args.seed)
    fwer, point, _ = family(args.sims, args.seed + 1)
    print("\n2. 8 gates at their thresholds (accuracy 0.8, skewed labels, 100 items) + 24 unchanged regression items")
    row("runs with a false pass or a false failure, Holm over 32", "<= 0.050", fwer, args.sims)
    row("  the same 8 gates by the point rule F1 >= threshold alone", "-", point, args.sims)
    print("\n3. power: 8 gates whose population F1 is 0.1 above the threshold, in the 32-item family")
    _, _, power_100 = family(args.sims // 2, args.seed + 2, shift=0.1, n=100)
    _, _, power_300 = family(args.sims // 2, args.seed + 3, shift=0.1, n=300)
    row("share of gates that pass, 100 items", "-", power_100, args.sims // 2 * 8)
    row("share of gates that pass, 300 items", "-", power_300, args.sims // 2 * 8)
    print(f"\nseconds={time.perf_counter() - started:.0f}")
    print(
        f"gate_type1_max_005={worst:.4f} gate_type1_max_family_level={worst_family:.4f} fwer_family={fwer:.3f} "
        f"power_100={power_100:.3f} power_300={power_300:.3f}"
    )


if __name__ == "__main__":
    main()
