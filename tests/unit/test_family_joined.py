"""decide_joined: aggregate rows' p-values corrected with a family's regression comparisons."""

from __future__ import annotations

import pytest
from statsmodels.stats.multitest import multipletests

from pytest_llmjudge.regression.compare import RegressionSettings, decide, decide_joined, measure

RAW = [0.004, 0.03, None, 0.2, 0.011]


@pytest.mark.parametrize(
    ("correction", "reference"), [("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")]
)
def test_joined_rows_alone_equal_statsmodels(correction: str, reference: str) -> None:
    family = decide_joined([], RAW, correction=correction)
    tested = [p for p in RAW if p is not None]
    expected = iter(multipletests(tested, alpha=0.05, method=reference)[1])
    assert family.joined_adjusted == [None if p is None else pytest.approx(next(expected)) for p in RAW]
    assert family.size == family.testable == 4, "an error row (no p) is not counted"


def test_joined_rows_count_with_the_testable_regression_items() -> None:
    ids = [f"c{i}" for i in range(12)]
    base = dict.fromkeys(ids, 2.0)
    dropped = {**base, **{f"c{i}": 0.0 for i in range(8)}}  # exact p 2^-8, testable
    measured = [measure(dropped, base), measure(base, base)]  # the unchanged one can never be significant
    family = decide_joined(measured, [0.01, 0.3])
    assert family.size == 4 and family.testable == 3
    expected = multipletests([2**-8, 0.01, 0.3], alpha=0.05, method="holm")[1]
    assert family.results[0].p_adjusted == pytest.approx(expected[0])
    assert family.joined_adjusted == [pytest.approx(expected[1]), pytest.approx(expected[2])]
    assert family.results[0].gate == "fail" and family.results[0].family_size == 4
    # Without joined rows it is the regression family as before.
    assert [r.p_adjusted for r in decide(measured)] == [r.p_adjusted for r in decide_joined(measured, []).results]


def test_the_regression_items_settings_win_and_nothing_tested_is_empty() -> None:
    ids = [f"c{i}" for i in range(12)]
    base = dict.fromkeys(ids, 2.0)
    dropped = {**base, **{f"c{i}": 0.0 for i in range(8)}}
    measured = [measure(dropped, base, settings=RegressionSettings(correction="none"))]
    assert decide_joined(measured, [0.04], correction="holm").joined_adjusted == [pytest.approx(0.04)]
    empty = decide_joined([], [None])
    assert empty.joined_adjusted == [None] and empty.size == 0
