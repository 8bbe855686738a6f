"""Calibration of the release verdict, by simulation with the plugin's own decision code.

Every number comes from :func:`pytest_llmjudge.regression.compare.measure` and
:func:`~pytest_llmjudge.regression.compare.decide`, the functions the regression items call
(the same settings as a suite with only ``baseline:`` set: exact/Monte-Carlo sign-flip test,
Holm over Tarone's K of the run's family, alpha 0.05, margin 0), on simulated release gates of 8 languages
x 3 metrics = 24 comparisons, as in ``example_suites/pariksha_release_gate.yaml``.

The data. Per case the baseline's score is drawn from the metric's distribution:
``task_quality`` and ``linguistic_acceptability`` on 0-2 with P = (0.10, 0.30, 0.60) and
(0.05, 0.25, 0.70), ``hallucinations`` 0/1 with P(1) = 0.15 (lower is better). An
**unchanged** candidate is scored afresh: each case keeps its baseline score with
probability ``KEEP`` (0.5: a judge re-scoring the same or a similar answer often agrees)
and is otherwise redrawn from the same distribution, so candidate and baseline have exactly
the same distribution (the null hypothesis holds). ``--keep 0`` draws the candidate
independently (the issue's set-up). A **drop** of ``delta`` in one language and metric
lowers each case's candidate score by one point with probability ``delta / P(score > 0)``
(floored at 0), which lowers the expected score by exactly ``delta``.

What it prints, measured next to nominal, with replications:

1. family-wise error (the share of unchanged 24-item releases with at least one failing
   comparison) at 20 and 100 cases per language, with Holm (default), Benjamini-Hochberg,
   Bonferroni and no correction; the share of comparisons that warn (inconclusive) or are
   undecided, at margin 0 and at margin 0.2;
2. power: one language's ``task_quality`` drops by 0.2 or 0.3 at 100 cases per language:
   how often that comparison fails, and how often another comparison fails too (and the
   0.3 drop again with ``keep`` 0.8, a judge that agrees with itself more often);
3. small-n exactness: single single-point drops (2 of 2, 4 of 20, 10 of 10) alone and in a
   24-item family, and the type-I error of one comparison at 5, 10 and 20 cases.

Run: ``python benchmarks/verdict_calibration.py`` (3-5 minutes on 2 loaded cores;
``--sims 100 --power-sims 20`` for a quick look). The last line is
``fwer_holm_n20=<share> fwer_holm_n100=<share> power_03=<share> other_flagged_03=<share>
power_03_keep08=<share> power_03_language=<share> other_flagged_03_language=<share>``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy.stats import t as student_t

from pytest_llmjudge.regression.compare import RegressionResult, RegressionSettings, decide, measure

LANGUAGES = ("bn", "gu", "hi", "mr", "or", "pa", "ta", "te")
METRICS: dict[str, tuple[tuple[float, ...], bool]] = {
    "task_quality": ((0.10, 0.30, 0.60), True),
    "linguistic_acceptability": ((0.05, 0.25, 0.70), True),
    "hallucinations": ((0.85, 0.15), False),
}
KEEP = 0.5


def draw(rng: np.random.Generator, probs: Sequence[float], n: int) -> np.ndarray:
    return rng.choice(len(probs), size=n, p=probs).astype(np.float64)


def candidate_of(
    rng: np.random.Generator, base: np.ndarray, probs: Sequence[float], keep: float, drop: float, higher: bool
) -> np.ndarray:
    fresh = draw(rng, probs, base.size)
    cand = np.where(rng.random(base.size) < keep, base, fresh)
    if drop > 0:
        if higher:
            movable = 1.0 - probs[0]  # P(score > 0)
            hit = (rng.random(base.size) < drop / movable) & (cand > 0)
            cand = cand - hit
        else:  # lower is better: a drop is an increase of the 0/1 score
            hit = (rng.random(base.size) < drop / probs[0]) & (cand < len(probs) - 1)
            cand = cand + hit
    return cand


FIRST = ("hi", "task_quality")
HI_ON_THE_SCALE = (("hi", "task_quality"), ("hi", "linguistic_acceptability"))


def release(
    rng: np.random.Generator,
    n: int,
    keep: float,
    settings: RegressionSettings,
    drop: float = 0.0,
    dropped: Sequence[tuple[str, str]] = (FIRST,),
) -> list[RegressionResult]:
    """One simulated 24-item release, measured (not yet decided); item 0 is hi task_quality,
    item 1 hi linguistic_acceptability; ``drop`` lowers the ``dropped`` comparisons."""
    out = []
    order = list(dict.fromkeys([*HI_ON_THE_SCALE] + [(lang, metric) for lang in LANGUAGES for metric in METRICS]))
    for language, metric in order:
        probs, higher = METRICS[metric]
        base = draw(rng, probs, n)
        cand = candidate_of(rng, base, probs, keep, drop if (language, metric) in dropped else 0.0, higher)
        ids = [f"c{i}" for i in range(n)]
        out.append(
            measure(
                dict(zip(ids, cand, strict=True)),
                dict(zip(ids, base, strict=True)),
                higher_is_better=higher,
                settings=settings,
            )
        )
    return out


def with_correction(
    results: Sequence[RegressionResult], correction: str, margin: float | None = None
) -> list[RegressionResult]:
    def change(r: RegressionResult) -> RegressionResult:
        s = replace(r.settings, correction=correction)  # type: ignore[arg-type]
        return replace(r, settings=s)

    return [change(r) for r in results]


def binomial_se(share: float, reps: int) -> float:
    return math.sqrt(max(share * (1 - share), 1e-12) / reps)


def row(label: str, nominal: str, share: float, reps: int) -> None:
    print(f"  {label:<58} {nominal:>12} {share:8.3f} ± {binomial_se(share, reps):.3f}  ({reps} runs)")


def family_wise(n: int, sims: int, keep: float, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    corrections = ("holm", "bh", "bonferroni", "none")
    fails = dict.fromkeys(corrections, 0)
    warn = undecided = items = 0
    warn_margin = 0
    margin_settings = RegressionSettings(margin=0.2)
    for _ in range(sims):
        measured = release(rng, n, keep, RegressionSettings())
        for correction in corrections:
            decided = decide(with_correction(measured, correction), bounds=False)
            fails[correction] += any(r.fails_run for r in decided)
            if correction == "holm":
                warn += sum(r.gate == "warn" for r in decided)
                undecided += sum(r.gate == "undecided" for r in decided)
                items += len(decided)
    # WARN with a margin: a smaller set of releases (the margin changes the tests themselves).
    margin_sims = max(20, sims // 5)
    margin_items = 0
    for _ in range(margin_sims):
        decided = decide(release(rng, n, keep, margin_settings), bounds=False)
        warn_margin += sum(r.gate == "warn" for r in decided)
        margin_items += len(decided)
    print(f"\n1. unchanged 24-item release, {n} cases per language (keep {keep}): share of releases that fail")
    for correction in corrections:
        uncorrected = f"({1 - 0.95**24:.3f})"  # 24 independent continuous tests at 5% each
        nominal = (
            "<= 0.050" if correction in ("holm", "bonferroni") else ("<= 0.050*" if correction == "bh" else uncorrected)
        )
        row(f"family-wise error, {correction}", nominal, fails[correction] / sims, sims)
    row("comparisons inconclusive (warn), margin 0", "-", warn / items, items)
    row("comparisons undecided (too few cases), margin 0", "-", undecided / items, items)
    row("comparisons inconclusive (warn), margin 0.2", "-", warn_margin / margin_items, margin_items)
    return {c: fails[c] / sims for c in corrections}


def power(
    n: int, drop: float, sims: int, keep: float, seed: int, dropped: Sequence[tuple[str, str]] = (FIRST,)
) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    caught = other = ceiling = 0
    hit = len(dropped)
    level = 0.05 / 24
    for _ in range(sims):
        measured = release(rng, n, keep, RegressionSettings(), drop=drop, dropped=dropped)
        decided = decide(measured, bounds=False)
        caught += any(r.gate == "fail" for r in decided[:hit])
        other += any(r.fails_run for r in decided[hit:])
        # The ceiling: a paired t-test at alpha / 24, what Holm's first step asks of one
        # comparison, on the same differences (approximate; not an exact test).
        ceiling += any(_t_test_p(r) <= level for r in measured[:hit])
    what = " and ".join(metric for _, metric in dropped)
    print(f"\n2. hi {what} drop(s) by {drop} at {n} cases per language, 24-item family, Holm (keep {keep})")
    row("the drop is caught (a dropped hi comparison fails)", ">= 0.900", caught / sims, sims)
    row("  ceiling: paired t-test at alpha/24 on the same data", "-", ceiling / sims, sims)
    row("another comparison fails too", "<= 0.100", other / sims, sims)
    return caught / sims, other / sims


def _t_test_p(result: RegressionResult) -> float:
    if result.sd is None or result.sd == 0 or result.mean_difference is None:
        return 1.0
    oriented = result.mean_difference if result.higher_is_better else -result.mean_difference
    t = oriented / (result.sd / math.sqrt(result.n))
    return float(student_t.cdf(t, result.n - 1))


def small_n(seed: int, reps: int) -> None:
    print("\n3. small samples: single-point drops (exact sign-flip p; the bootstrap's p in brackets)")
    cases = {"2 of 2": (2, 2), "4 of 20": (20, 4), "10 of 10": (10, 10)}
    for label, (n, k) in cases.items():
        base = {f"c{i}": 2.0 for i in range(n)}
        cand = {**base, **{f"c{i}": 1.0 for i in range(k)}}
        alone = decide([measure(cand, base)])[0]
        boot = decide([measure(cand, base, settings=RegressionSettings(method="bootstrap"))])[0]
        same = {f"c{i}": 2.0 for i in range(20)}
        family = decide([measure(cand, base)] + [measure(same, same) for _ in range(23)])[0]
        expected = "fail" if label == "10 of 10" else "not fail"
        print(
            f"  {label:<10} p = {alone.p_value:.4f} [{boot.p_value:.4f}]: alone {alone.gate:<9} "
            f"in 24 (Holm) {family.gate:<9} expected: {expected}"
        )
    rng = np.random.default_rng(seed)
    probs, _ = METRICS["task_quality"]
    for n in (5, 10, 20):
        fails = 0
        for _ in range(reps):
            base = draw(rng, probs, n)
            cand = candidate_of(rng, base, probs, KEEP, 0.0, True)
            ids = [f"c{i}" for i in range(n)]
            result = decide([measure(dict(zip(ids, cand, strict=True)), dict(zip(ids, base, strict=True)))])[0]
            fails += result.gate == "fail"
        row(f"one comparison alone, unchanged, n = {n}: type-I error", "<= 0.050", fails / reps, reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=500, help="releases per family-wise error cell (default 500)")
    parser.add_argument("--power-sims", type=int, default=200, help="releases per power cell (default 200)")
    parser.add_argument("--keep", type=float, default=KEEP, help="probability a case keeps its score (default 0.5)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    started = time.perf_counter()
    print("verdict calibration: measured share ± binomial standard error (replications); nominal or target")
    fwer20 = family_wise(20, args.sims, args.keep, args.seed)
    fwer100 = family_wise(100, args.sims, args.keep, args.seed + 1)
    power(100, 0.2, args.power_sims, args.keep, args.seed + 2)
    caught, other = power(100, 0.3, args.power_sims, args.keep, args.seed + 3)
    # The same drop when the judge agrees with itself more often (smaller spread of the differences).
    caught_stable, _ = power(100, 0.3, args.power_sims, 0.8, args.seed + 5)
    # A language that dropped: both of its 0-2 scores fall by 0.3 (the plainest reading of
    # "a 0.3 drop in one language"); caught when either comparison fails.
    caught_language, other_language = power(100, 0.3, args.power_sims, args.keep, args.seed + 6, HI_ON_THE_SCALE)
    small_n(args.seed + 4, 2000)
    print("\n(* BH controls the false discovery rate, which equals the family-wise error when nothing changed)")
    print(f"seconds={time.perf_counter() - started:.0f}")
    print(
        f"fwer_holm_n20={fwer20['holm']:.3f} fwer_holm_n100={fwer100['holm']:.3f} "
        f"power_03={caught:.3f} other_flagged_03={other:.3f} power_03_keep08={caught_stable:.3f}"
        f" power_03_language={caught_language:.3f} other_flagged_03_language={other_language:.3f}"
    )


if __name__ == "__main__":
    main()
