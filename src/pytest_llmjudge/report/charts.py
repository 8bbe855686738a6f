"""Inline SVG charts for the HTML report, drawn in Python (no JavaScript, no network).

Four chart types, each a function returning one ``<svg>`` element as text:

* :func:`bar_chart`: groups of vertical bars (one group per language) with optional
  confidence whiskers and a threshold tick per bar; scores against thresholds, judge F1
  beside the human ceiling;
* :func:`forest_plot`: one row per item, a point with its interval and a reference line
  (0 for regression deltas); regression deltas, ranking strengths;
* :func:`heatmap`: a labelled matrix with counts, shaded by the share of its row; confusion
  matrices (rows human, columns judge);
* :func:`stacked_shares`: horizontal 100% bars split by class; class distributions;
* :func:`sparkline`: a small line of one statistic over runs (``--llmjudge-history``), the
  latest point marked, each point's tooltip naming its run.

Colours come from CSS classes (``pass``, ``fail``, ``ceil``, ``neutral``, ``c0``..``c5``)
defined in the report's stylesheet, so the SVG text stays small. Every mark has a
``<title>`` (a tooltip in browsers); numbers read as everywhere else in the reports
(``util/formatting.py``). Degenerate input: no bars/rows gives a small SVG that
says "no data"; missing values (None) draw nothing but keep their label; all-equal values
get a range of one unit around them; text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from pytest_llmjudge.util.formatting import format_fixed, format_value, number

FONT = 11
CHAR_WIDTH = 6.2  # approximate advance of an 11 px sans-serif character
LABEL_CHARS = 30
TITLE_CHAR_WIDTH = 8.0  # approximate advance of a 13 px semibold character (the chart title)
MIN_CHART_WIDTH = 360


def _shorten(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` characters (model names differ at both ends)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def _f(value: float) -> str:
    """Compact coordinate text."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _signed(value: float, signed: bool) -> str:
    """A forest plot's value: three decimals, with ``+`` on a positive difference when ``signed``."""
    text = format_fixed(value, 3)
    return "+" + text if signed and number(value) is not None and value > 0 and text != "0.000" else text


def nice_range(low: float, high: float, ticks: int = 5) -> tuple[float, float, float]:
    """An axis range covering [low, high] with round tick steps: (start, stop, step)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return 0.0, 1.0, 0.25
    if high < low:
        low, high = high, low
    if high == low:
        low, high = (0.0, 1.0) if low == 0 else (low - 0.5, high + 0.5)
    raw = (high - low) / max(ticks, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step + 1e-9) * step
    stop = math.ceil(high / step - 1e-9) * step
    return start, stop, step


def _empty(width: int = 240, height: int = 40, text: str = "no data") -> str:
    return (
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f'<text x="8" y="24" class="muted">{escape(text)}</text></svg>'
    )


@dataclass(frozen=True)
class Bar:
    value: float | None
    css: str = "neutral"
    low: float | None = None
    high: float | None = None
    marker: float | None = None
    """A threshold tick drawn across this bar."""
    note: str = ""


@dataclass(frozen=True)
class BarGroup:
    label: str
    bars: tuple[Bar, ...]


def bar_chart(
    groups: Sequence[BarGroup],
    *,
    title: str = "",
    y_min: float | None = None,
    y_max: float | None = None,
    bar_width: int = 24,
) -> str:
    """Grouped vertical bars with whiskers and threshold ticks; see the module docstring.

    ``y_min``/``y_max`` fix the axis (a metric's scale): bars, whiskers and ticks outside it
    are drawn at its edge. The chart is at least :data:`MIN_CHART_WIDTH` wide and as wide as
    its title, so the title is never cut."""
    if not groups:
        return _empty()
    values: list[float] = []
    for group in groups:
        for bar in group.bars:
            values.extend(v for v in (bar.value, bar.low, bar.high, bar.marker) if v is not None)
    low = min([*values, 0.0]) if y_min is None else y_min
    high = max(values, default=1.0) if y_max is None else y_max
    start, stop, step = nice_range(low, high)
    if y_min is not None:
        start = y_min
    if y_max is not None:
        stop = y_max
    per_group = max(len(g.bars) for g in groups)
    slot = max(per_group * (bar_width + 2) + 18, 56)
    left, top, plot_h, bottom = 48, 26 if title else 8, 220, 36
    width = max(left + slot * len(groups) + 10, MIN_CHART_WIDTH, int(len(title) * TITLE_CHAR_WIDTH) + 16)
    height = top + plot_h + bottom

    def y(value: float) -> float:
        span = stop - start or 1.0
        clamped = min(max(value, start), stop)
        return top + plot_h - (clamped - start) / span * plot_h

    out = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
    ]
    if title:
        out.append(f'<text x="8" y="16" class="title">{escape(title)}</text>')
    tick = start
    count = 0
    while tick <= stop + step * 1e-6 and count < 50:
        ty = _f(y(tick))
        out.append(
            f'<line x1="{left}" x2="{width - 6}" y1="{ty}" y2="{ty}" class="grid"/>'
            f'<text x="{left - 4}" y="{_f(y(tick) + 4)}" class="tick" text-anchor="end">{format_value(tick)}</text>'
        )
        tick += step
        count += 1
    base = y(min(max(0.0, start), stop))
    for index, group in enumerate(groups):
        x0 = left + index * slot + (slot - len(group.bars) * (bar_width + 2)) / 2
        for position, bar in enumerate(group.bars):
            x = x0 + position * (bar_width + 2)
            note = escape(bar.note or f"{group.label}: {'-' if bar.value is None else format_value(bar.value)}")
            if bar.value is not None:
                top_y, bottom_y = sorted((y(bar.value), base))
                out.append(
                    f'<rect x="{_f(x)}" y="{_f(top_y)}" width="{bar_width}" height="{_f(max(bottom_y - top_y, 1))}" '
                    f'class="{bar.css}"><title>{note}</title></rect>'
                )
            if bar.low is not None and bar.high is not None:
                cx = _f(x + bar_width / 2)
                out.append(
                    f'<path d="M{cx} {_f(y(bar.low))}V{_f(y(bar.high))}M{_f(x + 4)} {_f(y(bar.low))}'
                    f'h{bar_width - 8}M{_f(x + 4)} {_f(y(bar.high))}h{bar_width - 8}" class="whisker"/>'
                )
            if bar.marker is not None:
                my = _f(y(bar.marker))
                out.append(
                    f'<path d="M{_f(x - 3)} {my}h{bar_width + 6}" class="marker">'
                    f"<title>{escape(group.label)} threshold {format_value(bar.marker)}</title></path>"
                )
        label_x = _f(left + index * slot + slot / 2)
        out.append(
            f'<text x="{label_x}" y="{_f(top + plot_h + 14)}" class="axis" text-anchor="middle">'
            f"{escape(_shorten(group.label, max(int(slot / CHAR_WIDTH), 4)))}<title>{escape(group.label)}</title></text>"
        )
    out.append(f'<line x1="{left}" x2="{width - 6}" y1="{_f(base)}" y2="{_f(base)}" class="axisline"/>')
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class ForestRow:
    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    css: str = "neutral"
    note: str = ""


def forest_plot(
    rows: Sequence[ForestRow],
    *,
    title: str = "",
    reference: float | None = 0.0,
    guide: float | None = None,
    signed: bool = True,
) -> str:
    """Points with intervals, one row each; a solid line at ``reference``, a dashed one at ``guide``;
    values printed with three decimals (``signed``: ``+`` on positive ones, for differences)."""
    if not rows:
        return _empty()
    values = [v for r in rows for v in (r.value, r.low, r.high) if v is not None]
    values += [v for v in (reference, guide) if v is not None]
    start, stop, step = nice_range(min(values, default=0.0), max(values, default=1.0), ticks=4)
    label_w = int(min(max(len(r.label) for r in rows), LABEL_CHARS) * 6.8) + 16
    plot_w, row_h = 320, 18
    top = 22 if title else 8
    width = max(label_w + plot_w + 150, int(len(title) * TITLE_CHAR_WIDTH) + 16)
    height = top + row_h * len(rows) + 24

    def x(value: float) -> float:
        span = stop - start or 1.0
        return label_w + (min(max(value, start), stop) - start) / span * plot_w

    out = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    if title:
        out.append(f'<text x="4" y="14" class="title">{escape(title)}</text>')
    bottom = top + row_h * len(rows)
    if reference is not None:
        out.append(f'<path d="M{_f(x(reference))} {top}V{bottom}" class="axisline"/>')
    if guide is not None:
        out.append(
            f'<path d="M{_f(x(guide))} {top}V{bottom}" class="marker dashed"><title>margin {format_value(guide)}</title></path>'
        )
    for index, row in enumerate(rows):
        cy = top + index * row_h + row_h / 2
        out.append(
            f'<text x="{label_w - 6}" y="{_f(cy + 4)}" class="axis" text-anchor="end">'
            f"{escape(_shorten(row.label, LABEL_CHARS))}<title>{escape(row.label)}</title></text>"
        )
        if row.low is not None and row.high is not None:
            out.append(
                f'<path d="M{_f(x(row.low))} {_f(cy)}H{_f(x(row.high))}M{_f(x(row.low))} {_f(cy - 4)}v8'
                f'M{_f(x(row.high))} {_f(cy - 4)}v8" class="whisker"/>'
            )
        if row.value is not None:
            note = escape(row.note or f"{row.label}: {_signed(row.value, signed)}")
            out.append(
                f'<circle cx="{_f(x(row.value))}" cy="{_f(cy)}" r="4" class="{row.css}"><title>{note}</title></circle>'
            )
            interval = ""
            if row.low is not None and row.high is not None:
                interval = f" [{_signed(row.low, signed)}, {_signed(row.high, signed)}]"
            out.append(
                f'<text x="{label_w + plot_w + 8}" y="{_f(cy + 4)}" class="tick">'
                f"{escape(_signed(row.value, signed) + interval)}</text>"
            )
    tick, count = start, 0
    while tick <= stop + step * 1e-6 and count < 20:
        out.append(
            f'<text x="{_f(x(tick))}" y="{bottom + 14}" class="tick" text-anchor="middle">{format_value(tick)}</text>'
        )
        tick += step
        count += 1
    out.append("</svg>")
    return "".join(out)


def heatmap(
    matrix: Sequence[Sequence[float]],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str = "",
    row_title: str = "human",
    col_title: str = "judge",
) -> str:
    """A count matrix shaded by row share, diagonal outlined; see the module docstring."""
    if not matrix or not matrix[0]:
        return _empty()
    k_rows, k_cols = len(matrix), len(matrix[0])
    cell = 34 if max(k_rows, k_cols) <= 5 else 24
    left, top = 58, 40 if title else 26
    width = max(left + cell * k_cols + 8, int(len(title) * TITLE_CHAR_WIDTH) + 16)
    height = top + cell * k_rows + 8
    out = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    if title:
        out.append(f'<text x="4" y="12" class="title">{escape(title)}</text>')
    out.append(
        f'<text x="{_f(left + cell * k_cols / 2)}" y="{top - 16}" class="tick" text-anchor="middle">'
        f"{escape(col_title)} &#8594;</text>"
        f'<text x="4" y="{_f(top + cell * k_rows / 2 + 14)}" class="tick">{escape(row_title)}</text>'
    )
    for j, label in enumerate(col_labels[:k_cols]):
        out.append(
            f'<text x="{_f(left + j * cell + cell / 2)}" y="{top - 4}" class="axis" text-anchor="middle">'
            f"{escape(str(label))}</text>"
        )
    for i, row in enumerate(matrix):
        total = sum(v for v in row if v is not None) or 1
        label = row_labels[i] if i < len(row_labels) else ""
        out.append(
            f'<text x="{left - 6}" y="{_f(top + i * cell + cell / 2 + 4)}" class="axis" text-anchor="end">'
            f"{escape(str(label))}</text>"
        )
        for j, value in enumerate(row[:k_cols]):
            share = (value or 0) / total
            cx, cy = left + j * cell, top + i * cell
            diagonal = ' stroke="#222" stroke-width="1.5"' if i == j else ""
            ink = "#fff" if share > 0.55 else "#222"
            out.append(
                f'<rect x="{cx}" y="{cy}" width="{cell - 1}" height="{cell - 1}" fill="rgba(21,101,192,{share:.2f})"'
                f"{diagonal}><title>{escape(row_title)} {escape(str(label))}, {escape(col_title)} "
                f"{escape(str(col_labels[j]) if j < len(col_labels) else '')}: {format_value(float(value or 0))} "
                f"({share:.0%} of row)</title></rect>"
                f'<text x="{_f(cx + cell / 2)}" y="{_f(cy + cell / 2 + 4)}" class="cell" fill="{ink}" '
                f'text-anchor="middle">{format_value(float(value or 0))}</text>'
            )
    out.append("</svg>")
    return "".join(out)


def stacked_shares(
    series: Sequence[tuple[str, Sequence[float]]],
    classes: Sequence[str],
    *,
    title: str = "",
) -> str:
    """One horizontal 100% bar per series, split by class (``c0`` lowest class ... ``c5``)."""
    if not series or not classes:
        return _empty()
    label_w = int(min(max(len(name) for name, _ in series), 22) * CHAR_WIDTH) + 10
    bar_w, row_h = 260, 16
    top = 22 if title else 6
    width = max(label_w + bar_w + 10, int(len(title) * TITLE_CHAR_WIDTH) + 16)
    height = top + row_h * len(series) + 22
    out = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    if title:
        out.append(f'<text x="4" y="14" class="title">{escape(title)}</text>')
    shade = [f"c{round(i * 5 / max(len(classes) - 1, 1))}" for i in range(len(classes))]
    for index, (name, counts) in enumerate(series):
        y = top + index * row_h
        total = sum(c for c in counts if c) or 0
        out.append(
            f'<text x="{label_w - 6}" y="{_f(y + row_h - 4)}" class="axis" text-anchor="end">{escape(name[:22])}</text>'
        )
        x = float(label_w)
        for k, count in enumerate(counts[: len(classes)]):
            if not total or not count:
                continue
            w = count / total * bar_w
            out.append(
                f'<rect x="{_f(x)}" y="{y + 1}" width="{_f(w)}" height="{row_h - 3}" class="{shade[k]}">'
                f"<title>{escape(name)}: class {escape(classes[k])} {count / total:.0%} ({format_value(float(count))})"
                f"</title></rect>"
            )
            x += w
    legend_y = top + row_h * len(series) + 14
    x = float(label_w)
    for k, name in enumerate(classes):
        out.append(
            f'<rect x="{_f(x)}" y="{legend_y - 9}" width="10" height="10" class="{shade[k]}"/>'
            f'<text x="{_f(x + 13)}" y="{legend_y}" class="tick">{escape(name)}</text>'
        )
        x += 13 + CHAR_WIDTH * len(name) + 10
    out.append("</svg>")
    return "".join(out)


def sparkline(points: Sequence[tuple[str, float | None, bool]], *, width: int = 160, height: int = 32) -> str:
    """A line through ``(label, value, failed)`` points, oldest first; failed points in red.

    Missing values break the line; one point is a dot; all-equal values sit mid-height."""
    values = [value for _, value, _ in points if value is not None and math.isfinite(value)]
    if not values:
        return (
            f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
            f'<text x="2" y="{height - 10}" class="muted">no data</text></svg>'
        )
    low, high = min(values), max(values)
    span = high - low or 1.0
    step = (width - 8) / max(len(points) - 1, 1)

    def y(value: float) -> float:
        return height - 4 - (value - low) / span * (height - 8) if high != low else height / 2

    out = [f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    segment: list[str] = []
    for index, (_, value, _) in enumerate(points):
        if value is None or not math.isfinite(value):
            if len(segment) > 1:
                out.append(f'<polyline class="neutral" fill="none" points="{" ".join(segment)}"/>')
            segment = []
            continue
        segment.append(f"{_f(4 + index * step)},{_f(y(value))}")
    if len(segment) > 1:
        out.append(f'<polyline class="neutral" fill="none" points="{" ".join(segment)}"/>')
    for index, (label, value, failed) in enumerate(points):
        if value is None or not math.isfinite(value):
            continue
        radius = 3 if index == len(points) - 1 else 2
        css = "fail" if failed else "pass"
        out.append(
            f'<circle class="{css}" cx="{_f(4 + index * step)}" cy="{_f(y(value))}" r="{radius}">'
            f"<title>{escape(label)}: {escape(format_value(value))}</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)
