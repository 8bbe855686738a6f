"""Gate criteria beyond F1 (kappa, F1/ceiling, |skew|), the agreement conventions, label-order
independence of the ceiling, and gates grouped by several item fields (``group_by``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import yaml

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.calibration.agreement_gate import GateOptions, evaluate_gate
from pytest_llmjudge.calibration.gate_computer import GateComputer
from pytest_llmjudge.calibration.report import gate_message, next_steps
from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.execution.scorer import Scorer
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings
from pytest_llmjudge.stats.grouping import MISSING, Group, group_of

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "example_suites" / "pariksha_calibration.yaml"
SUBSET = REPO / "example_suites" / "data" / "pariksha"


@pytest.fixture
def store(tmp_path: Path) -> GateComputer:
    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    return GateComputer(Scorer(registry, Settings(cache_mode="off", cache_dir=tmp_path / "cache")))


def majority_judge_data() -> tuple[np.ndarray, np.ndarray]:
    """40 items, humans say 2 on 34 and 1 on 6 (unanimously); the judge always says 2."""
    human = np.array([[2, 2, 2]] * 34 + [[1, 1, 1]] * 6, dtype=float)
    return human, np.full(40, 2.0)


def test_a_majority_label_judge_passes_an_f1_gate_but_fails_a_kappa_gate() -> None:
    human, judge = majority_judge_data()
    f1_only = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.7, min_items=10))
    # Per-class F1: class 2 = 2*34/(34+40) = 68/74, class 1 = 0; weighted by support 34/40.
    assert f1_only.f1 == pytest.approx(34 / 40 * 68 / 74)
    assert f1_only.passed and f1_only.cohen_kappa == pytest.approx(0.0)
    with_kappa = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.7, min_kappa=0.2, min_items=10))
    assert not with_kappa.passed and with_kappa.problem is None
    assert with_kappa.failed_criteria == ("Cohen's kappa 0.000 < min_kappa 0.200",)
    message = gate_message(with_kappa, calibration="c", judge="j")
    assert message.splitlines()[0].endswith(": Cohen's kappa 0.000 < min_kappa 0.200")
    assert "criteria        threshold 0.7, min_kappa 0.2" in message


def test_ceiling_ratio_and_skew_criteria_each_named() -> None:
    human, judge = majority_judge_data()
    result = evaluate_gate(
        human,
        judge,
        [0, 1, 2],
        GateOptions(threshold=0.9, min_ceiling_ratio=0.95, max_abs_skew=0.1, min_kappa=-1.0, min_items=10),
    )
    # The ceiling is 1.0 (annotators agree on every item), so the ratio is the F1 itself.
    assert result.ceiling == 1.0 and result.ceiling_ratio == pytest.approx(result.f1)
    # Skew: judge mean 2, human mean (34*2 + 6)/40 = 1.85.
    assert result.abs_skew == pytest.approx(0.15)
    assert result.failed_criteria == (
        f"weighted F1 {result.f1:.3f} < threshold 0.900",
        f"F1/ceiling {result.f1:.3f} < min_ceiling_ratio 0.950",
        "|skew| 0.150 > max_abs_skew 0.100",
    )
    loose = evaluate_gate(
        human, judge, [0, 1, 2], GateOptions(threshold=0.7, min_ceiling_ratio=0.7, max_abs_skew=0.15, min_items=10)
    )
    assert loose.passed


def test_undefined_kappa_fails_a_kappa_criterion() -> None:
    human = np.array([[2, 2, 2]] * 12, dtype=float)
    result = evaluate_gate(human, np.full(12, 2.0), [0, 1, 2], GateOptions(threshold=0.5, min_kappa=0.0, min_items=5))
    assert result.f1 == 1.0 and result.cohen_kappa is None
    assert result.failed_criteria == ("Cohen's kappa undefined < min_kappa 0.000",)


def cal_text(items: list[dict[str, object]], gate: dict[str, object], **top: object) -> str:
    return yaml.safe_dump({"calibration": "t", **top, "items": items, "gate": gate}, allow_unicode=True)


def skewed_items(language: str, task: str, n: int = 12, good: bool = True) -> list[dict[str, object]]:
    items = []
    for index in range(n):
        label = 2 if index % 4 else 1
        score = label if good else 2
        items.append(
            {
                "id": f"{language}-{task}-{index}",
                "language": language,
                "output": "x",
                "metadata": {"task": task},
                "metric": "linguistic_acceptability",
                "labels": {"w3": label, "w1": label, "w2": label if index % 3 else 1},
                "recorded": {"linguistic_acceptability": score},
            }
        )
    return items


def test_per_language_and_per_metric_criteria_overrides(store: GateComputer, tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    items = skewed_items("hi", "qa", good=False) + skewed_items("bn", "qa", good=False)
    gate = {
        "threshold": 0.5,
        "min_items": 5,
        "min_kappa": 0.3,
        "per_language": {"bn": {"min_kappa": -1.0}, "hi": {"linguistic_acceptability": {"max_abs_skew": 0.1}}},
    }
    path.write_text(cal_text(items, gate), encoding="utf-8")
    cal = store.load(path)
    hi = store.gate(cal, "hi", "linguistic_acceptability")
    bn = store.gate(cal, "bn", "linguistic_acceptability")
    assert hi.options.min_kappa == 0.3 and hi.options.max_abs_skew == 0.1
    assert bn.options.min_kappa == -1.0 and bn.options.max_abs_skew is None
    assert bn.passed
    assert [text.split(" ")[0] for text in hi.failed_criteria] == ["Cohen's", "|skew|"]
    bad = dict(gate, per_metric={"linguistic_acceptability": {"min_kapa": 0.1}})
    path.write_text(cal_text(items, bad), encoding="utf-8")
    with pytest.raises(SuiteError, match="unknown criteria"):
        GateComputer(store.board).load(path)


def test_ceiling_does_not_depend_on_the_order_of_each_items_labels(store: GateComputer, tmp_path: Path) -> None:
    # The shipped PARIKSHA subset, every item's label mappings shuffled (seeded), under both
    # conventions: every gate statistic is identical.
    records = []
    rng = random.Random(7)
    for path in sorted(SUBSET.glob("individual_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for metric, labels in record["human"].items():
                pairs = list(labels.items())
                rng.shuffle(pairs)
                record["human"][metric] = dict(pairs)
            records.append(record)
    (tmp_path / "shuffled.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8"
    )
    for convention in ("all_pairs", "metal"):
        original_text = EXAMPLE.read_text(encoding="utf-8").replace(
            "\ngate:", f"\nagreement_convention: {convention}\ngate:", 1
        )
        original = tmp_path / f"original-{convention}.yaml"
        original.write_text(original_text.replace("data/pariksha/", str(SUBSET) + "/"), encoding="utf-8")
        shuffled = tmp_path / f"shuffled-{convention}.yaml"
        head, _, tail = original_text.partition("items_file:")
        tail = tail[tail.index("\n", tail.rindex("individual_te")) :]
        shuffled.write_text(
            head + "items_file: {path: shuffled.jsonl, extra_fields: metadata}" + tail, encoding="utf-8"
        )
        a, b = store.load(original), store.load(shuffled)
        assert a.groups() == b.groups() and len(a.groups()) == 24
        for group, metric in a.groups():
            x, y = store.gate(a, group, metric).to_dict(), store.gate(b, group, metric).to_dict()
            assert x == y, (convention, group, metric)


def test_grouping_helper() -> None:
    record = {"language": "hi", "id": "a", "metadata": {"task": "qa", "n": 3}}
    group = group_of(record, ["language", "task"])
    assert group == Group(("language", "task"), ("hi", "qa"))
    assert group.name == "hi-task=qa" and group.value("task") == "qa"
    assert group_of(record, ["language"]).name == "hi"
    assert group_of(record, ["language", "model"]).name == f"hi-model={MISSING}"
    assert group.matches({"language": "hi", "metadata": {"task": "qa"}})
    assert not group.matches({"language": "hi", "task": "mt"})
    with pytest.raises(ValueError):
        group_of(record, [])


def test_group_by_language_and_task(store: GateComputer, tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    items = skewed_items("hi", "qa") + skewed_items("hi", "mt", good=False) + skewed_items("bn", "qa")
    gate = {
        "threshold": 0.9,
        "min_items": 5,
        "per_group": {"hi-task=mt": {"threshold": 0.3}},
        "xfail": {"hi-task=mt": "always says 2"},
    }
    path.write_text(cal_text(items, gate, group_by=["language", "task"]), encoding="utf-8")
    cal = store.load(path)
    assert cal.groups() == [
        ("bn-task=qa", "linguistic_acceptability"),
        ("hi-task=mt", "linguistic_acceptability"),
        ("hi-task=qa", "linguistic_acceptability"),
    ]
    mt = store.gate(cal, "hi-task=mt", "linguistic_acceptability")
    qa = store.gate(cal, "hi-task=qa", "linguistic_acceptability")
    assert mt.language == qa.language == "hi" and mt.group == "hi-task=mt"
    assert mt.n_items == qa.n_items == 12
    assert mt.threshold == 0.3 and qa.threshold == 0.9
    assert qa.passed and qa.f1 == 1.0
    assert cal.gate.xfail_for("hi", "linguistic_acceptability", "hi-task=mt") == "always says 2"
    assert cal.gate.xfail_for("hi", "linguistic_acceptability", "hi-task=qa") is None
    assert "hi-task=mt linguistic_acceptability" in gate_message(mt, calibration="t", judge="j")
    # A group name that has no items is refused, like a language.
    path.write_text(
        cal_text(items, dict(gate, per_group={"hi-task=qq": 0.5}), group_by=["language", "task"]), encoding="utf-8"
    )
    with pytest.raises(SuiteError, match="(?s)group 'hi-task=qq' has no items.*did you mean 'hi-task=qa'"):
        GateComputer(store.board).load(path)


def test_metal_convention_needs_slots_and_group_by_starts_with_language(store: GateComputer, tmp_path: Path) -> None:
    path = tmp_path / "cal.yaml"
    items = skewed_items("hi", "qa")
    path.write_text(cal_text(items, {"threshold": 0.5}, agreement_convention="metal", ceiling="annotators"))
    with pytest.raises(SuiteError, match="use it with ceiling: slots"):
        store.load(path)
    path.write_text(cal_text(items, {"threshold": 0.5}, group_by=["task", "language"]))
    with pytest.raises(SuiteError, match="group_by must start with 'language'"):
        GateComputer(store.board).load(path)


def test_conventions_choose_the_items_of_the_human_side_by_hand() -> None:
    # Four complete items, one with two labels (disagreeing), one with one label.
    human = np.array([[2, 2, 2], [1, 1, 2], [0, 0, 0], [2, 1, 2], [0, 2, np.nan], [1, np.nan, np.nan]], dtype=float)
    judge = np.array([2, 1, 0, 2, 1, 1], dtype=float)
    ours = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.5, min_items=1))
    metal = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.5, min_items=1, convention="metal"))
    assert (ours.fleiss_items, ours.ceiling_items) == (5, 5)
    assert (metal.fleiss_items, metal.ceiling_items) == (4, 4)
    assert ours.f1 == metal.f1  # the judge side does not depend on the convention
    # Fleiss by hand on the 4 complete items: P_i = 1, 1/3, 1, 1/3 -> Pbar 2/3; class shares
    # 0: 3/12, 1: 3/12, 2: 6/12 -> Pe 3/8; kappa (2/3 - 3/8) / (5/8) = 7/15.
    assert metal.fleiss_kappa == pytest.approx(7 / 15)
    # With the 2-label item (P = 0): Pbar 8/15; shares over 14 labels 0: 4, 1: 3, 2: 7 -> Pe 74/196.
    assert ours.fleiss_kappa == pytest.approx((8 / 15 - 74 / 196) / (1 - 74 / 196))
    # METAL ceiling by hand, slots A1 = 2 1 0 2, A2 = 2 1 0 1, A3 = 2 2 0 2:
    # A1->A2: per-class F1 (1, 2/3, 2/3), support (1, 1, 2) -> 3/4; A2->A3: (1, 0, 1/2),
    # support (1, 2, 1) -> 3/8; A3->A1: (1, 0, 4/5), support (1, 0, 3) -> 17/20.
    assert metal.ceiling == pytest.approx((3 / 4 + 3 / 8 + 17 / 20) / 3)


def test_a_failing_gate_ends_with_the_next_steps_its_diagnosis_calls_for() -> None:
    # The judge always says 2 where humans say 1 on 20 of 40 items: it leans high by 0.5.
    human = np.array([[2, 2, 2]] * 20 + [[1, 1, 1]] * 20, dtype=float)
    judge = np.full(40, 2.0)
    leaning = evaluate_gate(
        human, judge, [0, 1, 2], GateOptions(threshold=0.7, min_items=10), language="hi", metric="m"
    )
    steps = next_steps(leaning)
    assert "the judge scores higher than native speakers by 0.50" in steps[0]
    assert steps[-1].startswith("until then, mark it known: gate.xfail: {hi: {m: 'why'}}")
    assert gate_message(leaning, calibration="c", judge="j").splitlines()[-len(steps) - 1] == "  next steps:"
    # Too few items, and annotators who disagree among themselves, each get their own step.
    few = evaluate_gate(
        human[:6], judge[:6], [0, 1, 2], GateOptions(threshold=0.7, min_items=10), language="hi", metric="m"
    )
    assert any(
        step.startswith("label more hi items for m: 6 labelled, the gate needs at least 10") for step in next_steps(few)
    )
    split = np.array([[2, 1, 0], [0, 1, 2], [1, 2, 0], [2, 0, 1]] * 10, dtype=float)
    noisy = evaluate_gate(
        split, np.full(40, 2.0), [0, 1, 2], GateOptions(threshold=0.7, min_items=10), language="hi", metric="m"
    )
    assert any("annotators agree with each other only at" in step for step in next_steps(noisy))
    passing = evaluate_gate(
        human, human[:, 0], [0, 1, 2], GateOptions(threshold=0.7, min_items=10), language="hi", metric="m"
    )
    assert passing.passed and next_steps(passing) == []
