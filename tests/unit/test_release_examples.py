"""The release-gate and arena examples: their data, the committed baseline, the numbers the docs quote."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from pytest_llmjudge.pairwise.build import load_ranking
from pytest_llmjudge.pairwise.evaluator import RankingEvaluator
from pytest_llmjudge.regression.build import load_baseline

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_suites"
RELEASE = REPO.parent / "shared" / "data" / "pariksha"
PROD = "meta-llama/Meta-Llama-3-70B-Instruct"


def test_committed_baseline_holds_the_production_systems_recorded_scores() -> None:
    baseline = load_baseline(EXAMPLES / "baselines" / "pariksha-release-prod.json")
    suite = baseline.suites["pariksha-release-gate"]
    assert suite.path == "example_suites/baselines/pariksha_release_gate.prod.yaml"
    records = [
        json.loads(line) for line in (EXAMPLES / "data/release_gate/cases.jsonl").read_text("utf-8").splitlines()
    ]
    prod = [r for r in records if r["model"] == PROD]
    assert len(prod) == 160 and len({r["id"] for r in prod}) == 160
    for metric, scores in suite.metrics.items():
        for record in prod:
            assert scores.scores[record["language"]][record["id"]] == record["recorded"][metric]["score"]
    assert suite.metrics["hallucinations"].higher_is_better is False


def test_every_candidate_case_pairs_with_a_baseline_case() -> None:
    records = [
        json.loads(line) for line in (EXAMPLES / "data/release_gate/cases.jsonl").read_text("utf-8").splitlines()
    ]
    by_model: dict[str, set[str]] = {}
    for record in records:
        by_model.setdefault(record["model"], set()).add(record["id"])
    assert len(by_model) == 3 and len({frozenset(ids) for ids in by_model.values()}) == 1


def test_arena_xfail_reasons_quote_the_measured_agreement() -> None:
    ranking = load_ranking(EXAMPLES / "pariksha_arena.yaml")
    evaluator = RankingEvaluator(ranking)
    (agreement,) = [a for a in ranking.assertions if a.kind == "agreement"]
    measured = {}
    for language in ranking.languages:
        result = evaluator.agreement("gpt4", "human", language)
        assert result.rate is not None and result.human_ceiling is not None
        measured[language] = result.rate
        reason = agreement.xfail.get(language)
        if reason is None:
            assert result.rate >= agreement.value
            continue
        assert result.rate < agreement.value
        numbers = re.search(
            r"on (\d+) of (\d+) pairings \((0\.\d{3})\); the annotators agree with each other at (0\.\d{3})", reason
        )
        assert numbers is not None
        assert (int(numbers[1]), int(numbers[2])) == (result.agree, result.n)
        assert float(numbers[3]) == round(result.rate, 3) and float(numbers[4]) == round(result.human_ceiling, 3)
    # The per-language agreement of the subset with the human majority (pairs without one excluded).
    expected = {"bn": 0.699, "gu": 0.804, "hi": 0.848, "mr": 0.703, "or": 0.794, "pa": 0.628, "ta": 0.629, "te": 0.808}
    assert {k: round(v, 3) for k, v in measured.items()} == expected


@pytest.mark.skipif(not RELEASE.is_dir(), reason="the PARIKSHA release is not beside the repository")
def test_release_gate_data_rebuilds_byte_for_byte(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("builder", REPO / "scripts" / "build_release_gate_example.py")
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    records = builder.build(RELEASE)
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
    assert text == (EXAMPLES / "data/release_gate/cases.jsonl").read_text(encoding="utf-8")
