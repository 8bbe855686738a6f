"""The SVG charts: readable size, whole titles, axes and intervals on the metric's scale."""

from __future__ import annotations

import re

from pytest_llmjudge.report import charts


def _width(svg: str) -> int:
    return int(re.search(r'<svg class="chart" width="(\d+)"', svg).group(1))  # type: ignore[union-attr]


def test_titles_are_whole_and_the_chart_is_as_wide_as_its_title() -> None:
    title = "linguistic_acceptability (mean) in the release-gate suite"
    bar = charts.bar_chart([charts.BarGroup("hi", (charts.Bar(1.5),))], title=title)
    forest = charts.forest_plot([charts.ForestRow("hi", 0.1, -0.1, 0.3)], title=title * 2)
    shares = charts.stacked_shares([("judge", [1.0, 2.0])], ["0", "1"], title=title * 2)
    for svg, text in ((bar, title), (forest, title * 2), (shares, title * 2)):
        assert f">{text}</text>" in svg
        assert _width(svg) >= len(text) * charts.TITLE_CHAR_WIDTH
    assert _width(bar) >= charts.MIN_CHART_WIDTH, "one language still gets a readable chart"


def test_axis_and_whiskers_stay_on_the_metric_scale() -> None:
    # A t interval on a 0-2 rubric that leaves the scale on both sides.
    bar = charts.Bar(1.5, low=-0.09, high=3.09, marker=1.0)
    svg = charts.bar_chart([charts.BarGroup("hi", (bar,))], title="la", y_min=0.0, y_max=2.0)
    ticks = [float(t) for t in re.findall(r'class="tick" text-anchor="end">([-0-9.]+)<', svg)]
    assert min(ticks) == 0 and max(ticks) == 2
    grid = [float(y) for y in re.findall(r'class="grid"/><text x="\d+" y="([0-9.]+)"', svg)]
    whisker = re.search(r'<path d="M[0-9.]+ ([0-9.]+)V([0-9.]+)', svg)
    assert whisker is not None
    low_y, high_y = float(whisker.group(1)), float(whisker.group(2))
    # The whisker ends at the axis' ends (tick label y is 4 px below its line).
    assert (low_y, high_y) == (max(grid) - 4, min(grid) - 4)


def test_forest_values_read_as_the_reports_numbers() -> None:
    # A difference carries its sign, a strength does not; a value that rounds to zero is 0.000, never -0.000.
    delta = charts.forest_plot([charts.ForestRow("hi", 0.05, -0.0004, 0.1)], title="delta")
    assert ">+0.050 [0.000, +0.100]</text>" in delta
    assert re.findall(r'class="tick" text-anchor="middle">([^<]+)<', delta) == ["-0.05", "0", "0.05", "0.1"]
    strength = charts.forest_plot([charts.ForestRow("gpt-4", 1.2346, -0.25, 2.0)], title="bt", signed=False)
    assert ">1.235 [-0.250, 2.000]</text>" in strength
