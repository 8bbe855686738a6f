"""Overhead of the metric objects over calling sacrebleu and rouge-score directly.

Builds 10,000 deterministic synthetic (output, reference) pairs in four scripts (Latin,
Devanagari, Arabic, Japanese), then times, in the same process:

* chrF++: a loop over ``resolve_metric("chrf++").compute`` (what the runner calls per
  case) against a loop over
  ``sacrebleu.metrics.CHRF(word_order=2).sentence_score``;
* ROUGE-L: a loop over ``resolve_metric("rouge_l").compute`` against a loop over
  ``RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())``, the same tokenizer, so the
  difference is the wrapper and the LCS (the metric's own bit-parallel one against
  rouge-score's table).

Each timing is the best of 3 runs after one warm-up run, ours and raw interleaved, in
process CPU time. The last line printed is
``chrf_ratio=<ours/raw> rouge_ratio=<ours/raw>``; the target is <= 1.2 for both.

Run: ``python benchmarks/metrics_speed.py [--pairs N]``.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.metrics.chrf import CHRF

from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.tokenization import UnicodeTokenizer

VOCABULARY = {
    "en": "the city river capital museum built century people language north old bridge "
    "market history famous king temple water mountain school train".split(),
    "hi": "शहर नदी राजधानी संग्रहालय सदी लोग भाषा उत्तर पुराना पुल बाज़ार इतिहास प्रसिद्ध "
    "राजा मंदिर पानी पहाड़ विद्यालय रेलगाड़ी निर्माण".split(),
    "ar": "المدينة النهر العاصمة المتحف القرن الناس اللغة الشمال القديم الجسر السوق "
    "التاريخ الشهير الملك المعبد الماء الجبل المدرسة القطار بُني".split(),
    "ja": "東京 川 首都 博物館 世紀 人々 言語 北 古い 橋 市場 歴史 有名 王 寺 水 山 学校 電車 建設".split(),
}
SEPARATOR = {"en": " ", "hi": " ", "ar": " ", "ja": ""}
SEED = 20240611


def make_pairs(count: int, seed: int = SEED) -> list[MetricInput]:
    """Deterministic reference/output pairs: the output drops, swaps and replaces words."""
    rng = random.Random(seed)
    languages = sorted(VOCABULARY)
    items: list[MetricInput] = []
    for index in range(count):
        language = languages[index % len(languages)]
        words = VOCABULARY[language]
        reference = [rng.choice(words) for _ in range(rng.randint(8, 20))]
        output = [w for w in reference if rng.random() > 0.15]
        for _ in range(rng.randint(0, 3)):
            output.insert(rng.randint(0, len(output)), rng.choice(words))
        if len(output) > 3 and rng.random() < 0.5:
            i = rng.randrange(len(output) - 1)
            output[i], output[i + 1] = output[i + 1], output[i]
        sep = SEPARATOR[language]
        items.append(
            MetricInput(
                sep.join(output) + "。" if language == "ja" else sep.join(output) + ".",
                sep.join(reference) + ("。" if language == "ja" else "."),
                language=language,
            )
        )
    return items


def best_of(runs: int, ours: Callable[[], object], raw: Callable[[], object]) -> tuple[float, float]:
    """Best CPU time of ``runs`` interleaved calls of each, after one warm-up call of each.

    Interleaving and process CPU time (rather than wall time) keep the ratio stable on a
    shared machine: a burst of load hits both sides, and time spent descheduled is not
    counted.
    """
    ours()
    raw()
    ours_times: list[float] = []
    raw_times: list[float] = []
    for _ in range(runs):
        for function, times in ((ours, ours_times), (raw, raw_times)):
            start = time.process_time()
            function()
            times.append(time.process_time() - start)
    return min(ours_times), min(raw_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    args = parser.parse_args()
    items = make_pairs(args.pairs)
    pairs = [(item.output, item.reference or "") for item in items]

    chrf_metric = resolve_metric("chrf++")
    raw_chrf = CHRF(word_order=2)
    ours_chrf, raw_chrf_time = best_of(
        3,
        lambda: [chrf_metric.compute(item) for item in items],
        lambda: [raw_chrf.sentence_score(out, [ref]).score for out, ref in pairs],
    )

    rouge_metric = resolve_metric("rouge_l")
    raw_rouge = RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())
    ours_rouge, raw_rouge_time = best_of(
        3,
        lambda: [rouge_metric.compute(item) for item in items],
        lambda: [raw_rouge.score(ref, out)["rougeL"].fmeasure for out, ref in pairs],
    )

    print(f"pairs={len(items)} (languages: {', '.join(sorted(VOCABULARY))})")
    print(f"chrF++  ours={ours_chrf:.3f}s  sacrebleu={raw_chrf_time:.3f}s")
    print(f"ROUGE-L ours={ours_rouge:.3f}s  rouge-score={raw_rouge_time:.3f}s")
    print(f"chrf_ratio={ours_chrf / raw_chrf_time:.3f} rouge_ratio={ours_rouge / raw_rouge_time:.3f}")


if __name__ == "__main__":
    main()
