"""util/formatting.py: the one number formatter, on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from pytest_llmjudge.util.formatting import MISSING, format_fixed, format_interval, format_number, format_value, number


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3.0),
        (0.25, 0.25),
        (-0.0, 0.0),
        (True, None),
        (False, None),
        ("3", None),
        (None, None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        ([1], None),
    ],
)
def test_number_is_a_finite_float_or_none(value: object, expected: float | None) -> None:
    result = number(value)
    assert result == expected
    if expected is not None:
        assert type(result) is float
    if expected == 0:
        assert result is not None and math.copysign(1.0, result) == 1.0, "-0 becomes 0"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, "3"),
        (3.0, "3"),
        (-2, "-2"),
        (0.8125, "0.8125"),
        (0.81254, "0.8125"),  # four significant digits
        (2 / 3, "0.6667"),
        (1234.5, "1234"),  # 4 significant digits: 1234.5 rounds half to even
        (12345.6, "1.235e+04"),
        (1e6, "1e+06"),
        (-0.0, "0"),
        ("hi", "'hi'"),  # a category, quoted as the user wrote it
        (None, MISSING),
        (math.nan, MISSING),
        (True, MISSING),
    ],
)
def test_format_value(value: object, expected: str) -> None:
    assert format_value(value) == expected


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (3, 2, "3"),
        (3.0, 2, "3"),
        (999_999.0, 2, "999999"),
        (1_000_000.0, 2, "1e+06"),  # whole but large: four significant digits
        (0.8125, 2, "0.81"),
        (0.815, 3, "0.815"),
        (1.005, 2, "1.00"),  # 1.005 is 1.00499999... in binary
        (1234.5678, 2, "1235"),
        (-1234.5678, 2, "-1235"),
        (99.999, 2, "100.00"),
        (-0.004, 2, "0.00"),  # rounds to zero: no "-0.00"
        (-0.005001, 2, "-0.01"),
        (-0.05, 3, "-0.050"),
        ("3", 2, MISSING),
        (None, 2, MISSING),
        (math.inf, 2, MISSING),
    ],
)
def test_format_number(value: object, digits: int, expected: str) -> None:
    assert format_number(value, digits) == expected


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (0.27149, 3, "0.271"),
        (2, 3, "2.000"),
        (-0.05, 3, "-0.050"),
        (-0.0004, 3, "0.000"),
        (-0.0, 2, "0.00"),
        (1234.5, 1, "1234.5"),
        (None, 3, MISSING),
        (math.nan, 3, MISSING),
    ],
)
def test_format_fixed(value: object, digits: int, expected: str) -> None:
    assert format_fixed(value, digits) == expected


def test_format_interval() -> None:
    assert format_interval(0.85, 0.94) == "[0.85, 0.94]"
    assert format_interval(1.5, 2) == "[1.50, 2]"
    assert format_interval(-0.15, 0.0) == "[-0.15, 0]"
    assert format_interval(0.2, 0.4, digits=1) == "[0.2, 0.4]"
    assert format_interval(None, 1) == MISSING and format_interval(0, math.nan) == MISSING
