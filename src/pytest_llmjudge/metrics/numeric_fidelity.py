"""Numeric fidelity: Jaccard overlap of the numbers in the reference and in the answer.

LRM2QAS's EN-NUM component (Kumar et al., sec. 2.2 eq. 4 and appendix E step 4):
with ``N_R`` and ``N_A`` the sets of numeric values found in the reference and in the
answer, ``NUM = |N_R ∩ N_A| / |N_R ∪ N_A|``, on a 0-1 scale. Values are compared, not
spellings: :mod:`pytest_llmjudge.metrics.numbers` reads digits of every script, digit
grouping and decimal separators, so "१२,३४,५६७" in the reference matches "1,234,567" in
the answer. Each value counts once however often it is repeated. Citation markers such as
``[1]``, ``[doc3]`` or ``[1, 2]`` are removed first (``ignore_citations``, on by default):
in a RAG answer they are passage ids, not quantities.

Degenerate cases (the paper gives only the ratio, which is 0/0 for two empty sets):

* no numbers on either side: 1.0. Nothing numeric can be wrong, and a 0 here would zero
  the multiplicative LRM2QAS score of every answer to a non-numeric question;
* numbers on one side only: 0.0 (the ratio's own value: the intersection is empty). A
  reference year the answer leaves out, or a number the answer invents, both count.
  (The paper's Table 5 reports a non-zero LRM2QAS, 0.100, for an answer that omits the
  reference's "1952", which eq. 4 and the product would make 0; the authors' code must
  treat that case differently, but the paper does not say how, so we keep eq. 4.)
* an empty output is an answer with no numbers (1.0 or 0.0 by the two rules above);
* a blank reference is a :class:`~pytest_llmjudge.errors.MetricError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_llmjudge.metrics.base import MetricInput, MetricValue, check_required
from pytest_llmjudge.metrics.citations import strip_citation_markers
from pytest_llmjudge.metrics.numbers import number_set

__all__ = ["NumericFidelity", "NumericOverlap", "numeric_jaccard", "numeric_overlap"]


@dataclass(frozen=True)
class NumericOverlap:
    """The two number sets and their Jaccard score."""

    score: float
    reference_numbers: frozenset[float]
    output_numbers: frozenset[float]


def numeric_jaccard(reference_numbers: frozenset[float], output_numbers: frozenset[float]) -> float:
    """``|R ∩ A| / |R ∪ A|``, with 1.0 when both sets are empty (see the module docstring)."""
    union = reference_numbers | output_numbers
    if not union:
        return 1.0
    return len(reference_numbers & output_numbers) / len(union)


def numeric_overlap(
    reference: str, output: str, *, decimal_comma: bool = False, ignore_citations: bool = True
) -> NumericOverlap:
    """Extract the numbers of both texts and score their overlap."""
    if ignore_citations:
        reference, output = strip_citation_markers(reference), strip_citation_markers(output)
    ref = number_set(reference, decimal_comma=decimal_comma)
    out = number_set(output, decimal_comma=decimal_comma)
    return NumericOverlap(numeric_jaccard(ref, out), ref, out)


class NumericFidelity:
    """EN-NUM as a stand-alone metric (0-1)."""

    name = "numeric_fidelity"
    higher_is_better = True
    requires = frozenset({"reference"})

    def __init__(self, *, decimal_comma: bool = False, ignore_citations: bool = True) -> None:
        self.decimal_comma = decimal_comma
        self.ignore_citations = ignore_citations

    def compute(self, item: MetricInput) -> MetricValue:
        check_required(self.name, self.requires, item)
        overlap = numeric_overlap(
            item.reference or "",
            item.output,
            decimal_comma=self.decimal_comma,
            ignore_citations=self.ignore_citations,
        )
        return MetricValue(
            overlap.score,
            {
                "reference_numbers": sorted(overlap.reference_numbers),
                "output_numbers": sorted(overlap.output_numbers),
                "missing": sorted(overlap.reference_numbers - overlap.output_numbers),
                "extra": sorted(overlap.output_numbers - overlap.reference_numbers),
            },
        )
