"""The whole PARIKSHA release as a calibration file, and METAL's vs the plugin's agreement convention.

Reads a local copy of the release (default ``../shared/data/pariksha`` beside the repository;
see ``example_suites/data/pariksha/README.md`` for provenance and license), writes GPT-4's
direct-assessment scores as one JSONL row per (prompt, model) (the release stores them as
one JSON file per language and metric, one key per model), and converts the Karya label
TSVs with ``python -m pytest_llmjudge.calibration.convert``: items joined on
``(prompt_id, model)``, the language taken from GPT-4's rows (the gujarati and punjabi TSV
file names are swapped in the release), items without GPT-4 scores dropped.

It then prints, per language and metric, the gate's numbers under ``all_pairs`` (every item
with >= 2 labels) and ``metal`` (items with exactly 3 labels): the human ceiling and Fleiss'
kappa, with the items each rests on. docs/calibration.md quotes this output.

    python scripts/pariksha_release_calibration.py --out /tmp/pariksha-full
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.calibration.convert import main as convert
from pytest_llmjudge.calibration.gate_computer import GateComputer
from pytest_llmjudge.execution.scorer import Scorer
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[1]
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
COLUMNS = {
    "linguistic_acceptability": "ling_rating",
    "task_quality": "task_rating",
    "hallucinations": "hallucination_rating",
}
SHORT = {"linguistic_acceptability": "LA", "task_quality": "TQ", "hallucinations": "H"}


def write_gpt4_scores(source: Path, path: Path) -> None:
    rows: dict[tuple[str, str], dict[str, object]] = {}
    for metric in COLUMNS:
        for file in sorted((source / "gpt_eval" / "outputs" / "round1" / "individual" / metric).glob("*.json")):
            for entry in json.loads(file.read_text(encoding="utf-8")):
                for model, value in entry.items():
                    if isinstance(value, dict) and "score" in value:
                        key = (entry["prompt_id"], model)
                        row = rows.setdefault(key, {"prompt_id": key[0], "model": model, "language": entry["language"]})
                        row[metric] = value["score"]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows.values()), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=REPO_ROOT.parent / "shared" / "data" / "pariksha")
    parser.add_argument("--out", type=Path, default=Path("pariksha-full"), help="folder for the calibration file")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    scores = args.out / "gpt4_scores.jsonl"
    write_gpt4_scores(args.source, scores)
    command = [
        item
        for tsv in sorted(args.source.glob("karya_eval/round1/individual/*.tsv"))
        for item in ("--labels", str(tsv))
    ]
    command += ["--item-cols", "prompt_id,model", "--annotator-col", "worker_id", "--label-values", "True=1,False=0"]
    for metric, column in COLUMNS.items():
        command += ["--label-col", column, "--metric", metric]
    command += ["--judge-scores", str(scores), "--language-from", "language", "--unmatched", "drop"]
    command += ["--language-map", ",".join(f"{name}={code}" for name, code in LANGUAGES.items())]
    command += ["--judge-name", "gpt-4 (PARIKSHA release)", "--metadata-cols", "model", "--name", "pariksha-full"]
    output = args.out / "pariksha_full.yaml"
    status = convert([*command, "-o", str(output)])
    if status:
        return status

    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    with tempfile.TemporaryDirectory() as cache:
        store = GateComputer(Scorer(registry, Settings(cache_mode="off", cache_dir=Path(cache))))
        ours = store.load(output)
        metal = replace(ours, convention="metal", path=output.with_name("metal.yaml"))
        print()
        print("                       all_pairs                    metal")
        print("lang metric   n    F1   ceiling (items) Fleiss (items)   ceiling (items) Fleiss (items)   Fleiss diff")
        for group, metric in ours.groups():
            a, b = store.gate(ours, group, metric), store.gate(metal, group, metric)
            diff = (b.fleiss_kappa or 0.0) - (a.fleiss_kappa or 0.0)
            print(
                f"{group:<5}{SHORT[metric]:<6}{a.n_items:>4} {a.f1 or 0:.3f}   {a.ceiling or 0:.3f} ({a.ceiling_items:>3})  "
                f"{a.fleiss_kappa or 0:+.3f} ({a.fleiss_items:>3})     {b.ceiling or 0:.3f} ({b.ceiling_items:>3})  "
                f"{b.fleiss_kappa or 0:+.3f} ({b.fleiss_items:>3})    {diff:+.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
