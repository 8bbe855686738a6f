"""The human-scale change of a regression comparison (regression/human.py) against ppi_py and by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pytest_llmjudge.records import CaseScore
from pytest_llmjudge.regression.baseline import build_baseline, save_baseline
from pytest_llmjudge.regression.build import load_baseline
from pytest_llmjudge.regression.human import MIN_PAIRS, human_change

ppi_py = pytest.importorskip("ppi_py")


def test_matches_ppi_mean_ci_on_the_differences() -> None:
    from scipy.stats import norm, t

    rng = np.random.default_rng(5)
    n_cases, n_labelled = 40, 12
    base_judge = rng.integers(0, 3, n_cases).astype(float)
    cand_judge = np.clip(base_judge - rng.integers(0, 2, n_cases), 0, 2)
    base_human = np.clip(base_judge - rng.integers(0, 2, n_cases), 0, 2)
    cand_human = np.clip(cand_judge - rng.integers(0, 2, n_cases), 0, 2)
    ids = [f"c{i}" for i in range(n_cases)]
    chosen = sorted(rng.choice(n_cases, n_labelled, replace=False))
    result = human_change(
        dict(zip(ids, cand_judge, strict=True)),
        dict(zip(ids, base_judge, strict=True)),
        {ids[i]: float(cand_human[i]) for i in chosen},
        {ids[i]: float(base_human[i]) for i in chosen},
    )
    assert result is not None and result.value is not None
    f = cand_judge - base_judge
    y = (cand_human - base_human)[chosen]
    # Student's t with n - 1 df: ppi_py at the alpha whose normal quantile is that t quantile.
    alpha = 2 * norm.sf(t.ppf(0.975, n_labelled - 1))
    low, high = ppi_py.ppi_mean_ci(y, f[chosen], f, alpha=alpha, lam=None)
    point = ppi_py.ppi_mean_pointestimate(y, f[chosen], f, lam=None)
    assert result.value == pytest.approx(float(np.asarray(point).squeeze()), abs=1e-12)
    assert result.low == pytest.approx(float(np.asarray(low).squeeze()), abs=1e-9)
    assert result.high == pytest.approx(float(np.asarray(high).squeeze()), abs=1e-9)
    assert (result.n, result.N) == (n_labelled, n_cases)
    assert result.judge_change == pytest.approx(float(np.mean(f)))
    assert result.human_only == pytest.approx(float(np.mean(y)))


def test_hand_computed_case() -> None:
    # Every judge change is -1: the judge carries no information about which pair moved,
    # lambda = 0 and the estimate is the mean of the 5 human differences [-1, -1, 0, -1, 0]:
    # -0.6, sd (ddof 0) sqrt(0.24), se sqrt(0.24 / 5), t_4 = 2.776445.
    cand = {f"c{i}": 1.0 for i in range(8)}
    base = {f"c{i}": 2.0 for i in range(8)}
    cand_h = {"c0": 1.0, "c1": 0.0, "c2": 2.0, "c3": 1.0, "c4": 2.0}
    base_h = {"c0": 2.0, "c1": 1.0, "c2": 2.0, "c3": 2.0, "c4": 2.0, "c7": 2.0}
    result = human_change(cand, base, cand_h, base_h)
    assert result is not None and result.value == pytest.approx(-0.6) and result.lam == 0.0
    half = 2.7764451051977987 * math.sqrt(0.24 / 5)
    assert (result.low, result.high) == (pytest.approx(-0.6 - half), pytest.approx(-0.6 + half))
    assert result.N == 8 and result.n == 5 and result.judge_change == -1.0
    # On a known scale [0, 2] a difference lies in [-2, 2]: the interval is floored and clipped to it.
    scaled = human_change(cand, base, cand_h, base_h, scale=(0.0, 2.0))
    assert scaled is not None and scaled.low is not None and scaled.high is not None
    assert scaled.high - scaled.low > 2 * half and -2.0 <= scaled.low and scaled.high <= 2.0


def test_too_few_or_no_labelled_pairs() -> None:
    cand = {f"c{i}": 1.0 for i in range(8)}
    base = {f"c{i}": 2.0 for i in range(8)}
    assert human_change(cand, base, {}, {"c0": 1.0}) is None
    # Labels on both sides, but never on the same case: said, not silently dropped.
    apart = human_change(cand, base, {"c1": 1.0}, {"c0": 1.0})
    assert apart is not None and apart.value is None and (apart.n, apart.N) == (0, 8)
    assert apart.text().startswith("only 0 of the 8 paired cases carry a human label on both sides")
    labelled = {f"c{i}": 1.0 for i in range(MIN_PAIRS - 1)}
    few = human_change(cand, base, labelled, labelled)
    assert few is not None and few.value is None and few.n == MIN_PAIRS - 1
    assert f"needs at least {MIN_PAIRS}" in few.text()
    # A pair unscored on one side is not one of the N, labelled or not.
    cand["c0"] = None  # type: ignore[assignment]
    labelled = {f"c{i}": 1.0 for i in range(6)}
    result = human_change(cand, base, labelled, labelled)
    assert result is not None and (result.n, result.N) == (5, 7) and result.value == 0.0


def test_baseline_saves_human_labels_and_an_old_baseline_still_loads(tmp_path: Path) -> None:
    from pytest_llmjudge.records import AggregateRecord, AggregateRow, Threshold

    scores = [
        CaseScore(case="a", language="hi", score=2, source="recorded", human=1.5),
        CaseScore(case="b", language="hi", score=1, source="recorded"),
    ]
    record = AggregateRecord(
        nodeid="s.yaml::x",
        outcome="passed",
        passed=True,
        suite="s",
        suite_path=str(tmp_path / "s.yaml"),
        aggregate="mean(q)",
        metric="q",
        language="all",
        case_scores=scores,
        rows=[
            AggregateRow(
                language="all",
                n_scored=2,
                n_unscored=0,
                value=1.5,
                threshold=Threshold(op=">=", value=0.0),
                passed=True,
            )
        ],
    )
    baseline = build_baseline("b", [record], rootdir=tmp_path)
    save_baseline(baseline, tmp_path / "b.json")
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["suites"]["s"]["metrics"]["q"]["human"] == {"hi": {"a": 1.5}}
    assert load_baseline(tmp_path / "b.json").metric("s", "q").human == {"hi": {"a": 1.5}}  # type: ignore[union-attr]
    # A baseline written before labels were saved: no "human" key, loads with none.
    del data["suites"]["s"]["metrics"]["q"]["human"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load_baseline(tmp_path / "old.json").metric("s", "q")
    assert old is not None and old.human == {} and old.scores == {"hi": {"a": 2.0, "b": 1.0}}
    data["suites"]["s"]["metrics"]["q"]["human"] = {"hi": {"a": "good"}}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(Exception, match="case 'a': human label 'good' is not a finite number"):
        load_baseline(tmp_path / "bad.json")
