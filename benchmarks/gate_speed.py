"""How long the human-agreement gate's statistics take on a large calibration set.

Synthetic data, 100,000 labelled items: 10 languages x 3 metrics (linguistic acceptability
and task quality on 0/1/2, hallucination on 0/1), three annotator slots with gaps (some
items have only one or two labels, as in PARIKSHA), and a judge that agrees with the humans
less often in low-resource languages and, when it errs, mostly errs on the lenient side
(the high-score bias of Hada et al. 2024a, sec. 4.2).

For every language x metric it runs the plugin's gate (``calibration.agreement_gate.evaluate_gate``,
what an ``agreement[<lang>-<metric>]`` item computes): the aggregate label (METAL rule),
weighted F1, macro F1, percentage agreement and Cohen's kappa against the judge, Fleiss'
kappa and the slot-pairwise human ceiling, the class distribution per agreement level, the
majority baseline, the held-out score correction, and a percentile bootstrap interval
(1,000 resamples) for weighted F1; plus one for percentage agreement. Only the statistics are
timed, in this one process; generating the data is not.

Run: ``python benchmarks/gate_speed.py``. The last line is ``seconds=<time>``.
"""

from __future__ import annotations

import time

import numpy as np

from pytest_llmjudge.calibration.agreement_gate import GateOptions, evaluate_gate
from pytest_llmjudge.stats.agreement import percentage_agreement_from_confusion
from pytest_llmjudge.stats.resampling import bootstrap_confusion_ci

N_ITEMS = 100_000
N_RESAMPLES = 1_000
LANGUAGES = ("en", "fr", "zh", "hi", "ar", "bn", "ru", "tr", "ja", "sw")
# Metric name -> class shares of the "true" quality (skewed to the top, like METAL Table 2).
METRICS = {
    "linguistic_acceptability": (0.12, 0.23, 0.65),
    "task_quality": (0.30, 0.18, 0.52),
    "hallucinations": (0.75, 0.25),
}


def make_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group index per item (language x metric), annotator matrix, judge scores, k."""
    rng = np.random.default_rng(seed)
    metric_names = list(METRICS)
    group = np.sort(rng.integers(0, len(LANGUAGES) * len(METRICS), N_ITEMS))
    metric = group % len(METRICS)
    language = group // len(METRICS)
    k = np.array([len(METRICS[name]) for name in metric_names])[metric]

    truth = np.empty(N_ITEMS, dtype=np.int64)
    for index, name in enumerate(metric_names):
        chosen = metric == index
        shares = METRICS[name]
        truth[chosen] = rng.choice(len(shares), size=int(chosen.sum()), p=shares)

    # Annotators copy the true class 88-96% of the time depending on the language.
    careful = 0.88 + 0.08 * (language % 4) / 3
    copies = rng.random((N_ITEMS, 3)) < careful[:, None]
    guesses = (rng.random((N_ITEMS, 3)) * k[:, None]).astype(np.int64)
    ratings = np.where(copies, truth[:, None], guesses).astype(float)
    gap = rng.random(N_ITEMS)
    ratings[gap < 0.10, 2] = np.nan  # 10% of items have two labels
    ratings[gap < 0.03, 1] = np.nan  # 3% have one

    # The judge is right 55-85% of the time (worse for the later, lower-resource languages).
    # When wrong it is lenient 70% of the time, one class towards "good" (up for the 0-2
    # quality scales, down to "no hallucination" for the binary metric), else it guesses.
    accurate = 0.85 - 0.30 * language / (len(LANGUAGES) - 1)
    right = rng.random(N_ITEMS) < accurate
    lenient_step = np.where(metric_names.index("hallucinations") == metric, -1, 1)
    lenient = np.clip(truth + lenient_step, 0, k - 1)
    guess = (rng.random(N_ITEMS) * k).astype(np.int64)
    judge = np.where(right, truth, np.where(rng.random(N_ITEMS) < 0.7, lenient, guess))
    return group, ratings, judge, k


def gate_statistics(group: np.ndarray, ratings: np.ndarray, judge: np.ndarray, k: np.ndarray) -> list[str]:
    """Every statistic of the gate, per language x metric; one summary line per group."""
    lines = []
    boundaries = np.flatnonzero(np.diff(group)) + 1
    for rows in np.split(np.arange(group.size), boundaries):
        g = int(group[rows[0]])
        language = LANGUAGES[g // len(METRICS)]
        metric = list(METRICS)[g % len(METRICS)]
        scale = list(range(int(k[rows[0]])))
        labels = ratings[rows]
        scores = judge[rows]

        # The plugin's gate itself (calibration.gate.evaluate_gate): aggregation, agreement,
        # bootstrap CI of weighted F1, ceiling, Fleiss, distributions, held-out correction.
        gate = evaluate_gate(
            labels, scores.astype(float), scale, GateOptions(threshold=0.6, resamples=N_RESAMPLES, min_items=1)
        )
        assert gate.confusion is not None and gate.overall is not None
        # Percentage agreement's interval is not part of the gate's verdict; timed for the report.
        pa_ci = bootstrap_confusion_ci(gate.confusion, percentage_agreement_from_confusion, n_resamples=N_RESAMPLES)
        overall = gate.overall
        lines.append(
            f"{language} {metric:<24} n={gate.n_scored:5d} "
            f"wF1={gate.f1:.3f} [{gate.ci_low:.3f}, {gate.ci_high:.3f}] "
            f"PA={gate.percentage_agreement:.3f} [{pa_ci.low:.3f}, {pa_ci.high:.3f}] "
            f"kappa={gate.cohen_kappa:.3f} fleiss={gate.fleiss_kappa:.3f} "
            f"ceiling={gate.ceiling:.3f} skew={overall['skew']:+.3f} "
            f"top judge/human={overall['judge_top_share']:.2f}/{overall['human_top_share']:.2f} "
            f"passed={gate.passed}"
        )
    return lines


def main() -> None:
    started = time.perf_counter()
    data = make_data()
    generated = time.perf_counter() - started
    group, ratings, _, _ = data

    started = time.perf_counter()
    lines = gate_statistics(*data)
    seconds = time.perf_counter() - started

    print("\n".join(lines))
    labels_given = int(np.count_nonzero(~np.isnan(ratings)))
    print(
        f"items={group.size} groups={len(lines)} human_labels={labels_given} "
        f"resamples={N_RESAMPLES} data_generation_seconds={generated:.3f}"
    )
    print(f"seconds={seconds:.3f}")


if __name__ == "__main__":
    main()
