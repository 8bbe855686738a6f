"""Build the small PARIKSHA subset shipped in ``example_suites/data/pariksha/``.

PARIKSHA (Watts et al., EMNLP 2024; github.com/microsoft/PARIKSHA at commit
03bac88c3d899b008efd9671b11109b11676b7c4, MIT license, human evaluations by Karya)
released, for 8 Indic languages, the model responses, GPT-4's direct-assessment scores
with justifications, native-speaker ratings, and pairwise verdicts from both. This script
reads a local copy of that release and writes a deterministic subset:

* ``individual_<code>.jsonl`` (one per language): 50 (prompt, model) items that have
  GPT-4 scores for all three metrics (linguistic_acceptability 0-2, task_quality 0-2,
  hallucinations 0/1 with 1 = hallucination present) *and* human ratings from >= 2
  annotators. The 50 are stratified by model with proportional allocation (so the
  subset mirrors the language's model mix, weak models included); within a model,
  items with 3 annotators come first, then the least-used prompt, then a seeded
  SHA-256 key. Responses longer than 4,000 characters are cut and flagged
  ``"output_truncated": true`` (the judges scored the full text). Human ratings are joined on ``(prompt_id, model)`` across *all* Karya TSVs
  and the language is taken from the outputs file, because the gujarati and punjabi TSV
  file names are swapped in the release.
* ``pairwise_<code>.jsonl`` (one per language): pairings that have the
  prompt/model mapping (``pairings/round1/new_karya_eval``), a GPT-4 verdict and human
  verdicts; re-presented reversed duplicates (``is_duplicated``) are left out; at most
  250 per language (keeps the whole subset under 3 MB), drawn round-robin over prompts
  with the same seeded key. ``model_a`` is the release's
  ``model1`` (the "A"/first response for both GPT-4 and the annotators). Verdicts are
  normalised to "A" / "B" / "tie" (human 0/1/2, GPT-4 A/B/C). No response texts.
* ``LICENSE``: the release's MIT license, copied verbatim.

Output is byte-for-byte reproducible: fixed seed, sorted keys, records sorted by id,
UTF-8, ``\\n`` line endings. Standard library only.

Re-run from the repository root (the default ``--source`` is ``../shared/data/pariksha``
beside the repository, the default ``--out`` is ``example_suites/data/pariksha``;
``--languages`` and ``--items`` choose other languages and sizes)::

    python scripts/build_pariksha_subset.py
    python scripts/build_pariksha_subset.py --source /path/to/pariksha --out /tmp/subset
    python scripts/build_pariksha_subset.py --out /tmp/hi --languages hindi --items 200

Any other annotation table (and the whole PARIKSHA release) goes through
``python -m pytest_llmjudge.calibration.convert`` instead (docs/calibration.md).
"""

from __future__ import annotations

import argparse
import csv
import glob
import hashlib
import json
import os
import re
import shutil
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "data" / "pariksha"
DEFAULT_OUT = REPO_ROOT / "example_suites" / "data" / "pariksha"

SEED = 20240601
N_INDIVIDUAL = 50
N_PAIRWISE_MAX = 250  # ~300 asked; 250 keeps the whole subset under 3 MB
MAX_OUTPUT_CHARS = 4000

LANGUAGES: dict[str, str] = {
    "bengali": "bn",
    "gujarati": "gu",
    "hindi": "hi",
    "marathi": "mr",
    "odia": "or",
    "punjabi": "pa",
    "tamil": "ta",
    "telugu": "te",
}
METRICS = ("linguistic_acceptability", "task_quality", "hallucinations")
METRIC_RANGE = {
    "linguistic_acceptability": (0, 2),
    "task_quality": (0, 2),
    "hallucinations": (0, 1),
}
# Karya TSV column -> metric
HUMAN_COLUMNS = {
    "linguistic_acceptability": "ling_rating",
    "task_quality": "task_rating",
    "hallucinations": "hallucination_rating",
}
HUMAN_PAIRWISE = {"0": "A", "1": "B", "2": "tie"}
GPT4_PAIRWISE = {"A": "A", "B": "B", "C": "tie"}
PROMPT_META_KEYS = {
    "prompt_id",
    "prompt_timestamp",
    "prompt_creator",
    "prompt_type",
    "language",
    "system_prompt",
    "prompt",
}
# Characters that str.splitlines() treats as line breaks but json.dumps(ensure_ascii=False)
# leaves raw; escape them so every record stays on one line for any reader.
_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _key(*parts: str) -> str:
    """Seeded, platform-independent sort key."""
    return hashlib.sha256("|".join((str(SEED),) + parts).encode("utf-8")).hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _dump_line(record: dict[str, Any]) -> str:
    line = json.dumps(record, ensure_ascii=False, sort_keys=True)
    for raw, escaped in _LINE_BREAKS.items():
        line = line.replace(raw, escaped)
    return line


def _write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(_dump_line(rec) + "\n" for rec in records)


def _model_keys(entry: dict[str, Any]) -> list[str]:
    return sorted(k for k, v in entry.items() if k not in PROMPT_META_KEYS and isinstance(v, dict))


# --------------------------------------------------------------------------- loading


def load_outputs(source: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """language -> prompt_id -> prompt entry (language taken from the outputs file)."""
    outputs: dict[str, dict[str, dict[str, Any]]] = {}
    for lang in LANGUAGES:
        entries = _load_json(source / "outputs" / "round1" / "formatted" / f"output_{lang}.json")
        by_pid: dict[str, dict[str, Any]] = {}
        for e in entries:
            if e["language"] != lang:
                raise ValueError(f"output_{lang}.json holds a {e['language']} prompt")
            if e["prompt_id"] in by_pid:
                raise ValueError(f"duplicate prompt_id {e['prompt_id']} in output_{lang}.json")
            by_pid[e["prompt_id"]] = e
        outputs[lang] = by_pid
    return outputs


def load_gpt4_individual(source: Path, lang: str) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(prompt_id, model) -> metric -> {"score", "justification"}, only items with all metrics."""
    per_metric: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for metric in METRICS:
        path = source / "gpt_eval" / "outputs" / "round1" / "individual" / metric / f"individual_{lang}.json"
        lo, hi = METRIC_RANGE[metric]
        scores: dict[tuple[str, str], dict[str, Any]] = {}
        for e in _load_json(path):
            for model in _model_keys(e):
                val = e[model]
                score = val.get("score")
                if isinstance(score, bool) or not isinstance(score, int) or not lo <= score <= hi:
                    continue
                scores[(e["prompt_id"], model)] = {
                    "score": score,
                    "justification": str(val.get("justification") or ""),
                }
        per_metric[metric] = scores
    common = set.intersection(*(set(s) for s in per_metric.values()))
    return {item: {m: per_metric[m][item] for m in METRICS} for item in sorted(common)}


def load_human_individual(
    source: Path,
) -> dict[tuple[str, str], dict[str, dict[str, int]]]:
    """(prompt_id, model) -> metric -> {worker_id: label}, from every Karya TSV.

    File names are not trusted for the language (gujarati/punjabi are swapped)."""
    human: dict[tuple[str, str], dict[str, dict[str, int]]] = defaultdict(lambda: {m: {} for m in METRICS})
    paths = sorted(glob.glob(str(source / "karya_eval" / "round1" / "individual" / "*.tsv")))
    if not paths:
        raise FileNotFoundError("no Karya individual TSVs under " + str(source))
    for path in paths:
        for row in _read_tsv(Path(path)):
            item = (row["prompt_id"], row["model"])
            worker = row["worker_id"].strip()
            for metric, col in HUMAN_COLUMNS.items():
                raw = row[col].strip()
                if metric == "hallucinations":
                    if raw not in ("True", "False"):
                        raise ValueError(f"{path}: unexpected hallucination_rating {raw!r}")
                    label = 1 if raw == "True" else 0  # True = hallucination present
                else:
                    label = int(raw)
                    if not 0 <= label <= 2:
                        raise ValueError(f"{path}: {col} out of range: {raw!r}")
                if worker in human[item][metric]:
                    raise ValueError(f"{path}: worker {worker} rated {item} twice")
                human[item][metric][worker] = label
    return dict(human)


# ----------------------------------------------------------------------- individual


def select_individual(lang: str, candidates: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Stratified by model, proportional allocation; prefer 3 annotators within a model.

    Candidates with >= 2 annotators are used (1-annotator items only if there are fewer
    than ``n``). Each model gets a share of ``n`` proportional to its number of candidates
    (largest remainder, ties by seeded key). Models then pick round-robin; each picks its
    item with the most annotators, then from the least-used prompt, then by seeded key."""
    pool_all = [c for c in candidates if c["n_annotators"] >= 2]
    if len(pool_all) < n:
        pool_all = list(candidates)
    pools: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in pool_all:
        pools[c["model"]].append(c)
    models = sorted(pools, key=lambda m: _key(lang, "model", m))
    total = len(pool_all)
    quota = {m: n * len(pools[m]) // total for m in models}
    by_remainder = sorted(models, key=lambda m: (-(n * len(pools[m]) % total), _key(lang, "model", m)))
    for m in by_remainder[: n - sum(quota.values())]:
        quota[m] += 1

    selected: list[dict[str, Any]] = []
    prompt_use: Counter[str] = Counter()
    while any(quota[m] > 0 and pools[m] for m in models):
        for m in models:
            if quota[m] <= 0 or not pools[m]:
                continue
            pick = min(
                pools[m],
                key=lambda c: (
                    -c["n_annotators"],
                    prompt_use[c["prompt_id"]],
                    _key(lang, c["prompt_id"], c["model"]),
                ),
            )
            pools[m].remove(pick)
            selected.append(pick)
            prompt_use[pick["prompt_id"]] += 1
            quota[m] -= 1
    return selected


def build_individual(
    lang: str,
    prompts: dict[str, dict[str, Any]],
    gpt4: dict[tuple[str, str], dict[str, dict[str, Any]]],
    human: dict[tuple[str, str], dict[str, dict[str, int]]],
    n_items: int = N_INDIVIDUAL,
) -> list[dict[str, Any]]:
    code = LANGUAGES[lang]
    short = {pid: pid.split("-")[0] for pid in prompts}
    if len(set(short.values())) != len(short):
        raise ValueError(f"{lang}: short prompt ids collide")
    candidates = []
    for pid, model in gpt4:
        if pid not in prompts or (pid, model) not in human:
            continue
        response = prompts[pid].get(model, {}).get("response")
        if not isinstance(response, str) or not response.strip():
            continue  # a few empty responses in the release; nothing to judge
        labels = human[(pid, model)]
        workers = set(labels[METRICS[0]])
        if any(set(labels[m]) != workers for m in METRICS):
            raise ValueError(f"{lang}: inconsistent annotators for {(pid, model)}")
        candidates.append({"prompt_id": pid, "model": model, "n_annotators": len(workers)})
    chosen = select_individual(lang, candidates, n_items)
    if len(chosen) < n_items:
        raise ValueError(f"{lang}: only {len(chosen)} eligible items")

    records = []
    for c in chosen:
        pid, model = c["prompt_id"], c["model"]
        entry = prompts[pid]
        response = entry[model]["response"]
        rec: dict[str, Any] = {
            "id": f"{code}-{short[pid]}-{_slug(model)}",
            "language": code,
            "prompt_id": pid,
            "model": model,
            "prompt_type": entry.get("prompt_type"),
            "input": entry["prompt"],
            "output": response[:MAX_OUTPUT_CHARS],
            "recorded": {m: dict(gpt4[(pid, model)][m]) for m in METRICS},
            "human": {m: dict(human[(pid, model)][m]) for m in METRICS},
        }
        if len(response) > MAX_OUTPUT_CHARS:
            rec["output_truncated"] = True
        records.append(rec)
    records.sort(key=lambda r: r["id"])
    if len({r["id"] for r in records}) != len(records):
        raise ValueError(f"{lang}: duplicate record ids")
    return records


# ------------------------------------------------------------------------- pairwise


def build_pairwise(source: Path, lang: str, prompts: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    code = LANGUAGES[lang]
    human: dict[str, dict[str, str]] = defaultdict(dict)
    for row in _read_tsv(source / "karya_eval" / "round1" / "pairwise" / f"{lang}_pairwise_ratings.tsv"):
        outcome = row["battle_outcome"].strip()
        if outcome not in HUMAN_PAIRWISE:
            raise ValueError(f"{lang}: unexpected human battle_outcome {outcome!r}")
        ann = row["annotator_id"].strip()
        if ann in human[row["pairing_id"]]:
            raise ValueError(f"{lang}: annotator {ann} judged {row['pairing_id']} twice")
        human[row["pairing_id"]][ann] = HUMAN_PAIRWISE[outcome]

    gpt4: dict[str, dict[str, str]] = {}
    for e in _load_json(source / "gpt_eval" / "outputs" / "round1" / "pairwise" / f"battle_outcomes_{lang}.json"):
        if e["battle_outcome"] not in GPT4_PAIRWISE:
            raise ValueError(f"{lang}: unexpected GPT-4 battle_outcome {e['battle_outcome']!r}")
        if e["pairing_id"] in gpt4:
            raise ValueError(f"{lang}: duplicate GPT-4 verdict for {e['pairing_id']}")
        gpt4[e["pairing_id"]] = {
            "verdict": GPT4_PAIRWISE[e["battle_outcome"]],
            "justification": e["justification"],
        }

    mapping: dict[str, dict[str, Any]] = {}
    for path in sorted(glob.glob(str(source / "pairings" / "round1" / "new_karya_eval" / lang / "*.json"))):
        for e in _load_json(Path(path)):
            if e["language"] != lang or e["prompt_id"] not in prompts:
                raise ValueError(f"{path}: pairing {e['pairing_id']} is not a {lang} prompt")
            mapping[e["pairing_id"]] = e

    candidates = [m for pid, m in mapping.items() if pid in gpt4 and human.get(pid) and not m.get("is_duplicated")]
    by_prompt: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in candidates:
        by_prompt[m["prompt_id"]].append(m)
    for pool in by_prompt.values():
        pool.sort(key=lambda m: _key(lang, "pair", m["pairing_id"]))
    prompt_order = sorted(by_prompt, key=lambda p: _key(lang, "prompt", p))
    chosen: list[dict[str, Any]] = []
    while len(chosen) < N_PAIRWISE_MAX and any(by_prompt.values()):
        for p in prompt_order:
            if by_prompt[p] and len(chosen) < N_PAIRWISE_MAX:
                chosen.append(by_prompt[p].pop(0))

    records = [
        {
            "pairing_id": m["pairing_id"],
            "language": code,
            "prompt_id": m["prompt_id"],
            "model_a": m["model1"],
            "model_b": m["model2"],
            "gpt4": gpt4[m["pairing_id"]]["verdict"],
            "gpt4_justification": gpt4[m["pairing_id"]]["justification"],
            "human": dict(human[m["pairing_id"]]),
        }
        for m in chosen
    ]
    records.sort(key=lambda r: r["pairing_id"])
    return records


# ----------------------------------------------------------------------------- main


def build(source: Path, out: Path, languages: list[str] | None = None, n_items: int = N_INDIVIDUAL) -> list[Path]:
    """Write the subset of ``languages`` (default: all 8) with ``n_items`` items each into
    ``out``; return the written paths (sorted)."""
    chosen = list(LANGUAGES) if languages is None else languages
    unknown = sorted(set(chosen) - set(LANGUAGES))
    if unknown:
        raise ValueError(f"unknown languages {unknown}; the release has {', '.join(LANGUAGES)}")
    source = Path(source)
    out = Path(out)
    if not (source / "outputs").is_dir():
        raise FileNotFoundError(f"not a PARIKSHA release folder: {source}")
    out.mkdir(parents=True, exist_ok=True)
    outputs = load_outputs(source)
    human = load_human_individual(source)
    written: list[Path] = []
    for lang, code in LANGUAGES.items():
        if lang not in chosen:
            continue
        gpt4 = load_gpt4_individual(source, lang)
        path = out / f"individual_{code}.jsonl"
        _write_jsonl(path, build_individual(lang, outputs[lang], gpt4, human, n_items))
        written.append(path)
        path = out / f"pairwise_{code}.jsonl"
        _write_jsonl(path, build_pairwise(source, lang, outputs[lang]))
        written.append(path)
    shutil.copyfile(source / "LICENSE", out / "LICENSE")
    written.append(out / "LICENSE")
    return sorted(written)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--source",
        type=Path,
        default=DEFAULT_SOURCE,
        help="PARIKSHA release folder (default: ../shared/data/pariksha beside the repo)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output folder (default: example_suites/data/pariksha)",
    )
    parser.add_argument(
        "--languages",
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        default=None,
        help=f"comma-separated release language names (default: all of {', '.join(LANGUAGES)})",
    )
    parser.add_argument(
        "--items",
        type=int,
        default=N_INDIVIDUAL,
        help=f"labelled items per language (default {N_INDIVIDUAL}); for the whole release use "
        "python -m pytest_llmjudge.calibration.convert (docs/calibration.md)",
    )
    args = parser.parse_args(argv)
    for path in build(args.source, args.out, args.languages, args.items):
        print(f"{os.path.getsize(path):>9}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
