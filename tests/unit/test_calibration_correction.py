"""Score correction: degenerate maps are flagged and never applied, the held-out gain has a
bootstrap interval, and what the correction does on the shipped PARIKSHA subset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.calibration.agreement_gate import GateOptions, evaluate_gate
from pytest_llmjudge.calibration.correction import evaluate_correction, fit_correction
from pytest_llmjudge.calibration.gate_computer import GateComputer
from pytest_llmjudge.calibration.report import gate_message
from pytest_llmjudge.execution.scorer import Score, Scorer
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings
from pytest_llmjudge.stats.agreement import confusion_matrix, weighted_f1_from_confusion
from pytest_llmjudge.suite.model import Case, Suite
from pytest_llmjudge.suite.schema import JudgeConfig

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "example_suites" / "pariksha_calibration.yaml"


def test_a_map_that_sends_every_score_to_one_label_is_flagged_and_never_applied() -> None:
    # Humans say 1 on 80% of the items whatever the judge says: most_likely maps 0, 1, 2 -> 1.
    rng = np.random.default_rng(2)
    human = np.where(rng.random(60) < 0.8, 1, rng.integers(0, 3, 60))
    judge = rng.integers(0, 3, 60)
    report = evaluate_correction(human, judge, [0, 1, 2], holdout=0.3, seed=0)
    assert report is not None
    assert report.correction.distinct_outputs == 1 and len(report.correction.mapping) == 3
    assert report.problems == ("degenerate map: every judge score becomes 1",)
    assert not report.usable
    # Its held-out "gain" is real arithmetic (most held-out items are 1) and still reported.
    assert report.gain > 0.3
    result = evaluate_gate(np.stack([human] * 3, axis=1), judge, [0, 1, 2], GateOptions(threshold=0.1, min_items=5))
    message = gate_message(result, calibration="c", judge="j")
    assert "never applied: degenerate map: every judge score becomes 1" in message


def test_a_judge_with_one_score_is_not_a_collapse_but_few_held_out_items_are_refused() -> None:
    one_score = evaluate_correction([0, 1, 2, 2] * 10, [2] * 40, [0, 1, 2], holdout=0.3)
    assert one_score is not None and one_score.correction.describe() == "most_likely (2->2)"
    assert one_score.usable
    small = evaluate_correction([0, 1, 2, 2, 1, 0] * 4, [0, 1, 2, 2, 2, 0] * 4, [0, 1, 2], holdout=0.3)
    assert small is not None and small.n_test == 7
    assert small.problems == ("only 7 held-out items (min_holdout 10)",)
    allowed = evaluate_correction([0, 1, 2, 2, 1, 0] * 4, [0, 1, 2, 2, 2, 0] * 4, [0, 1, 2], min_holdout=5)
    assert allowed is not None and allowed.usable


def test_gain_interval_resamples_held_out_items() -> None:
    rng = np.random.default_rng(3)
    human = rng.choice(3, size=200, p=[0.3, 0.4, 0.3])
    judge = np.where(rng.random(200) < 0.85, np.minimum(human + 1, 2), rng.integers(0, 3, 200))
    report = evaluate_correction(human, judge, [0, 1, 2], holdout=0.5, seed=1, resamples=2000)
    assert report is not None and report.usable
    assert report.gain_low is not None and report.gain_high is not None
    assert report.gain_low < report.gain < report.gain_high
    assert report.gain_low > 0  # a one-point over-scoring judge: the correction clearly helps
    # The statistic on one confusion matrix equals the gain computed item by item with sklearn.
    order = np.random.default_rng(1).permutation(200)
    test = order[:100]
    fitted = fit_correction(human[order[100:]], judge[order[100:]], [0, 1, 2])
    corrected = fitted.apply_labels(judge[test])
    by_items = f1_score(human[test], corrected, average="weighted", labels=[0, 1, 2], zero_division=0) - f1_score(
        human[test], judge[test], average="weighted", labels=[0, 1, 2], zero_division=0
    )
    confusion = confusion_matrix(human[test], judge[test], [0, 1, 2])
    by_matrix = weighted_f1_from_confusion(confusion @ fitted.label_matrix()) - weighted_f1_from_confusion(confusion)
    assert report.gain == pytest.approx(by_items) == pytest.approx(float(by_matrix))


def test_what_the_correction_does_on_the_shipped_pariksha_subset(tmp_path: Path) -> None:
    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    store = GateComputer(Scorer(registry, Settings(cache_mode="off", cache_dir=tmp_path)))
    cal = store.load(EXAMPLE)
    reports = {(g, m): store.gate(cal, g, m).correction for g, m in cal.groups()}
    assert all(r is not None and r.n_test == 15 for r in reports.values())
    up = sorted(k for k, r in reports.items() if r and r.gain > 1e-9)
    down = sorted(k for k, r in reports.items() if r and r.gain < -1e-9)
    collapsed = sorted(k for k, r in reports.items() if r and not r.usable)
    la, tq, h = "linguistic_acceptability", "task_quality", "hallucinations"
    assert up == [("bn", la), ("bn", tq), ("mr", la), ("mr", tq), ("or", la), ("pa", tq)]
    assert down == [("hi", la), ("ta", tq)]
    assert collapsed == [("bn", h), ("bn", la), ("bn", tq), ("hi", la), ("or", la), ("pa", la), ("ta", la)]
    bn = reports[("bn", la)]
    assert bn is not None and bn.correction.describe() == "most_likely (0->1, 1->1, 2->1)"
    assert (round(bn.f1_before, 3), round(bn.f1_after, 3)) == (0.009, 0.805)
    # Only the two collapsed Bengali maps have a gain interval above 0; no usable one does.
    clear = sorted(k for k, r in reports.items() if r and r.gain_low is not None and r.gain_low > 0)
    assert clear == [("bn", la), ("bn", tq)]


def test_a_suite_never_gets_a_degenerate_correction(tmp_path: Path) -> None:
    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    store = GateComputer(Scorer(registry, Settings(cache_mode="off", cache_dir=tmp_path / "cache")))
    cal = store.load(EXAMPLE)
    judge = JudgeConfig(calibration=str(EXAMPLE), correction=True)
    suite = Suite(name="s", path=tmp_path / "s.yaml", cases=(), judge=judge, rubrics=cal.rubrics, metric_kinds={})
    la = "linguistic_acceptability"

    def adjusted(language: str, metric: str, raw: float = 2.0) -> Score:
        case = Case(suite="s", id="c", language=language, output="x")
        return store.adjust(suite, case, Score(metric=metric, value=raw, source="judge"))

    # Bengali LA maps every score to 1 on the calibration set: refused, the raw 2 is kept.
    refused = adjusted("bn", la)
    assert refused.value == 2.0
    assert refused.detail["correction"] == "refused, score left raw: degenerate map: every judge score becomes 1"
    # Marathi TQ (0->0, 1->0, 2->2) is usable and applied.
    applied = adjusted("mr", "task_quality", raw=1.0)
    assert applied.value == 0.0 and applied.detail["raw judge score"] == "1"
    assert applied.detail["correction"].startswith("most_likely (0->0, 1->0, 2->2) fitted on 50 mr items")
