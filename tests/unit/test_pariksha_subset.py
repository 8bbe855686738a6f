"""Checks on the shipped PARIKSHA subset in example_suites/data/pariksha/.

Structure checks always run. The byte-for-byte rebuild check runs only where the full
release is available beside the repository (../shared/data/pariksha); elsewhere it skips.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SUBSET_DIR = REPO_ROOT / "example_suites" / "data" / "pariksha"
BUILDER = REPO_ROOT / "scripts" / "build_pariksha_subset.py"
SOURCE = Path(__file__).resolve().parents[3] / "shared/data/pariksha"

CODES = ("bn", "gu", "hi", "mr", "or", "pa", "ta", "te")
METRICS = {
    "linguistic_acceptability": (0, 2),
    "task_quality": (0, 2),
    "hallucinations": (0, 1),
}
VERDICTS = {"A", "B", "tie"}
INDIVIDUAL_FIELDS = {
    "id",
    "language",
    "prompt_id",
    "model",
    "prompt_type",
    "input",
    "output",
    "recorded",
    "human",
}
PAIRWISE_FIELDS = {
    "pairing_id",
    "language",
    "prompt_id",
    "model_a",
    "model_b",
    "gpt4",
    "gpt4_justification",
    "human",
}
MAX_OUTPUT_CHARS = 4000
# 3 MiB for the subset, plus about 0.3 MB of reversed pairs (scripts/build_pariksha_reversed.py).
MAX_TOTAL_BYTES = 3.5 * 1024 * 1024


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    assert lines[-1] == "", f"{path.name} must end with a newline"
    return [json.loads(line) for line in lines[:-1]]


@pytest.fixture(scope="module")
def individual() -> dict[str, list[dict[str, Any]]]:
    return {code: _read_jsonl(SUBSET_DIR / f"individual_{code}.jsonl") for code in CODES}


@pytest.fixture(scope="module")
def pairwise() -> dict[str, list[dict[str, Any]]]:
    return {code: _read_jsonl(SUBSET_DIR / f"pairwise_{code}.jsonl") for code in CODES}


def test_all_files_present_and_small() -> None:
    names = {p.name for p in SUBSET_DIR.iterdir()}
    expected = {f"individual_{c}.jsonl" for c in CODES} | {f"pairwise_{c}.jsonl" for c in CODES}
    assert expected | {"LICENSE", "README.md"} <= names
    reversed_pairs = {f"reversed_{c}.jsonl" for c in CODES}  # their own builder, build_pariksha_reversed.py
    assert {n for n in names if n.endswith(".jsonl")} == expected | reversed_pairs
    assert "MIT License" in (SUBSET_DIR / "LICENSE").read_text(encoding="utf-8")
    readme = (SUBSET_DIR / "README.md").read_text(encoding="utf-8")
    assert "03bac88c3d899b008efd9671b11109b11676b7c4" in readme
    assert "@inproceedings" in readme
    assert sum(p.stat().st_size for p in SUBSET_DIR.iterdir()) < MAX_TOTAL_BYTES


def test_individual_records(individual: dict[str, list[dict[str, Any]]]) -> None:
    seen_ids: set[str] = set()
    for code, records in individual.items():
        assert len(records) == 50, code
        assert len({r["model"] for r in records}) >= 5, f"{code}: too few models"
        for r in records:
            assert INDIVIDUAL_FIELDS <= set(r), r.get("id")
            assert set(r) <= INDIVIDUAL_FIELDS | {"output_truncated"}, r["id"]
            assert r["language"] == code
            assert r["id"] not in seen_ids, r["id"]
            seen_ids.add(r["id"])
            assert re.fullmatch(rf"{code}-[0-9a-f]{{8}}-[a-z0-9-]+", r["id"]), r["id"]
            assert r["id"].split("-")[1] == r["prompt_id"][:8]
            assert isinstance(r["input"], str) and r["input"].strip()
            assert isinstance(r["output"], str) and r["output"].strip()
            assert len(r["output"]) <= MAX_OUTPUT_CHARS
            if "output_truncated" in r:
                assert r["output_truncated"] is True and len(r["output"]) == MAX_OUTPUT_CHARS
            assert set(r["recorded"]) == set(METRICS) == set(r["human"])
            workers = set(r["human"]["task_quality"])
            assert 1 <= len(workers) <= 3
            for metric, (lo, hi) in METRICS.items():
                rec = r["recorded"][metric]
                assert set(rec) == {"score", "justification"}
                assert type(rec["score"]) is int and lo <= rec["score"] <= hi
                assert isinstance(rec["justification"], str) and rec["justification"].strip()
                labels = r["human"][metric]
                assert set(labels) == workers, r["id"]
                assert all(type(v) is int and lo <= v <= hi for v in labels.values()), r["id"]


def test_individual_annotator_coverage(
    individual: dict[str, list[dict[str, Any]]],
) -> None:
    for code, records in individual.items():
        multi = sum(len(r["human"]["task_quality"]) >= 2 for r in records)
        assert multi >= 30, f"{code}: only {multi} items with >= 2 annotators"


def test_pairwise_records(pairwise: dict[str, list[dict[str, Any]]]) -> None:
    seen: set[str] = set()
    for code, records in pairwise.items():
        assert 1 <= len(records) <= 300, code
        for r in records:
            assert set(r) == PAIRWISE_FIELDS, r.get("pairing_id")
            assert r["language"] == code
            assert r["pairing_id"] not in seen
            seen.add(r["pairing_id"])
            assert r["model_a"] != r["model_b"]
            assert r["gpt4"] in VERDICTS
            assert isinstance(r["gpt4_justification"], str) and r["gpt4_justification"].strip()
            assert 1 <= len(r["human"]) <= 4
            assert set(r["human"].values()) <= VERDICTS


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_build_pariksha_subset", BUILDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builder_reproduces_shipped_files(tmp_path: Path) -> None:
    if not SOURCE.is_dir():
        pytest.skip(f"PARIKSHA release not available at {SOURCE}")
    builder = _load_builder()
    written = builder.build(SOURCE, tmp_path)
    assert written, "builder wrote nothing"
    names = sorted(p.name for p in written)
    shipped = sorted(
        p.name for p in SUBSET_DIR.iterdir() if p.name != "README.md" and not p.name.startswith("reversed_")
    )
    assert names == shipped
    for name in names:
        assert (tmp_path / name).read_bytes() == (SUBSET_DIR / name).read_bytes(), name
