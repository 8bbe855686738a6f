"""Coverage of the human-scale change a regression item reports (``regression/human.py``).

Synthetic paired data on a 0-2 scale, N paired cases per comparison. Per case a true human
score of the baseline ``h_b`` (0, 1, 2 with probabilities 0.2, 0.3, 0.5); the candidate's
``h_c`` drops by one point with probability ``p_drop`` (clipped at 0). The judge sees the human
score with a bias (+0.5, rounded and clipped: LLM judges score high) and noise (one point up or
down with probability 0.25 each). The truth is ``mean_N(h_c - h_b)``, the mean human change over
the N pairs (a finite population); each replication labels a simple random sample of n pairs on
both sides and computes, with the plugin's own code, the 95% interval of:

* ``ppi++``: what the item reports (PPI++, Student t with n - 1 df, clipped to [-2, 2]);
* ``human-only``: the mean of the n labelled differences with the same t interval;

and prints nominal (0.95) vs measured coverage and the mean width relative to human-only.
The population is redrawn every replication. ``--no-floor`` drops the small-sample
residual-variance floor, to show why it is there (pairs that mostly did not change give
samples of n identical differences and a point interval).

    python benchmarks/ppi_regression_coverage.py                # 2000 replications per cell
    python benchmarks/ppi_regression_coverage.py --no-floor
"""

from __future__ import annotations

import argparse

import numpy as np

from pytest_llmjudge.regression.human import human_change


def _population(rng: np.random.Generator, size: int, p_drop: float) -> tuple[np.ndarray, ...]:
    base_h = rng.choice([0.0, 1.0, 2.0], size=size, p=[0.2, 0.3, 0.5])
    cand_h = np.clip(base_h - (rng.random(size) < p_drop), 0, 2)

    def judge(h: np.ndarray) -> np.ndarray:
        noise = rng.choice([-1.0, 0.0, 1.0], size=size, p=[0.25, 0.5, 0.25])
        return np.clip(np.round(h + 0.5 + noise), 0, 2)

    return base_h, cand_h, judge(base_h), judge(cand_h)


def run(replications: int, seed: int, floor: bool) -> None:
    rng = np.random.default_rng(seed)
    coverages: list[float] = []
    print(f"{'N':>4} {'n':>4} {'p_drop':>6}  {'ppi++ cover':>11} {'human-only cover':>16}  {'width ppi/human':>15}")
    for size in (40, 120):
        for n in (5, 10, 20, 60):
            if n > size // 2:
                continue
            for p_drop in (0.1, 0.4):
                covered = {"ppi": 0, "human": 0}
                widths: list[float] = []
                counted = 0
                for _ in range(replications):
                    base_h, cand_h, base_j, cand_j = _population(rng, size, p_drop)
                    truth = float(np.mean(cand_h - base_h))
                    ids = [f"c{i}" for i in range(size)]
                    chosen = rng.choice(size, n, replace=False)
                    result = human_change(
                        dict(zip(ids, cand_j.tolist(), strict=True)),
                        dict(zip(ids, base_j.tolist(), strict=True)),
                        {ids[i]: float(cand_h[i]) for i in chosen},
                        {ids[i]: float(base_h[i]) for i in chosen},
                        scale=(0.0, 2.0),
                        floor=floor,
                    )
                    assert result is not None and result.low is not None and result.high is not None
                    # Human-only: lambda 0, the same t interval, computed from the same differences.
                    only = human_change(
                        {ids[i]: 0.0 for i in range(size)},
                        {ids[i]: 0.0 for i in range(size)},
                        {ids[i]: float(cand_h[i]) for i in chosen},
                        {ids[i]: float(base_h[i]) for i in chosen},
                        scale=(0.0, 2.0),
                        floor=floor,
                    )
                    assert only is not None and only.low is not None and only.high is not None
                    counted += 1
                    covered["ppi"] += result.low <= truth <= result.high
                    covered["human"] += only.low <= truth <= only.high
                    if only.high > only.low:
                        widths.append((result.high - result.low) / (only.high - only.low))
                coverages.append(covered["ppi"] / counted)
                print(
                    f"{size:>4} {n:>4} {p_drop:>6.1f}  {covered['ppi'] / counted:>11.3f} "
                    f"{covered['human'] / counted:>16.3f}  {float(np.mean(widths)):>15.3f}"
                )
    print(f"nominal coverage 0.95; {replications} replications per row, seed {seed}, floor {floor}")
    print(f"min_coverage={min(coverages):.3f} max_coverage={max(coverages):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-floor", action="store_true", help="without the residual-variance floor")
    args = parser.parse_args()
    run(args.replications, args.seed, not args.no_floor)


if __name__ == "__main__":
    main()
