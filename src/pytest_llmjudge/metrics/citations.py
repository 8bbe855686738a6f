"""Citation quality of a RAG answer: Recall@k and MAP@k of the passages it cites.

MIRAGE-BENCH (Thakur et al., sec. 4.1 "Citation quality" and appendix A.2) checks whether
an answer cites the passages that human relevance judgments (MIRACL qrels) mark as
relevant, with Recall@k and MAP@k at k = 10. The answer's citations, in order of first
appearance and without repeats, are treated as a ranked list ``d_1, d_2, ...`` and scored
like a retrieval run against the relevant set ``R`` with trec_eval's definitions (the
benchmark's evaluation code runs pytrec_eval's ``recall.k`` and ``map_cut.k``):

* ``Recall@k = |R ∩ {d_1..d_k}| / |R|``: 1.0 exactly when every relevant passage is among
  the first ``k`` citations;
* ``MAP@k = (1 / |R|) * sum over i <= k with d_i in R of Precision@i``, where
  ``Precision@i = |R ∩ {d_1..d_i}| / i``. Citing relevant passages first and citing all of
  them both raise it; the denominator is ``|R|``, not ``min(k, |R|)``, as in trec_eval.

Citations are read from the output with a regular expression, by default bracketed ids not
followed by ``(`` (so Markdown links are skipped): ``[1]``, ``[doc3]``, ``[1, 2]``,
``[1][2]``. Inside one bracket, ids are separated by ``,`` ``;`` ``，`` ``；`` or ``、``.
The ``pattern`` parameter replaces the regex (its first group, or the whole match if it
has none, holds the ids). Case metadata can instead give the citations directly as
``cited_passages``; ``relevant_passages`` holds the relevant ids, as a list or as a mapping
of id to relevance grade (grade >= 1 is relevant, trec_eval's default level); optional
``passage_ids`` lists the ids that exist, and citations of anything else are ignored.
Ids compare as case-folded strings; with ``numeric_ids`` only their digits are compared,
so ``[doc3]`` matches a relevant id ``3`` (the benchmark's own parser keeps digits only).

Degenerate cases, decided here:

* no citations: both scores are 0 (the benchmark's scores start at 0 and an empty run
  never raises them);
* no relevant passages (``relevant_passages`` missing or empty): a
  :class:`~pytest_llmjudge.errors.MetricError`. Both measures divide by ``|R|``, and an
  unanswerable question needs its own assertion, not a silent 1 or 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics.base import MetricInput, MetricValue

__all__ = [
    "DEFAULT_K",
    "DEFAULT_PATTERN",
    "CitationMetric",
    "average_precision_at_k",
    "parse_citations",
    "recall_at_k",
    "relevant_ids",
    "strip_citation_markers",
]

DEFAULT_K = 10
DEFAULT_PATTERN = r"\[([^\[\]\n]{1,200})\](?!\()"
_ID_SEPARATOR = re.compile(r"[,;，；、]")
# A bracket holding only ids that contain a digit ("[1]", "[doc3]", "[1, 2]"): the shape
# of a citation marker, as opposed to bracketed prose.
_MARKER_ID = r"[^\W\d]*\d[\w.-]*"
_CITATION_MARKER = re.compile(rf"\[\s*{_MARKER_ID}(?:\s*[,;，；、]\s*{_MARKER_ID})*\s*\](?!\()")


def strip_citation_markers(text: str) -> str:
    """``text`` without citation markers, so their ids are not read as numbers."""
    return _CITATION_MARKER.sub(" ", text)


def parse_citations(text: str, pattern: str | re.Pattern[str] = DEFAULT_PATTERN) -> list[str]:
    """Cited ids in order of first appearance, without repeats."""
    regex = re.compile(pattern) if isinstance(pattern, str) else pattern
    seen: dict[str, None] = {}
    for match in regex.finditer(text):
        inside = match.group(1) if regex.groups else match.group(0)
        for part in _ID_SEPARATOR.split(inside or ""):
            cited = part.strip()
            if cited:
                seen.setdefault(cited, None)
    return list(seen)


def relevant_ids(spec: Any) -> list[str]:
    """Relevant ids from a list of ids or a mapping of id to grade (grade >= 1 counts)."""
    if isinstance(spec, Mapping):
        return [str(key) for key, grade in spec.items() if _grade(key, grade) >= 1]
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Iterable):
        raise MetricError("relevant_passages must be a list of passage ids or a mapping of id to grade")
    return [str(item) for item in spec]


def _grade(key: Any, grade: Any) -> float:
    try:
        return float(grade)
    except (TypeError, ValueError):
        raise MetricError(f"relevant_passages: grade of {key!r} must be a number, not {grade!r}") from None


def recall_at_k(cited: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """``|R ∩ top-k| / |R|``."""
    if not relevant:
        raise MetricError("Recall@k is undefined without relevant passages")
    return len(relevant.intersection(cited[:k])) / len(relevant)


def average_precision_at_k(cited: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """trec_eval's ``map_cut.k`` for one query: summed Precision@i at hits, over ``|R|``."""
    if not relevant:
        raise MetricError("MAP@k is undefined without relevant passages")
    hits = 0
    total = 0.0
    for rank, passage in enumerate(cited[:k], start=1):
        if passage in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


class CitationMetric:
    """Citation Recall@k or MAP@k (0-1) of the passages an answer cites."""

    higher_is_better = True
    requires: frozenset[str] = frozenset()

    def __init__(
        self,
        *,
        measure: Literal["recall", "map"],
        k: int = DEFAULT_K,
        pattern: str | None = None,
        numeric_ids: bool = False,
    ) -> None:
        if measure not in ("recall", "map"):
            raise MetricError(f"citation measure must be 'recall' or 'map', not {measure!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise MetricError(f"citation_{measure}: k must be a positive integer, not {k!r}")
        try:
            self._pattern = re.compile(pattern if pattern is not None else DEFAULT_PATTERN)
        except re.error as exc:
            raise MetricError(f"citation_{measure}: invalid pattern {pattern!r}: {exc}") from None
        self.measure = measure
        self.k = k
        self.numeric_ids = numeric_ids
        self.name = f"citation_{measure}@{k}"

    def _normalise(self, ids: Iterable[str]) -> list[str]:
        result: dict[str, None] = {}
        for raw in ids:
            key = raw.strip().casefold()
            if self.numeric_ids:
                key = "".join(ch for ch in key if ch.isdigit())
            if key:
                result.setdefault(key, None)
        return list(result)

    def compute(self, item: MetricInput) -> MetricValue:
        metadata = item.metadata
        relevant = frozenset(self._normalise(relevant_ids(metadata.get("relevant_passages", ()))))
        if not relevant:
            raise MetricError(
                f"{self.name} needs metadata.relevant_passages (the ids of the relevant "
                "passages), but the case has none"
            )
        given = metadata.get("cited_passages")
        if given is not None:
            if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
                raise MetricError(f"{self.name}: cited_passages must be a list of passage ids")
            cited = self._normalise(str(passage) for passage in given)
        else:
            cited = self._normalise(parse_citations(item.output, self._pattern))
        existing = metadata.get("passage_ids")
        if existing is not None:
            allowed = set(self._normalise(str(passage) for passage in existing))
            cited = [passage for passage in cited if passage in allowed]
        if self.measure == "recall":
            value = recall_at_k(cited, relevant, self.k)
        else:
            value = average_precision_at_k(cited, relevant, self.k)
        return MetricValue(
            value,
            {
                "cited": cited,
                "relevant": sorted(relevant),
                "hits": [passage for passage in cited[: self.k] if passage in relevant],
                "k": self.k,
            },
        )
