"""``python -m pytest_llmjudge.calibration.convert``: annotation tables -> calibration file.

On a small hand-made table (tests/unit/data/annotations) and on the raw PARIKSHA release
(``../shared/data/pariksha``, skipped when absent), where the gate's numbers under both
agreement conventions are recomputed independently with scikit-learn and statsmodels.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import sklearn
from sklearn.metrics import cohen_kappa_score, f1_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.calibration.convert import main
from pytest_llmjudge.calibration.gate_computer import GateComputer
from pytest_llmjudge.execution.scorer import Scorer
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "annotations"
RELEASE = REPO.parent / "shared" / "data" / "pariksha"
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
METRICS = {
    "linguistic_acceptability": "ling_rating",
    "task_quality": "task_rating",
    "hallucinations": "hallucination_rating",
}


@pytest.fixture
def store(tmp_path: Path) -> GateComputer:
    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    return GateComputer(Scorer(registry, Settings(cache_mode="off", cache_dir=tmp_path / "cache")))


TOY = [
    "--labels", str(DATA / "ratings.tsv"),
    "--item-cols", "prompt_id,model",
    "--annotator-col", "worker_id",
    "--label-col", "fluency", "--metric", "linguistic_acceptability",
    "--label-col", "hallucinated", "--metric", "hallucinations",
    "--label-values", "True=1,False=0",
    "--judge-scores", str(DATA / "judge_scores.jsonl"),
    "--join", "prompt_id,model",
    "--score-col", "la", "--score-col", "h",
    "--language-from", "lang",
    "--language-map", "hindi=hi,tamil=ta",
    "--judge-name", "toy-judge",
    "--min-items", "2",
]  # fmt: skip


def test_hand_made_table(store: GateComputer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.yaml"
    assert main([*TOY, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "6 items (hi 4, ta 2)" in printed
    assert "judge rows matching no labelled item: 1" in printed  # p9-m1 has no labels
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "cal.jsonl").read_text(encoding="utf-8").splitlines())}
    assert sorted(records) == ["p1-m1", "p1-m2", "p2-m1", "p2-m2", "p3-m1", "p3-m2"]
    assert records["p2-m2"]["human"] == {
        "linguistic_acceptability": {"w1": 0, "w3": 1},
        "hallucinations": {"w1": 1},  # w3's empty cell is no label
    }
    assert records["p3-m1"]["human"]["linguistic_acceptability"] == {"w5": 1, "w6": 1, "w7": 2, "w8": 1}
    assert records["p3-m2"]["recorded"] == {"hallucinations": {"score": 1, "judge": "toy-judge"}}  # la null
    cal = store.load(out)
    assert cal.recorded_label() == "toy-judge"
    hi = store.gate(cal, "hi", "linguistic_acceptability")
    # hi aggregates: p1-m1 2, p1-m2 1, p2-m1 2, p2-m2 rounded mean of 0, 1 = 1; judge 2, 2, 2, 1.
    assert hi.n_items == 4 and hi.n_scored == 4
    assert hi.f1 == pytest.approx(f1_score([2, 1, 2, 1], [2, 2, 2, 1], average="weighted"))
    ta = store.gate(cal, "ta", "linguistic_acceptability")
    assert ta.n_scored == 1 and ta.problem == "1 of 2 items have no judge score (max_unscored_rate 0)"


def test_dropping_items_without_a_judge_row_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("item,ann,score\na,x,1\na,y,2\nb,x,0\nb,y,0\n", encoding="utf-8")
    judge = tmp_path / "judge.csv"
    judge.write_text("item,language,linguistic_acceptability\na,hi,2\n", encoding="utf-8")
    base = ["--labels", str(labels), "--item-cols", "item", "--annotator-col", "ann", "--label-col", "score"]
    base += ["--metric", "linguistic_acceptability", "--judge-scores", str(judge), "--language-from", "language"]
    assert main([*base, "-o", str(tmp_path / "a.yaml")]) == 2
    assert "item ('b',): no 'language' in its label rows or judge row (no judge row" in capsys.readouterr().err
    assert main([*base, "--unmatched", "drop", "-o", str(tmp_path / "b.yaml")]) == 0
    assert "1 items (hi 1)" in capsys.readouterr().out
    labels.write_text("item,ann,score\na,x,1\na,x,2\n", encoding="utf-8")
    assert main([*base, "-o", str(tmp_path / "c.yaml")]) == 2
    assert "labels.csv:3: annotator x labelled ('a',) on linguistic_acceptability twice" in capsys.readouterr().err
    labels.write_text("item,ann,score\na,x,good\n", encoding="utf-8")
    assert main([*base, "-o", str(tmp_path / "d.yaml")]) == 2
    assert "'good' is not a number (map text with --label-values)" in capsys.readouterr().err
    labels.write_text("item,ann,score\na,x,7\n", encoding="utf-8")
    assert main([*base, "-o", str(tmp_path / "e.yaml")]) == 2
    assert "labels [7] of item 'a' are not on the linguistic_acceptability scale" in capsys.readouterr().err
    assert main([*base[:1], str(tmp_path / "x.xlsx"), *base[2:], "-o", str(tmp_path / "f.yaml")]) == 2
    assert "x.xlsx: unknown table format '.xlsx' (use .csv, .tsv or .jsonl)" in capsys.readouterr().err


# -- the raw PARIKSHA release ----------------------------------------------------------------


def flat_gpt4_scores(path: Path) -> None:
    """GPT-4's per-language, per-metric JSON (one key per model) as one JSONL row per item."""
    rows: dict[tuple[str, str], dict[str, object]] = {}
    for metric in METRICS:
        for source in sorted((RELEASE / "gpt_eval" / "outputs" / "round1" / "individual" / metric).glob("*.json")):
            for entry in json.loads(source.read_text(encoding="utf-8")):
                for model, value in entry.items():
                    if isinstance(value, dict) and "score" in value:
                        key = (entry["prompt_id"], model)
                        row = rows.setdefault(key, {"prompt_id": key[0], "model": model, "language": entry["language"]})
                        row[metric] = value["score"]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows.values()), encoding="utf-8")


def independent(gpt4: Path) -> dict[tuple[str, str], dict[str, float]]:
    """Every statistic straight from the TSVs and the GPT-4 rows, with sklearn/statsmodels."""
    judge = {(r["prompt_id"], r["model"]): r for r in map(json.loads, gpt4.read_text(encoding="utf-8").splitlines())}
    labels: dict[tuple[str, str], dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for tsv in sorted((RELEASE / "karya_eval" / "round1" / "individual").glob("*.tsv")):
        with open(tsv, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                for metric, column in METRICS.items():
                    raw = row[column].strip()
                    label = {"True": 1, "False": 0}[raw] if metric == "hallucinations" else int(raw)
                    labels[(row["prompt_id"], row["model"])][metric].append((int(row["worker_id"]), label))
    found: dict[tuple[str, str], dict[str, float]] = {}
    for language, code in LANGUAGES.items():
        keys = sorted(k for k in labels if k in judge and judge[k]["language"] == language)
        for metric in METRICS:
            slots = [[label for _, label in sorted(labels[k][metric])] for k in keys]
            truth = []
            for s in slots:
                values, counts = np.unique(s, return_counts=True)
                top = counts == counts.max()
                truth.append(int(values[top][0]) if top.sum() == 1 else int(np.floor(np.mean(s) + 0.5)))
            scores = [judge[k][metric] for k in keys]
            pair_f1, weights = [], []
            for a, b in combinations(range(3), 2):
                both = [(s[a], s[b]) for s in slots if len(s) > b]
                x, y = zip(*both, strict=True)
                both_ways = f1_score(x, y, average="weighted") + f1_score(y, x, average="weighted")
                pair_f1.append(both_ways / 2)
                weights.append(len(both))
            complete = np.asarray([s for s in slots if len(s) == 3])
            metal = [f1_score(complete[:, a], complete[:, b], average="weighted") for a, b in ((0, 1), (1, 2), (2, 0))]
            found[(code, metric)] = {
                "n": len(keys),
                "f1": f1_score(truth, scores, average="weighted"),
                "kappa": cohen_kappa_score(truth, scores),
                "ceiling": float(np.average(pair_f1, weights=weights)),
                "metal_ceiling": float(np.mean(metal)),
                "metal_fleiss": float(sm_fleiss_kappa(aggregate_raters(complete)[0])),
            }
    return found


@pytest.mark.skipif(not RELEASE.is_dir(), reason="the PARIKSHA release is not at ../shared/data/pariksha")
def test_full_pariksha_release(store: GateComputer, tmp_path: Path) -> None:
    gpt4 = tmp_path / "gpt4.jsonl"
    flat_gpt4_scores(gpt4)
    argv = [
        item for tsv in sorted(RELEASE.glob("karya_eval/round1/individual/*.tsv")) for item in ("--labels", str(tsv))
    ]
    argv += ["--item-cols", "prompt_id,model", "--annotator-col", "worker_id", "--label-values", "True=1,False=0"]
    for metric, column in METRICS.items():
        argv += ["--label-col", column, "--metric", metric]
    argv += ["--judge-scores", str(gpt4), "--language-from", "language", "--unmatched", "drop"]
    argv += ["--language-map", ",".join(f"{name}={code}" for name, code in LANGUAGES.items())]
    out = tmp_path / "all_pairs.yaml"
    assert main([*argv, "-o", str(out)]) == 0
    ours = store.load(out)
    # The same set under METAL's convention (a copy under another path: gates are cached by path).
    metal = replace(ours, convention="metal", path=tmp_path / "metal.yaml")
    # sklearn's per-call parameter validation dominates the time of these ~250 small calls.
    with sklearn.config_context(skip_parameter_validation=True):
        expected = independent(gpt4)
    fleiss_shift = {}
    for (code, metric), numbers in expected.items():
        a, b = store.gate(ours, code, metric), store.gate(metal, code, metric)
        assert a.n_items == numbers["n"]
        assert a.f1 == pytest.approx(numbers["f1"], abs=1e-12)
        assert a.cohen_kappa == pytest.approx(numbers["kappa"], abs=1e-12)
        assert a.ceiling == pytest.approx(numbers["ceiling"], abs=1e-12), (code, metric)
        assert b.ceiling == pytest.approx(numbers["metal_ceiling"], abs=1e-12), (code, metric)
        assert b.fleiss_kappa == pytest.approx(numbers["metal_fleiss"], abs=1e-12), (code, metric)
        assert a.fleiss_kappa is not None and b.fleiss_kappa is not None
        fleiss_shift[(code, metric)] = b.fleiss_kappa - a.fleiss_kappa
    # The two conventions disagree most on Odia, where Fleiss' kappa changes sign.
    worst = max(fleiss_shift, key=lambda key: abs(fleiss_shift[key]))
    assert worst == ("or", "task_quality") and round(fleiss_shift[worst], 3) == 0.155
    odia = store.gate(ours, "or", "task_quality").fleiss_kappa, store.gate(metal, "or", "task_quality").fleiss_kappa
    assert odia[0] is not None and odia[1] is not None and odia[0] < 0 < odia[1]


def test_the_converter_never_writes_into_a_fifo_or_over_its_own_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import shutil

    scores = tmp_path / "js.jsonl"
    shutil.copy(DATA / "judge_scores.jsonl", scores)
    before = scores.read_bytes()
    toy = [str(scores) if arg == str(DATA / "judge_scores.jsonl") else arg for arg in TOY]
    assert main([*toy, "-o", str(tmp_path / "js.yaml")]) == 2  # its items file would be js.jsonl
    assert "items file" in capsys.readouterr().err and scores.read_bytes() == before
    os.mkfifo(tmp_path / "pipe.yaml")
    assert main([*TOY, "-o", str(tmp_path / "pipe.yaml")]) == 2
    assert "it is a FIFO, not a regular file" in capsys.readouterr().err
    assert not (tmp_path / "pipe.jsonl").exists()
