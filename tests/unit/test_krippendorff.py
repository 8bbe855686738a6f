"""Krippendorff's alpha (stats/krippendorff.py) against the ``krippendorff`` package and the
worked example of Krippendorff (2011); judges' error correlation and effective committee size."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_llmjudge.stats.krippendorff import coincidences, error_correlation, krippendorff_alpha

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", 4 coders x 12 units, missing data.
EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_the_worked_example_gives_the_published_values(level: str, published: float) -> None:
    alpha = krippendorff_alpha(EXAMPLE, level)  # type: ignore[arg-type]
    assert alpha is not None and round(alpha, 3) == published


def test_the_coincidence_matrix_of_the_worked_example() -> None:
    # The paper's matrix: n_c = 9, 13, 10, 5, 3 (n = 40) for values 1..5; unit 12 (one rating) drops out.
    domain, o = coincidences(EXAMPLE)
    assert domain.tolist() == [1, 2, 3, 4, 5]
    assert o.sum(axis=1) == pytest.approx([9, 13, 10, 5, 3])
    assert o[0, 0] == pytest.approx(7.0) and o[0, 1] == pytest.approx(4 / 3)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_equals_the_krippendorff_package_on_random_ratings_with_missing_values(level: str) -> None:
    reference = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(7)
    for _ in range(20):
        raters, units = rng.integers(2, 6), rng.integers(5, 40)
        truth = rng.integers(0, 3, units)
        data = np.where(rng.random((raters, units)) < 0.7, truth, rng.integers(0, 3, (raters, units))).astype(float)
        data[rng.random((raters, units)) < 0.2] = np.nan
        ours = krippendorff_alpha([[None if math.isnan(v) else v for v in row] for row in data], level)  # type: ignore[arg-type]
        try:
            theirs = reference.alpha(reliability_data=data, level_of_measurement=level)
        except ValueError:  # the package refuses data with one value; ours says undefined
            assert ours is None
            continue
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_degenerate_ratings_are_undefined_not_perfect() -> None:
    assert krippendorff_alpha([[1, 1, 1], [1, 1, 1]]) is None  # one value seen: no expected disagreement
    assert krippendorff_alpha([[1, None], [None, 2]]) is None  # no unit with two ratings
    assert krippendorff_alpha([[0, 1, 0, 1], [0, 1, 0, 1]]) == 1.0
    assert krippendorff_alpha([[0, 1, 0, 1], [1, 0, 1, 0]]) < 0  # systematic disagreement


def test_error_correlation_and_effective_committee_size() -> None:
    human = [0, 1, 2, 1, 0, 2, 1, 1]
    same_errors = [1, 1, 2, 2, 0, 2, 1, 2]
    scores = {"a": same_errors, "b": same_errors, "c": [0, 2, 1, 1, 1, 2, 0, 1]}
    matrix, effective = error_correlation(scores, human)
    assert matrix[("a", "b")] == pytest.approx(1.0)
    errors_a = np.subtract(same_errors, human)
    errors_c = np.subtract(scores["c"], human)
    r_ac = float(np.corrcoef(errors_a, errors_c)[0, 1])
    assert matrix[("a", "c")] == pytest.approx(r_ac) and matrix[("c", "a")] == matrix[("a", "c")]
    mean_r = (1.0 + 2 * r_ac) / 3
    assert effective == pytest.approx(3 / (1 + 2 * mean_r))
    # Two judges that are wrong on the same items are worth one; a perfect judge has no error spread.
    assert error_correlation({"a": same_errors, "b": same_errors}, human)[1] == pytest.approx(1.0)
    assert error_correlation({"a": human, "b": same_errors}, human) == ({("a", "b"): None, ("b", "a"): None}, None)
