"""Threshold expressions of suites: ``linguistic_acceptability >= 1`` and ``mean(chrf) >= 45``.

Two small grammars, parsed with regular expressions (no ``eval``):

* case assertion: ``METRIC OP VALUE`` where METRIC is a rubric or metric name (``chrf++`` and
  ``citation_recall@10`` are names), OP one of ``>= > <= < == !=`` and VALUE a number, a
  quoted string, or ``case.language`` (resolved per case, for the language-ID metric).
* aggregate assertion: ``STAT(INNER) OP NUMBER`` with STAT in ``mean median min max`` over a
  metric name, or ``pass_rate(...)`` over a case assertion (``pass_rate(chrf >= 45) >= 0.8``);
  ``lower(...)`` or ``upper(...)`` around a ``mean`` or ``pass_rate`` asserts on that bound of
  its 95% interval instead of the point (``lower(mean(linguistic_acceptability)) >= 1.5``), so
  a gate can require confidence (the intervals: ``suite/aggregate.py``);
* ``human_mean(METRIC)`` and ``human_pass_rate(METRIC OP VALUE)``: the same statistics on
  the native speakers' scale, estimated from the judge's scores and the human labels of a
  random sample of cases (prediction-powered, ``stats/prediction_powered.py``); they have
  intervals, so ``lower``/``upper`` take them too.
* ``pass_at_k(METRIC OP VALUE) OP NUMBER`` and ``pass_hat_k(METRIC OP VALUE) OP NUMBER``
  over a case's repeated judgments: the mean over cases of the unbiased per-case estimates
  of "at least one of k passes" and "all k pass" (``stats/pass_k.py``). ``k`` is the case's
  number of samples unless given after the assertion: ``pass_hat_k(task_quality >= 2, k=3)``.
  ``pass@k(...)`` and ``pass^k(...)`` are accepted as aliases (the label uses the long names).

Degenerate cases: comparing a categorical value with ``>=`` is rejected when parsed; so are
``lower``/``upper`` around a statistic without an interval (median, min, max), and a
NaN or infinite threshold (``1e999`` parses as infinity, which ``<=`` always meets); NaN
never satisfies any comparison, so an undefined score can't pass.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pytest_llmjudge.errors import ExpressionError
from pytest_llmjudge.metrics.language_codes import language_family

Op = Literal[">=", ">", "<=", "<", "==", "!="]
AggregateStat = Literal[
    "mean", "median", "min", "max", "pass_rate", "human_mean", "human_pass_rate", "pass_at_k", "pass_hat_k"
]
Bound = Literal["lower", "upper"]

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
_METRIC = r"[A-Za-z_][\w+\-]*(?:@\d+)?"
_OP = r">=|<=|==|!=|>|<"
_CASE_RE = re.compile(rf"^\s*(?P<metric>{_METRIC})\s*(?P<op>{_OP})\s*(?P<value>.+?)\s*$")
_AGG_RE = re.compile(
    rf"^\s*(?P<stat>human_mean|human_pass_rate|mean|median|min|max|pass_rate|pass_at_k|pass_hat_k|pass@k|pass\^k)\s*\(\s*(?P<inner>.+?)\s*\)\s*(?P<op>{_OP})\s*(?P<value>\S+)\s*$"
)
_BOUND_RE = re.compile(rf"^\s*(?P<bound>lower|upper)\s*\(\s*(?P<inner>.+\))\s*\)\s*(?P<rest>(?:{_OP}).*)$")
# Statistics that come with an interval (suite/aggregate.py), hence a lower and an upper bound.
_WITH_INTERVAL = ("mean", "pass_rate", "human_mean", "human_pass_rate", "pass_at_k", "pass_hat_k")
# Prediction-powered estimates of what the human annotators would give (suite/aggregate.py, stats/prediction_powered.py).
HUMAN_STATS = ("human_mean", "human_pass_rate")
# Statistics over a case's repeated samples (suite/aggregate.py, stats/pass_k.py); the aliases people type for them.
PASS_K_STATS = ("pass_at_k", "pass_hat_k")
_PASS_K_ALIASES = {"pass@k": "pass_at_k", "pass^k": "pass_hat_k"}
_STAT_NAMES = (*get_args(AggregateStat), *_PASS_K_ALIASES)
# ``, k=3`` after a pass-k statistic's case assertion; any ``, name=value`` so a typo is named.
_K_ARGUMENT = re.compile(r"^(?P<inner>.+?)\s*,\s*(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>\S+)\s*$")
_OVERRIDE_RE = re.compile(rf"^\s*(?P<op>{_OP})?\s*(?P<value>\S+)\s*$")

CASE_LANGUAGE = "case.language"


@dataclass(frozen=True)
class MetricThreshold:
    """``metric op value``; ``value`` is a float, a string, or :data:`CASE_LANGUAGE`.

    The one threshold that parses and decides; reports carry its ``op value`` as
    :class:`pytest_llmjudge.records.Threshold` (a wire record, named so in the report schema)."""

    metric: str
    op: Op
    value: float | str
    line: int | None = field(default=None, compare=False)
    """Line of the assertion in its suite file, for error messages."""

    def expected(self, case_language: str) -> float | str:
        return case_language if self.value == CASE_LANGUAGE else self.value

    def holds(self, observed: float | str | None, case_language: str = "") -> bool:
        """True when ``observed`` satisfies the threshold. ``None`` and NaN never do.

        ``case.language`` compares languages, not strings: both sides are reduced to their
        base language (``pt-BR`` and ``pt`` are equal; so are ``yue`` and ``zh``).
        """
        if observed is None:
            return False
        if isinstance(observed, float) and math.isnan(observed):
            return False
        expected = self.expected(case_language)
        if isinstance(expected, str) != isinstance(observed, str):
            return False
        if self.value == CASE_LANGUAGE and isinstance(observed, str) and isinstance(expected, str):
            observed, expected = language_family(observed), language_family(expected)
        return _OPERATORS[self.op](observed, expected)

    def render(self) -> str:
        value = self.value if isinstance(self.value, str) else _number(self.value)
        return f"{self.metric} {self.op} {value}"


@dataclass(frozen=True)
class AggregateSpec:
    """``stat(metric) op value``; for ``pass_rate`` the inner part is a case threshold.

    ``bound`` set: the threshold applies to that bound of the statistic's interval.
    """

    stat: AggregateStat
    metric: str
    op: Op
    value: float
    inner: MetricThreshold | None = None
    bound: Bound | None = None
    k: int | None = None
    """``pass_at_k``/``pass_hat_k``: the number of attempts; None means each case's number of samples."""

    def holds(self, observed: float | None) -> bool:
        if observed is None or math.isnan(observed):
            return False
        return _OPERATORS[self.op](observed, self.value)

    def with_threshold(self, op: Op, value: float) -> AggregateSpec:
        return AggregateSpec(self.stat, self.metric, op, value, self.inner, self.bound, self.k)

    @property
    def label(self) -> str:
        inner = self.inner.render() if self.inner is not None else self.metric
        if self.k is not None:
            inner = f"{inner}, k={self.k}"
        statistic = f"{self.stat}({inner})"
        return statistic if self.bound is None else f"{self.bound}({statistic})"

    def render(self) -> str:
        return f"{self.label} {self.op} {_number(self.value)}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _parse_value(text: str) -> float | str:
    if text == CASE_LANGUAGE:
        return CASE_LANGUAGE
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    try:
        number = float(text)
    except ValueError:
        raise ExpressionError(
            f"expected a number, a quoted string or case.language after the operator, got {text!r}"
        ) from None
    if not math.isfinite(number):
        raise ExpressionError(f"a threshold must be a finite number (not NaN or infinite), got {text!r}")
    return number


# Operators people type for the ones the grammar has: '=>' from other languages' arrows,
# the mathematical signs from copied specifications, a single '=' from YAML habits.
_OPERATOR_TYPOS = (("=>", ">="), ("=<", "<="), ("≥", ">="), ("≤", "<="), ("≠", "!="), ("<>", "!="), ("===", "=="))
_LONE_EQUALS = re.compile(r"(?<![<>=!])=(?!=)")


def _did_you_mean(text: str) -> str:
    """``; did you mean '>='?`` when ``text`` holds an operator typo, else nothing."""
    for typo, meant in _OPERATOR_TYPOS:
        if typo in text:
            return f"; did you mean {text.replace(typo, meant, 1)!r}?"
    if _LONE_EQUALS.search(text):
        return f"; did you mean {_LONE_EQUALS.sub('==', text, count=1)!r}?"
    return ""


def parse_threshold(text: str) -> MetricThreshold:
    """Parse ``METRIC OP VALUE``."""
    match = _CASE_RE.match(text)
    if match is None:
        raise ExpressionError(
            f"can't parse assertion {text!r}; expected 'METRIC OP VALUE' such as "
            "'linguistic_acceptability >= 1' or 'language == case.language'" + _did_you_mean(text)
        )
    op: Op = match["op"]  # type: ignore[assignment]
    value = _parse_value(match["value"])
    if isinstance(value, str) and op not in ("==", "!="):
        raise ExpressionError(f"{op} compares numbers; a text value needs == or != in {text!r}")
    return MetricThreshold(metric=match["metric"], op=op, value=value)


def parse_aggregate(text: str) -> AggregateSpec:
    """Parse ``STAT(METRIC) OP NUMBER`` or ``pass_rate(METRIC OP VALUE) OP NUMBER``, maybe in ``lower(...)``."""
    bounded = _BOUND_RE.match(text)
    if bounded is not None:
        spec = _parse_statistic(f"{bounded['inner']} {bounded['rest']}", text)
        if spec.stat not in _WITH_INTERVAL:
            raise ExpressionError(
                f"{bounded['bound']}(...) takes mean(...) or pass_rate(...) (or human_mean, human_pass_rate, "
                "pass_at_k, pass_hat_k), the statistics with an interval, "
                f"got {bounded['inner']!r}"
            )
        bound: Bound = bounded["bound"]  # type: ignore[assignment]
        return AggregateSpec(spec.stat, spec.metric, spec.op, spec.value, spec.inner, bound, spec.k)
    return _parse_statistic(text, text)


def _parse_statistic(text: str, shown: str) -> AggregateSpec:
    """``STAT(INNER) OP NUMBER``; error messages quote ``shown``, what the suite wrote."""
    match = _AGG_RE.match(text)
    if match is None:
        raise ExpressionError(
            f"can't parse aggregate {shown!r}; expected e.g. 'mean(linguistic_acceptability) >= 1.6' "
            "or 'pass_rate(chrf >= 45) >= 0.8' or 'lower(mean(linguistic_acceptability)) >= 1.5'"
            + (_did_you_mean(shown) or _did_you_mean_statistic(shown))
        )
    stat: AggregateStat = _PASS_K_ALIASES.get(match["stat"], match["stat"])  # type: ignore[assignment]
    op: Op = match["op"]  # type: ignore[assignment]
    value = _parse_value(match["value"])
    if isinstance(value, str):
        raise ExpressionError(f"an aggregate threshold must be a number in {shown!r}")
    inner_text = match["inner"]
    if stat in PASS_K_STATS:
        return _parse_pass_k(stat, inner_text, op, value)
    if _K_ARGUMENT.match(inner_text) and re.search(rf"(?:{_OP})", inner_text):
        raise ExpressionError(f"{stat}(...) takes no k; k= goes with pass_at_k(...) or pass_hat_k(...), got {shown!r}")
    if stat in ("pass_rate", "human_pass_rate"):
        if not _CASE_RE.match(inner_text):
            raise ExpressionError(
                f"{stat} needs a case assertion inside, e.g. {stat}(chrf >= 45), got {inner_text!r}"
                + _did_you_mean(inner_text)
            )
        inner = parse_threshold(inner_text)
        return AggregateSpec(stat, inner.metric, op, value, inner)
    if not re.fullmatch(_METRIC, inner_text):
        raise ExpressionError(f"{stat}(...) takes a metric name, got {inner_text!r}")
    return AggregateSpec(stat, inner_text, op, value)


def _parse_pass_k(stat: AggregateStat, inner_text: str, op: Op, value: float) -> AggregateSpec:
    """``pass_hat_k(METRIC OP VALUE)`` or ``pass_hat_k(METRIC OP VALUE, k=N)``."""
    k: int | None = None
    argument = _K_ARGUMENT.match(inner_text)
    if argument is not None:
        inner_text = argument["inner"]
        if argument["name"] != "k":
            raise ExpressionError(
                f"{stat}(...) takes one argument after the assertion, k, got {argument['name']!r}; "
                f"did you mean '{stat}({inner_text}, k={argument['value']})'?"
            )
        if not re.fullmatch(r"\d+", argument["value"]) or int(argument["value"]) < 1:
            raise ExpressionError(
                f"k in {stat}(...) is the number of attempts, a whole number >= 1, got {argument['value']!r}"
            )
        k = int(argument["value"])
    if not _CASE_RE.match(inner_text):
        raise ExpressionError(
            f"{stat} needs a case assertion inside, e.g. {stat}(task_quality >= 2) or {stat}(task_quality >= 2, k=3), "
            f"got {inner_text!r}" + _did_you_mean(inner_text)
        )
    inner = parse_threshold(inner_text)
    return AggregateSpec(stat, inner.metric, op, value, inner, k=k)


def _did_you_mean_statistic(text: str) -> str:
    """``; did you mean 'pass_hat_k'?`` when ``text`` calls an unknown statistic close to a known one."""
    import difflib

    called = re.match(r"^\s*(?:(?:lower|upper)\s*\(\s*)?(?P<name>[\w@^]+)\s*\(", text)
    if called is None or called["name"] in _STAT_NAMES:
        return ""
    name = called["name"]
    ratio = {stat: difflib.SequenceMatcher(None, name, stat).ratio() for stat in get_args(AggregateStat)}
    best = max(ratio.values())
    if best < 0.6:
        return ""
    # Both when two names are about as close ('passk': pass_at_k or pass_hat_k?), else the closest.
    close = sorted(
        (stat for stat, r in ratio.items() if r >= best - 0.05),
        key=lambda stat: (-ratio[stat], not stat.startswith(name)),  # a name cut short first
    )
    return f"; did you mean {' or '.join(map(repr, close))}?"


def parse_override(text: str | float | int, default_op: Op) -> tuple[Op, float]:
    """A per-language override: ``">= 1.4"`` or a bare number (keeps the default operator)."""
    if isinstance(text, bool):
        raise ExpressionError("a per-language threshold must be a number or 'OP NUMBER'")
    if isinstance(text, (int, float)):
        if not math.isfinite(text):
            raise ExpressionError(
                f"a per-language threshold must be a finite number (not NaN or infinite), got {text!r}"
            )
        return default_op, float(text)
    match = _OVERRIDE_RE.match(text)
    if match is None:
        raise ExpressionError(
            f"can't parse per-language threshold {text!r}; expected e.g. '>= 1.4'" + _did_you_mean(text)
        )
    value = _parse_value(match["value"])
    if isinstance(value, str):
        raise ExpressionError(f"a per-language threshold must be a number, got {text!r}")
    op: Op = match["op"] or default_op  # type: ignore[assignment]
    return op, value
