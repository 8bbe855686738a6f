"""The drift sentinel's pure parts: sampling, agreement, identity comparison, the verdict, the stored file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from sklearn.metrics import f1_score

from pytest_llmjudge.calibration.drift import (
    Agreement,
    Certified,
    certified_path,
    decide,
    drift_sample,
    identity_changes,
    merge_identities,
    read_certified,
    sample_agreement,
    write_certified,
)
from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.suite.schema import DriftConfig

V1 = {"served_model": "m-1", "system_fingerprint": "fp_a", "rubric_version": "r1"}


def test_the_sample_is_seeded_sorted_and_all_items_when_the_group_is_small() -> None:
    config = DriftConfig(sample=5, seed=3)
    first = drift_sample(40, config)
    assert first == drift_sample(40, config) and first == sorted(first) and len(set(first)) == 5
    assert drift_sample(40, DriftConfig(sample=5, seed=4)) != first
    assert drift_sample(4, config) == [0, 1, 2, 3]


def test_agreement_is_sklearns_weighted_f1_on_the_scored_items() -> None:
    human = [0, 1, 2, 2, 1, 0, 2]
    judge = [0.0, 2.0, 2.0, math.nan, 1.0, 1.0, 2.0]
    found = sample_agreement(human, judge, (0, 1, 2))
    assert found is not None and found.n == 6
    kept = [(h, int(j)) for h, j in zip(human, judge, strict=True) if not math.isnan(j)]
    expected = f1_score([h for h, _ in kept], [j for _, j in kept], labels=[0, 1, 2], average="weighted")
    assert found.f1 == pytest.approx(expected)
    assert found.low <= found.f1 <= found.high
    assert sample_agreement([1, 2], [math.nan, math.nan], (0, 1, 2)) is None


def test_identity_changes_name_each_field_and_merging_lists_every_value() -> None:
    assert identity_changes(V1, dict(V1)) == []
    v2 = {**V1, "served_model": "m-2"}
    del v2["system_fingerprint"]
    assert identity_changes(V1, v2) == ["served_model m-1 -> m-2", "system_fingerprint fp_a -> none"]
    assert merge_identities([V1, {**V1, "served_model": "m-0"}, None]) == {
        "rubric_version": "r1",
        "served_model": "m-0, m-1",
        "system_fingerprint": "fp_a",
    }


def certified(f1: float) -> Certified:
    return Certified("openai:m", "fr", "quality", dict(V1), Agreement(f1, f1, f1, 20), ("a", "b"), "")


@pytest.mark.parametrize(
    ("before", "after", "fails"),
    [(0.9, 0.8, False), (0.9, 0.79, True), (0.5, 0.9, False)],
    ids=["drop-at-tolerance", "drop-beyond", "rise"],
)
def test_an_agreement_drop_beyond_the_tolerance_fails(before: float, after: float, fails: bool) -> None:
    verdict = decide(DriftConfig(tolerance=0.1), "j", certified(before), V1, V1, V1, Agreement(after, 0, 1, 20))
    assert (verdict.problem is not None) == fails and verdict.warning is None


def test_another_served_identity_fails_or_warns_as_configured() -> None:
    v2 = {**V1, "served_model": "m-2"}
    after = Agreement(0.9, 0.8, 1.0, 20)
    failed = decide(DriftConfig(on_change="fail"), "j in fr", certified(0.9), V1, v2, V1, after)
    assert failed.problem is not None and "certified m-1 (fp_a), rubric r1, now m-2 (fp_a), rubric r1" in failed.problem
    warned = decide(DriftConfig(on_change="warn"), "j in fr", certified(0.9), V1, v2, V1, after)
    assert warned.problem is None and warned.warning is not None and "m-2" in warned.warning
    cached = decide(DriftConfig(), "j", certified(0.9), V1, V1, v2, after)
    assert cached.problem is not None and "the gate's (cached) scores were served by m-2" in cached.problem
    nothing = decide(DriftConfig(), "j", certified(0.9), V1, V1, V1, None)
    assert nothing.problem is not None and "scored none of the 2 sample items" in nothing.problem


def test_the_certification_round_trips_and_a_bad_file_names_its_field(tmp_path: Path) -> None:
    path = certified_path(tmp_path / "cal.yaml", "openai:m", "fr/x", "quality")
    assert path.parent == tmp_path / "cal.certified" and path.name.startswith("fr_x.quality.")
    assert read_certified(path) is None
    write_certified(path, certified(0.75))
    assert read_certified(path) == certified(0.75)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["agreement"] = {"weighted_f1": "high"}
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SuiteError, match="agreement is not valid"):
        read_certified(path)
