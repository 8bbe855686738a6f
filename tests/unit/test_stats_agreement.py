"""Judge-vs-human agreement: hand-computed cases, then scikit-learn as the reference."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.agreement import (
    agreement_report,
    cohen_kappa,
    confusion_matrix,
    macro_f1,
    percentage_agreement,
    percentage_agreement_from_confusion,
    weighted_f1,
    weighted_f1_from_confusion,
)

# Human aggregate and judge scores of seven items on the 0/1/2 scale.
HUMAN = [0, 0, 1, 1, 2, 2, 2]
JUDGE = [0, 1, 1, 1, 2, 2, 0]


def test_hand_computed_case() -> None:
    # Confusion (rows human, columns judge):   [[1, 1, 0],
    #                                            [0, 2, 0],
    #                                            [1, 0, 2]]
    # row sums 2, 2, 3; column sums 2, 3, 2; diagonal 1, 2, 2.
    # F1_0 = 2*1/(2+2) = 0.5, F1_1 = 2*2/(2+3) = 0.8, F1_2 = 2*2/(3+2) = 0.8
    # weighted = (2*0.5 + 2*0.8 + 3*0.8) / 7 = 5/7;  macro = (0.5+0.8+0.8)/3 = 0.7
    # PA = 5/7;  p_e = (2*2 + 2*3 + 3*2)/49 = 16/49;  kappa = (35-16)/(49-16) = 19/33
    assert confusion_matrix(HUMAN, JUDGE, [0, 1, 2]).tolist() == [
        [1, 1, 0],
        [0, 2, 0],
        [1, 0, 2],
    ]
    assert weighted_f1(HUMAN, JUDGE) == pytest.approx(5 / 7)
    assert macro_f1(HUMAN, JUDGE) == pytest.approx(0.7)
    assert percentage_agreement(HUMAN, JUDGE) == pytest.approx(5 / 7)
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(19 / 33)


def test_label_never_used_by_judge_and_label_only_judge_uses() -> None:
    # Humans use 0 and 1; the judge never says 1 and once says 2, which humans never use.
    # Confusion [[2, 0, 0], [1, 0, 1], [0, 0, 0]]: F1_0 = 4/(2+3) = 0.8, F1_1 = 0/(2+0) = 0,
    # F1_2 = 0/(0+1) = 0 with support 0.
    # weighted = (2*0.8 + 2*0 + 0*0)/4 = 0.4;  macro = (0.8 + 0 + 0)/3 = 0.2667
    human, judge = [0, 0, 1, 1], [0, 0, 0, 2]
    assert weighted_f1(human, judge) == pytest.approx(0.4)
    assert macro_f1(human, judge) == pytest.approx(0.8 / 3)


def test_listing_an_unused_label_changes_macro_but_not_weighted_f1() -> None:
    # Perfect agreement on 0/1; label 2 listed but used by nobody has F1 0 (zero division).
    human = judge = [1, 1, 0]
    assert weighted_f1(human, judge, labels=[0, 1, 2]) == 1.0
    assert macro_f1(human, judge, labels=[0, 1, 2]) == pytest.approx(2 / 3)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_one_class_only() -> None:
    # Everybody says 1: F1 and PA are perfect; kappa is 0/0 (p_e = 1) -> NaN by default.
    assert weighted_f1([1, 1, 1], [1, 1, 1]) == 1.0
    assert macro_f1([1, 1, 1], [1, 1, 1]) == 1.0
    assert percentage_agreement([1, 1, 1], [1, 1, 1]) == 1.0
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(cohen_kappa_score([1, 1, 1], [1, 1, 1]))
    assert cohen_kappa([1, 1, 1], [1, 1, 1], undefined=0.0) == 0.0
    # One rater constant, the other not: p_e < 1, so kappa is defined (and 0 here).
    assert cohen_kappa([1, 1, 0], [1, 1, 1]) == 0.0


@pytest.mark.parametrize(
    "function",
    [weighted_f1, macro_f1, percentage_agreement, cohen_kappa, agreement_report],
)
def test_no_items_is_a_statistics_error(function: object) -> None:
    with pytest.raises(StatisticsError, match="n = 0"):
        function([], [])  # type: ignore[operator]


def test_empty_confusion_matrix_is_zero() -> None:
    assert confusion_matrix([], [], [0, 1]).tolist() == [[0, 0], [0, 0]]


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError, match=r"values \[5\] are not in labels"):
        confusion_matrix([0, 5], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        weighted_f1([0, float("nan")], [0, 1])
    with pytest.raises(ValueError, match="non-integer"):
        weighted_f1([0, 1.5], [0, 1])
    with pytest.raises(ValueError, match="3 items but y_pred has 2"):
        weighted_f1([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="one-dimensional"):
        weighted_f1([[0, 1]], [[0, 1]])
    with pytest.raises(ValueError, match="duplicates"):
        weighted_f1([0, 1], [0, 1], labels=[0, 1, 1])
    with pytest.raises(ValueError, match="integer labels"):
        weighted_f1(["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([0, 1], [0, 1], weights="cubic")  # type: ignore[arg-type]


def test_whole_number_floats_are_accepted() -> None:
    assert weighted_f1(np.array(HUMAN, dtype=float), JUDGE) == pytest.approx(5 / 7)


def test_labels_order_sets_confusion_order() -> None:
    assert confusion_matrix([0, 2], [2, 2], [2, 0]).tolist() == [[1, 0], [1, 0]]
    # Without labels: the sorted values of both arrays, here 0 and 2.
    assert confusion_matrix([0, 2], [2, 2]).tolist() == [[0, 1], [0, 1]]


def _random_pairs(seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    rng = np.random.default_rng(seed)
    k = int(rng.choice([2, 3]))
    n = int(rng.integers(1, 80))
    # Skewed human labels; the judge copies them, or drifts up, or guesses.
    shares = rng.dirichlet(np.full(k, 0.6))
    human = rng.choice(k, size=n, p=shares)
    noise = rng.random(n)
    judge = np.where(noise < 0.6, human, np.minimum(human + 1, k - 1))
    judge = np.where(noise > 0.9, rng.integers(0, k, n), judge)
    return human, judge, k


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("seed", range(80))
def test_matches_scikit_learn_on_random_labels(seed: int) -> None:
    human, judge, k = _random_pairs(seed)
    for labels in (None, list(range(k)), list(range(k + 1))):
        assert weighted_f1(human, judge, labels) == pytest.approx(
            f1_score(human, judge, labels=labels, average="weighted", zero_division=0)
        )
        assert macro_f1(human, judge, labels) == pytest.approx(
            f1_score(human, judge, labels=labels, average="macro", zero_division=0)
        )
    assert np.array_equal(
        confusion_matrix(human, judge, range(k)),
        sk_confusion_matrix(human, judge, labels=list(range(k))),
    )
    assert percentage_agreement(human, judge) == pytest.approx(np.mean(human == judge))
    for weights in (None, "linear", "quadratic"):
        expected = cohen_kappa_score(human, judge, labels=list(range(k)), weights=weights)
        actual = cohen_kappa(human, judge, range(k), weights=weights)
        if math.isnan(expected):
            assert math.isnan(actual)
        else:
            assert actual == pytest.approx(expected)


def test_stacked_confusion_matrices_match_one_by_one() -> None:
    stack = np.stack([confusion_matrix(*_random_pairs(s)[:2], range(3)) for s in range(20)])
    one_by_one = [float(weighted_f1_from_confusion(c)) for c in stack]
    assert np.allclose(weighted_f1_from_confusion(stack), one_by_one)
    assert np.allclose(
        percentage_agreement_from_confusion(stack),
        [np.trace(c) / c.sum() for c in stack],
    )


def test_agreement_report() -> None:
    report = agreement_report(HUMAN, JUDGE, labels=[0, 1, 2])
    assert report.n == 7
    assert report.labels == (0, 1, 2)
    assert report.weighted_f1 == pytest.approx(5 / 7)
    assert report.macro_f1 == pytest.approx(0.7)
    assert report.percentage_agreement == pytest.approx(5 / 7)
    assert report.cohen_kappa == pytest.approx(19 / 33)
    assert report.support == (2, 2, 3)
    assert report.per_class_f1 == pytest.approx((0.5, 0.8, 0.8))
    with pytest.raises(ValueError, match="read-only"):
        report.confusion[0, 0] = 9
    data = json.loads(json.dumps(report.to_dict()))
    assert data["confusion"] == [[1, 1, 0], [0, 2, 0], [1, 0, 2]]


def test_agreement_report_with_undefined_kappa_serialises_as_null() -> None:
    report = agreement_report([2, 2], [2, 2])
    assert math.isnan(report.cohen_kappa)
    assert report.to_dict()["cohen_kappa"] is None
    assert agreement_report([2, 2], [2, 2], kappa_undefined=0.0).cohen_kappa == 0.0
