"""Build the labelled sample of ``example_suites/pariksha_human_estimates.yaml``.

The suite reads the shipped PARIKSHA subset (``example_suites/data/pariksha/individual_*.jsonl``,
50 items per language with GPT-4's recorded scores and every annotator's labels) with the
labels dropped (``human: false``), and joins back the native speakers' labels of a random 20%
of each language's items from ``example_suites/data/human_estimates/pariksha_sample.jsonl``, which this
script writes: per language, ``round(0.2 * 50) = 10`` item ids drawn with
``random.Random(f"{SEED}-{language}").sample`` from the ids in file order, each with all its
``human`` labels (three metrics, by annotator id). A real labelling round would send the
same kind of sample to annotators (``--llmjudge-label-queue``); here the labels already exist.

Byte-for-byte reproducible (fixed seed, sorted keys, ids sorted). Standard library only::

    python scripts/build_human_estimate_example.py
    python scripts/build_human_estimate_example.py --fraction 0.4 --out /tmp/sample.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "example_suites" / "data" / "pariksha"
SEED = 26
FRACTION = 0.2


def build(data: Path = DATA, fraction: float = FRACTION, seed: int = SEED) -> list[dict[str, object]]:
    sample: list[dict[str, object]] = []
    for path in sorted(data.glob("individual_*.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        language = records[0]["language"]
        chosen = random.Random(f"{seed}-{language}").sample(range(len(records)), round(fraction * len(records)))
        for index in sorted(chosen, key=lambda i: records[i]["id"]):
            record = records[index]
            sample.append({"id": record["id"], "language": language, "human": record["human"]})
    return sample


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=FRACTION)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "example_suites" / "data" / "human_estimates" / "pariksha_sample.jsonl"
    )
    args = parser.parse_args(argv)
    sample = build(fraction=args.fraction, seed=args.seed)
    text = "".join(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in sample)
    args.out.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {len(sample)} labelled items to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
