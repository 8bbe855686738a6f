"""Aggregate bound checks in the release family, by simulation with the plugin's own code.

A release gate of 24 unchanged regression items (8 languages x 3 metrics, 20 cases per
language, ``verdict_calibration.release``) plus ``k`` aggregate rows
``lower(mean(task_quality)) >= t`` that joined the family (``family: release``). Each row's
true mean is exactly ``t`` (its null ``mean <= t`` holds at the boundary, the hardest case),
so a row that passes is a false pass, as a regression item that fails is a false failure.
The family-wise error is the share of runs with at least one of either. Every number comes
from the functions the items call: ``regression.compare.measure`` and ``decide_joined``
(Holm over Tarone's K, alpha 0.05) and ``stats.betting.betting_pvalue`` (bets tuned to
``alpha / (24 + k)``, the plugin's ``per_item_level``).

Row scores on 0-2: ``skew`` P = (0.02, 0.08, 0.90), mean 1.88 (issue 23's heavy skew), and
``mid`` P = (0.10, 0.30, 0.60), mean 1.5. Beside the family, the same rows decided alone
(each by its own 97.5% lower bound, as without ``family: release``): the chance that some row
passes falsely is then up to ``1 - 0.975**k``. Power: 8 rows of 100 cases whose true mean is
0.1 (skew) or 0.15 and 0.3 (mid) above ``t``: the share of rows that pass.

Run: ``python benchmarks/family_aggregates.py`` (about two minutes on 2 loaded cores;
``--sims 100`` for a quick look). The last line is ``fwer_family_k8_skew_n10=<share> fwer_alone_k8_skew_n10=<share>``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_calibration import KEEP, release, row  # noqa: E402

from pytest_llmjudge.regression.compare import RegressionSettings, decide_joined  # noqa: E402
from pytest_llmjudge.stats.betting import betting_pvalue  # noqa: E402
from pytest_llmjudge.stats.multiplicity import per_item_level  # noqa: E402

SHAPES = {"skew": (0.02, 0.08, 0.90), "mid": (0.10, 0.30, 0.60)}
ALPHA = 0.05


def cell(shape: str, k: int, n_rows: int, sims: int, seed: int, shift: float = 0.0) -> tuple[float, float, float]:
    """(share of runs with a false result in the family, share with a falsely passing row alone,
    share with a falsely passing row in the family); with ``shift`` the shares of rows that pass."""
    rng = np.random.default_rng(seed)
    probs = np.array(SHAPES[shape])
    mean = float(probs @ np.arange(3))
    threshold = mean - shift
    design = per_item_level(ALPHA, 24 + k, "holm")
    family_errors = alone_errors = row_errors = 0
    for _ in range(sims):
        measured = release(rng, 20, KEEP, RegressionSettings())
        rows = [rng.choice(3, n_rows, p=probs).astype(float) for _ in range(k)]
        raw = [betting_pvalue(r, 0, 2, threshold, design_level=design) for r in rows]
        decided = decide_joined(measured, raw, bounds=False)
        passes = [p is not None and p <= ALPHA for p in decided.joined_adjusted]
        failed = any(r.fails_run for r in decided.results)
        if shift == 0.0:
            family_errors += failed or any(passes)
            row_errors += any(passes)
            alone_errors += any(betting_pvalue(r, 0, 2, threshold) <= 0.025 for r in rows)
        else:  # power: the share of rows that pass
            family_errors += sum(passes)
            alone_errors += sum(betting_pvalue(r, 0, 2, threshold) <= 0.025 for r in rows)
    total = sims if shift == 0.0 else sims * k
    return family_errors / total, alone_errors / total, row_errors / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000, help="simulated runs per cell (default 1000)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    started = time.perf_counter()
    print("aggregate rows in the release family: measured share ± binomial standard error (replications)")
    last: dict[str, float] = {}
    for index, (shape, k, n_rows) in enumerate(
        [("skew", 3, 10), ("skew", 8, 10), ("skew", 8, 30), ("mid", 8, 10), ("mid", 8, 30)]
    ):
        family, alone, rows_in = cell(shape, k, n_rows, args.sims, args.seed + index)
        print(f"\n{k} rows at the threshold ({shape}, {n_rows} cases per row) + 24 unchanged regression items")
        row("family-wise error, rows in the family (Holm)", "<= 0.050", family, args.sims)
        row("  of which some row passes falsely", "<= 0.050", rows_in, args.sims)
        row("some row passes falsely, rows decided alone", f"<= {1 - 0.975**k:.3f}", alone, args.sims)
        last[f"{shape}_k{k}_n{n_rows}"] = family
        last[f"alone_{shape}_k{k}_n{n_rows}"] = alone
    for shape, n_rows, shift in (("skew", 100, 0.1), ("mid", 100, 0.15), ("mid", 100, 0.3)):
        family, alone, _ = cell(shape, 8, n_rows, args.sims // 2, args.seed + 10, shift=shift)
        print(f"\npower: 8 rows whose true mean is {shift} above the threshold ({shape}, {n_rows} cases per row)")
        print(f"  share of rows that pass, in the family: {family:.3f}, alone: {alone:.3f} ({args.sims // 2 * 8} rows)")
    print(f"\nseconds={time.perf_counter() - started:.0f}")
    print(f"fwer_family_k8_skew_n10={last['skew_k8_n10']:.3f} fwer_alone_k8_skew_n10={last['alone_skew_k8_n10']:.3f}")


if __name__ == "__main__":
    main()
