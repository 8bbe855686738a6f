"""ROUGE-L: longest-common-subsequence F-measure between output and reference (Lin 2004).

With ``L`` the length of the longest common subsequence of the reference tokens (``m`` of
them) and the output tokens (``n``): ``R = L / m``, ``P = L / n`` and the reported value
is ``F = 2 P R / (P + R)`` on a 0-1 scale. LRM2QAS (Kumar et al., appendix C) reports
ROUGE-L as this F1; MIRAGE-BENCH (Thakur et al., sec. 4.1) uses it for answer overlap.

The score is computed by rouge-score's ``RougeScorer(["rougeL"], tokenizer=...)`` with
:class:`~pytest_llmjudge.metrics.tokenization.UnicodeTokenizer` plugged in. rouge-score's
own tokenizer keeps only ``[a-z0-9]`` and would turn Hindi, Arabic or Japanese text into
an empty token list (score 0 whatever the answer); ours keeps words of every script
together with their combining marks and splits Chinese, Japanese, Thai, Lao, Burmese and
Khmer into characters. ``tokenize="char"`` splits every script into characters.

Degenerate cases: an output with no tokens (empty, or only punctuation) scores 0, as
rouge-score defines it; identical strings score 1; a blank reference is a
:class:`~pytest_llmjudge.errors.MetricError`. A reference made only of punctuation has
no tokens either and scores 0 against anything.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from pytest_llmjudge.errors import MissingDependencyError
from pytest_llmjudge.metrics.base import MetricInput, MetricValue, check_required
from pytest_llmjudge.metrics.tokenization import rouge_tokenizer

__all__ = ["RougeL"]


class RougeL:
    """ROUGE-L F-measure (0-1) over script-aware Unicode tokens."""

    name = "rouge_l"
    higher_is_better = True
    requires = frozenset({"reference"})

    def __init__(self, *, tokenize: str = "auto") -> None:
        # A missing package is reported when the suite is built; the import itself waits for the
        # first score: rouge-score imports nltk (about 1.5 s), which a --collect-only run, or one
        # that deselects the ROUGE-L items, never needs.
        if importlib.util.find_spec("rouge_score") is None:
            raise MissingDependencyError("rouge-score", "metrics", "the ROUGE-L metric")
        self.tokenizer = rouge_tokenizer(tokenize)
        self._scorer: Any = None
        self._detail = MappingProxyType({"tokenize": tokenize})

    def compute(self, item: MetricInput) -> MetricValue:
        check_required(self.name, self.requires, item)
        if self._scorer is None:
            from rouge_score.rouge_scorer import RougeScorer

            self._scorer = RougeScorer(["rougeL"], tokenizer=self.tokenizer)
        # rouge-score's argument order is (target, prediction).
        score = self._scorer.score(item.reference or "", item.output)["rougeL"]
        return MetricValue(
            float(score.fmeasure),
            {
                **self._detail,
                "precision": float(score.precision),
                "recall": float(score.recall),
            },
        )

    def compute_many(self, items: Sequence[MetricInput]) -> list[MetricValue]:
        return [self.compute(item) for item in items]
