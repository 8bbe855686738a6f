"""lower()/upper() end to end: the interval a row shows is the one it decides on, from the
metric's scale (a rubric's, or an aggregate's ``scale:``), through pytester."""

from __future__ import annotations

import pytest

from pytest_llmjudge.suite.aggregate import mean_ci

SUITE = """\
suite: bounds
cases:
{cases}
aggregate:
  - lower(mean(task_quality)) >= 1.2
  - expr: lower(mean(stars)) >= 3
    scale: [1, 5]
  - upper(mean(stars)) >= 4.9
  - upper(mean(votes)) >= 4.9
"""


def test_rows_show_and_decide_on_the_betting_interval_of_their_scale(pytester: pytest.Pytester) -> None:
    cases = "\n".join(
        f"  - {{id: c{i}, language: hi, output: x, recorded: {{task_quality: 2, stars: 4, votes: 4}}}}"
        for i in range(10)
    )
    pytester.makefile(".yaml", suite=SUITE.format(cases=cases))
    result = pytester.runpytest("--llmjudge", "-rA", "-k", "hi")
    # Ten 2s on the 0-2 rubric: [1.254, 2], so lower >= 1.2 passes (the bootstrap's [2, 2]
    # would pass any floor up to 2); ten 4s on the declared 1-5: the interval keeps a width.
    low, high = mean_ci([2.0] * 10, scale=(0.0, 2.0)) or (0.0, 0.0)
    stars_low, stars_high = mean_ci([4.0] * 10, scale=(1.0, 5.0)) or (0.0, 0.0)
    assert round(low, 3) == 1.254 and stars_low < 3 < 4 < stars_high < 5
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            f"FAILED: lower(mean(stars)) for hi = {stars_low:.4g}, expected >= 3",
            f"> hi *10 *0 *4.000 *[[]{stars_low:.3f}, {stars_high:.3f}[]] *lower >= 3 *FAIL",
            # One declaration serves every aggregate of the metric.
            f"FAILED: upper(mean(stars)) for hi = {stars_high:.4g}, expected >= 4.9",
            f"> hi *10 *0 *4.000 *[[]{stars_low:.3f}, {stars_high:.3f}[]] *upper >= 4.9 *FAIL",
            # Without a scale, votes' mean has the bootstrap's point interval.
            "FAILED: upper(mean(votes)) for hi = 4, expected >= 4.9",
            "> hi *10 *0 *4.000 *[[]4.000, 4.000[]] *upper >= 4.9 *FAIL",
        ]
    )
