"""Sentence BLEU with a tokenizer chosen per language (Papineni et al. 2002).

BLEU is the geometric mean of the modified n-gram precisions for n = 1..4 times a brevity
penalty ``BP = min(1, exp(1 - r / c))`` (``r`` reference length, ``c`` output length, in
tokens). At the sentence level a higher-order precision is often 0, which would zero the
geometric mean; sacrebleu's ``effective_order=True`` averages only over the orders that
have at least one n-gram in the output, the usual sentence-level remedy. LRM2QAS (Kumar et
al., appendix C) and MIRAGE-BENCH (Thakur et al., sec. 4.1) both report BLEU through
sacrebleu as a lexical baseline.

The score is sacrebleu's ``BLEU(effective_order=True, tokenize=...).sentence_score`` on
a 0-100 scale. The tokenizer comes from
:func:`~pytest_llmjudge.metrics.tokenization.choose_bleu_tokenizer` for the case's
language (``zh`` for Chinese, MeCab or per-character for Japanese and Korean,
per-character for Thai, Lao, Burmese and Khmer, ``13a`` otherwise) unless the assertion
sets ``tokenize``; the tokenizer used, and why if it is a fallback, is in ``detail``. Note
that BLEU numbers are only comparable between runs that use the same tokenizer.

Degenerate cases: an empty output scores 0; identical non-empty strings score 100; a blank
reference is a :class:`~pytest_llmjudge.errors.MetricError`.
"""

from __future__ import annotations

from typing import Any

from pytest_llmjudge.errors import MissingDependencyError
from pytest_llmjudge.metrics.base import MetricInput, MetricValue, check_required
from pytest_llmjudge.metrics.tokenization import (
    BleuTokenizerChoice,
    choose_bleu_tokenizer,
)

__all__ = ["Bleu"]


class Bleu:
    """Sentence BLEU (0-100) with per-language tokenization."""

    name = "bleu"
    higher_is_better = True
    requires = frozenset({"reference"})

    def __init__(self, *, tokenize: str | None = None) -> None:
        try:
            from sacrebleu.metrics.bleu import BLEU
        except ImportError as exc:
            raise MissingDependencyError("sacrebleu", "metrics", "the BLEU metric") from exc
        self._bleu_class: Any = BLEU
        self._override = tokenize
        if tokenize is not None:
            # Validate an explicit choice when the suite is loaded, not at the first case.
            choose_bleu_tokenizer("und", tokenize)
        self._scorers: dict[str, Any] = {}
        self._choices: dict[str, BleuTokenizerChoice] = {}

    def _scorer(self, language: str) -> tuple[Any, BleuTokenizerChoice]:
        choice = self._choices.get(language)
        if choice is None:
            choice = choose_bleu_tokenizer(language, self._override)
            self._choices[language] = choice
        scorer = self._scorers.get(choice.name)
        if scorer is None:
            scorer = self._bleu_class(effective_order=True, tokenize=choice.name)
            self._scorers[choice.name] = scorer
        return scorer, choice

    def compute(self, item: MetricInput) -> MetricValue:
        check_required(self.name, self.requires, item)
        scorer, choice = self._scorer(item.language)
        result = scorer.sentence_score(item.output, [item.reference or ""])
        detail: dict[str, Any] = {
            "tokenize": choice.name,
            "precisions": [float(p) for p in result.precisions],
            "brevity_penalty": float(result.bp),
        }
        if choice.fallback_reason is not None:
            detail["tokenize_fallback"] = choice.fallback_reason
        return MetricValue(float(result.score), detail)
