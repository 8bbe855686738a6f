"""Measure the MIRAGE-style surrogate on the PARIKSHA arena: both protocols, both models.

For each language of ``example_suites/pariksha_arena.yaml`` this fits the surrogate of
GPT-4's pairwise verdicts (``pairwise.surrogate``) four ways and prints Kendall's tau-b
between the surrogate's and GPT-4's Bradley-Terry ranking (with its p value, R^2 and the
number of systems compared):

* held-out prompts (``hold_out: cases``, half of the prompts) and held-out systems
  (``hold_out: systems``, each system left out in turn: MIRAGE-BENCH's protocol);
* a ridge regression (numpy) and a random forest (scikit-learn, the paper's model).

The features are the arena file's ``surrogate.features``; the answers they are computed
from are the file's ``responses``, i.e. the shipped subset (3-7 answers per model and
language). ``--features`` replaces the file's features, e.g. to add GPT-4's pointwise
scores of the same answers (``recorded:gpt4_la``, ``recorded:gpt4_tq``), the counterpart of
the paper's LLM-measured features. Every run is seeded, so the numbers are reproducible::

    python scripts/surrogate_pariksha.py
    python scripts/surrogate_pariksha.py --tournaments 30 --trees 100   # the defaults
    python scripts/surrogate_pariksha.py \\
        --features length,script_share,latin_share,input_overlap,recorded:gpt4_la,recorded:gpt4_tq
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_llmjudge.pairwise.build import load_ranking
from pytest_llmjudge.pairwise.evaluator import RankingEvaluator
from pytest_llmjudge.pairwise.schema import SurrogateConfig
from pytest_llmjudge.pairwise.surrogate import SurrogateResult, run_surrogate

ARENA = Path(__file__).resolve().parents[1] / "example_suites" / "pariksha_arena.yaml"
PROTOCOLS = (("cases", "ridge"), ("cases", "random_forest"), ("systems", "ridge"), ("systems", "random_forest"))


def cell(result: SurrogateResult) -> str:
    if result.kendall_tau is None:
        return f"error: {result.error}"
    p = "<0.001" if (result.kendall_p or 0) < 0.001 else f"{result.kendall_p:.3f}"
    r2 = "-" if result.r2 is None else f"{result.r2:.2f}"
    return f"{result.kendall_tau:+.2f} (p {p}, R2 {r2}, n {result.n_systems})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tournaments", type=int, default=30)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--features", help="comma-separated features instead of the arena file's")
    args = parser.parse_args(argv)
    ranking = load_ranking(ARENA)
    assert ranking.surrogate is not None, "the arena file has a surrogate: section"
    evaluator = RankingEvaluator(ranking)
    source = ranking.surrogate.source or ranking.primary
    features = args.features.split(",") if args.features else ranking.surrogate.features
    print(f"surrogate of {source}'s verdicts, features {', '.join(features)}")
    print("| lang | " + " | ".join(f"{hold} held out, {model}" for hold, model in PROTOCOLS) + " |")
    print("|---" * (len(PROTOCOLS) + 1) + "|")
    taus: dict[tuple[str, str], list[float]] = {protocol: [] for protocol in PROTOCOLS}
    for language in ranking.languages:
        by_case = evaluator.matchups(source, language)
        cells = []
        for hold, model in PROTOCOLS:
            update: dict[str, object] = {
                "hold_out": hold,
                "model": model,
                "tournaments": args.tournaments,
                "trees": args.trees,
            }
            if args.features:
                update["features"] = args.features.split(",")
            config = ranking.surrogate.model_copy(update=update)
            result = run_surrogate(
                ranking.cases,
                language,
                by_case,
                SurrogateConfig.model_validate(config.model_dump()),
                source=source,
                prior=ranking.prior,
                systems=ranking.systems,
            )
            if result.kendall_tau is not None:
                taus[(hold, model)].append(result.kendall_tau)
            cells.append(cell(result))
        print(f"| {language} | " + " | ".join(cells) + " |")
    means = [f"{sum(v) / len(v):+.2f} over {len(v)}" if v else "-" for v in taus.values()]
    print("| mean tau | " + " | ".join(means) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
