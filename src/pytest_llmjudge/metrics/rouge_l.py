"""ROUGE-L: longest-common-subsequence F-measure between output and reference (Lin 2004).

With ``L`` the length of the longest common subsequence of the reference tokens (``m`` of
them) and the output tokens (``n``): ``R = L / m``, ``P = L / n`` and the reported value
is ``F = 2 P R / (P + R)`` on a 0-1 scale. LRM2QAS (Kumar et al., appendix C) reports
ROUGE-L as this F1; MIRAGE-BENCH (Thakur et al., sec. 4.1) uses it for answer overlap.

The LCS length is computed bit-parallel (Allison and Dix 1986; Hyyro 2004): with ``M[t]``
the bit mask of the reference positions holding token ``t`` and ``V`` starting as all ones
over the ``m`` reference positions, each output token ``t`` does ``U = V & M[t]``,
``V = (V + U) | (V - U)``; ``L`` is the number of zero bits of ``V`` at the end. That is
``n`` big-integer operations instead of the ``m x n`` table rouge-score fills in Python
(much faster: ``benchmarks/metrics_speed.py``, docs/scale.md), and the values are rouge-score's
``RougeScorer(["rougeL"])`` ones with the same tokens. rouge-score itself is not used: its
tokenizer module imports nltk (with scikit-learn and pandas: a slow import in every process), for
a stemmer this metric doesn't use.

Tokens come from :class:`~pytest_llmjudge.metrics.tokenization.UnicodeTokenizer`.
rouge-score's own tokenizer keeps only ``[a-z0-9]`` and would turn Hindi, Arabic or
Japanese text into an empty token list (score 0 whatever the answer); ours keeps words of
every script together with their combining marks and splits Chinese, Japanese, Thai, Lao,
Burmese and Khmer into characters. ``tokenize="char"`` splits every script into characters.

Degenerate cases: an output with no tokens (empty, or only punctuation) scores 0, as
rouge-score defines it; identical strings score 1; a blank reference is a
:class:`~pytest_llmjudge.errors.MetricError`. A reference made only of punctuation has
no tokens either and scores 0 against anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from pytest_llmjudge.metrics.base import MetricInput, MetricValue, check_required
from pytest_llmjudge.metrics.tokenization import rouge_tokenizer

__all__ = ["RougeL", "lcs_length"]


def lcs_length(reference: Sequence[str], output: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (bit-parallel, module docstring)."""
    if not reference or not output:
        return 0
    masks: dict[str, int] = {}
    for position, token in enumerate(reference):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(reference)) - 1
    row = full
    for token in output:
        matched = row & masks.get(token, 0)
        row = ((row + matched) | (row - matched)) & full
    return len(reference) - bin(row).count("1")


class RougeL:
    """ROUGE-L F-measure (0-1) over script-aware Unicode tokens."""

    name = "rouge_l"
    higher_is_better = True
    requires = frozenset({"reference"})

    def __init__(self, *, tokenize: str = "auto") -> None:
        self.tokenizer = rouge_tokenizer(tokenize)
        self._detail = MappingProxyType({"tokenize": tokenize})

    def compute(self, item: MetricInput) -> MetricValue:
        check_required(self.name, self.requires, item)
        reference = self.tokenizer.tokenize(item.reference or "")
        output = self.tokenizer.tokenize(item.output)
        common = lcs_length(reference, output)
        precision = common / len(output) if output else 0.0
        recall = common / len(reference) if reference else 0.0
        total = precision + recall
        return MetricValue(
            2 * precision * recall / total if total > 0 else 0.0,
            {**self._detail, "precision": precision, "recall": recall},
        )
