"""chrF and chrF++ against sacrebleu's own sentence scores."""

from __future__ import annotations

import pytest
from sacrebleu.metrics.chrf import CHRF

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import MetricInput, resolve_metric

PAIRS = [
    ("en", "The cat sat on the mat.", "The cat is sitting on the mat."),
    ("hi", "चेन्नई को भारत का डेट्रॉयट कहा जाता है।", "चेन्नई को 'भारत का डेट्रॉयट' कहा जाता है।"),
    ("ar", "قمة إيفرست هي الأعلى في العالم.", "أعلى قمة في العالم هي قمة إيفرست."),
    ("ja", "富士山の高さは3776メートルです。", "富士山の標高は3776メートルです。"),
    ("ru", "Город основан в 1703 году.", "Санкт-Петербург основан в 1703 году."),
]


@pytest.mark.parametrize(("name", "word_order"), [("chrf", 0), ("chrf++", 2)])
@pytest.mark.parametrize(("language", "output", "reference"), PAIRS)
def test_scores_equal_sacrebleu_sentence_score(
    name: str, word_order: int, language: str, output: str, reference: str
) -> None:
    expected = CHRF(char_order=6, word_order=word_order, beta=2).sentence_score(output, [reference]).score
    value = resolve_metric(name).compute(MetricInput(output, reference, language=language))
    assert value.value == pytest.approx(expected, abs=1e-9)
    assert value.detail == {"char_order": 6, "word_order": word_order, "beta": 2}


def test_hand_computed_chrf_of_a_one_character_difference() -> None:
    # "ab" vs "ac": unigrams P = R = 1/2, bigrams 0/1; orders 3..6 have no n-grams and
    # sacrebleu leaves them out of the average: chrF2 = avg F over orders 1..2 = (0.5 + 0)/2.
    assert resolve_metric("chrf").compute(MetricInput("ab", "ac")).value == pytest.approx(25.0)


@pytest.mark.parametrize("name", ["chrf", "chrf++"])
def test_degenerate_cases(name: str) -> None:
    metric = resolve_metric(name)
    assert metric.compute(MetricInput("", "नमस्ते दुनिया")).value == 0.0
    assert metric.compute(MetricInput("नमस्ते दुनिया", "नमस्ते दुनिया")).value == 100.0
    # Same meaning, different script: no shared character n-grams.
    assert metric.compute(MetricInput("Namaste duniya", "नमस्ते दुनिया")).value == 0.0
    with pytest.raises(MetricError, match="needs a reference"):
        metric.compute(MetricInput("x", ""))
    with pytest.raises(MetricError, match="needs a reference"):
        metric.compute(MetricInput("x", None))
