"""Number extraction across scripts, and numeric fidelity (LRM2QAS EN-NUM)."""

from __future__ import annotations

import pytest

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.numbers import extract_numbers, number_set
from pytest_llmjudge.metrics.numeric_fidelity import numeric_jaccard


@pytest.mark.parametrize(
    ("script", "text", "numbers"),
    [
        ("ASCII", "In 1952 it had 3.5 million people", [1952.0, 3.5]),
        ("Devanagari", "१९५२ में ३.५ करोड़", [1952.0, 3.5]),
        ("Bengali", "১৯৭১ সালের ২৬ মার্চ", [1971.0, 26.0]),
        ("Gurmukhi", "੧੯੪੭", [1947.0]),
        ("Gujarati", "૨૦૨૪", [2024.0]),
        ("Oriya", "୧୨", [12.0]),
        ("Tamil", "௧௨", [12.0]),
        ("Telugu", "౧౨", [12.0]),
        ("Kannada", "೧೨", [12.0]),
        ("Malayalam", "൧൨", [12.0]),
        ("Thai", "พ.ศ. ๒๕๖๗", [2567.0]),
        ("Arabic-Indic", "٨٨٤٩ مترًا", [8849.0]),
        ("Arabic separators", "١٬٢٣٤٫٥", [1234.5]),
        ("Extended Arabic-Indic", "سال ۱۴۰۲", [1402.0]),
        ("full-width", "３，７７６メートル、３．５", [3776.0, 3.5]),
        ("Western grouping", "1,234,567.89", [1234567.89]),
        ("Indian grouping", "12,34,567 and 1,21,08,54,977", [1234567.0, 1210854977.0]),
        ("Devanagari Indian grouping", "१२,३४,५६७", [1234567.0]),
        ("negative", "-5 and −3.5 at x=-2", [-5.0, -3.5, -2.0]),
        ("hyphen is not a sign", "COVID-19 in 2020-2021", [19.0, 2020.0, 2021.0]),
        ("comma list", "1,23 and 10,20,30", [1.0, 23.0, 10.0, 20.0, 30.0]),
        ("glued to letters", "H2O, 3rd, 1952年, Rs.500", [2.0, 3.0, 1952.0, 500.0]),
        ("sentence end", "It was 1952. Then 1953.", [1952.0, 1953.0]),
        ("none", "No numbers here, पाँच, 五", []),
        ("empty", "", []),
    ],
)
def test_extract_numbers(script: str, text: str, numbers: list[float]) -> None:
    assert extract_numbers(text) == numbers


def test_decimal_comma_convention() -> None:
    text = "3,5 Mio. und 1.234.567,89 \u20ac, 1\u202f234,5"
    assert extract_numbers(text, decimal_comma=True) == [3.5, 1234567.89, 1234.5]
    assert extract_numbers(text) == [3.0, 5.0, 1.234, 567.0, 89.0, 1.0, 234.0, 5.0]


def test_same_value_in_different_scripts_is_one_value() -> None:
    assert number_set("1952 १९५२ ١٩٥٢ １９５２ 1952.0") == frozenset({1952.0})


@pytest.mark.parametrize(
    ("reference", "output", "expected"),
    [
        ("no numbers", "none here either", 1.0),  # degenerate: nothing to disagree on
        ("in 1952", "no year given", 0.0),  # numbers on one side only
        ("no year", "it was 1952", 0.0),
        ("1952 and 26", "१९५२ and 26", 1.0),
        ("27 May 1703", "in 1703", 0.5),
        ("2011: 121 crore (1,21,08,54,977)", "२०११ में १,२१,०८,५४,९७७", 2 / 3),
        ("330 m", "330 m [1], built in 1889 [2]", 0.5),  # citation markers are not numbers
    ],
)
def test_numeric_fidelity_hand_computed(reference: str, output: str, expected: float) -> None:
    assert resolve_metric("numeric_fidelity").compute(MetricInput(output, reference)).value == pytest.approx(expected)


def test_numeric_fidelity_detail_and_edge_cases() -> None:
    metric = resolve_metric("numeric_fidelity")
    value = metric.compute(MetricInput("in 1703", "27 May 1703"))
    assert value.detail == {
        "reference_numbers": [27.0, 1703.0],
        "output_numbers": [1703.0],
        "missing": [27.0],
        "extra": [],
    }
    assert metric.compute(MetricInput("", "no numbers")).value == 1.0  # empty output
    assert metric.compute(MetricInput("", "1952")).value == 0.0
    assert metric.compute(MetricInput("1,234", "1,234")).value == 1.0  # identical
    with pytest.raises(MetricError, match="numeric_fidelity needs a reference"):
        metric.compute(MetricInput("1952", ""))
    keep = resolve_metric("numeric_fidelity", {"ignore_citations": False})
    assert keep.compute(MetricInput("330 [1]", "330")).value == 0.5


def test_jaccard_definition() -> None:
    assert numeric_jaccard(frozenset(), frozenset()) == 1.0
    assert numeric_jaccard(frozenset({1.0, 2.0}), frozenset({2.0, 3.0})) == pytest.approx(1 / 3)
