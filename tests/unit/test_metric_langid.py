"""Language identification of outputs with py3langid."""

from __future__ import annotations

import pytest
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics import MetricInput, matches, resolve_metric
from pytest_llmjudge.metrics.language_codes import base_language

SENTENCES = {
    "hi": "भारत की राजधानी नई दिल्ली है और यह देश के सबसे बड़े शहरों में से एक है।",
    "ar": "القاهرة هي عاصمة مصر وأكبر مدنها، وتقع على ضفاف نهر النيل.",
    "ja": "富士山は日本で最も高い山で、その美しい姿は多くの芸術作品に描かれてきました。",
    "zh": "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
    "ru": "Санкт-Петербург был основан Петром Первым и долгое время был столицей России.",
    "fr": "La tour Eiffel a été construite pour l'Exposition universelle et domine tout Paris.",
    "bn": "বাংলাদেশের রাজধানী ঢাকা এবং এটি দেশের সবচেয়ে জনবহুল শহর।",
    "ta": "தமிழ்நாட்டின் தலைநகரம் சென்னை, இது இந்தியாவின் முக்கிய நகரங்களில் ஒன்றாகும்.",
    "de": "Berlin ist die Hauptstadt Deutschlands und hat etwa dreieinhalb Millionen Einwohner.",
}


@pytest.fixture(scope="module")
def identifier() -> LanguageIdentifier:
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_identifies_real_sentences(language: str, identifier: LanguageIdentifier) -> None:
    value = resolve_metric("language").compute(MetricInput(SENTENCES[language], language=language))
    assert value.value == language
    assert matches(language, value.value)
    # Pinned to py3langid's own normalised-probability answer.
    detected, confidence = identifier.classify(SENTENCES[language])
    assert value.detail["detected"] == detected
    assert value.detail["confidence"] == pytest.approx(confidence)
    assert value.detail["expected"] == language
    assert 0.5 < value.detail["expected_probability"] <= 1.0


def test_wrong_language_is_reported_not_matched() -> None:
    value = resolve_metric("language").compute(MetricInput(SENTENCES["fr"], language="hi"))
    assert value.value == "fr"
    assert not matches("hi", value.value)
    assert value.detail["expected_probability"] < 0.01


def test_native_digits_do_not_mislead_identification() -> None:
    # With its Devanagari digits this Hindi sentence is identified as Nepali by py3langid.
    text = "२०११ की जनगणना में भारत की जनसंख्या १,२१,०८,५४,९७७ दर्ज की गई थी।"
    assert resolve_metric("language").compute(MetricInput(text, language="hi")).value == "hi"


@pytest.mark.parametrize("output", ["", "   ", "12345", "3.14 + 2 = 5.14", "🙂🙂"])
def test_no_letters_is_undetermined_with_zero_confidence(output: str) -> None:
    value = resolve_metric("language").compute(MetricInput(output, language="en"))
    assert value.value == "und"
    assert value.detail["confidence"] == 0.0
    assert not matches("en", value.value)


@pytest.mark.parametrize(
    ("tag", "base"),
    [("pt-BR", "pt"), ("zh-Hans", "zh"), ("zh_TW", "zh"), ("sr-Latn-RS", "sr"), ("EN", "en"),
     ("iw", "he"), ("hin", "hi"), ("cmn", "zh"), ("", "und")],
)  # fmt: skip
def test_bcp47_tags_reduce_to_base_codes(tag: str, base: str) -> None:
    assert base_language(tag) == base


def test_matches_folds_tags_and_varieties() -> None:
    assert matches("pt-BR", "pt")
    assert matches("zh-Hant", "zh")
    assert matches("zh", "wuu")
    assert matches("ar", "arz")
    assert matches("nb", "no")
    assert not matches("hi", "ne")
    assert not matches("en", "und")
    assert not matches("en", 0.9)


def test_min_confidence_abstains_but_keeps_the_guess() -> None:
    metric = resolve_metric("language", {"min_confidence": 0.999})
    value = metric.compute(MetricInput("Привет, как дела?", language="ru"))
    assert value.value == "und"
    assert value.detail["detected"] == "ru"


def test_candidates_restrict_the_identifier() -> None:
    metric = resolve_metric("language", {"candidates": ["hi", "en"]})
    value = metric.compute(MetricInput("नेपाल एक सुन्दर देश हो।", language="hi"))
    assert value.value == "hi"
    assert set(value.detail) >= {"detected", "confidence", "expected_probability"}


def test_a_candidate_set_restricts_a_copy_of_the_model_not_the_model() -> None:
    restricted = resolve_metric("language", {"candidates": ["fr", "en"]})
    full = resolve_metric("language")
    assert restricted.compute(MetricInput(SENTENCES["de"], language="en")).detail["detected"] in ("fr", "en")
    assert full.compute(MetricInput(SENTENCES["de"], language="de")).value == "de"
    assert restricted.compute(MetricInput(SENTENCES["de"], language="en")).detail["detected"] in ("fr", "en")


def test_unidentifiable_expected_language_is_an_error() -> None:
    with pytest.raises(MetricError, match="cannot identify the case's language 'mai'"):
        resolve_metric("language").compute(MetricInput(SENTENCES["hi"], language="mai"))
    with pytest.raises(MetricError, match="cannot identify xx"):
        resolve_metric("language", {"candidates": ["xx"]})
    with pytest.raises(MetricError, match="min_confidence"):
        resolve_metric("language", {"min_confidence": 2})
