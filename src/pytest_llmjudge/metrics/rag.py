"""Judge-based RAG metrics: faithfulness, context precision, context recall.

Definitions after RAGAS (Es et al., "RAGAS: Automated Evaluation of Retrieval Augmented
Generation", EACL 2024 system demonstrations, sec. 3, and the RAGAS project's metric
documentation for the two context metrics), in our own words and with our own prompts
(``judges/rag_prompts.py``). Each value is in [0, 1], higher is better:

* ``faithfulness``: the judge splits the output into claims, then checks each claim
  against the case's ``context`` passages. F = (supported claims) / (claims). Two calls,
  the second built from the first's reply.
* ``context_precision``: the judge marks each passage, in the order given (the retriever's
  rank), useful (v_k = 1) or not for reaching the ``reference`` answer to the ``input``.
  CP = sum_k (precision@k * v_k) / (number of useful passages), precision@k being the
  share of useful passages among the first k: 1 when every useful passage comes before
  every useless one, lower the later they come.
* ``context_recall``: the judge splits the ``reference`` into statements and says, for
  each, whether the passages support it. CR = (attributed statements) / (statements).

A metric's calls go through the judge runner like rubric calls: planned after collection,
sent concurrently, cached by prompt, re-asked when unparseable (``execution/scorer.py``
chains faithfulness's second call on the first's reply inside the runner's loop). The
claims, passages and statements with their verdicts and reasons are the score's
``detail``, which reports show.

Degenerate cases: a missing field the metric needs (``context`` always; ``input`` and
``reference`` for context precision, ``reference`` for context recall) leaves the case
unscored with a reason naming the field, without a call. An output in which the judge
finds no claims, or a reference without statements, is unscored ("undefined"): no
claims is not "all claims supported". No useful passage at all gives context precision 0
(there is nothing ranked well), as RAGAS does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.judges.prompts import JudgeSettings
from pytest_llmjudge.judges.rag_prompts import (
    ItemVerdict,
    RagText,
    attribution_request,
    claims_request,
    parse_attribution,
    parse_claims,
    passage_usefulness_request,
    support_parser,
    support_request,
    usefulness_parser,
)
from pytest_llmjudge.metrics.base import MetricInput, check_required, is_blank


@dataclass(frozen=True)
class Reply:
    """One judge call's result as a RAG metric sees it: the parsed value, or why there is none."""

    value: Any
    error: str | None = None
    cached: bool = False
    raw_reply: str | None = None


Ask = Callable[[ProviderRequest, Callable[[str], Any]], Awaitable[Reply]]
"""Sends one request through the judge runner and parses its reply (``parse`` may re-ask)."""


@dataclass(frozen=True)
class JudgedValue:
    """A judge-based metric's result for one case: a value, or an error; ``detail`` either way."""

    value: float | None
    error: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    cached: bool | None = True
    """Whether every call came from the cache; None when no call was made."""
    raw_reply: str | None = None


class JudgedMetric(Protocol):
    """A metric scored from one or more judge calls (``metrics/rag.py``)."""

    name: str
    requires: frozenset[str]
    higher_is_better: bool

    async def evaluate(self, item: MetricInput, settings: JudgeSettings, ask: Ask) -> JudgedValue: ...


def _text(item: MetricInput) -> RagText:
    return RagText(
        language=item.language, output=item.output, input=item.input, reference=item.reference, context=item.context
    )


def _failed(reply: Reply, detail: Mapping[str, Any], cached: bool) -> JudgedValue:
    """Unscored by a call's error (provider failure, unusable reply, spend cap), the reply kept for reports."""
    return JudgedValue(None, reply.error, detail, cached and reply.cached, reply.raw_reply)


def _missing(name: str, requires: frozenset[str], item: MetricInput) -> JudgedValue | None:
    try:
        check_required(name, requires, item)
    except MetricError as exc:
        return JudgedValue(None, f"{exc} (the case's {_first_blank(requires, item)!r} field)", cached=None)
    return None


def _first_blank(requires: frozenset[str], item: MetricInput) -> str:
    return next(name for name in sorted(requires) if is_blank(getattr(item, name)))


def _verdict_rows(texts: list[str], verdicts: list[ItemVerdict], key: str, flag: str) -> list[dict[str, Any]]:
    return [{key: text, flag: v.verdict, "reason": v.reason} for text, v in zip(texts, verdicts, strict=True)]


class Faithfulness:
    """F = supported claims / claims (two judge calls: claims, then their support)."""

    name = "faithfulness"
    requires = frozenset({"context"})
    higher_is_better = True

    async def evaluate(self, item: MetricInput, settings: JudgeSettings, ask: Ask) -> JudgedValue:
        missing = _missing(self.name, self.requires, item)
        if missing is not None:
            return missing
        text = _text(item)
        first = await ask(claims_request(text, settings), parse_claims)
        if first.error is not None:
            return _failed(first, {}, True)
        claims: list[str] = first.value
        if not claims:
            return JudgedValue(
                None,
                "faithfulness is undefined: the judge found no claims in the output",
                {"claims": []},
                first.cached,
            )
        second = await ask(support_request(claims, text, settings), support_parser(len(claims)))
        if second.error is not None:
            return _failed(second, {"claims": [{"claim": claim} for claim in claims]}, first.cached)
        verdicts: list[ItemVerdict] = second.value
        supported = sum(v.verdict for v in verdicts)
        return JudgedValue(
            supported / len(claims),
            detail={
                "claims": _verdict_rows(claims, verdicts, "claim", "supported"),
                "supported": supported,
                "total": len(claims),
            },
            cached=first.cached and second.cached,
        )


def context_precision_value(useful: list[bool]) -> float:
    """sum_k precision@k * v_k / (number of useful passages); 0 when none is useful."""
    relevant = sum(useful)
    if relevant == 0:
        return 0.0
    total, seen = 0.0, 0
    for rank, flag in enumerate(useful, 1):
        seen += flag
        if flag:
            total += seen / rank
    return total / relevant


class ContextPrecision:
    """Mean precision@k at the ranks of the passages useful for the reference answer."""

    name = "context_precision"
    requires = frozenset({"context", "input", "reference"})
    higher_is_better = True

    async def evaluate(self, item: MetricInput, settings: JudgeSettings, ask: Ask) -> JudgedValue:
        missing = _missing(self.name, self.requires, item)
        if missing is not None:
            return missing
        reply = await ask(passage_usefulness_request(_text(item), settings), usefulness_parser(len(item.context)))
        if reply.error is not None:
            return _failed(reply, {}, True)
        verdicts: list[ItemVerdict] = reply.value
        useful = [v.verdict for v in verdicts]
        return JudgedValue(
            context_precision_value(useful),
            detail={
                "passages": _verdict_rows(list(item.context), verdicts, "passage", "useful"),
                "useful": sum(useful),
                "total": len(useful),
            },
            cached=reply.cached,
        )


class ContextRecall:
    """Share of the reference's statements that the context supports."""

    name = "context_recall"
    requires = frozenset({"context", "reference"})
    higher_is_better = True

    async def evaluate(self, item: MetricInput, settings: JudgeSettings, ask: Ask) -> JudgedValue:
        missing = _missing(self.name, self.requires, item)
        if missing is not None:
            return missing
        reply = await ask(attribution_request(_text(item), settings), parse_attribution)
        if reply.error is not None:
            return _failed(reply, {}, True)
        statements = reply.value
        rows = [{"statement": s.text, "attributed": s.attributed, "reason": s.reason} for s in statements]
        if not statements:
            return JudgedValue(
                None, "context_recall is undefined: the judge found no statements in the reference", {"statements": []}
            )
        attributed = sum(s.attributed for s in statements)
        return JudgedValue(
            attributed / len(statements),
            detail={"statements": rows, "attributed": attributed, "total": len(statements)},
            cached=reply.cached,
        )


JUDGED_METRICS: Mapping[str, JudgedMetric] = {
    metric.name: metric for metric in (Faithfulness(), ContextPrecision(), ContextRecall())
}
"""The judge-based metrics by name (their kind is ``judged``: ``suite/model.py``)."""
