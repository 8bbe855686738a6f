"""chrF and chrF++: character n-gram F-score against a reference (Popović 2015, 2017).

For each n-gram order the precision and recall of the output's character n-grams against
the reference's are computed; chrF is the F-beta score of their averages over orders
1..6, ``F = (1 + beta^2) P R / (beta^2 P + R)`` with ``beta = 2`` (recall weighted twice as
much as precision). chrF++ adds word unigrams and bigrams to the average. LRM2QAS (Kumar et
al., sec. 2.2 and appendix C) uses chrF++ with beta 2 as its strongest lexical baseline.

Scores come from sacrebleu's ``CHRF(char_order=6, word_order=0|2, beta=2)``
``sentence_score`` on a 0-100 scale, so they are identical to sacrebleu's numbers. One
``CHRF`` object is built per metric instance; constructing it per case would dominate
the cost of short sentences.

Character n-grams ignore whitespace, so chrF works unchanged for any script. The word
part of chrF++ splits on whitespace: for Japanese, Chinese or Thai text the words are
whole clauses and rarely match, so chrF++ there is mostly chrF scaled down by the word
terms; prefer plain ``chrf`` for those languages.

Degenerate cases: an empty output scores 0; identical non-empty strings score 100; a blank
reference is a :class:`~pytest_llmjudge.errors.MetricError` (the score is undefined).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from pytest_llmjudge.errors import MetricError, MissingDependencyError
from pytest_llmjudge.metrics.base import MetricInput, MetricValue, check_required

__all__ = ["BETA", "CHAR_ORDER", "ChrF"]

CHAR_ORDER = 6
BETA = 2


class ChrF:
    """Sentence-level chrF (``word_order=0``) or chrF++ (``word_order=2``), 0-100."""

    higher_is_better = True
    requires = frozenset({"reference"})

    def __init__(self, *, word_order: int = 0) -> None:
        if word_order not in (0, 2):
            raise MetricError(f"chrF word_order must be 0 (chrF) or 2 (chrF++), not {word_order}")
        try:
            from sacrebleu.metrics.chrf import CHRF
        except ImportError as exc:
            raise MissingDependencyError("sacrebleu", "metrics", "the chrF metric") from exc
        self.name = "chrf++" if word_order == 2 else "chrf"
        self._chrf: Any = CHRF(char_order=CHAR_ORDER, word_order=word_order, beta=BETA)
        # One read-only detail shared by every value: nothing per case to report.
        self._detail = MappingProxyType({"char_order": CHAR_ORDER, "word_order": word_order, "beta": BETA})

    def compute(self, item: MetricInput) -> MetricValue:
        check_required(self.name, self.requires, item)
        score = self._chrf.sentence_score(item.output, [item.reference or ""]).score
        return MetricValue(float(score), self._detail)
