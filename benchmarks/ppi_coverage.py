"""Coverage of the prediction-powered human mean (``human_mean``) on real judge/human data.

For each language x metric of the PARIKSHA data (GPT-4's recorded scores as the judge, the
native speakers' labels aggregated per item as the calibration gate does, METAL's majority
then rounded mean), the truth is the mean aggregated human label over all N items. Each
replication labels a simple random sample of ``fraction * N`` items and computes, with the
plugin's own code (``stats/prediction_powered.py``):

* PPI++ (power-tuned lambda), PPI (lambda = 1) and the human-only CLT interval (95%);
* whether each covers the truth (nominal 0.95), and the mean width relative to human-only;
* the reviewer-style check ``lower(human_mean(m)) >= truth + 0.3``: how often it fails
  (it should almost always fail: the estimate is not inflated like the judge's mean);
* the same check on the judge's own mean (``mean(m) >= truth + 0.3`` passes when the judge
  is that biased).

Rows with fewer than ``MIN_LABELS`` labelled items are reported by ``human_mean`` as an
error, never a pass; the coverage here is of the estimator itself, at every size.

Data: the shipped subset (``example_suites/data/pariksha``, 50 items per language) and, when
present, the full release at ``--release`` (default ``/work/shared/data/pariksha``;
skipped if absent), read with ``scripts/build_pariksha_subset.py``'s loaders (every item
with a GPT-4 score on all three metrics and at least one annotator).

    python benchmarks/ppi_coverage.py                 # 300 replications per cell
    python benchmarks/ppi_coverage.py --replications 1000 --data subset
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pytest_llmjudge.calibration.correction import fit_correction
from pytest_llmjudge.stats.annotators import aggregate_labels
from pytest_llmjudge.stats.prediction_powered import ppi_mean

ROOT = Path(__file__).resolve().parents[1]
SUBSET = ROOT / "example_suites" / "data" / "pariksha"
RELEASE = Path("/work/shared/data/pariksha")
METRICS = ("task_quality", "linguistic_acceptability", "hallucinations")
SCALES = {"task_quality": (0.0, 2.0), "linguistic_acceptability": (0.0, 2.0), "hallucinations": (0.0, 1.0)}
FRACTIONS = (0.1, 0.2, 0.4)
MIN_LABELS = 5
MARGIN = 0.3
STUDENT = True

Cell = tuple[list[float], list[float]]  # (judge scores, aggregated human labels) of one language x metric


def _aggregate(label_sets: Sequence[dict[str, int]]) -> list[float]:
    width = max(len(labels) for labels in label_sets)
    matrix = np.full((len(label_sets), width), np.nan)
    for row, labels in enumerate(label_sets):
        ordered = [labels[key] for key in sorted(labels)]
        matrix[row, : len(ordered)] = ordered
    return [float(v) for v in aggregate_labels(matrix).labels]


def _cells(records: Sequence[dict[str, object]]) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    for metric in METRICS:
        rows = [r for r in records if r["human"][metric]]  # type: ignore[index]
        judge = [float(r["recorded"][metric]["score"]) for r in rows]  # type: ignore[index]
        cells[metric] = (judge, _aggregate([r["human"][metric] for r in rows]))  # type: ignore[index]
    return cells


def load_subset() -> dict[str, dict[str, Cell]]:
    data = {}
    for path in sorted(SUBSET.glob("individual_*.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        data[path.stem.split("_")[1]] = _cells(records)
    return data


def load_release(source: Path) -> dict[str, dict[str, Cell]]:
    spec = importlib.util.spec_from_file_location(
        "build_pariksha_subset", ROOT / "scripts" / "build_pariksha_subset.py"
    )
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    human = builder.load_human_individual(source)
    data = {}
    for lang, code in builder.LANGUAGES.items():
        gpt4 = builder.load_gpt4_individual(source, lang)
        records = [
            {"recorded": scores, "human": human[item]}
            for item, scores in gpt4.items()
            if item in human and all(human[item][m] for m in METRICS)
        ]
        data[code] = _cells(records)
    return data


def simulate(
    cell: Cell, fraction: float, replications: int, rng: random.Random, scale: tuple[float, float]
) -> dict[str, float]:
    judge, human = cell
    big_n = len(judge)
    n = max(2, round(fraction * big_n))
    truth = statistics.fmean(human)
    covered = {"ppi++": 0, "ppi": 0, "human": 0}
    widths = {"ppi++": [], "ppi": [], "human": []}  # type: dict[str, list[float]]
    reviewer_fails = 0
    judge_mean = statistics.fmean(judge)
    scale_labels = list(range(int(scale[0]), int(scale[1]) + 1))
    squared = {"ppi++": 0.0, "human": 0.0, "most_likely": 0.0, "expected": 0.0}
    for _ in range(replications):
        chosen = rng.sample(range(big_n), n)
        labels = [human[i] for i in chosen]
        judged = [judge[i] for i in chosen]
        tuned = ppi_mean(labels, judged, judge, scale=scale, student=STUDENT)
        plain = ppi_mean(labels, judged, judge, lam=1.0, scale=scale, student=STUDENT)
        for name, est in (("ppi++", tuned.estimate), ("ppi", plain.estimate), ("human", tuned.human_only)):
            assert est.ci_low is not None and est.ci_high is not None
            covered[name] += est.ci_low <= truth <= est.ci_high
            widths[name].append(est.ci_high - est.ci_low)
        assert tuned.estimate.ci_low is not None
        reviewer_fails += not (tuned.estimate.ci_low >= truth + MARGIN)
        squared["ppi++"] += (tuned.estimate.value - truth) ** 2
        squared["human"] += (tuned.human_only.value - truth) ** 2
        for method in ("most_likely", "expected"):
            # The label-remapping correction (calibration/correction.py) fitted on the labelled
            # sample, applied to every judge score: its mean is its estimate of the human mean.
            correction = fit_correction(labels, judged, scale_labels, method)  # type: ignore[arg-type]
            squared[method] += (statistics.fmean(correction.apply(f) for f in judge) - truth) ** 2
    human_width = statistics.fmean(widths["human"])
    return {
        "N": big_n,
        "n": n,
        "truth": truth,
        "judge_bias": judge_mean - truth,
        "cov_ppi++": covered["ppi++"] / replications,
        "cov_ppi": covered["ppi"] / replications,
        "cov_human": covered["human"] / replications,
        "width_ratio": statistics.fmean(widths["ppi++"]) / human_width if human_width > 0 else float("nan"),
        "reviewer_fail": reviewer_fails / replications,
        "judge_passes": float(judge_mean >= truth + MARGIN),
        **{f"rmse_{name}": (total / replications) ** 0.5 for name, total in squared.items()},
        "rmse_judge": abs(judge_mean - truth),
    }


def report(name: str, data: dict[str, dict[str, Cell]], replications: int, seed: int) -> None:
    print(
        f"\n== {name}: {len(data)} languages x {len(METRICS)} metrics, {replications} replications per cell, nominal 0.95"
    )
    for fraction in FRACTIONS:
        rng = random.Random(f"{seed}-{name}-{fraction}")
        print(f"\n-- labelled fraction {fraction:.0%}")
        print(
            f"  {'lang':<4} {'metric':<24} {'N':>5} {'n':>4} {'truth':>6} {'bias':>6} "
            f"{'cov PPI++':>9} {'cov PPI':>8} {'cov human':>9} {'width/human':>11} {'lower>=t+.3 fails':>17}"
        )
        rows = []
        for lang in sorted(data):
            for metric in METRICS:
                row = simulate(data[lang][metric], fraction, replications, rng, SCALES[metric])
                rows.append(row)
                print(
                    f"  {lang:<4} {metric:<24} {row['N']:>5.0f} {row['n']:>4.0f} {row['truth']:>6.3f} "
                    f"{row['judge_bias']:>+6.3f} {row['cov_ppi++']:>9.3f} {row['cov_ppi']:>8.3f} "
                    f"{row['cov_human']:>9.3f} {row['width_ratio']:>11.3f} {row['reviewer_fail']:>17.3f}"
                )
        enough = [r for r in rows if r["n"] >= MIN_LABELS]
        print(
            f"  overall: coverage PPI++ {statistics.fmean(r['cov_ppi++'] for r in rows):.3f} "
            f"(min {min(r['cov_ppi++'] for r in rows):.3f}), PPI {statistics.fmean(r['cov_ppi'] for r in rows):.3f}, "
            f"human-only {statistics.fmean(r['cov_human'] for r in rows):.3f}; "
            f"width PPI++/human-only median {statistics.median(r['width_ratio'] for r in rows):.3f} "
            f"(range {min(r['width_ratio'] for r in rows):.3f}-{max(r['width_ratio'] for r in rows):.3f}); "
            f"lower(human_mean) >= truth + 0.3 fails in {statistics.fmean(r['reviewer_fail'] for r in rows):.3f} "
            f"(min {min(r['reviewer_fail'] for r in rows):.3f}); the judge's mean >= truth + 0.3 in "
            f"{sum(r['judge_passes'] for r in rows):.0f} of {len(rows)} cells; "
            f"{len(rows) - len(enough)} cells have n < {MIN_LABELS} (human_mean reports them as errors)"
        )
        rmse = {
            name: statistics.fmean(r[f"rmse_{name}"] for r in rows)
            for name in ("ppi++", "human", "most_likely", "expected", "judge")
        }
        wins = {name: sum(r[f"rmse_{name}"] < r["rmse_ppi++"] for r in rows) for name in ("most_likely", "expected")}
        print(
            f"  error of the estimated human mean (RMSE over replications, mean over cells): PPI++ {rmse['ppi++']:.3f}, "
            f"human-only {rmse['human']:.3f}, correction most_likely {rmse['most_likely']:.3f} "
            f"(beats PPI++ in {wins['most_likely']} of {len(rows)} cells), expected {rmse['expected']:.3f} "
            f"({wins['expected']} of {len(rows)}), raw judge {rmse['judge']:.3f}"
        )


def reviewer_protocol(name: str, data: dict[str, dict[str, Cell]], seed: int, subsets: int = 25) -> None:
    """The reviewers' check: 20% labelled, ``subsets`` random labelled subsets per language x metric."""
    rng = random.Random(f"{seed}-{name}-reviewer")
    checks = covered = failed = 0
    for lang in sorted(data):
        for metric in METRICS:
            row = simulate(data[lang][metric], 0.2, subsets, rng, SCALES[metric])
            checks += subsets
            covered += round(row["cov_ppi++"] * subsets)
            failed += round(row["reviewer_fail"] * subsets)
    print(
        f"\n-- reviewer protocol, {name}: 20% labelled, {subsets} subsets per language x metric: interval covers the "
        f"truth in {covered} of {checks} checks ({covered / checks:.3f}); lower(human_mean) >= truth + 0.3 fails in "
        f"{failed} of {checks} ({failed / checks:.3f})"
    )


def small_groups(data: dict[str, dict[str, Cell]], seed: int, sizes: tuple[int, ...] = (5, 6, 8, 10)) -> None:
    """Languages with few cases: populations of N = 5n items drawn from each cell (8 per cell), 20% labelled."""
    print("\n-- small groups: N = 5n items drawn from each language x metric (8 draws), 20% labelled, 60 samples each")
    for n in sizes:
        rng = random.Random(f"{seed}-small-{n}")
        coverage, fails = [], []
        for lang in sorted(data):
            for metric in METRICS:
                judge, human = data[lang][metric]
                for _ in range(8):
                    chosen = rng.sample(range(len(judge)), 5 * n)
                    cell = ([judge[i] for i in chosen], [human[i] for i in chosen])
                    row = simulate(cell, 0.2, 60, rng, SCALES[metric])
                    coverage.append(row["cov_ppi++"])
                    fails.append(row["reviewer_fail"])
        print(
            f"  n = {n:>2} labelled of N = {5 * n:>2}: coverage PPI++ {statistics.fmean(coverage):.3f} "
            f"(lowest population {min(coverage):.3f}); lower(human_mean) >= truth + 0.3 fails in "
            f"{statistics.fmean(fails):.3f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", choices=("subset", "release", "both"), default="both")
    parser.add_argument("--release", type=Path, default=RELEASE)
    args = parser.parse_args(argv)
    if args.data in ("subset", "both"):
        subset = load_subset()
        report("shipped subset (example_suites/data/pariksha)", subset, args.replications, args.seed)
        reviewer_protocol("shipped subset", subset, args.seed)
    if args.data in ("release", "both"):
        if (args.release / "outputs").is_dir():
            release = load_release(args.release)
            report(f"full release ({args.release})", release, args.replications, args.seed)
            reviewer_protocol("full release", release, args.seed)
            small_groups(release, args.seed)
        else:
            print(f"\n(full release not found at {args.release}: skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
