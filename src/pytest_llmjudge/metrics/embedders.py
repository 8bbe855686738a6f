"""Embedding backends for LRM2QAS: one protocol, a real backend and an offline fallback.

LRM2QAS (Kumar et al., sec. 2.2 and appendix C) needs two kinds of vectors: contextual
*token* vectors for EN-BERT (and, here, for the answer side of EN-KC) and *sentence*
vectors for clauses, the question and context sentences (EN-KC, EN-EF). The paper uses
RoBERTa-large token embeddings for the first and all-MiniLM-L6-v2 for the second.

* :class:`Embedder` is the seam: ``embed_tokens(text) -> (tokens, matrix)`` with one row
  per token, and ``embed_texts(texts) -> matrix`` with one row per text. Rows need not be
  normalised; the metric computes cosines.
* :class:`SentenceTransformerEmbedder` is the real backend (optional extra
  ``embeddings``). It uses one sentence-transformers model for both kinds of vector (its
  token embeddings before pooling, and its pooled sentence embeddings), which is a
  simplification of the paper's two encoders. It never downloads: it loads a local
  directory, or a model already in the Hugging Face cache (``local_files_only=True``, so
  ``HF_HUB_OFFLINE`` and ``HF_HOME`` behave as usual).
* :class:`HashingEmbedder` is the fallback that needs nothing: every token becomes the
  sum of hashed, signed one-hot vectors of its character n-grams (feature hashing,
  Weinberger et al. 2009), and a text the sum of its tokens' vectors. Cosines between
  such vectors measure *lexical* overlap of character n-grams, not meaning: a paraphrase
  with other words scores low, and two languages share nothing. Scores computed with it
  are not comparable with the paper's numbers; it exists so LRM2QAS runs offline and
  deterministically (CRC-32 hashing, no randomness, no model file).
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from pytest_llmjudge.errors import ConfigError, MissingDependencyError
from pytest_llmjudge.metrics.tokenization import UnicodeTokenizer

__all__ = [
    "Embedder",
    "FloatMatrix",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "embedder_name",
]

FloatMatrix = npt.NDArray[np.float64]


@runtime_checkable
class Embedder(Protocol):
    """Token-level and text-level vectors for one text or a batch."""

    def embed_tokens(self, text: str) -> tuple[list[str], FloatMatrix]: ...

    def embed_texts(self, texts: Sequence[str]) -> FloatMatrix: ...


def embedder_name(embedder: Embedder) -> str:
    """A short description of an embedder for score details."""
    name = getattr(embedder, "name", None)
    return name if isinstance(name, str) else type(embedder).__name__


class HashingEmbedder:
    """Deterministic character n-gram hashing vectors (lexical fallback, not semantic)."""

    def __init__(self, *, dim: int = 1024, ngram_range: tuple[int, int] = (2, 4)) -> None:
        low, high = ngram_range
        if dim < 2 or not 1 <= low <= high:
            raise ConfigError(f"HashingEmbedder needs dim >= 2 and 1 <= n_min <= n_max, got {dim}, {ngram_range}")
        self.dim = dim
        self.ngram_range = (low, high)
        self.name = f"hashing(dim={dim},ngrams={low}-{high})"
        self._tokenizer = UnicodeTokenizer("auto")
        self._token_vector = functools.lru_cache(maxsize=65536)(self._compute_token_vector)

    def _compute_token_vector(self, token: str) -> FloatMatrix:
        # Boundary marks make prefixes and suffixes distinct features; the whole marked token
        # is a feature too, so an exact word match outweighs partial n-gram overlap.
        marked = f"<{token}>"
        low, high = self.ngram_range
        features = {marked}
        for n in range(low, high + 1):
            features.update(marked[i : i + n] for i in range(len(marked) - n + 1))
        vector = np.zeros(self.dim)
        for feature in sorted(features):
            digest = zlib.crc32(feature.encode("utf-8"))
            # Low bits pick the slot, one high bit the sign: collisions cancel on average.
            vector[digest % self.dim] += 1.0 if digest & 0x80000000 else -1.0
        vector.flags.writeable = False
        return vector

    def embed_tokens(self, text: str) -> tuple[list[str], FloatMatrix]:
        tokens = self._tokenizer.tokenize(text)
        if not tokens:
            return [], np.zeros((0, self.dim))
        return tokens, np.stack([self._token_vector(token) for token in tokens])

    def embed_texts(self, texts: Sequence[str]) -> FloatMatrix:
        matrix = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            for token in self._tokenizer.tokenize(text):
                matrix[row] += self._token_vector(token)
        return matrix


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local path or the local HF cache only."""

    def __init__(self, model_name_or_path: str, *, device: str | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(
                "sentence-transformers",
                "embeddings",
                "LRM2QAS with a sentence-transformers embedder",
            ) from exc
        self.name = f"sentence-transformers({model_name_or_path})"
        local = Path(model_name_or_path).expanduser()
        try:
            if local.is_dir():
                model = SentenceTransformer(str(local), device=device)
            else:
                # Never download during a test run: only an already-cached model loads.
                model = SentenceTransformer(model_name_or_path, device=device, local_files_only=True)
        except TypeError as exc:  # sentence-transformers < 2.3 has no local_files_only
            raise ConfigError("LRM2QAS needs sentence-transformers >= 2.3 to load models offline") from exc
        except OSError as exc:
            raise ConfigError(
                f"embedding model {model_name_or_path!r} is neither a local directory nor in the "
                "Hugging Face cache; download it once while online (or save it to a directory "
                "and pass that path). The plugin never downloads models during a run."
            ) from exc
        self._model: Any = model
        # Structural tokens ([CLS], [SEP], padding, ...) are dropped from token vectors, but
        # [UNK] stands for a real word of the text (as in BERTScore) and is kept.
        unknown = model.tokenizer.unk_token_id
        self._special_ids = frozenset(int(i) for i in model.tokenizer.all_special_ids if i != unknown)

    def embed_tokens(self, text: str) -> tuple[list[str], FloatMatrix]:
        model = self._model
        ids = model.tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
        vectors = model.encode(text, output_value="token_embeddings", convert_to_numpy=True)
        matrix = np.asarray(_to_numpy(vectors), dtype=np.float64)
        keep = [i for i, token_id in enumerate(ids[: len(matrix)]) if int(token_id) not in self._special_ids]
        tokens = model.tokenizer.convert_ids_to_tokens([ids[i] for i in keep])
        return list(tokens), matrix[keep]

    def embed_texts(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, 0))
        vectors = self._model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float64)


def _to_numpy(value: Any) -> Any:
    # Token embeddings come back as a torch tensor in some sentence-transformers versions
    # even with convert_to_numpy=True.
    if hasattr(value, "detach"):
        return value.detach().cpu().float().numpy()
    return value
