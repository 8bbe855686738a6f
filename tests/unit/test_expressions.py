"""Threshold expressions: ``chrf >= 45`` for cases and ``mean(chrf) >= 45`` for suites.

Read top to bottom, these tests are a tour of the two grammars in
``pytest_llmjudge.suite.expressions``: what parses into what, how a parsed threshold
decides pass/fail, and which inputs are rejected with which explanation.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from pytest_llmjudge.errors import ExpressionError
from pytest_llmjudge.suite.expressions import (
    CASE_LANGUAGE,
    AggregateSpec,
    MetricThreshold,
    Op,
    parse_aggregate,
    parse_override,
    parse_threshold,
)

# --------------------------------------------------------------------------- parse_threshold


def test_a_case_assertion_is_metric_operator_number() -> None:
    threshold = parse_threshold("linguistic_acceptability >= 1")

    assert threshold == MetricThreshold(metric="linguistic_acceptability", op=">=", value=1.0)
    assert isinstance(threshold.value, float)


@pytest.mark.parametrize("op", [">=", ">", "<=", "<", "==", "!="])
def test_all_six_operators_parse(op: Op) -> None:
    assert parse_threshold(f"chrf {op} 45").op == op
    # Spaces around the operator are optional.
    assert parse_threshold(f"chrf{op}45") == MetricThreshold("chrf", op, 45.0)


@pytest.mark.parametrize(
    ("text", "metric", "value"),
    [
        ("chrf++ >= 45", "chrf++", 45.0),
        ("chrf++>=45", "chrf++", 45.0),
        ("citation_recall@10 >= 0.5", "citation_recall@10", 0.5),
        ("rouge_l >= .25", "rouge_l", 0.25),
        ("numeric_fidelity >= 1e-1", "numeric_fidelity", 0.1),
        ("hallucinations <= 0", "hallucinations", 0.0),
        ("delta > -2.5", "delta", -2.5),
        ("  padded   >=   3  ", "padded", 3.0),
        ("lrm2qas_kc > 0", "lrm2qas_kc", 0.0),
    ],
)
def test_metric_names_and_numbers(text: str, metric: str, value: float) -> None:
    threshold = parse_threshold(text)
    assert threshold.metric == metric
    assert threshold.value == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('language == "hi"', "hi"),
        ("language == 'pt-BR'", "pt-BR"),
        ("label != 'two words'", "two words"),
        ('label == ""', ""),
        ("label == '3'", "3"),  # quoted: a string, not a number
    ],
)
def test_quoted_values_are_strings(text: str, value: str) -> None:
    threshold = parse_threshold(text)
    assert threshold.value == value
    assert isinstance(threshold.value, str)


def test_case_language_is_a_placeholder_not_a_string() -> None:
    threshold = parse_threshold("language == case.language")

    assert threshold.value == CASE_LANGUAGE
    assert threshold.expected("hi") == "hi"
    assert threshold.expected("pt-BR") == "pt-BR"


@pytest.mark.parametrize(
    "text",
    [
        "chrf = 45",  # not an operator
        "chrf => 45",
        ">= 45",  # no metric
        "chrf",  # no operator
        "",
        "1chrf >= 4",  # names don't start with a digit
        "mean(chrf) >= 4",  # an aggregate is not a case assertion
    ],
)
def test_unparseable_assertions_say_what_was_expected(text: str) -> None:
    with pytest.raises(ExpressionError) as excinfo:
        parse_threshold(text)

    message = str(excinfo.value)
    assert "METRIC OP VALUE" in message
    assert repr(text) in message


@pytest.mark.parametrize("text", ["chrf >= high", "chrf >= 1 2", "chrf >= 4x", "chrf >> 3"])
def test_a_bad_value_names_the_accepted_kinds(text: str) -> None:
    with pytest.raises(ExpressionError, match="a number, a quoted string or case.language"):
        parse_threshold(text)


def test_nan_is_not_a_threshold() -> None:
    with pytest.raises(ExpressionError, match="NaN"):
        parse_threshold("chrf >= nan")


@pytest.mark.parametrize("op", [">=", ">", "<=", "<"])
@pytest.mark.parametrize("value", ['"hi"', "'hi'", "case.language"])
def test_ordering_a_text_value_is_rejected(op: str, value: str) -> None:
    with pytest.raises(ExpressionError) as excinfo:
        parse_threshold(f"language {op} {value}")

    assert "needs == or !=" in str(excinfo.value)


def test_expression_error_is_a_value_error() -> None:
    assert issubclass(ExpressionError, ValueError)


# --------------------------------------------------------------------------- MetricThreshold.holds


@pytest.mark.parametrize(
    ("op", "observed", "expected"),
    [
        (">=", 45.0, True),
        (">=", 44.9, False),
        (">", 45.0, False),
        (">", 45.1, True),
        ("<=", 45.0, True),
        ("<=", 45.1, False),
        ("<", 45.0, False),
        ("<", 44.0, True),
        ("==", 45.0, True),
        ("==", 46.0, False),
        ("!=", 45.0, False),
        ("!=", 46.0, True),
    ],
)
def test_holds_against_45(op: str, observed: float, expected: bool) -> None:
    assert parse_threshold(f"chrf {op} 45").holds(observed) is expected


def test_holds_accepts_ints() -> None:
    assert parse_threshold("linguistic_acceptability >= 1").holds(2)
    assert not parse_threshold("linguistic_acceptability >= 1").holds(0)


@pytest.mark.parametrize("op", [">=", ">", "<=", "<", "==", "!="])
@pytest.mark.parametrize("observed", [None, math.nan])
def test_none_and_nan_never_hold(op: str, observed: float | None) -> None:
    # Not even "!=": an undefined score can't pass anything.
    assert parse_threshold(f"chrf {op} 45").holds(observed) is False
    assert parse_threshold('language != "en"').holds(None) is False


def test_numpy_nan_never_holds() -> None:
    np = pytest.importorskip("numpy")
    assert parse_threshold("chrf <= 45").holds(np.float64("nan")) is False


def test_string_versus_number_is_false_not_an_error() -> None:
    assert parse_threshold("chrf >= 45").holds("high") is False
    assert parse_threshold('language == "hi"').holds(1.0) is False
    assert parse_threshold('language != "hi"').holds(1.0) is False
    assert parse_threshold("label == '3'").holds(3.0) is False


def test_string_thresholds_compare_exactly() -> None:
    threshold = parse_threshold('language == "hi"')
    assert threshold.holds("hi")
    assert not threshold.holds("HI")
    assert parse_threshold('language != "hi"').holds("en")


def test_case_language_resolves_per_case() -> None:
    threshold = parse_threshold("language == case.language")

    assert threshold.holds("hi", case_language="hi")
    assert not threshold.holds("hi", case_language="mr")
    assert not threshold.holds("hi")  # no case language given: nothing matches
    assert parse_threshold("language != case.language").holds("en", case_language="hi")


# --------------------------------------------------------------------------- render


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("chrf>=45", "chrf >= 45"),
        ("chrf >= 45.0", "chrf >= 45"),
        ("la >= 1.5", "la >= 1.5"),
        ("x < -0.25", "x < -0.25"),
        ("citation_recall@10 >= 0.5", "citation_recall@10 >= 0.5"),
        ("language == case.language", "language == case.language"),
    ],
)
def test_render_is_normalised(text: str, rendered: str) -> None:
    assert parse_threshold(text).render() == rendered


@pytest.mark.parametrize(
    "text", ["chrf >= 45", "la != 1.5", "chrf++ < 0.001", "citation_map@5 == 1", "language == case.language"]
)
def test_render_parses_back_to_the_same_threshold(text: str) -> None:
    threshold = parse_threshold(text)
    assert parse_threshold(threshold.render()) == threshold


# --------------------------------------------------------------------------- parse_aggregate


@pytest.mark.parametrize("stat", ["mean", "median", "min", "max"])
def test_an_aggregate_is_stat_of_a_metric(stat: str) -> None:
    spec = parse_aggregate(f"{stat}(linguistic_acceptability) >= 1.6")

    assert spec == AggregateSpec(stat=stat, metric="linguistic_acceptability", op=">=", value=1.6)  # type: ignore[arg-type]
    assert spec.inner is None
    assert spec.label == f"{stat}(linguistic_acceptability)"
    assert spec.render() == f"{stat}(linguistic_acceptability) >= 1.6"


def test_aggregate_spacing_and_names() -> None:
    spec = parse_aggregate("median( chrf++ )<3")
    assert (spec.stat, spec.metric, spec.op, spec.value) == ("median", "chrf++", "<", 3.0)

    spec = parse_aggregate("max(citation_recall@10) > 0.5")
    assert spec.metric == "citation_recall@10"


def test_pass_rate_wraps_a_case_assertion() -> None:
    spec = parse_aggregate("pass_rate(chrf >= 45) >= 0.8")

    assert spec.stat == "pass_rate"
    assert spec.metric == "chrf"
    assert spec.inner == MetricThreshold("chrf", ">=", 45.0)
    assert (spec.op, spec.value) == (">=", 0.8)
    assert spec.label == "pass_rate(chrf >= 45)"
    assert spec.render() == "pass_rate(chrf >= 45) >= 0.8"


def test_pass_rate_over_case_language() -> None:
    spec = parse_aggregate("pass_rate(language == case.language) >= 0.9")
    assert spec.inner is not None
    assert spec.inner.holds("hi", case_language="hi")


def test_pass_rate_needs_an_inner_assertion() -> None:
    with pytest.raises(
        ExpressionError, match=r"pass_rate needs a case assertion inside, e\.g\. pass_rate\(chrf >= 45\)"
    ):
        parse_aggregate("pass_rate(chrf) >= 0.8")


def test_pass_rate_inner_errors_come_from_the_case_grammar() -> None:
    with pytest.raises(ExpressionError, match="needs == or !="):
        parse_aggregate('pass_rate(language >= "hi") >= 0.5')


def test_mean_takes_a_name_not_an_assertion() -> None:
    with pytest.raises(ExpressionError, match=r"mean\(\.\.\.\) takes a metric name, got 'chrf >= 2'"):
        parse_aggregate("mean(chrf >= 2) >= 1")


@pytest.mark.parametrize("value", ['"high"', "'x'", "case.language"])
def test_aggregate_thresholds_must_be_numbers(value: str) -> None:
    with pytest.raises(ExpressionError, match="an aggregate threshold must be a number"):
        parse_aggregate(f"mean(chrf) >= {value}")


@pytest.mark.parametrize(
    "text", ["sum(chrf) >= 1", "mean chrf >= 1", "mean(chrf)", "mean() >= 1", "chrf >= 1", "mean(chrf) = 1"]
)
def test_unparseable_aggregates_show_examples(text: str) -> None:
    with pytest.raises(ExpressionError) as excinfo:
        parse_aggregate(text)
    message = str(excinfo.value)
    assert "mean(linguistic_acceptability) >= 1.6" in message
    assert "pass_rate(chrf >= 45) >= 0.8" in message


def test_aggregate_nan_threshold_is_rejected() -> None:
    with pytest.raises(ExpressionError, match="NaN"):
        parse_aggregate("mean(chrf) >= nan")


@pytest.mark.parametrize(
    ("op", "observed", "expected"),
    [(">=", 0.8, True), (">=", 0.79, False), ("<", 0.79, True), ("==", 0.8, True), ("!=", 0.8, False)],
)
def test_aggregate_holds(op: str, observed: float, expected: bool) -> None:
    assert parse_aggregate(f"mean(chrf) {op} 0.8").holds(observed) is expected


def test_aggregate_none_and_nan_never_hold() -> None:
    spec = parse_aggregate("mean(chrf) != 0.8")
    assert spec.holds(None) is False
    assert spec.holds(math.nan) is False


def test_with_threshold_keeps_stat_metric_and_inner() -> None:
    spec = parse_aggregate("pass_rate(chrf >= 45) >= 0.8")
    changed = spec.with_threshold("<", 0.5)

    assert changed.render() == "pass_rate(chrf >= 45) < 0.5"
    assert changed.inner == spec.inner
    assert spec.render() == "pass_rate(chrf >= 45) >= 0.8"  # frozen: the original is unchanged


# --------------------------------------------------------------------------- parse_override


def test_a_bare_number_keeps_the_default_operator() -> None:
    assert parse_override(1.4, ">=") == (">=", 1.4)
    assert parse_override(2, "<") == ("<", 2.0)
    assert parse_override("1.4", "<=") == ("<=", 1.4)
    assert isinstance(parse_override(2, ">=")[1], float)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (">= 1.4", (">=", 1.4)),
        (">=1.4", (">=", 1.4)),
        ("< 0", ("<", 0.0)),
        ("!= 2", ("!=", 2.0)),
        (" > -1 ", (">", -1.0)),
    ],
)
def test_an_operator_overrides_the_default(text: str, expected: tuple[str, float]) -> None:
    assert parse_override(text, "==") == expected


@pytest.mark.parametrize("junk", ["abc", ">= abc", "=> 1.4", "", ">= 1 2", "nan", ">= nan"])
def test_junk_overrides_are_rejected(junk: str) -> None:
    with pytest.raises(ExpressionError):
        parse_override(junk, ">=")


@pytest.mark.parametrize("junk", ['>= "x"', "'x'", "case.language"])
def test_text_overrides_are_rejected(junk: str) -> None:
    with pytest.raises(ExpressionError, match="must be a number"):
        parse_override(junk, ">=")


@pytest.mark.parametrize("flag", [True, False])
def test_booleans_are_not_numbers(flag: bool) -> None:
    # YAML turns `hi: yes` into True; that must not become a threshold of 1.0.
    with pytest.raises(ExpressionError, match="must be a number"):
        parse_override(flag, ">=")


def test_a_nan_number_override_is_rejected_like_the_text_nan() -> None:
    with pytest.raises(ExpressionError, match="NaN"):
        parse_override(math.nan, ">=")


# --------------------------------------------------------------------------- lower() and upper()


@pytest.mark.parametrize(
    ("text", "stat", "metric", "bound", "label"),
    [
        ("lower(mean(linguistic_acceptability)) >= 1.5", "mean", "linguistic_acceptability", "lower", None),
        ("upper( pass_rate(chrf >= 45) ) <= 0.9", "pass_rate", "chrf", "upper", "upper(pass_rate(chrf >= 45))"),
        ("lower(mean(chrf++)) > 40", "mean", "chrf++", "lower", None),
    ],
)
def test_a_bound_of_the_interval_parses(text: str, stat: str, metric: str, bound: str, label: str | None) -> None:
    spec = parse_aggregate(text)
    assert (spec.stat, spec.metric, spec.bound) == (stat, metric, bound)
    assert spec.label == (label or f"{bound}({stat}({metric}))")
    assert parse_aggregate(spec.render()) == spec
    assert spec.with_threshold(">=", 1.0).bound == bound


def test_without_a_bound_there_is_none() -> None:
    assert parse_aggregate("mean(la) >= 1").bound is None


@pytest.mark.parametrize("stat", ["median", "min", "max"])
def test_a_bound_needs_a_statistic_with_an_interval(stat: str) -> None:
    with pytest.raises(ExpressionError, match=r"lower\(\.\.\.\) takes mean\(\.\.\.\) or pass_rate\(\.\.\.\)"):
        parse_aggregate(f"lower({stat}(la)) >= 1")


@pytest.mark.parametrize(
    "text", ["lower(lower(mean(la))) >= 1", "lower(mean(la) >= 1", "lower(mean(la)) >= 1 extra", "lower(mean(la))"]
)
def test_malformed_bounds_are_rejected_quoting_what_was_written(text: str) -> None:
    with pytest.raises(ExpressionError) as excinfo:
        parse_aggregate(text)
    assert repr(text) in str(excinfo.value)


@pytest.mark.parametrize(
    ("parse", "text", "meant"),
    [
        (parse_threshold, "chrf => 10", "chrf >= 10"),
        (parse_threshold, "chrf =< 10", "chrf <= 10"),
        (parse_threshold, "chrf ≥ 10", "chrf >= 10"),
        (parse_threshold, 'language = "hi"', 'language == "hi"'),
        (parse_aggregate, "mean(chrf) => 10", "mean(chrf) >= 10"),
        (parse_aggregate, "pass_rate(chrf => 3) >= 0.5", "chrf >= 3"),
    ],
)
def test_an_operator_typo_gets_a_did_you_mean(parse: Any, text: str, meant: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(f"did you mean {meant!r}?")):
        parse(text)


def test_no_did_you_mean_without_a_typo() -> None:
    with pytest.raises(ExpressionError) as excinfo:
        parse_threshold("chrf 10")
    assert "did you mean" not in str(excinfo.value)
