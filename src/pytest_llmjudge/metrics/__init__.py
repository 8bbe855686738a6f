"""Reference metrics that suites assert on, one concept per module, and their registry.

A suite names a metric in a threshold (``chrf++ >= 45``) and may give parameters;
:func:`resolve_metric` turns the name and parameters into a
:class:`~pytest_llmjudge.metrics.base.Metric`. Importing this package imports no optional
dependency: sacrebleu, py3langid and sentence-transformers are imported when a metric that
needs them is created (ROUGE-L needs none), and a missing one raises
:class:`~pytest_llmjudge.errors.MissingDependencyError` naming the extra to install.

=====================  ======  =========  =============================================
name                   scale   requires   parameters
=====================  ======  =========  =============================================
``chrf``               0-100   reference  (none)
``chrf++``/``chrf_pp`` 0-100   reference  (none)
``bleu``               0-100   reference  ``tokenize`` (sacrebleu tokenizer name)
``rouge_l``            0-1     reference  ``tokenize`` (``auto`` or ``char``)
``language``           code    (none)     ``min_confidence``, ``candidates``
``numeric_fidelity``   0-1     reference  ``decimal_comma``, ``ignore_citations``
``lrm2qas``            0-1     reference, ``lambdas`` (preset or mapping), ``eta``,
                               input      ``embedder``, ``translator``,
                                          ``kc_answer_units``, ``min_clause_tokens``,
                                          ``decimal_comma``
``lrm2qas_bert``       0-1     reference  ``embedder``, ``translator``
``lrm2qas_kc``         0-1     reference, ``eta``, ``embedder``, ``translator``,
                               input      ``kc_answer_units``, ``min_clause_tokens``
``lrm2qas_num``        0-1     reference  ``translator``, ``decimal_comma``
``lrm2qas_ef``         0-1     context or ``embedder``, ``translator``
                               reference
``citation_recall@K``  0-1     metadata   ``pattern``, ``numeric_ids`` (``@K`` sets k;
``citation_map@K``     0-1     metadata   without it k = 10)
=====================  ======  =========  =============================================

``language`` is categorical: its value is the detected language code, to be compared with
:func:`~pytest_llmjudge.metrics.langid.matches`, not with a threshold.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics.base import Metric, MetricInput, MetricValue
from pytest_llmjudge.metrics.bleu import Bleu
from pytest_llmjudge.metrics.chrf import ChrF
from pytest_llmjudge.metrics.citations import DEFAULT_K, CitationMetric
from pytest_llmjudge.metrics.langid import LanguageId, matches
from pytest_llmjudge.metrics.numeric_fidelity import NumericFidelity
from pytest_llmjudge.metrics.rouge_l import RougeL

if TYPE_CHECKING:
    from pytest_llmjudge.metrics.embedders import Embedder
    from pytest_llmjudge.metrics.lrm2qas import LRM2QAS
    from pytest_llmjudge.metrics.translation import Translator

# The LRM2QAS family (numpy, embedders) is imported by its factories, when a suite uses it:
# the plugin imports this package for every --llmjudge run, most of which never need it.

__all__ = [
    "BUILTIN_METRICS",
    "Metric",
    "MetricInput",
    "MetricValue",
    "find_metric",
    "matches",
    "resolve_metric",
]

_AnswerUnits = Literal["clauses", "tokens"]


def _chrf() -> Metric:
    return ChrF(word_order=0)


def _chrf_pp() -> Metric:
    return ChrF(word_order=2)


def _bleu(*, tokenize: str | None = None) -> Metric:
    return Bleu(tokenize=tokenize)


def _rouge_l(*, tokenize: str = "auto") -> Metric:
    return RougeL(tokenize=tokenize)


def _language(*, min_confidence: float | None = None, candidates: Iterable[str] | None = None) -> Metric:
    return LanguageId(min_confidence=min_confidence, candidates=candidates)


def _numeric_fidelity(*, decimal_comma: bool = False, ignore_citations: bool = True) -> Metric:
    return NumericFidelity(decimal_comma=decimal_comma, ignore_citations=ignore_citations)


def _lrm2qas_class() -> type[LRM2QAS]:
    from pytest_llmjudge.metrics.lrm2qas import LRM2QAS

    return LRM2QAS


def _default_eta() -> float:
    from pytest_llmjudge.metrics.lrm2qas import DEFAULT_ETA

    return DEFAULT_ETA


def _lrm2qas(
    *,
    lambdas: str | Mapping[str, Any] | None = None,
    eta: float | None = None,
    embedder: str | Embedder = "hashing",
    translator: Translator | None = None,
    kc_answer_units: _AnswerUnits = "clauses",
    min_clause_tokens: int = 3,
    decimal_comma: bool = False,
) -> Metric:
    return _lrm2qas_class()(
        lambdas=lambdas,
        eta=_default_eta() if eta is None else eta,
        embedder=embedder,
        translator=translator,
        kc_answer_units=kc_answer_units,
        min_clause_tokens=min_clause_tokens,
        decimal_comma=decimal_comma,
    )


def _lrm2qas_bert(*, embedder: str | Embedder = "hashing", translator: Translator | None = None) -> Metric:
    return _lrm2qas_class()(component="bert", embedder=embedder, translator=translator)


def _lrm2qas_kc(
    *,
    eta: float | None = None,
    embedder: str | Embedder = "hashing",
    translator: Translator | None = None,
    kc_answer_units: _AnswerUnits = "clauses",
    min_clause_tokens: int = 3,
) -> Metric:
    return _lrm2qas_class()(
        component="kc",
        eta=_default_eta() if eta is None else eta,
        embedder=embedder,
        translator=translator,
        kc_answer_units=kc_answer_units,
        min_clause_tokens=min_clause_tokens,
    )


def _lrm2qas_num(*, translator: Translator | None = None, decimal_comma: bool = False) -> Metric:
    return _lrm2qas_class()(component="num", translator=translator, decimal_comma=decimal_comma)


def _lrm2qas_ef(*, embedder: str | Embedder = "hashing", translator: Translator | None = None) -> Metric:
    return _lrm2qas_class()(component="ef", embedder=embedder, translator=translator)


def _citation_recall(*, k: int = DEFAULT_K, pattern: str | None = None, numeric_ids: bool = False) -> Metric:
    return CitationMetric(measure="recall", k=k, pattern=pattern, numeric_ids=numeric_ids)


def _citation_map(*, k: int = DEFAULT_K, pattern: str | None = None, numeric_ids: bool = False) -> Metric:
    return CitationMetric(measure="map", k=k, pattern=pattern, numeric_ids=numeric_ids)


BUILTIN_METRICS: Mapping[str, Callable[..., Metric]] = MappingProxyType(
    {
        "chrf": _chrf,
        "chrf++": _chrf_pp,
        "chrf_pp": _chrf_pp,
        "bleu": _bleu,
        "rouge_l": _rouge_l,
        "language": _language,
        "numeric_fidelity": _numeric_fidelity,
        "lrm2qas": _lrm2qas,
        "lrm2qas_bert": _lrm2qas_bert,
        "lrm2qas_kc": _lrm2qas_kc,
        "lrm2qas_num": _lrm2qas_num,
        "lrm2qas_ef": _lrm2qas_ef,
        "citation_recall@K": _citation_recall,
        "citation_map@K": _citation_map,
    }
)


def _takes_k(factory: Callable[..., Any]) -> bool:
    accepted = _parameters(factory)
    return accepted is None or "k" in accepted


def _parameters(factory: Callable[..., Any]) -> list[str] | None:
    """The keyword parameters a factory accepts, or None when it takes any (``**kwargs``) or
    its signature can't be read (then the factory's own ``TypeError`` reports a bad one)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return sorted(p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL)


def find_metric(
    name: str, metrics: Mapping[str, Callable[..., Any]] = BUILTIN_METRICS, *, as_written: bool = False
) -> tuple[str, str | None] | None:
    """Where a metric name is registered: the key in ``metrics`` and the text after ``@``, if any.

    The one parser of ``@K`` names. A name is looked up as written, then (unless
    ``as_written``) stripped and lower-cased (``ChrF++`` is ``chrf++``; a plugin's
    ``MyMetric`` is found as written). A suite names metrics as written: its results, scales
    and ``metric_options`` are keyed by that name. A family registered as ``base@K`` is found
    by its bare name (the factory's default k) and by ``base@<k>``; a plain ``base`` whose
    factory takes ``k`` also answers to ``base@<k>``. None for a name nothing is registered
    under (``chrf@3``).
    """
    spellings = (name,) if as_written else (name, name.strip().lower())
    for key in dict.fromkeys(spellings):
        if key in metrics:
            return key, None
        if f"{key}@K" in metrics:
            return f"{key}@K", None
        base, at, suffix = key.rpartition("@")
        if at and base:
            if f"{base}@K" in metrics:
                return f"{base}@K", suffix
            if base in metrics and _takes_k(metrics[base]):
                return base, suffix
    return None


def _unknown(name: str, metrics: Mapping[str, Callable[..., Any]]) -> MetricError:
    known = sorted(metrics)
    close = difflib.get_close_matches(name.strip().lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return MetricError(f"unknown metric {name!r}{hint} Known metrics: {', '.join(known)}")


def resolve_metric(
    name: str,
    params: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Callable[..., Any]] = BUILTIN_METRICS,
) -> Metric:
    """The metric a suite names, built with the assertion's parameters: the one way to build one.

    ``metrics`` is where names are looked up: the built-ins by default, a run's
    :class:`~pytest_llmjudge.registry.Registry` ``metrics`` (built-ins and plugins) in a run.
    An ``@K`` suffix becomes the factory's ``k`` (:func:`find_metric`). Raises
    :class:`MetricError` for an unknown name (with the known names and a close match), a
    suffix that is not a positive integer or disagrees with a ``k`` parameter, an unknown
    parameter, or a factory that rejects its parameters.
    """
    kwargs = dict(params or {})
    found = find_metric(name, metrics)
    if found is None:
        raise _unknown(name, metrics)
    key, suffix = found
    if suffix is not None:
        if not suffix.isdigit() or int(suffix) < 1:
            raise MetricError(f"{name!r}: the part after '@' must be a positive integer k")
        if "k" in kwargs and kwargs["k"] != int(suffix):
            raise MetricError(f"{name!r} sets k={suffix} but the parameters say k={kwargs['k']}")
        kwargs["k"] = int(suffix)
    factory = metrics[key]
    accepted = _parameters(factory)
    unknown = sorted(set(kwargs) - set(accepted)) if accepted is not None else []
    if unknown:
        takes = f"accepted: {', '.join(accepted or ())}" if accepted else "it takes none"
        raise MetricError(f"bad parameters for metric {name!r}: unknown parameter(s) {', '.join(unknown)}; {takes}")
    try:
        metric: Metric = factory(**kwargs)
    except TypeError as exc:
        raise MetricError(f"bad parameters for metric {name!r}: {exc}") from None
    return metric
