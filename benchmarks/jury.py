"""A jury's choice per language, simulated with the plugin's code (``calibration/jury.py``).

Per replication: ``items`` calibration items on the scale 0-2 (human label shares
0.2/0.3/0.5, three annotators who agree); three judges that give the human label with
probability 0.90, 0.80 and 0.70 and otherwise another label (independent errors), or, with
``--correlated``, the two weaker ones wrong on the same items. Each judge's gate (threshold
0.7, the plugin's ``evaluate_gate``) and the jury (``evaluate_jury``) are computed on the
calibration items; the chosen verdict is then scored on 1000 fresh items from the same
judges. Prints, per ``combine``: how often the chosen judge is the truly best one (for
``best``), and the mean weighted F1 on the fresh items of each way of combining, with the
effective committee size.

    python benchmarks/jury.py [--replications 300] [--items 40] [--correlated]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from pytest_llmjudge.calibration.agreement_gate import GateOptions, evaluate_gate
from pytest_llmjudge.calibration.jury import JuryMember, evaluate_jury
from pytest_llmjudge.calibration.schema import JuryConfig
from pytest_llmjudge.stats.agreement import weighted_f1
from pytest_llmjudge.stats.committee import combine_scores
from pytest_llmjudge.suite.schema import JudgeConfig

SCALE = (0, 1, 2)
ACCURACY = {"a": 0.9, "b": 0.8, "c": 0.7}


def judged(rng: np.random.Generator, truth: np.ndarray, correlated: bool) -> dict[str, np.ndarray]:
    shared = rng.random(truth.size)
    out = {}
    for name, accuracy in ACCURACY.items():
        draw = shared if correlated and name != "a" else rng.random(truth.size)
        wrong = draw > accuracy
        out[name] = np.where(wrong, (truth + rng.integers(1, 3, truth.size)) % 3, truth).astype(float)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=300)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--correlated", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    jury = JuryConfig(judges=[JudgeConfig(model=name) for name in ACCURACY])
    options = GateOptions(threshold=0.7, min_items=10, resamples=200)
    picked_best = 0
    fresh_f1: dict[str, list[float]] = {"best": [], "majority": [], "mean": [], "weighted": []}
    sizes: list[float] = []
    for _ in range(args.replications):
        truth = rng.choice(3, size=args.items, p=[0.2, 0.3, 0.5])
        human = np.repeat(truth[:, None], 3, axis=1).astype(float)
        scores = judged(rng, truth, args.correlated)
        members = [
            JuryMember(name, evaluate_gate(human, scores[name], SCALE, options), tuple(scores[name]), args.items, 0)
            for name in ACCURACY
        ]
        result = evaluate_jury(jury, "xx", "m", members, truth.tolist(), SCALE, 0.7)
        picked_best += result.chosen == "a"
        if result.effective_size is not None:
            sizes.append(result.effective_size)
        fresh_truth = rng.choice(3, size=1000, p=[0.2, 0.3, 0.5])
        fresh = {name: list(values) for name, values in judged(rng, fresh_truth, args.correlated).items()}
        weights = {m.label: m.f1 or 0.0 for m in members}
        if result.chosen is not None:
            fresh_f1["best"].append(weighted_f1(fresh_truth, np.array(fresh[result.chosen]), labels=list(SCALE)))
        for how in ("majority", "mean", "weighted"):
            combined = np.array(combine_scores(fresh, how, weights, SCALE))
            fresh_f1[how].append(weighted_f1(fresh_truth, combined, labels=list(SCALE)))
    print(f"{args.replications} replications, {args.items} calibration items, judges right {ACCURACY}")
    print(f"errors {'correlated (b, c wrong together)' if args.correlated else 'independent'}")
    print(f"best: chose the most accurate judge in {picked_best / args.replications:.3f} of replications")
    for how, values in fresh_f1.items():
        mean = sum(values) / len(values) if values else math.nan
        print(f"  {how:<9} weighted F1 on fresh items {mean:.3f}")
    print(f"effective committee size (3 judges): mean {np.mean(sizes):.2f}")


if __name__ == "__main__":
    main()
