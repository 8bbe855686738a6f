"""The human-agreement gate, score correction, sanity-check helpers and calibration file format.

The headline test recomputes GPT-4-vs-native-speaker weighted F1 on the shipped PARIKSHA
subset independently (plain-Python METAL aggregation + scikit-learn) and requires the
gate's numbers to be identical.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.calibration.agreement_gate import GateOptions, evaluate_gate
from pytest_llmjudge.calibration.correction import evaluate_correction, fit_correction
from pytest_llmjudge.calibration.gate_computer import GateComputer
from pytest_llmjudge.calibration.sanity import (
    item_seed,
    shuffle_words,
    summarize_consistency,
    summarize_sensitivity,
)
from pytest_llmjudge.calibration.schema import GateConfig
from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.execution.scorer import Scorer
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.settings import Settings

REPO = Path(__file__).resolve().parents[2]
SUBSET = REPO / "example_suites" / "data" / "pariksha"
EXAMPLE = REPO / "example_suites" / "pariksha_calibration.yaml"
CODES = ("bn", "gu", "hi", "mr", "or", "pa", "ta", "te")
SCALES = {"linguistic_acceptability": [0, 1, 2], "task_quality": [0, 1, 2], "hallucinations": [0, 1]}


@pytest.fixture
def store(tmp_path: Path) -> GateComputer:
    registry = Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
    )
    board = Scorer(registry, Settings(cache_mode="off", cache_dir=tmp_path / "cache"))
    return GateComputer(board)


# -- the real data, computed independently ---------------------------------------------


def metal_aggregate(labels: list[int]) -> int:
    """Majority vote; when there is none, the mean rounded half up (METAL sec. 3.2)."""
    counts = Counter(labels).most_common()
    if len(counts) == 1 or counts[0][1] > counts[1][1]:
        return counts[0][0]
    return math.floor(sum(labels) / len(labels) + 0.5)


def independent(language: str, metric: str) -> dict[str, float]:
    human, judge, slots = [], [], []
    for line in (SUBSET / f"individual_{language}.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        # Slots: each item's labels ordered by (numeric) worker id.
        labels = [label for _, label in sorted(record["human"][metric].items(), key=lambda kv: int(kv[0]))]
        human.append(metal_aggregate(labels))
        judge.append(record["recorded"][metric]["score"])
        slots.append(labels)
    pair_f1, weights = [], []
    for a, b in combinations(range(max(map(len, slots))), 2):
        both = [(s[a], s[b]) for s in slots if len(s) > max(a, b)]
        if both:
            x, y = zip(*both)
            pair_f1.append(
                (
                    f1_score(x, y, average="weighted", zero_division=0)
                    + f1_score(y, x, average="weighted", zero_division=0)
                )
                / 2
            )
            weights.append(len(both))
    complete = [s for s in slots if len(s) == 3]
    metal = np.mean(
        [
            f1_score([s[a] for s in complete], [s[b] for s in complete], average="weighted", zero_division=0)
            for a, b in ((0, 1), (1, 2), (2, 0))
        ]
    )
    return {
        "metal_ceiling": float(metal),
        "metal_fleiss": float(sm_fleiss_kappa(aggregate_raters(np.asarray(complete))[0])),
        "f1": f1_score(human, judge, average="weighted", labels=SCALES[metric], zero_division=0),
        "pa": float(np.mean(np.asarray(human) == np.asarray(judge))),
        "kappa": cohen_kappa_score(human, judge),
        "ceiling": float(np.average(pair_f1, weights=weights)),
    }


def test_pariksha_gate_equals_independent_sklearn_computation(store: GateComputer, tmp_path: Path) -> None:
    cal = store.load(EXAMPLE)
    metal_path = tmp_path / "data" / "metal.yaml"
    metal_path.parent.mkdir()
    text = EXAMPLE.read_text(encoding="utf-8").replace("\ngate:", "\nagreement_convention: metal\ngate:", 1)
    metal_path.write_text(text.replace("data/pariksha/", str(SUBSET) + "/"), encoding="utf-8")
    metal_cal = store.load(metal_path)
    assert metal_cal.convention == "metal"
    assert cal.languages == CODES
    for language in CODES:
        for metric in SCALES:
            gate = store.gate(cal, language, metric)
            expected = independent(language, metric)
            assert gate.n_scored == gate.n_items == 50
            assert gate.f1 == pytest.approx(expected["f1"], abs=1e-12), (language, metric)
            assert gate.percentage_agreement == pytest.approx(expected["pa"], abs=1e-12)
            assert gate.cohen_kappa == pytest.approx(expected["kappa"], abs=1e-12)
            assert gate.ceiling == pytest.approx(expected["ceiling"], abs=1e-12)
            metal = store.gate(metal_cal, language, metric)
            assert metal.f1 == gate.f1
            assert metal.ceiling == pytest.approx(expected["metal_ceiling"], abs=1e-12), (language, metric)
            assert metal.fleiss_kappa == pytest.approx(expected["metal_fleiss"], abs=1e-12), (language, metric)


def test_pariksha_linguistic_acceptability_f1_per_language(store: GateComputer) -> None:
    cal = store.load(EXAMPLE)
    measured = {code: round(store.gate(cal, code, "linguistic_acceptability").f1 or 0, 3) for code in CODES}
    assert measured == {
        "bn": 0.227,
        "gu": 0.656,
        "hi": 0.774,
        "mr": 0.650,
        "or": 0.255,
        "pa": 0.793,
        "ta": 0.541,
        "te": 0.910,
    }


def test_example_xfail_reasons_quote_the_measured_numbers(store: GateComputer) -> None:
    cal = store.load(EXAMPLE)
    marked = 0
    for language, metric in cal.groups():
        gate = store.gate(cal, language, metric)
        reason = cal.gate.xfail_for(language, metric)
        if reason is None:
            assert gate.passed, f"{language} {metric} fails but is not marked"
            continue
        marked += 1
        assert not gate.passed and gate.problem is None
        match = re.match(r"F1 (\d\.\d{3}) \(95% CI (\d\.\d\d)-(\d\.\d\d)\) < 0\.60, human ceiling (\d\.\d{3})", reason)
        assert match, reason
        assert float(match[1]) == round(gate.f1 or 0, 3)
        assert (float(match[2]), float(match[3])) == (round(gate.ci_low or 0, 2), round(gate.ci_high or 0, 2))
        assert float(match[4]) == round(gate.ceiling or 0, 3)
        shares = [int(x) for x in re.findall(r"(\d+)%", reason.split(";")[1])]
        best = gate.best_label
        judge, human = gate.share_of(best, "judge") or 0, gate.share_of(best, "human") or 0
        if metric == "hallucinations":
            judge, human = 1 - judge, 1 - human
        assert shares == [round(100 * judge), round(100 * human)]
    assert marked == 14


@pytest.mark.skipif(not (REPO.parent / "shared" / "data" / "pariksha").is_dir(), reason="PARIKSHA release not here")
def test_subset_labels_come_from_the_release() -> None:
    """Spot check: each Bengali item's human labels are rows of the release's Karya TSVs."""
    release = REPO.parent / "shared" / "data" / "pariksha" / "karya_eval" / "round1" / "individual"
    rows: set[tuple[str, str, str, str]] = set()
    for tsv in release.glob("*_ratings_output_indi*.tsv"):
        lines = tsv.read_text(encoding="utf-8").splitlines()
        header = lines[0].split("\t")
        index = {name: header.index(name) for name in ("model", "prompt_id", "worker_id", "ling_rating")}
        for line in lines[1:]:
            cells = line.split("\t")
            if len(cells) == len(header):
                rows.add(tuple(cells[index[k]] for k in ("model", "prompt_id", "worker_id", "ling_rating")))  # type: ignore[arg-type]
    for line in (SUBSET / "individual_bn.jsonl").read_text(encoding="utf-8").splitlines()[:10]:
        record = json.loads(line)
        for worker, label in record["human"]["linguistic_acceptability"].items():
            assert any(
                r[0] == record["model"] and r[1] == record["prompt_id"] and r[2] == worker and float(r[3]) == label
                for r in rows
            )


# -- gate behaviour ---------------------------------------------------------------------


def test_too_few_items_is_a_problem_naming_count_and_minimum() -> None:
    human = np.array([[2, 2, 2]] * 5, dtype=float)
    result = evaluate_gate(human, np.full(5, 2.0), [0, 1, 2], GateOptions(threshold=0.5, min_items=10))
    assert result.f1 == 1.0
    assert result.problem == "too few items: 5 < min_items 10"
    assert not result.passed


def test_no_items_is_a_problem() -> None:
    result = evaluate_gate(np.zeros((0, 3)), np.zeros(0), [0, 1, 2], GateOptions(threshold=0.5, min_items=1))
    assert result.problem is not None and "no labelled items" in result.problem
    assert not result.passed


def test_unscored_items_fail_the_gate_unless_tolerated() -> None:
    human = np.array([[1, 1, np.nan]] * 20, dtype=float)
    judge = np.ones(20)
    judge[3] = np.nan
    strict = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.5, min_items=5), unscored_reasons=["x"])
    assert strict.problem == "1 of 20 items have no judge score (max_unscored_rate 0)"
    assert not strict.passed and strict.n_scored == 19
    tolerant = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.5, min_items=5, max_unscored_rate=0.1))
    assert tolerant.passed and tolerant.problem is None
    nothing = evaluate_gate(human, np.full(20, np.nan), [0, 1, 2], GateOptions(threshold=0.0, min_items=5))
    assert nothing.problem is not None and "no item has a judge score" in nothing.problem and not nothing.passed


def test_ci_lower_bound_is_stricter_than_the_point_estimate() -> None:
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 3, 40)
    judge = np.where(rng.random(40) < 0.8, truth, rng.integers(0, 3, 40)).astype(float)
    human = np.stack([truth, truth, truth], axis=1).astype(float)
    point = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.75, min_items=10))
    lower = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.75, min_items=10, ci_lower_bound=True))
    assert point.f1 is not None and lower.ci_low is not None
    assert point.f1 >= 0.75 > lower.ci_low
    assert point.passed and not lower.passed
    assert lower.compared_value == lower.ci_low


def test_diagnostics_single_annotators_skew_and_baseline() -> None:
    human = np.array([[2, np.nan], [1, 1], [0, 2], [2, 2], [1, 2]], dtype=float)
    judge = np.array([2, 2, 2, 2, 2], dtype=float)
    result = evaluate_gate(human, judge, [0, 1, 2], GateOptions(threshold=0.5, min_items=1))
    assert result.levels == {"full": 2, "none": 2, "single": 1}
    assert result.single_annotator == 1
    # aggregates: 2, 1, 1 (rounded mean of 0 and 2), 2, 2 (half up of 1.5)
    assert result.overall is not None
    assert result.overall["human_mean"] == pytest.approx(8 / 5)
    assert result.overall["skew"] == pytest.approx(2 - 8 / 5)
    assert result.overall["judge_top_share"] == 1.0
    assert result.baseline_f1 == pytest.approx(result.f1)  # the judge *is* the majority baseline here
    record = result.to_dict()
    assert record["confusion"]["matrix"] == [[0, 0, 0], [0, 0, 2], [0, 0, 3]]
    assert record["kappa"] == 0.0 or record["kappa"] is None
    assert set(record["distribution"]) == {"all", "full", "none", "single"}


def test_threshold_and_xfail_lookups_most_specific_wins() -> None:
    settings = GateConfig(
        threshold=0.6,
        per_metric={"task_quality": 0.5},
        per_language={"te": 0.8, "hi": {"task_quality": 0.55}},
        xfail={"bn": "all of bn", "hi": {"task_quality": "hi tq"}},
    )
    assert settings.threshold_for("fr", "linguistic_acceptability") == 0.6
    assert settings.threshold_for("fr", "task_quality") == 0.5
    assert settings.threshold_for("te", "task_quality") == 0.8
    assert settings.threshold_for("hi", "task_quality") == 0.55
    assert settings.threshold_for("hi", "linguistic_acceptability") == 0.6
    assert settings.xfail_for("bn", "hallucinations") == "all of bn"
    assert settings.xfail_for("hi", "task_quality") == "hi tq"
    assert settings.xfail_for("hi", "hallucinations") is None


# -- score correction --------------------------------------------------------------------


def biased_judge(n: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Humans spread over 0-2; the judge says one class higher (capped), like an over-lenient LLM."""
    rng = np.random.default_rng(seed)
    human = rng.choice(3, size=n, p=[0.3, 0.4, 0.3])
    judge = np.where(rng.random(n) < 0.9, np.minimum(human + 1, 2), rng.integers(0, 3, n))
    return human, judge


@pytest.mark.parametrize("method", ["most_likely", "expected"])
def test_correction_improves_held_out_f1_of_a_biased_judge(method: str) -> None:
    human, judge = biased_judge(300)
    report = evaluate_correction(human, judge, [0, 1, 2], method=method, holdout=0.3, seed=0)  # type: ignore[arg-type]
    assert report is not None
    assert report.n_test == 90 and report.n_fit == 210
    assert report.f1_after > report.f1_before + 0.2
    assert report.correction.apply(2) < 2


def test_fit_correction_maps_and_degenerate_cases() -> None:
    corr = fit_correction([0, 1, 1, 2], [1, 2, 2, 2], [0, 1, 2])
    assert dict(corr.mapping) == {1: 0.0, 2: 1.0}
    assert corr.apply(0) == 0.0  # never given by the judge: unchanged
    tie = fit_correction([0, 2], [1, 1], [0, 1, 2])
    assert tie.mapping[1] == 0.0  # tie 0 vs 2, equally close to 1: the lower one
    expected = fit_correction([0, 1, 1, 2], [1, 2, 2, 2], [0, 1, 2], "expected")
    assert expected.mapping[2] == pytest.approx(4 / 3)
    assert list(expected.apply_labels([2, 1, 0])) == [1, 0, 0]
    assert evaluate_correction([1], [1], [0, 1, 2]) is None


# -- sanity-check helpers -------------------------------------------------------------------


def test_shuffle_words_is_seeded_keeps_words_and_whitespace() -> None:
    text = "एक दो तीन चार पाँच छह सात आठ नौ दस ग्यारह बारह तेरह चौदह पंद्रह सोलह सत्रह अठारह उन्नीस बीस\nअंत"
    first = shuffle_words(text, 0.1, item_seed(7, "hi-1"))
    again = shuffle_words(text, 0.1, item_seed(7, "hi-1"))
    assert first is not None and again is not None
    assert first == again
    assert first.text != text
    assert sorted(first.text.split()) == sorted(text.split())
    assert re.findall(r"\s+", first.text) == re.findall(r"\s+", text)
    assert first.unit == "word" and first.n_units == 21 and len(first.positions) == 2
    moved = sum(a != b for a, b in zip(first.text.split(), text.split()))
    assert 2 <= moved <= 2
    other = shuffle_words(text, 0.1, item_seed(8, "hi-1"))
    assert other is not None and other.positions != first.positions or other.text != first.text


def test_shuffle_falls_back_to_characters_and_refuses_unchangeable_text() -> None:
    japanese = shuffle_words("今日はとても良い天気ですね。散歩に行きましょう。", 0.1, 1)
    assert japanese is not None and japanese.unit == "character"
    assert sorted(japanese.text) == sorted("今日はとても良い天気ですね。散歩に行きましょう。")
    assert shuffle_words("word", 0.1, 1) is None
    assert shuffle_words("same same same same same same", 0.5, 1) is None


def test_consistency_summary_counts_unscored_as_inconsistent() -> None:
    result = summarize_consistency([(2, 2, 2), (1, 2, 1), (2, None, 2), (0, 0, 0)], min_agreement=0.5, repeats=3)
    assert (result.n_consistent, result.n_unscored, result.rate) == (2, 1, 0.5)
    assert result.passed
    assert not summarize_consistency([], min_agreement=0.0, repeats=3).passed


def test_sensitivity_summary() -> None:
    pairs = [(2, 1), (2, 2), (1, 0), (0, 0), (2, None), None, (1, 2)]
    result = summarize_sensitivity(pairs, worst=0, higher_is_better=True, min_lowered=0.5, fraction=0.1)
    assert (result.n_worse, result.n_same, result.n_better, result.n_at_worst) == (2, 1, 1, 1)
    assert (result.n_unscored, result.n_unperturbable) == (1, 1)
    assert result.rate == pytest.approx(2 / 5)
    assert not result.passed
    lower_is_better = summarize_sensitivity(
        [(0, 1), (0, 0)], worst=1, higher_is_better=False, min_lowered=0.5, fraction=0.1
    )
    assert lower_is_better.n_worse == 1 and lower_is_better.passed
    nothing = summarize_sensitivity([(0, 0)], worst=0, higher_is_better=True, min_lowered=0.0, fraction=0.1)
    assert nothing.problem is not None and not nothing.passed


# -- the file format ----------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "cal.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BASE = """\
calibration: tiny
items:
  - id: a
    language: hi
    output: "नमस्ते"
    metric: linguistic_acceptability
    labels: {a1: 2, a2: 2}
    recorded: {linguistic_acceptability: 2}
  - id: b
    language: hi
    output: "नमस्ते जी"
    human:
      linguistic_acceptability: {a1: 1, a2: 2, 7: 1}
      hallucinations: {a1: 0}
    recorded:
      linguistic_acceptability: {score: 1, judge: my-judge}
      hallucinations: 0
gate:
  threshold: 0.5
  min_items: 1
"""


def test_inline_items_both_label_shapes(store: GateComputer, tmp_path: Path) -> None:
    cal = store.load(write(tmp_path, BASE))
    assert cal.groups() == [("hi", "hallucinations"), ("hi", "linguistic_acceptability")]
    items = cal.items("hi", "linguistic_acceptability")
    assert [(item.annotators, item.values) for item in items] == [
        (("a1", "a2"), (2, 2)),
        (("a1", "a2", "7"), (1, 2, 1)),
    ]
    slots = store.label_matrix(items, "slots")
    assert slots.shape == (2, 3) and math.isnan(slots[0, 2])
    by_id = store.label_matrix(items, "annotators")
    assert by_id.shape == (2, 3)  # columns 7, a1, a2
    assert by_id[1].tolist() == [1, 1, 2]
    gate = store.gate(cal, "hi", "linguistic_acceptability")
    assert gate.passed and gate.f1 == 1.0
    assert cal.recorded_label() == "my-judge"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("threshold: 0.5", "threshhold: 0.5"),
            r"cal\.yaml:\d+: gate: unknown field 'threshhold'.*\n  hint: did you mean 'threshold'\?",
        ),
        (
            ("labels: {a1: 2, a2: 2}", "labels: {a1: 2, a2: 5}"),
            r"cal\.yaml:3: human\.linguistic_acceptability: labels \[5\] of item 'a' are not on the linguistic_acceptability scale \[0, 1, 2\]",
        ),
        (
            ("metric: linguistic_acceptability", "metric: linguistic_acceptibility"),
            r"unknown metric 'linguistic_acceptibility'.*\n  hint: did you mean 'linguistic_acceptability'\?",
        ),
        (
            ("  min_items: 1", "  min_items: 1\n  xfail: {bn: known}"),
            r"cal\.yaml:\d+: gate\.xfail\.bn: language 'bn' has no items in this calibration set",
        ),
        (
            ("  min_items: 1", "  min_items: 1\n  per_metric: {task_quality: 0.4}"),
            r"gate\.per_metric\.task_quality: metric 'task_quality' is not gated",
        ),
        (("gate:\n  threshold: 0.5\n  min_items: 1\n", ""), r"cal\.yaml:1: missing required field 'gate'"),
        (("  - id: b", "  - id: a"), r"duplicate item id 'a'"),
        (
            ("    recorded: {linguistic_acceptability: 2}", "    recorded: {linguistic_acceptability: 3}"),
            r"recorded linguistic_acceptability score 3 of item 'a' is not on the scale",
        ),
    ],
)
def test_format_errors_are_located(store: GateComputer, tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in BASE
    with pytest.raises(SuiteError) as excinfo:
        store.load(write(tmp_path, BASE.replace(old, new, 1)))
    assert re.search(message, str(excinfo.value)), str(excinfo.value)


def test_items_file_errors(store: GateComputer, tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"items file not found: .*missing\.jsonl"):
        store.load(write(tmp_path, "calibration: x\nitems_file: missing.jsonl\ngate: {threshold: 0.5}\n", "a.yaml"))
    (tmp_path / "items.jsonl").write_text(
        json.dumps({"id": "a", "language": "hi", "output": "x", "metric": "hallucinations", "labels": {}}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteError, match=r"items\.jsonl:1: .*no annotator labels for 'hallucinations'"):
        store.load(write(tmp_path, "calibration: x\nitems_file: items.jsonl\ngate: {threshold: 0.5}\n"))


def test_listed_language_without_items_is_gated_and_fails(store: GateComputer, tmp_path: Path) -> None:
    cal = store.load(write(tmp_path, BASE.replace("gate:", "languages: [hi, sw]\ngate:")))
    assert ("sw", "linguistic_acceptability") in cal.groups()
    gate = store.gate(cal, "sw", "linguistic_acceptability")
    assert not gate.passed and gate.problem == "no labelled items (min_items 1)"


def test_suite_judge_calibration_path_is_resolved_and_checked(tmp_path: Path) -> None:
    from pytest_llmjudge.suite.build import build_suite

    registry = Registry(rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()))
    suite_text = "suite: s\njudge:\n  calibration: {path}\ncases: [{{id: a, language: hi, output: x}}]\n"
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", BASE)
    suite = build_suite(write(tmp_path, suite_text.format(path="sub/cal.yaml"), "suite.yaml"), registry)
    assert suite.judge.calibration == str((tmp_path / "sub" / "cal.yaml").resolve())
    with pytest.raises(SuiteError, match=r"suite\.yaml:3: judge\.calibration: calibration set not found"):
        build_suite(write(tmp_path, suite_text.format(path="nope.yaml"), "suite.yaml"), registry)
    with pytest.raises(SuiteError, match=r"correction needs a calibration set"):
        build_suite(
            write(
                tmp_path, "suite: s\njudge: {correction: true}\ncases: [{id: a, language: hi, output: x}]\n", "s2.yaml"
            ),
            registry,
        )
