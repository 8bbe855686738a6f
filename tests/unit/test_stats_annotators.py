"""Multi-annotator labels: aggregation, Fleiss' kappa and the human ceiling."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from sklearn.metrics import f1_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from pytest_llmjudge.errors import StatisticsError
from pytest_llmjudge.stats.annotators import (
    AGREEMENT_LEVELS,
    aggregate_labels,
    complete_items,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    pairwise_annotator_f1,
    pairwise_slot_f1,
    rating_counts,
    slot_matrix,
)

nan = float("nan")

# One row per item, one column per annotator, NaN = not labelled.
RATINGS = np.array(
    [
        [2, 2, 2],  # full agreement -> 2
        [2, 2, 1],  # 2 of 3 -> majority 2, partial
        [0, 1, 2],  # all differ -> mean 1, none
        [1, 2, nan],  # two annotators disagree -> mean 1.5 rounds half up to 2, none
        [0, nan, nan],  # a single annotator -> 0, single
        [nan, 1, 1],  # two agree -> 1, full
        [0, 0, 2],  # majority 0 (the mean 0.67 would round to 1), partial
        [0, 2, nan],  # mean 1 -> 1, none
    ]
)


def test_metal_rule_by_hand() -> None:
    result = aggregate_labels(RATINGS)
    assert result.labels.tolist() == [2, 2, 1, 2, 0, 1, 0, 1]
    assert result.level.tolist() == [
        "full",
        "partial",
        "none",
        "none",
        "single",
        "full",
        "partial",
        "none",
    ]
    assert result.n_annotators.tolist() == [3, 3, 3, 2, 1, 2, 3, 2]
    assert result.label_set == (0, 1, 2)
    assert result.mask("none").tolist() == [0, 0, 1, 1, 0, 0, 0, 1]


def test_mean_rounded_ignores_the_majority() -> None:
    # Row [0, 0, 2]: mean 2/3 -> 1 although two annotators said 0.
    assert aggregate_labels(RATINGS, "mean_rounded").labels.tolist() == [
        2,
        2,
        1,
        2,
        0,
        1,
        1,
        1,
    ]


def test_rounding_is_half_up() -> None:
    # numpy would give round(0.5) = 0 and round(2.5) = 2; a person expects 1 and 3.
    ratings = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    assert aggregate_labels(ratings).labels.tolist() == [1, 2, 3, 4]


def test_ties_with_four_annotators() -> None:
    ratings = np.array(
        [
            [0, 0, 2, 2],  # 2-2 tie: no majority, mean 1 -> 1
            [1, 1, 2, 2],  # 2-2 tie: mean 1.5 -> 2
            [2, 2, 0, 1],  # 2-1-1: unique most frequent label 2 -> 2, partial
            [1, 1, 1, 0],  # 3-1 -> 1, partial
        ]
    )
    result = aggregate_labels(ratings)
    assert result.labels.tolist() == [1, 2, 2, 1]
    assert result.level.tolist() == ["none", "none", "partial", "partial"]


def test_majority_then_median() -> None:
    ratings = np.array(
        [
            [1, 2, 5, nan],  # no majority: median 2 (the mean 2.67 would give 3)
            [1, 2, nan, nan],  # median 1.5 -> 2
            [0, 0, 2, 2],  # median 1
            [4, 4, 1, nan],  # majority 4
        ]
    )
    result = aggregate_labels(ratings, "majority_then_median")
    assert result.labels.tolist() == [2, 2, 1, 4]
    assert aggregate_labels(ratings).labels.tolist() == [3, 2, 1, 4]


def _reference_aggregate(row: list[int], rule: str) -> tuple[int, str]:
    """Plain-Python statement of the rules, to check the vectorised code against."""
    counts = Counter(row).most_common()
    n = len(row)
    has_majority = len(counts) == 1 or counts[0][1] > counts[1][1]
    if n == 1:
        level = "single"
    elif len(counts) == 1:
        level = "full"
    else:
        level = "partial" if has_majority else "none"
    mean_rounded = math.floor(sum(row) / n + 0.5)
    if rule == "mean_rounded":
        return mean_rounded, level
    if has_majority:
        return counts[0][0], level
    if rule == "majority_then_median":
        return math.floor(float(np.median(row)) + 0.5), level
    return mean_rounded, level


@pytest.mark.parametrize("rule", ["majority_then_rounded_mean", "majority_then_median", "mean_rounded"])
def test_matches_plain_python_on_random_matrices(rule: str) -> None:
    rng = np.random.default_rng(7)
    for k, annotators in [(2, 3), (3, 3), (3, 4), (5, 5)]:
        ratings = rng.integers(0, k, size=(300, annotators)).astype(float)
        gaps = rng.random(ratings.shape) < 0.3
        gaps[:, 0] = False  # every item keeps at least one label
        ratings[gaps] = nan
        result = aggregate_labels(ratings, rule)  # type: ignore[arg-type]
        for row, label, level in zip(ratings, result.labels, result.level, strict=True):
            present = [int(x) for x in row if not math.isnan(x)]
            assert (label, level) == _reference_aggregate(present, rule)


def test_aggregate_errors() -> None:
    with pytest.raises(StatisticsError, match=r"1 item\(s\) have no annotator label"):
        aggregate_labels(np.array([[1, 2], [nan, nan]]))
    with pytest.raises(StatisticsError, match="n = 0"):
        aggregate_labels(np.empty((0, 3)))
    with pytest.raises(ValueError, match="unknown aggregation rule"):
        aggregate_labels([[1, 2]], "mode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole numbers"):
        aggregate_labels([[1, 2.5]])
    with pytest.raises(ValueError, match=r"values \[3\] are not in labels"):
        aggregate_labels([[1, 3]], labels=[0, 1, 2])
    with pytest.raises(ValueError, match="2-D"):
        aggregate_labels([1, 2])
    with pytest.raises(ValueError, match="level must be one of"):
        aggregate_labels([[1, 2]]).mask("most")
    assert set(AGREEMENT_LEVELS) == {"full", "partial", "none", "single"}


def test_rating_counts_match_statsmodels_aggregate_raters() -> None:
    rng = np.random.default_rng(3)
    ratings = rng.choice([0, 1, 2], p=[0.1, 0.3, 0.6], size=(50, 3))
    table, categories = aggregate_raters(ratings)
    assert categories.tolist() == [0, 1, 2]
    assert np.array_equal(rating_counts(ratings.astype(float)), table)
    # With gaps each row sums to its number of labels.
    assert rating_counts(RATINGS).sum(axis=1).tolist() == [3, 3, 3, 2, 1, 2, 3, 2]


def test_fleiss_kappa_by_hand() -> None:
    # Three items, three raters, binary labels:
    # counts (class 0, class 1) = (0, 3), (1, 2), (3, 0)
    # P_i = (9-3)/6 = 1, (1+4-3)/6 = 1/3, 1  -> Pbar = 7/9
    # p = (4/9, 5/9) -> Pe = (16+25)/81 = 41/81
    # kappa = (63/81 - 41/81) / (40/81) = 22/40 = 0.55
    ratings = [[1, 1, 1], [1, 1, 0], [0, 0, 0]]
    assert fleiss_kappa(ratings) == pytest.approx(0.55)
    assert sm_fleiss_kappa(aggregate_raters(ratings)[0]) == pytest.approx(0.55)


def test_fleiss_kappa_with_varying_annotators_by_hand() -> None:
    # Item 1: two labels (0, 0) -> P = (4-2)/(2*1) = 1
    # Item 2: three labels (0, 1, 1) -> P = (1+4-3)/(3*2) = 1/3
    # Item 3: one label -> left out.    Pbar = 2/3
    # Pooled labels of items 1-2: three 0s, two 1s -> p = (0.6, 0.4), Pe = 0.52
    # kappa = (2/3 - 0.52) / 0.48 = 11/36
    ratings = np.array([[0, 0, nan], [0, 1, 1], [1, nan, nan]])
    assert fleiss_kappa(ratings) == pytest.approx(11 / 36)


@pytest.mark.parametrize("seed", range(40))
def test_fleiss_kappa_matches_statsmodels_on_constant_raters(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.choice([2, 3]))
    raters = int(rng.integers(2, 6))
    shares = rng.dirichlet(np.full(k, 0.7))
    truth = rng.choice(k, size=int(rng.integers(5, 120)), p=shares)
    # Each rater copies the item's "true" class or, 25% of the time, picks at random.
    copies = rng.random((truth.size, raters)) < 0.75
    ratings = np.where(copies, truth[:, None], rng.integers(0, k, (truth.size, raters)))
    table, _ = aggregate_raters(ratings, n_cat=k)
    expected = sm_fleiss_kappa(table)
    if math.isnan(expected):
        assert math.isnan(fleiss_kappa(ratings.astype(float)))
    else:
        assert fleiss_kappa(ratings.astype(float)) == pytest.approx(expected)
        assert fleiss_kappa_from_counts(table) == pytest.approx(expected)


def test_single_label_items_do_not_change_fleiss_kappa() -> None:
    complete = np.array([[0, 0, 1], [1, 1, 1], [2, 2, 1], [0, 0, 0]], dtype=float)
    with_singles = np.vstack([complete, [[2, nan, nan], [nan, 0, nan]]])
    assert fleiss_kappa(with_singles) == pytest.approx(fleiss_kappa(complete))


def test_fleiss_kappa_degenerate_cases() -> None:
    # All labels in one class: Pe = 1 and kappa is 0/0 (METAL Table 6 prints 0.0 there).
    assert math.isnan(fleiss_kappa([[1, 1], [1, 1]]))
    assert fleiss_kappa([[1, 1], [1, 1]], undefined=0.0) == 0.0
    with pytest.raises(StatisticsError, match="two or more labels"):
        fleiss_kappa([[1, nan], [nan, 2]])
    with pytest.raises(ValueError, match="2-D"):
        fleiss_kappa_from_counts([1, 2, 3])


def _both_ways_f1(a: list[float], b: list[float]) -> float:
    return float(
        (f1_score(a, b, average="weighted", zero_division=0) + f1_score(b, a, average="weighted", zero_division=0)) / 2
    )


def test_pairwise_annotator_f1_by_hand() -> None:
    ratings = np.array([[0, 0, 1], [1, 1, 1], [2, 1, 2], [2, 2, nan]])
    # A1-A2 on 4 items: A1 = 0 1 2 2, A2 = 0 1 1 2. Per-class F1 1, 2/3, 2/3 (the same in
    #   both directions); weights (1, 1, 2) one way -> 3/4, (1, 2, 1) the other -> 3/4.
    # A1-A3 on 3 items: A1 = 0 1 2, A3 = 1 1 2. Per-class F1 0, 2/3, 1;
    #   A1 as reference (1, 1, 1) -> 5/9, A3 as reference (0, 2, 1) -> 7/9; mean 2/3.
    # A2-A3 on 3 items: A2 = 0 1 1, A3 = 1 1 2. Per-class F1 0, 1/2, 0 -> 1/3 both ways.
    # Ceiling, pairs weighted by shared items: (4 * 3/4 + 3 * 2/3 + 3 * 1/3) / 10 = 6/10
    result = pairwise_annotator_f1(ratings, ["ann", "bo", "cy"])
    assert [(p.first, p.second, p.n_items) for p in result.pairs] == [
        ("ann", "bo", 4),
        ("ann", "cy", 3),
        ("bo", "cy", 3),
    ]
    assert [p.f1 for p in result.pairs] == pytest.approx([3 / 4, 2 / 3, 1 / 3])
    assert result.mean == pytest.approx(6 / 10)
    assert result.n_items == 4


def test_pairwise_annotator_f1_matches_scikit_learn() -> None:
    rng = np.random.default_rng(11)
    truth = rng.choice(3, size=200, p=[0.15, 0.25, 0.6])
    ratings = np.where(rng.random((200, 4)) < 0.8, truth[:, None], rng.integers(0, 3, (200, 4)))
    ratings = ratings.astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = nan
    result = pairwise_annotator_f1(ratings)
    expected = []
    for i, j in combinations(range(4), 2):
        shared = ~np.isnan(ratings[:, i]) & ~np.isnan(ratings[:, j])
        expected.append(_both_ways_f1(ratings[shared, i], ratings[shared, j]))
    assert [p.f1 for p in result.pairs] == pytest.approx(expected)
    assert result.mean == pytest.approx(np.average(expected, weights=[p.n_items for p in result.pairs]))


def test_slot_f1_compacts_worker_columns() -> None:
    # Six workers, each item rated by three of them (PARIKSHA-style worker-id columns).
    rng = np.random.default_rng(5)
    truth = rng.choice(3, size=60, p=[0.2, 0.3, 0.5])
    wide = np.full((60, 6), nan)
    slots = np.full((60, 3), nan)
    for item in range(60):
        workers = np.sort(rng.choice(6, size=3 if item % 5 else 2, replace=False))
        labels = np.where(
            rng.random(workers.size) < 0.7,
            truth[item],
            rng.integers(0, 3, workers.size),
        )
        wide[item, workers] = labels
        slots[item, : workers.size] = labels
    slot_result = pairwise_slot_f1(wide)
    assert slot_result == pairwise_annotator_f1(slots)
    # Items with two labels only take part in A1-A2.
    assert [(p.first, p.second, p.n_items) for p in slot_result.pairs] == [
        ("A1", "A2", 60),
        ("A1", "A3", 48),
        ("A2", "A3", 48),
    ]


def test_ceiling_errors() -> None:
    with pytest.raises(StatisticsError, match="no human ceiling"):
        pairwise_annotator_f1([[0, nan], [nan, 1]])
    with pytest.raises(StatisticsError, match="no human ceiling"):
        pairwise_slot_f1([[0, nan], [nan, 1]])
    with pytest.raises(ValueError, match="2 annotator ids for 3"):
        pairwise_annotator_f1([[0, 1, 1]], ["a", "b"])


def test_slot_matrix_pivots_long_format() -> None:
    items, matrix = slot_matrix(["b", "a", "b", "a", "c", "b"], [1, 2, 0, 2, 1, 2])
    assert items.tolist() == ["a", "b", "c"]
    assert np.array_equal(matrix, np.array([[2, 2, nan], [1, 0, 2], [1, nan, nan]]), equal_nan=True)
    with pytest.raises(ValueError, match="2 item ids but 3 ratings"):
        slot_matrix([1, 2], [0, 1, 1])


def test_a_rare_fourth_label_barely_moves_the_all_pairs_ceiling() -> None:
    # 20 items with three labels, the slots agree on 0/1/2 as below; 2 items carry a 4th
    # label that agrees perfectly with A1. With equal weights the three A*-A4 pairs (F1 1.0
    # on 2 items) would pull the ceiling up; weighted by shared items they barely count.
    base = np.array([[0, 0, 1], [1, 1, 1], [2, 1, 2], [2, 2, 2], [1, 2, 1]] * 4, dtype=float)
    four = np.full((22, 4), nan)
    four[:20, :3] = base
    four[20:] = [[2, 2, 2, 2], [1, 1, 1, 1]]
    result = pairwise_slot_f1(four)
    three_pairs = pairwise_slot_f1(four[:, :3])
    assert len(result.pairs) == 6
    assert [p.n_items for p in result.pairs] == [22, 22, 2, 22, 2, 2]
    equal_weights = float(np.mean([p.f1 for p in result.pairs]))
    by_items = np.average([p.f1 for p in result.pairs], weights=[22, 22, 2, 22, 2, 2])
    assert result.mean == pytest.approx(by_items)
    # 66 of the 72 pair-items are the three main pairs (mean 7/11), 6 are the perfect A*-A4 ones.
    assert three_pairs.mean == pytest.approx(7 / 11)
    assert result.mean == pytest.approx((66 * 7 / 11 + 6) / 72)
    assert equal_weights == pytest.approx((7 / 11 * 3 + 3) / 6)


def test_metal_convention_by_hand() -> None:
    # Complete items only (the 2-label and 4-label rows are dropped), one direction per
    # pair, A1-A2, A2-A3, A3-A1 with the first as reference.
    ratings = np.array([[0, 0, 1, nan], [1, 1, 1, nan], [2, 1, 2, nan], [2, 2, nan, nan], [0, 1, 2, 2]], dtype=float)
    result = pairwise_slot_f1(ratings, [0, 1, 2], convention="metal")
    a1, a2, a3 = [0, 1, 2], [0, 1, 1], [1, 1, 2]
    expected = [
        f1_score(a1, a2, average="weighted", zero_division=0),
        f1_score(a2, a3, average="weighted", zero_division=0),
        f1_score(a3, a1, average="weighted", zero_division=0),
    ]
    # By hand: A1->A2 per-class F1 (1, 2/3, 0) weights (1,1,1) -> 5/9; A2->A3 (0, 1/2, 0)
    # weights (1,2,0) -> 1/3; A3->A1 (0, 2/3, 1) weights (0,2,1) -> 7/9.
    assert expected == pytest.approx([5 / 9, 1 / 3, 7 / 9])
    assert [(p.first, p.second, p.n_items, p.both_directions) for p in result.pairs] == [
        ("A1", "A2", 3, False),
        ("A2", "A3", 3, False),
        ("A3", "A1", 3, False),
    ]
    assert [p.f1 for p in result.pairs] == pytest.approx(expected)
    assert result.mean == pytest.approx(5 / 9)
    assert result.n_items == 3 and result.convention == "metal"
    assert complete_items(ratings).tolist() == [True, True, True, False, False]
    with pytest.raises(StatisticsError, match="exactly three labels"):
        pairwise_slot_f1(ratings[3:4], convention="metal")
