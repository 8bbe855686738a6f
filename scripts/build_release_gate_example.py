"""Build ``example_suites/data/release_gate/``: two PARIKSHA systems' answers with GPT-4's scores.

The release-gate example (``example_suites/pariksha_release_gate.yaml``) compares a
candidate system with a production baseline on the same prompts. It needs both systems'
answers to *every* prompt, which the small human-labelled subset in
``example_suites/data/pariksha/`` does not have (3-7 answers per model and language). This
script takes them from the PARIKSHA release (Watts et al., EMNLP 2024;
github.com/microsoft/PARIKSHA at commit 03bac88c3d899b008efd9671b11109b11676b7c4, MIT):

* for each of the 8 languages and each of its 20 round-1 prompts, the answers of
  ``meta-llama/Meta-Llama-3-70B-Instruct`` (the "production" system), ``gpt-4`` (the
  candidate of the example) and ``meta-llama/Meta-Llama-3-8B-Instruct`` (a cheaper
  candidate that the gate should stop, shown in ``docs/baselines.md``), verbatim
  (``outputs/round1/formatted/output_<language>.json``);
* GPT-4's direct-assessment score of each answer
  (``gpt_eval/outputs/round1/individual/<metric>/individual_<language>.json``):
  linguistic_acceptability 0-2, task_quality 0-2, hallucinations 0/1 (1 = present). The
  justifications are left out to keep the file small (they are in the release).

One JSONL record per (prompt, system), ``id`` = ``<code>-<first 8 hex digits of the prompt
id>`` so that the two systems' answers to one prompt share a case id (that is what a paired
comparison pairs on). Nothing is re-scored or changed. Records sorted by (model, id); UTF-8,
``\\n`` line endings, sorted keys: byte-for-byte reproducible, standard library only.

Run from the repository root (defaults shown)::

    python scripts/build_release_gate_example.py --source ../shared/data/pariksha --out example_suites/data/release_gate
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "data" / "pariksha"
DEFAULT_OUT = REPO_ROOT / "example_suites" / "data" / "release_gate"
LANGUAGES = {
    "bengali": "bn",
    "gujarati": "gu",
    "hindi": "hi",
    "marathi": "mr",
    "odia": "or",
    "punjabi": "pa",
    "tamil": "ta",
    "telugu": "te",
}
MODELS = ("meta-llama/Meta-Llama-3-70B-Instruct", "gpt-4", "meta-llama/Meta-Llama-3-8B-Instruct")
METRICS = ("linguistic_acceptability", "task_quality", "hallucinations")


def _load(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def build(source: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for language, code in LANGUAGES.items():
        outputs = {p["prompt_id"]: p for p in _load(source / f"outputs/round1/formatted/output_{language}.json")}
        scores = {
            metric: {
                p["prompt_id"]: p
                for p in _load(source / f"gpt_eval/outputs/round1/individual/{metric}/individual_{language}.json")
            }
            for metric in METRICS
        }
        for prompt_id, prompt in sorted(outputs.items()):
            for model in MODELS:
                answer = prompt.get(model)
                judged = [scores[m].get(prompt_id, {}).get(model) for m in METRICS]
                if not isinstance(answer, dict) or not answer.get("response") or not all(judged):
                    raise SystemExit(f"{language} {prompt_id}: {model} lacks an answer or a GPT-4 score")
                records.append(
                    {
                        "id": f"{code}-{prompt_id[:8]}",
                        "language": code,
                        "prompt_id": prompt_id,
                        "prompt_type": prompt.get("prompt_type"),
                        "model": model,
                        "input": prompt["prompt"],
                        "output": answer["response"],
                        "recorded": {
                            metric: {"score": entry["score"], "judge": "gpt-4 (PARIKSHA release)"}
                            for metric, entry in zip(METRICS, judged, strict=True)
                        },
                    }
                )
    records.sort(key=lambda r: (r["model"], r["id"]))
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    records = build(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "cases.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    shutil.copyfile(args.source / "LICENSE", args.out / "LICENSE")
    print(f"wrote {len(records)} records to {args.out / 'cases.jsonl'}")


if __name__ == "__main__":
    main()
