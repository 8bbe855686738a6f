"""Build ``example_suites/data/pariksha/reversed_<code>.jsonl``: PARIKSHA's reversed duplicates.

In the PARIKSHA release (Watts et al., EMNLP 2024; github.com/microsoft/PARIKSHA at commit
03bac88c3d899b008efd9671b11109b11676b7c4, MIT license, human evaluations by Karya) some
pairings were presented twice, once in each order: the two pairings carry
``is_duplicated: true`` and name each other in ``duplicate_id``
(``pairings/round1/new_karya_eval/<language>/*.json``), and GPT-4 (and the annotators)
judged both. A judge that reads the content names the same *model* both times; a judge that
follows the position names the same *slot* both times. These pairs therefore measure GPT-4's
real position bias, which ``scripts/build_pariksha_subset.py`` leaves out of the arena's
pairwise files (it keeps one presentation per pairing).

For each language this writes every reversed pair whose two presentations both have a GPT-4
verdict: two records per pair, each with ``pairing_id``, ``reversed_pair`` (the smaller of
the two pairing ids, shared by both records), ``language``, ``prompt_id``, ``model_a`` /
``model_b`` (the models in slots A and B of *that* presentation), ``gpt4`` ("A", "B" or
"tie") and ``human`` (annotator id -> verdict, possibly empty). No response texts and no
justifications. Verdict normalisation is the subset builder's (human 0/1/2, GPT-4 A/B/C).

Output is byte-for-byte reproducible (records sorted by pair and pairing id, sorted keys,
UTF-8, ``\\n`` line endings). Standard library only. From the repository root::

    python scripts/build_pariksha_reversed.py
    python scripts/build_pariksha_reversed.py --source /path/to/pariksha --out /tmp/subset
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_pariksha_subset import (  # noqa: E402  (a sibling script, not a package)
    DEFAULT_OUT,
    DEFAULT_SOURCE,
    GPT4_PAIRWISE,
    HUMAN_PAIRWISE,
    LANGUAGES,
)


def _load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def reversed_pairs(source: Path, lang: str) -> list[dict[str, Any]]:
    """The records of ``lang``'s reversed duplicates (module docstring)."""
    code = LANGUAGES[lang]
    gpt4 = {
        e["pairing_id"]: GPT4_PAIRWISE[e["battle_outcome"]]
        for e in _load_json(source / "gpt_eval" / "outputs" / "round1" / "pairwise" / f"battle_outcomes_{lang}.json")
    }
    human: dict[str, dict[str, str]] = defaultdict(dict)
    path = source / "karya_eval" / "round1" / "pairwise" / f"{lang}_pairwise_ratings.tsv"
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            human[row["pairing_id"]][row["annotator_id"].strip()] = HUMAN_PAIRWISE[row["battle_outcome"].strip()]
    pairings: dict[str, dict[str, Any]] = {}
    for name in sorted(glob.glob(str(source / "pairings" / "round1" / "new_karya_eval" / lang / "*.json"))):
        for e in _load_json(Path(name)):
            if e.get("is_duplicated"):
                pairings[e["pairing_id"]] = e
    records = []
    for pid, e in pairings.items():
        other = pairings.get(e.get("duplicate_id", ""))
        if other is None or pid not in gpt4 or other["pairing_id"] not in gpt4:
            continue
        if (e["prompt_id"], e["model1"], e["model2"]) != (other["prompt_id"], other["model2"], other["model1"]):
            raise ValueError(f"{lang}: {pid} and {other['pairing_id']} are not the same pair in reversed order")
        records.append(
            {
                "pairing_id": pid,
                "reversed_pair": min(pid, other["pairing_id"]),
                "language": code,
                "prompt_id": e["prompt_id"],
                "model_a": e["model1"],
                "model_b": e["model2"],
                "gpt4": gpt4[pid],
                "human": dict(sorted(human.get(pid, {}).items())),
            }
        )
    records.sort(key=lambda r: (r["reversed_pair"], r["pairing_id"]))
    return records


def build(source: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for lang, code in LANGUAGES.items():
        path = out / f"reversed_{code}.jsonl"
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            for record in reversed_pairs(source, lang):
                handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="PARIKSHA release folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)
    for path in build(args.source, args.out):
        print(f"{os.path.getsize(path):>9}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
