"""ROUGE-L with a script-aware tokenizer, against hand-computed LCS, rouge-score's values and a plain LCS table."""

from __future__ import annotations

import random
import re

import pytest

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.rouge_l import lcs_length
from pytest_llmjudge.metrics.tokenization import UnicodeTokenizer


def test_python_word_class_splits_indic_words_so_marks_are_added() -> None:
    # Devanagari vowel signs (Mc) and virama (Mn) are not matched by \w.
    assert re.findall(r"\w+", "हिन्दी") == ["ह", "न", "द"]
    assert UnicodeTokenizer().tokenize("हिन्दी") == ["हिन्दी"]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("मैं कल बाज़ार जा रहा हूँ।", ["मैं", "कल", "बाज़ार", "जा", "रहा", "हूँ"]),
        ("ذهب الولد إلى المدرسة صباحًا.", ["ذهب", "الولد", "إلى", "المدرسة", "صباحًا"]),
        ("தமிழ் மொழி", ["தமிழ்", "மொழி"]),
        ("富士山は3776m、Pythonも", ["富", "士", "山", "は", "3776m", "python", "も"]),
        ("ภาษาไทย", ["ภ", "า", "ษ", "า", "ไ", "ท", "ย"]),
        ("Hello, World_wide 3.14!", ["hello", "world", "wide", "3", "14"]),
        ("", []),
        ("。！？…", []),
    ],
)
def test_tokenizer(text: str, tokens: list[str]) -> None:
    assert UnicodeTokenizer().tokenize(text) == tokens


def test_tokenizer_normalises_to_nfc() -> None:
    composed, decomposed = "\u095b", "\u091c\u093c"  # ज़ as one code point and as ज + nukta
    assert UnicodeTokenizer().tokenize(composed) == UnicodeTokenizer().tokenize(decomposed)


def test_char_mode_splits_every_script_into_characters_with_their_marks() -> None:
    assert UnicodeTokenizer("char").tokenize("हिन्दी ok") == ["हि", "न्", "दी", "o", "k"]


@pytest.mark.parametrize(
    ("reference", "output", "expected"),
    [
        # LCS मैं बाज़ार जा रहा = 4 of 6 and 6 tokens: P = R = 2/3.
        ("मैं कल बाज़ार जा रहा हूँ", "मैं बाज़ार नहीं जा रहा था", 2 / 3),
        # LCS ذهب إلى المدرسة = 3; P = 3/4, R = 3/5, F = 2PR/(P+R) = 2/3.
        ("ذهب الولد إلى المدرسة صباحًا", "الولد ذهب إلى المدرسة", 2 / 3),
        # Characters: the output (9) is a subsequence of the reference (12); P = 1, R = 3/4.
        ("富士山は日本一高い山です", "富士山は高い山です", 6 / 7),
    ],
)
def test_hand_computed_lcs(reference: str, output: str, expected: float) -> None:
    value = resolve_metric("rouge_l").compute(MetricInput(output, reference))
    assert value.value == pytest.approx(expected)


def _table_lcs(a: list[str], b: list[str]) -> int:
    """The textbook m x n dynamic programme (what rouge-score fills)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def test_bit_parallel_lcs_equals_the_table_on_random_token_lists() -> None:
    rng = random.Random(12)
    for _ in range(500):
        # A small alphabet makes long common subsequences; lengths cross the 64-bit word size.
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 90))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 90))]
        assert lcs_length(a, b) == _table_lcs(a, b), (a, b)


@pytest.mark.parametrize(
    ("output", "reference", "precision", "recall"),
    [
        # What rouge-score 0.1.2's RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer()) gave, as
        # fractions: LCS / output tokens, LCS / reference tokens.
        ("The cat sat on the mat.", "The cat is sitting on the mat.", 5 / 6, 5 / 7),
        ("चेन्नई को भारत का डेट्रॉयट कहा जाता है।", "चेन्नई को 'भारत का डेट्रॉयट' कहा जाता है।", 1.0, 1.0),
        ("长城总长约21196千米。", "历代长城总长度为21196.18千米。", 7 / 8, 7 / 12),
        ("Город основан в 1703 году.", "Санкт-Петербург основан в 1703 году.", 4 / 5, 2 / 3),
    ],
)
def test_equals_rouge_score_with_the_same_tokenizer(
    output: str, reference: str, precision: float, recall: float
) -> None:
    value = resolve_metric("rouge_l").compute(MetricInput(output, reference))
    assert value.value == pytest.approx(2 * precision * recall / (precision + recall))
    assert value.detail["precision"] == pytest.approx(precision)
    assert value.detail["recall"] == pytest.approx(recall)


def test_degenerate_cases() -> None:
    metric = resolve_metric("rouge_l")
    assert metric.compute(MetricInput("", "नमस्ते दुनिया")).value == 0.0
    assert metric.compute(MetricInput("!!!", "नमस्ते दुनिया")).value == 0.0
    assert metric.compute(MetricInput("नमस्ते दुनिया", "नमस्ते दुनिया")).value == 1.0
    assert metric.compute(MetricInput("Namaste duniya", "नमस्ते दुनिया")).value == 0.0
    with pytest.raises(MetricError, match="rouge_l needs a reference"):
        metric.compute(MetricInput("x", " "))
    with pytest.raises(MetricError, match="unknown tokenize"):
        resolve_metric("rouge_l", {"tokenize": "whitespace"})


def test_equals_the_reference_implementation_on_generated_multilingual_texts() -> None:
    """Against rouge-score itself (the dev extra installs it; only this test imports it): the same
    tokenizer, random sentences over Latin, Devanagari and Han words with long common runs."""
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())
    metric = resolve_metric("rouge_l")
    words = ["the", "cat", "mat", "भारत", "का", "डेट्रॉयट", "长城", "千米", "2119", "Город"]
    rng = random.Random(7)
    for _ in range(200):
        reference = " ".join(rng.choice(words) for _ in range(rng.randint(1, 80)))
        output = " ".join(rng.choice(words) for _ in range(rng.randint(1, 80)))
        expected = scorer.score(reference, output)["rougeL"]
        value = metric.compute(MetricInput(output, reference))
        assert value.value == pytest.approx(expected.fmeasure), (output, reference)
        assert value.detail["precision"] == pytest.approx(expected.precision)
        assert value.detail["recall"] == pytest.approx(expected.recall)
