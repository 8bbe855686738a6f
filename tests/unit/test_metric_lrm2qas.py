"""LRM2QAS components and composite on small hand-computed vectors.

``WordTableEmbedder`` is a real :class:`Embedder`: every word has a fixed vector, a text is
the sum of its words' vectors, and its tokens are its words. That keeps every cosine in
these tests computable by hand.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats

from pytest_llmjudge.errors import MetricError, MissingDependencyError, StatisticsError
from pytest_llmjudge.metrics import MetricInput, resolve_metric
from pytest_llmjudge.metrics.embedders import Embedder, FloatMatrix, HashingEmbedder
from pytest_llmjudge.metrics.lrm2qas import (
    LAMBDA_PRESETS,
    LRM2QAS,
    combine,
    cosine_matrix,
    en_bert,
    en_ef,
    en_kc,
    fit_lambdas,
    resolve_lambdas,
    split_clauses,
    split_sentences,
)

VECTORS = {
    "paris": (1.0, 0.0, 0.0),
    "capital": (1.0, 0.0, 0.0),
    "museums": (0.0, 1.0, 0.0),
    "london": (0.0, 0.0, 1.0),
    "rome": (-1.0, 0.0, 0.0),
}


class WordTableEmbedder:
    name = "word-table"

    def _words(self, text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    def _vector(self, word: str) -> tuple[float, float, float]:
        return VECTORS.get(word, (0.0, 0.0, 0.0))  # other words carry no meaning here

    def embed_tokens(self, text: str) -> tuple[list[str], FloatMatrix]:
        words = self._words(text)
        return words, np.array([self._vector(w) for w in words]).reshape(len(words), 3)

    def embed_texts(self, texts: Sequence[str]) -> FloatMatrix:
        rows = [np.sum([self._vector(w) for w in self._words(t)] or [(0.0, 0.0, 0.0)], axis=0) for t in texts]
        return np.array(rows).reshape(len(texts), 3)


QUESTION = "Which is the capital?"  # vector (1, 0, 0)
REFERENCE = "Paris is the capital. It has many museums."  # clauses (2, 0, 0) and (0, 1, 0)
E2 = math.exp(2.0)


def metric(**params: object) -> LRM2QAS:
    return LRM2QAS(embedder=WordTableEmbedder(), **params)  # type: ignore[arg-type]


def test_fake_embedder_is_an_embedder() -> None:
    assert isinstance(WordTableEmbedder(), Embedder)


def test_combine_is_the_weighted_product() -> None:
    components = {"bert": 0.5, "kc": 0.25, "num": 1.0, "ef": 0.8}
    assert combine(components, {"bert": 1, "kc": 0.5, "num": 1, "ef": 1}) == pytest.approx(0.5 * 0.5 * 0.8)
    # A zero lambda removes a component, even a zero one (x ** 0 == 1).
    assert combine({**components, "num": 0.0}, {"bert": 1, "kc": 1, "num": 0, "ef": 1}) == pytest.approx(0.1)


def test_kc_softmax_attention_by_hand() -> None:
    clauses = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    question = np.array([1.0, 0.0, 0.0])
    answer = np.array([[1.0, 0.0, 1.0]])  # cos 1/sqrt(2) with clause 1, 0 with clause 2
    # cos(k, q) = (1, 0); eta = 0.5 gives logits (2, 0): weights e^2/(e^2+1), 1/(e^2+1).
    result = en_kc(clauses, question, answer, eta=0.5)
    assert result.attention == pytest.approx((E2 / (E2 + 1), 1 / (E2 + 1)))
    assert result.coverage == pytest.approx((1 / math.sqrt(2), 0.0))
    assert result.score == pytest.approx(E2 / (E2 + 1) / math.sqrt(2))
    # eta = 1: weights e/(e+1); a very large eta tends to uniform weights.
    assert en_kc(clauses, question, answer, eta=1.0).attention[0] == pytest.approx(math.e / (math.e + 1))
    assert en_kc(clauses, question, answer, eta=1e9).attention == pytest.approx((0.5, 0.5))
    with pytest.raises(MetricError, match="eta"):
        en_kc(clauses, question, answer, eta=0.0)


def test_bert_uses_absolute_cosines_and_ef_clamps_negative_ones() -> None:
    reference = np.array([[1.0, 0.0], [0.0, 1.0]])
    answer = np.array([[-1.0, 0.0]])  # opposite of the first reference token
    assert en_bert(reference, answer) == pytest.approx((1.0 + 0.0) / 2)
    assert en_ef(np.array([1.0, 0.0]), np.array([[-1.0, 0.0], [0.0, 1.0]])) == 0.0
    assert en_ef(np.array([1.0, 0.0]), np.array([[3.0, 4.0]])) == pytest.approx(0.6)
    assert cosine_matrix(np.zeros((1, 2)), np.ones((1, 2)))[0, 0] == 0.0


def test_components_and_composite_end_to_end() -> None:
    item = MetricInput("Paris is the capital.", REFERENCE, input=QUESTION)
    value = metric(eta=0.5).compute(item)
    components = value.detail["components"]
    # BERT: reference words paris, capital match exactly, the other 6 words are zero vectors.
    assert components["bert"] == pytest.approx(2 / 8)
    assert components["kc"] == pytest.approx(E2 / (E2 + 1))
    assert components["num"] == 1.0  # no numbers on either side
    assert components["ef"] == pytest.approx(1.0)  # no context: reference sentences
    assert value.detail["ef_context"] == "reference"
    lam = LAMBDA_PRESETS["indic_long"]
    assert value.value == pytest.approx((2 / 8) ** lam["bert"] * (E2 / (E2 + 1)) ** lam["kc"])
    assert value.detail["kc_clauses"] == ["Paris is the capital.", "It has many museums."]
    assert value.detail["embedder"] == "word-table"


def test_wrong_answer_loses_coverage() -> None:
    item = MetricInput("London is the capital.", REFERENCE, input=QUESTION)
    kc = metric(component="kc", eta=0.5).compute(item).value
    assert kc == pytest.approx(E2 / (E2 + 1) / math.sqrt(2))


def test_context_sentences_are_the_evidence_when_given() -> None:
    item = MetricInput("Paris is the capital.", REFERENCE, context=("Rome is old. London is big.",))
    value = metric(component="ef").compute(item)
    assert value.value == 0.0  # cos -1 with "Rome is old.", 0 with "London is big."
    assert value.detail["ef_context"] == "context"


def test_kc_can_match_clauses_against_answer_tokens() -> None:
    item = MetricInput("London is the capital.", REFERENCE, input=QUESTION)
    # Tokens: the answer token "capital" matches clause 1 exactly.
    kc = metric(component="kc", eta=0.5, kc_answer_units="tokens").compute(item).value
    assert kc == pytest.approx(E2 / (E2 + 1))


def test_degenerate_cases() -> None:
    empty = metric().compute(MetricInput("", REFERENCE, input=QUESTION))
    assert empty.value == 0.0
    assert empty.detail["components"] == {"bert": 0.0, "kc": 0.0, "num": 1.0, "ef": 0.0}
    with pytest.raises(MetricError, match="lrm2qas needs a reference"):
        metric().compute(MetricInput("Paris", "", input=QUESTION))
    with pytest.raises(MetricError, match="lrm2qas needs an input"):
        metric().compute(MetricInput("Paris", REFERENCE))
    with pytest.raises(MetricError, match="no tokens"):
        metric(component="bert").compute(MetricInput("Paris", "?!"))
    with pytest.raises(MetricError, match="needs context passages or a reference"):
        metric(component="ef").compute(MetricInput("Paris"))
    identical = metric(component="bert").compute(MetricInput("Paris capital", "Paris capital"))
    assert identical.value == pytest.approx(1.0)


def test_numeric_component_ignores_citations_and_reads_any_script() -> None:
    value = resolve_metric("lrm2qas_num").compute(MetricInput("१९५२ में [2]", "In 1952."))
    assert value.value == 1.0
    assert "embedder" not in value.detail


def test_lambdas_presets_and_overrides() -> None:
    assert resolve_lambdas("indic_long") == {"bert": 0.9, "kc": 0.8, "num": 1.0, "ef": 1.0}
    assert resolve_lambdas("factoid") == {"bert": 0.6, "kc": 0.9, "num": 1.0, "ef": 1.0}
    assert resolve_lambdas({"EN-BERT": 0.5, "lambda_ef": 0}) == {"bert": 0.5, "kc": 0.8, "num": 1.0, "ef": 0.0}
    for bad in ("long", {"bleu": 1}, {"kc": -1}, {"kc": "high"}):
        with pytest.raises(MetricError):
            resolve_lambdas(bad)
    with pytest.raises(MetricError, match="only apply to the lrm2qas composite"):
        LRM2QAS(component="kc", lambdas="factoid")


class RecordingTranslator:
    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def to_english(self, text: str, language: str) -> str:
        self.calls.append((text, language))
        return {"पेरिस राजधानी है।": "Paris is the capital."}.get(text, text)


def test_translator_pivot_prefers_gold_translations() -> None:
    translator = RecordingTranslator()
    item = MetricInput(
        "पेरिस राजधानी है।",
        "पेरिस फ्रांस की राजधानी है।",
        input="फ्रांस की राजधानी क्या है?",
        language="hi",
        metadata={"reference_en": REFERENCE, "input_en": QUESTION},
    )
    value = metric(translator=translator, eta=0.5).compute(item)
    assert translator.calls == [("पेरिस राजधानी है।", "hi")]  # only the answer is translated
    assert value.detail["components"]["kc"] == pytest.approx(E2 / (E2 + 1))
    assert value.detail["translator"] == "recording"
    english = RecordingTranslator()
    metric(translator=english).compute(MetricInput("Paris.", REFERENCE, input=QUESTION, language="en-GB"))
    assert english.calls == []


def test_segmentation() -> None:
    assert split_sentences("पहला वाक्य। दूसरा वाक्य॥ 第一句。第二句！ Pi is 3.14 here. Next") == [
        "पहला वाक्य।", "दूसरा वाक्य॥", "第一句。", "第二句！", "Pi is 3.14 here.", "Next",
    ]  # fmt: skip
    assert split_clauses("In 1952, the party chose a pair of oxen; however, the other one had 1,234 lamps.") == [
        "In 1952 the party chose a pair of oxen",
        "however the other one had 1,234 lamps.",
    ]
    assert split_clauses("...") == []


def test_hashing_embedder_is_deterministic_and_lexical() -> None:
    first, second = HashingEmbedder(), HashingEmbedder()
    texts = ["Paris is the capital", "पेरिस राजधानी है"]
    assert np.array_equal(first.embed_texts(texts), second.embed_texts(texts))
    same = cosine_matrix(first.embed_texts(["Paris is the capital"]), second.embed_texts(["the capital is Paris"]))
    assert same[0, 0] == pytest.approx(1.0)  # same words, any order
    across = cosine_matrix(*[first.embed_texts([t]) for t in texts])
    assert abs(across[0, 0]) < 0.2  # a translation shares no character n-grams
    tokens, matrix = first.embed_tokens("Paris, capital!")
    assert tokens == ["paris", "capital"] and matrix.shape == (2, first.dim)
    assert first.embed_tokens("")[1].shape == (0, first.dim)


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="sentence-transformers is installed; loading a model is not a unit test",
)
def test_sentence_transformers_backend_is_an_optional_extra() -> None:
    with pytest.raises(MissingDependencyError, match=r"pytest-llmjudge\[embeddings\]"):
        resolve_metric("lrm2qas", {"embedder": "all-MiniLM-L6-v2"})


def test_fit_lambdas_recovers_the_informative_component() -> None:
    rng = np.random.default_rng(7)
    rows = [dict(zip(("bert", "kc", "num", "ef"), rng.uniform(0.05, 1, 4), strict=True)) for _ in range(60)]
    human = [row["kc"] for row in rows]  # only coverage matters to these "humans"
    fit = fit_lambdas(rows, human)
    # Any kc > 0 with the others at 0 ranks perfectly; the tie goes to the preset's kc.
    assert fit.lambdas == {"bert": 0.0, "kc": 0.8, "num": 0.0, "ef": 0.0}
    assert fit.correlations.spearman == pytest.approx(1.0)
    assert fit.candidates == 11**4
    fitted = [combine(row, fit.lambdas) for row in rows]
    assert fit.correlations.pearson == pytest.approx(stats.pearsonr(fitted, human).statistic)
    assert fit.correlations.kendall == pytest.approx(stats.kendalltau(fitted, human).statistic)


def test_fit_lambdas_objectives_and_errors() -> None:
    rng = np.random.default_rng(3)
    rows = [dict(zip(("bert", "kc", "num", "ef"), rng.uniform(0, 1, 4), strict=True)) for _ in range(30)]
    human = [r["bert"] * r["kc"] ** 2 + 0.05 * rng.normal() for r in rows]
    grid = {"bert": [0.5, 1.0], "kc": [1.0, 2.0]}
    for objective in ("pearson", "kendall"):
        fit = fit_lambdas(rows, human, grid, objective=objective)
        assert fit.candidates == 4
        assert fit.lambdas["num"] == 1.0 and fit.lambdas["ef"] == 1.0  # not in the grid: prior
        assert fit.objective == objective
    with pytest.raises(StatisticsError):
        fit_lambdas(rows[:2], human[:2])
    with pytest.raises(StatisticsError, match="no lambda setting"):
        fit_lambdas(rows, [1.0] * len(rows))
    with pytest.raises(ValueError, match="unknown objective"):
        fit_lambdas(rows, human, objective="r2")  # type: ignore[arg-type]
