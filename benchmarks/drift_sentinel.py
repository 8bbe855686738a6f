"""The drift sentinel's agreement check, simulated: false alarms and power (``calibration/drift/``).

A calibration group of 200 items on the scale 0-2 (human labels in the shares 0.2/0.3/0.5).
The certified judge gives its label (correct with probability 0.85, else one of the other
labels) and the sentinel certifies the weighted F1 on its seeded sample. Each later run
re-asks the same sample; the judge's sampling flips an item's label with probability
``flip`` (a temperature-0 judge is not fully deterministic). A *drifted* judge in addition
answers the top label on a share ``drop`` of the items (the high-score bias a model swap
often brings). The run fails when certified F1 - fresh F1 > tolerance (``drift.decide``).

Prints, per (sample, tolerance, flip, drop): the failure rate over the replications:
with ``drop = 0`` it is the false-alarm rate, otherwise the power. Rows marked ``default``
use ``DriftConfig``'s defaults (sample 50, tolerance 0.15: chosen from this table, since
sample 20 / tolerance 0.1 false-alarmed on 29% of runs for a judge that flips 10% of labels).

    python benchmarks/drift_sentinel.py [--replications 2000]
"""

from __future__ import annotations

import argparse

import numpy as np

from pytest_llmjudge.calibration.drift import Certified, decide, drift_sample, sample_agreement
from pytest_llmjudge.suite.schema import DriftConfig

SCALE = (0, 1, 2)
IDENTITY = {"served_model": "m", "rubric_version": "r"}


def judge_labels(rng: np.random.Generator, truth: np.ndarray, accuracy: float) -> np.ndarray:
    wrong = rng.random(truth.size) > accuracy
    other = (truth + rng.integers(1, 3, truth.size)) % 3
    return np.where(wrong, other, truth)


def reasked(rng: np.random.Generator, labels: np.ndarray, flip: float, drop: float) -> np.ndarray:
    flipped = np.where(rng.random(labels.size) < flip, (labels + rng.integers(1, 3, labels.size)) % 3, labels)
    return np.where(rng.random(labels.size) < drop, 2, flipped)


def failure_rate(sample: int, tolerance: float, flip: float, drop: float, replications: int) -> float:
    config = DriftConfig(sample=sample, tolerance=tolerance, seed=0)
    rng = np.random.default_rng(12345)
    failures = 0
    for _ in range(replications):
        truth = rng.choice(3, size=200, p=[0.2, 0.3, 0.5])
        certified_labels = judge_labels(rng, truth, 0.85)
        chosen = drift_sample(truth.size, config)
        human = truth[chosen].tolist()
        before = sample_agreement(human, certified_labels[chosen].astype(float).tolist(), SCALE)
        after = sample_agreement(
            human, reasked(rng, certified_labels, flip, drop)[chosen].astype(float).tolist(), SCALE
        )
        assert before is not None
        certified = Certified("j", "fr", "m", IDENTITY, before, tuple(map(str, chosen)), "")
        verdict = decide(config, "j", certified, IDENTITY, IDENTITY, IDENTITY, after)
        failures += verdict.problem is not None
    return failures / replications


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=2000)
    args = parser.parse_args()
    print(f"{'sample':>6} {'tol':>5} {'flip':>5} {'drop':>5}  fail rate  ({args.replications} replications)")
    defaults = DriftConfig()
    for sample in (20, 50):
        for tolerance in (0.1, 0.15):
            for flip in (0.0, 0.05, 0.1):
                for drop in (0.0, 0.2, 0.4):
                    rate = failure_rate(sample, tolerance, flip, drop, args.replications)
                    kind = "false alarms" if drop == 0 else "power"
                    if (sample, tolerance) == (defaults.sample, defaults.tolerance):
                        kind += " (default)"
                    print(f"{sample:>6} {tolerance:>5} {flip:>5} {drop:>5}  {rate:9.3f}  {kind}")


if __name__ == "__main__":
    main()
