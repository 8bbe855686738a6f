"""Language identification of the output, to check that a model answered in the right language.

MIRAGE-BENCH (Thakur et al., sec. 4.1 and appendix A.1) runs langid.py (Lui and Baldwin
2012) on each answer and uses the probability of the target language as a feature. We use
py3langid, a maintained fork with the same naive-Bayes model over byte n-grams, built with
normalised probabilities (``LanguageIdentifier.from_model_file(MODEL_FILE,
norm_probs=True)``; py3langid scales the scores by ``1/sqrt(text bytes)`` before the softmax
so that confidence does not saturate on long texts).

Digits are removed before identification: numbers carry no evidence of a language, and
native digits mislead the model (a Hindi sentence with Devanagari digits ०-९ comes out
as Nepali).

The value is categorical: the detected language as an ISO 639 code, e.g. ``"hi"``, with
the regional varieties py3langid distinguishes folded into their macrolanguage: Egyptian
and Moroccan Arabic (``arz``, ``ary``) are reported as ``ar``, Wu and Cantonese
(``wuu``, ``yue``) as ``zh`` (short Mandarin sentences often come out as ``wuu``),
Bokmål/Nynorsk as ``no``; the price is that an assertion cannot tell Cantonese from
Mandarin. ``detail`` holds ``detected`` (py3langid's own label), ``confidence`` (its
probability), ``expected`` (the case's language reduced to its base code) and
``expected_probability`` (MIRAGE-BENCH's feature: the probability mass of the expected
language's family). An assertion passes when :func:`matches` says the detected and
expected codes name the same language; it reduces BCP-47 tags to base codes (``pt-BR``
-> ``pt``, ``zh-Hans`` -> ``zh``) and applies the same folding.

Parameters: ``min_confidence`` (value ``"und"`` when the top probability is lower;
``detected`` still names the best guess) and ``candidates`` (restrict the identifier to
these languages, which helps when close languages such as hi/mr/ne compete).

Degenerate cases, decided here:

* an empty or whitespace-only output, or one with no letters (digits, punctuation, emoji),
  gives ``"und"`` with confidence 0. It is no language, so a language assertion fails as a
  normal failure, not an error;
* short outputs give low confidence (a five-word Russian sentence may get 0.4): set
  ``min_confidence`` only where answers are long enough;
* an expected language py3langid cannot identify at all (e.g. Maithili, ``mai``) is a
  :class:`~pytest_llmjudge.errors.MetricError`: such an assertion could never pass.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Iterable
from typing import Any

from pytest_llmjudge.errors import MetricError, MissingDependencyError
from pytest_llmjudge.metrics.base import MetricInput, MetricValue
from pytest_llmjudge.metrics.language_codes import base_language, language_family

__all__ = ["LanguageId", "language_family", "matches"]

UNDETERMINED = "und"
_DIGITS = re.compile(r"\d+")


def matches(expected: str, value: str | float) -> bool:
    """Whether a detected language ``value`` satisfies the ``expected`` language tag."""
    if not isinstance(value, str) or base_language(value) == UNDETERMINED:
        return False
    return language_family(expected) == language_family(value)


_LOAD_LOCK = threading.Lock()
_IDENTIFIERS: dict[frozenset[str] | None, Any] = {}


def _identifier(candidates: frozenset[str] | None) -> Any:
    """A normalised-probability identifier per candidate set; the model is read once (an
    lzma-compressed file, slow to read), and each candidate set restricts a copy of it."""
    with _LOAD_LOCK:
        identifier = _IDENTIFIERS.get(candidates)
        if identifier is None:
            full = _IDENTIFIERS.get(None)
            if full is None:
                full = _IDENTIFIERS[None] = _load_identifier()
            identifier = full if candidates is None else _restricted(full, candidates)
            _IDENTIFIERS[candidates] = identifier
    return identifier


def _load_identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as exc:
        raise MissingDependencyError("py3langid", "metrics", "the language metric") from exc
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _restricted(full: Any, candidates: frozenset[str]) -> Any:
    unknown = sorted(candidates - set(full.labels))
    if unknown:
        raise MetricError(
            f"language: py3langid cannot identify {', '.join(unknown)}; it knows {', '.join(sorted(full.labels))}"
        )
    # set_languages rebinds the copy's class arrays (sliced from the shared full model, which it
    # only reads): the full identifier keeps every language.
    identifier = copy.copy(full)
    identifier.set_languages(sorted(candidates))
    return identifier


class LanguageId:
    """Detected language of the output (categorical value, e.g. ``"hi"``)."""

    name = "language"
    # The value is a code, not a score; the runner compares it with :func:`matches`.
    higher_is_better = True
    requires: frozenset[str] = frozenset()

    def __init__(
        self,
        *,
        min_confidence: float | None = None,
        candidates: Iterable[str] | None = None,
    ) -> None:
        if min_confidence is not None and not 0.0 <= min_confidence <= 1.0:
            raise MetricError(f"language: min_confidence must be in [0, 1], not {min_confidence}")
        self.min_confidence = min_confidence
        self.candidates = frozenset(base_language(code) for code in candidates) if candidates is not None else None
        self._identifier = _identifier(self.candidates)
        self._labels = frozenset(self._identifier.labels)
        self._family_labels: dict[str, tuple[str, ...]] = {}

    def _labels_of_family(self, family: str) -> tuple[str, ...]:
        labels = self._family_labels.get(family)
        if labels is None:
            labels = tuple(label for label in sorted(self._labels) if language_family(label) == family)
            self._family_labels[family] = labels
        return labels

    def compute(self, item: MetricInput) -> MetricValue:
        expected = base_language(item.language)
        family = language_family(expected)
        family_labels = self._labels_of_family(family)
        if not family_labels:
            raise MetricError(
                f"language: py3langid cannot identify the case's language {item.language!r}"
                + (" among the candidates" if self.candidates is not None else "")
                + ", so the assertion could never pass"
            )
        text = _DIGITS.sub("", item.output)
        if not any(ch.isalpha() for ch in text):
            return MetricValue(
                UNDETERMINED,
                {"confidence": 0.0, "expected": expected, "expected_probability": 0.0},
            )
        ranking: list[tuple[str, float]] = self._identifier.rank(text)
        best, confidence = ranking[0]
        probabilities = dict(ranking)
        detail: dict[str, Any] = {
            "detected": best,
            "confidence": float(confidence),
            "expected": expected,
            "expected_probability": float(sum(probabilities[label] for label in family_labels)),
        }
        if self.min_confidence is not None and confidence < self.min_confidence:
            return MetricValue(UNDETERMINED, detail)
        return MetricValue(language_family(best), detail)
