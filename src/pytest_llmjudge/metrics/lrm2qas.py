"""LRM2QAS: a multiplicative composite of four QA answer checks (Kumar et al., LRM2QAS).

Source: "Revisiting Evaluation of Question Answering Systems in Low-Resource Indic
Languages", sec. 2.2 (eq. 1-5), appendix C (configuration) and appendix E (algorithm 1).
All components score an answer ``A`` against a reference ``R``, a question ``Q`` and
grounding context ``C``, after an English pivot (see below); cosines are between embedding
vectors from an :class:`~pytest_llmjudge.metrics.embedders.Embedder`.

* **EN-BERT** (eq. 2): for each reference token, the largest ``|cos|`` with any answer
  token; averaged over reference tokens. Token vectors come from ``embed_tokens``.
* **EN-KC**, question-aware nugget coverage (eq. 3, algorithm 1 step 3): the reference
  is split into clauses ``c_1..c_n`` (the "nuggets"). Each clause gets an attention weight
  ``a_i = softmax_i(cos(k_i, q) / eta)`` from its similarity to the question, and is
  covered to the degree of its best match among the answer's units,
  ``max_j |cos(k_i, a_j)|``. EN-KC is the attention-weighted mean of the coverages,
  ``sum_i a_i cov_i / sum_i a_i``. Algorithm 1 embeds the answer with the sentence
  encoder, so by default the answer's units are its clauses (one clause: the whole
  answer); ``kc_answer_units="tokens"`` matches clauses against answer tokens instead.
* **EN-NUM** (eq. 4): Jaccard overlap of the numeric values of reference and answer, with
  the degenerate cases of :mod:`pytest_llmjudge.metrics.numeric_fidelity` (no numbers on
  either side: 1; on one side only: 0).
* **EN-EF**, evidence faithfulness (eq. 5): the largest cosine between the answer's
  sentence vector and the vector of any context sentence. Following sec. 2.2, the context
  is the case's ``context`` passages split into sentences; without context (the paper's
  NQ/TQ setting) it is the reference split into sentences, and EN-EF then measures
  agreement with the reference rather than attribution to evidence (``detail`` says which
  one was used).

**Composite** (eq. 1, algorithm 1 step 6): ``LRM2QAS = BERT^l_bert * KC^l_kc * NUM^l_num *
EF^l_ef``, in [0, 1]. The product is deliberately non-compensatory: one failed check
pulls the whole score down. Lambda presets from sec. 2.2 and appendix C:

=============  =========  =======  ========  =======
preset         l_bert     l_kc     l_num     l_ef
=============  =========  =======  ========  =======
``indic_long`` 0.9        0.8      1.0       1.0      long descriptive answers (default)
``factoid``    0.6        0.9      1.0       1.0      short NQ/TriviaQA-style answers
=============  =========  =======  ========  =======

A mapping may set some lambdas explicitly; the others keep their ``indic_long`` value.
:func:`fit_lambdas` chooses lambdas by grid search against human scores, as the paper does.

**English pivot** (sec. 2.2 "Notation", algorithm 1 step 1): texts not in English go
through a :class:`~pytest_llmjudge.metrics.translation.Translator` (default: identity);
gold translations in case metadata (``input_en``, ``reference_en``, ``context_en``) are
used in preference. Citation markers (``[1]``) are removed from the answer first.

Choices the paper leaves open, decided here:

* ``eta`` is not given in the paper; the default is 0.1, which lets a clause whose cosine
  with the question is 0.2 higher weigh ``e^2`` ≈ 7.4 times more. Large ``eta`` tends to
  uniform weights.
* Clause segmentation is not specified beyond "clause-level": we split sentences at
  ``.!?`` followed by a space and at ``। ॥ 。 ！ ？ ؟ ۔``, then clauses at ``; :`` followed
  by a space, ``, `` (comma and space, so "1,234" stays whole) and ``، ؛ ， 、 ； ：``.
  Fragments of fewer than ``min_clause_tokens`` (3) tokens are merged into a neighbour,
  so "However," is not a nugget of its own.
* Negative cosines: EN-BERT and EN-KC take absolute values as eq. 2 and algorithm 1 do;
  EN-EF (eq. 5 has no absolute value) is clamped at 0, since a negative base has no real
  fractional power. Cosines with an all-zero vector count as 0.

Degenerate cases: an empty output scores 0 on BERT, KC and EF (so the composite is 0
unless those lambdas are 0); a lambda of 0 removes a component (``x^0 = 1``, also for
``x = 0``); a reference with no tokens, no question for KC, or neither context nor
reference for EF are :class:`~pytest_llmjudge.errors.MetricError`. With the default
:class:`~pytest_llmjudge.metrics.embedders.HashingEmbedder` every cosine is lexical, so
scores are not comparable with the paper's; pass ``embedder="<sentence-transformers model
or path>"`` for semantic vectors.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from pytest_llmjudge.errors import MetricError, StatisticsError
from pytest_llmjudge.metrics.base import (
    MetricInput,
    MetricValue,
    check_required,
    is_blank,
)
from pytest_llmjudge.metrics.citations import strip_citation_markers
from pytest_llmjudge.metrics.embedders import (
    Embedder,
    FloatMatrix,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    embedder_name,
)
from pytest_llmjudge.metrics.language_codes import base_language
from pytest_llmjudge.metrics.numeric_fidelity import numeric_overlap
from pytest_llmjudge.metrics.tokenization import UnicodeTokenizer
from pytest_llmjudge.metrics.translation import (
    IdentityTranslator,
    Translator,
    translator_name,
)
from pytest_llmjudge.stats.correlation import MIN_PAIRS, Correlations, correlations

__all__ = [
    "COMPONENTS",
    "DEFAULT_ETA",
    "LAMBDA_PRESETS",
    "LRM2QAS",
    "KCResult",
    "LambdaFit",
    "combine",
    "cosine_matrix",
    "en_bert",
    "en_ef",
    "en_kc",
    "fit_lambdas",
    "resolve_lambdas",
    "split_clauses",
    "split_sentences",
]

COMPONENTS: tuple[str, ...] = ("bert", "kc", "num", "ef")
LAMBDA_PRESETS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "indic_long": MappingProxyType({"bert": 0.9, "kc": 0.8, "num": 1.0, "ef": 1.0}),
        "factoid": MappingProxyType({"bert": 0.6, "kc": 0.9, "num": 1.0, "ef": 1.0}),
    }
)
DEFAULT_PRESET = "indic_long"
DEFAULT_ETA = 0.1
DEFAULT_MIN_CLAUSE_TOKENS = 3

_REQUIRES: Mapping[str | None, frozenset[str]] = MappingProxyType(
    {
        None: frozenset({"reference", "input"}),
        "bert": frozenset({"reference"}),
        "kc": frozenset({"reference", "input"}),
        "num": frozenset({"reference"}),
        "ef": frozenset(),
    }
)

# Sentence ends: Latin-style marks need a following space (keeps "3.14" and "e.g" whole);
# danda, CJK and Arabic marks end a sentence wherever they are. Line breaks always do.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[।॥。！？؟۔])\s*|\s*\n+\s*")
_CLAUSE_BREAK = re.compile(r"[;:,](?=\s)|[،؛，、；：]")
_TOKENIZER = UnicodeTokenizer("auto")


# --- lambdas ------------------------------------------------------------------------------


def _component_key(key: str) -> str:
    cleaned = key.strip().lower().replace("-", "_")
    for prefix in ("lambda_", "en_"):
        cleaned = cleaned.removeprefix(prefix)
    if cleaned not in COMPONENTS:
        raise MetricError(f"lrm2qas: unknown lambda {key!r}; use {', '.join(COMPONENTS)}")
    return cleaned


def resolve_lambdas(spec: str | Mapping[str, Any] | None = None) -> dict[str, float]:
    """Lambdas from a preset name or a (partial) mapping; unset ones come from ``indic_long``."""
    if spec is None:
        return dict(LAMBDA_PRESETS[DEFAULT_PRESET])
    if isinstance(spec, str):
        if spec not in LAMBDA_PRESETS:
            raise MetricError(
                f"lrm2qas: unknown lambda preset {spec!r}; use {', '.join(LAMBDA_PRESETS)} "
                "or a mapping of bert/kc/num/ef"
            )
        return dict(LAMBDA_PRESETS[spec])
    lambdas = dict(LAMBDA_PRESETS[DEFAULT_PRESET])
    for key, value in spec.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise MetricError(f"lrm2qas: lambda {key!r} must be a number, not {value!r}") from None
        if not math.isfinite(number) or number < 0:
            raise MetricError(f"lrm2qas: lambda {key!r} must be a finite number >= 0, not {value!r}")
        lambdas[_component_key(key)] = number
    return lambdas


def combine(components: Mapping[str, float], lambdas: Mapping[str, float]) -> float:
    """Eq. 1: the product of ``component ** lambda`` over the four components."""
    return float(math.prod(components[key] ** lambdas[key] for key in COMPONENTS))


# --- segmentation -------------------------------------------------------------------------


def _has_tokens(text: str) -> bool:
    return bool(_TOKENIZER.tokenize(text))


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (see the module docstring); fragments without words are dropped."""
    return [part.strip() for part in _SENTENCE_BREAK.split(text) if _has_tokens(part)]


def split_clauses(text: str, *, min_tokens: int = DEFAULT_MIN_CLAUSE_TOKENS) -> list[str]:
    """Clauses ("nuggets") of ``text``; fragments shorter than ``min_tokens`` join a neighbour."""
    clauses: list[str] = []
    for sentence in split_sentences(text):
        sentence_clauses: list[str] = []
        pending = ""
        for fragment in _CLAUSE_BREAK.split(sentence):
            pending = f"{pending} {fragment.strip()}".strip()
            if len(_TOKENIZER.tokenize(pending)) >= min_tokens:
                sentence_clauses.append(pending)
                pending = ""
        if pending and _has_tokens(pending):
            if sentence_clauses:
                sentence_clauses[-1] = f"{sentence_clauses[-1]} {pending}"
            else:
                sentence_clauses.append(pending)
        clauses.extend(sentence_clauses)
    return clauses


# --- components ---------------------------------------------------------------------------


def cosine_matrix(a: FloatMatrix, b: FloatMatrix) -> FloatMatrix:
    """Cosines between the rows of ``a`` and of ``b``; rows of zeros have cosine 0."""
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(b, dtype=np.float64))
    a_norm = np.linalg.norm(a, axis=1, keepdims=True)
    b_norm = np.linalg.norm(b, axis=1, keepdims=True)
    a_unit = np.divide(a, a_norm, out=np.zeros_like(a), where=a_norm > 0)
    b_unit = np.divide(b, b_norm, out=np.zeros_like(b), where=b_norm > 0)
    # Rounding can push a cosine a hair past +-1; the components assume [-1, 1].
    result: FloatMatrix = np.clip(a_unit @ b_unit.T, -1.0, 1.0)
    return result


def en_bert(reference_tokens: FloatMatrix, answer_tokens: FloatMatrix) -> float:
    """Eq. 2: mean over reference tokens of the best ``|cos|`` with an answer token."""
    if len(reference_tokens) == 0:
        raise MetricError("lrm2qas: the reference has no tokens, so EN-BERT is undefined")
    if len(answer_tokens) == 0:
        return 0.0
    return float(np.abs(cosine_matrix(reference_tokens, answer_tokens)).max(axis=1).mean())


@dataclass(frozen=True)
class KCResult:
    """EN-KC with its parts: attention weight and coverage of each clause."""

    score: float
    attention: tuple[float, ...]
    coverage: tuple[float, ...]


def en_kc(
    clauses: FloatMatrix,
    question: FloatMatrix,
    answer_units: FloatMatrix,
    *,
    eta: float = DEFAULT_ETA,
) -> KCResult:
    """Eq. 3 and algorithm 1 step 3: question-attention-weighted clause coverage."""
    if len(clauses) == 0:
        raise MetricError("lrm2qas: the reference has no clauses, so EN-KC is undefined")
    if eta <= 0:
        raise MetricError(f"lrm2qas: eta must be > 0, not {eta}")
    logits = cosine_matrix(clauses, np.atleast_2d(question))[:, 0] / eta
    weights = np.exp(logits - logits.max())  # shifted for stability; softmax is unchanged
    weights /= weights.sum()
    if len(answer_units) == 0:
        coverage = np.zeros(len(clauses))
    else:
        coverage = np.abs(cosine_matrix(clauses, answer_units)).max(axis=1)
    score = float((weights * coverage).sum() / weights.sum())
    return KCResult(score, tuple(weights.tolist()), tuple(coverage.tolist()))


def en_ef(answer: FloatMatrix, context_sentences: FloatMatrix) -> float:
    """Eq. 5: best cosine of the answer with a context sentence, clamped at 0."""
    if len(context_sentences) == 0:
        raise MetricError("lrm2qas: no context sentences, so EN-EF is undefined")
    return max(0.0, float(cosine_matrix(np.atleast_2d(answer), context_sentences).max()))


# --- the metric ---------------------------------------------------------------------------


class _Pivot:
    """The case's texts in English, translated on first use only (translation can be slow)."""

    def __init__(self, item: MetricInput, translator: Translator) -> None:
        self._item = item
        self._translator = translator
        self._english = base_language(item.language) == "en"

    def _translate(self, text: str) -> str:
        if self._english or not text.strip():
            return text
        return self._translator.to_english(text, self._item.language)

    def _gold(self, key: str) -> str | None:
        value = self._item.metadata.get(key)
        return value if isinstance(value, str) and value.strip() else None

    @functools.cached_property
    def question(self) -> str:
        return self._gold("input_en") or self._translate(self._item.input or "")

    @functools.cached_property
    def reference(self) -> str:
        return self._gold("reference_en") or self._translate(self._item.reference or "")

    @functools.cached_property
    def output(self) -> str:
        # Citation markers ("[2]") are passage ids, not content: MIRAGE-BENCH also drops
        # them before comparing answers.
        return self._translate(strip_citation_markers(self._item.output))

    @functools.cached_property
    def context(self) -> tuple[str, ...]:
        gold = self._item.metadata.get("context_en")
        if isinstance(gold, Sequence) and not isinstance(gold, str) and gold:
            return tuple(str(passage) for passage in gold)
        return tuple(self._translate(passage) for passage in self._item.context)


def _make_embedder(spec: str | Embedder) -> Embedder:
    if not isinstance(spec, str):
        return spec
    if spec == "hashing":
        return HashingEmbedder()
    return SentenceTransformerEmbedder(spec)


class LRM2QAS:
    """The LRM2QAS composite (``component=None``) or one of its components, all in [0, 1]."""

    higher_is_better = True

    def __init__(
        self,
        *,
        component: Literal["bert", "kc", "num", "ef"] | None = None,
        lambdas: str | Mapping[str, Any] | None = None,
        eta: float = DEFAULT_ETA,
        embedder: str | Embedder = "hashing",
        translator: Translator | None = None,
        kc_answer_units: Literal["clauses", "tokens"] = "clauses",
        min_clause_tokens: int = DEFAULT_MIN_CLAUSE_TOKENS,
        decimal_comma: bool = False,
    ) -> None:
        if component is not None and component not in COMPONENTS:
            raise MetricError(f"lrm2qas: unknown component {component!r}; use {', '.join(COMPONENTS)}")
        if component is not None and lambdas is not None:
            raise MetricError(f"lrm2qas_{component}: lambdas only apply to the lrm2qas composite")
        if not (isinstance(eta, (int, float)) and eta > 0):
            raise MetricError(f"lrm2qas: eta must be a number > 0, not {eta!r}")
        if kc_answer_units not in ("clauses", "tokens"):
            raise MetricError(f"lrm2qas: kc_answer_units must be 'clauses' or 'tokens', not {kc_answer_units!r}")
        self.component = component
        self.name = "lrm2qas" if component is None else f"lrm2qas_{component}"
        self.requires = _REQUIRES[component]
        self.lambdas = resolve_lambdas(lambdas)
        self.eta = float(eta)
        self.kc_answer_units = kc_answer_units
        self.min_clause_tokens = min_clause_tokens
        self.decimal_comma = decimal_comma
        self.translator: Translator = translator if translator is not None else IdentityTranslator()
        # Built now, so that a missing package or model fails when the suite is loaded
        # rather than at every case; NUM alone never needs one.
        self._embedder: Embedder | None = None if component == "num" else _make_embedder(embedder)

    @property
    def embedder(self) -> Embedder:
        """The embedder of the embedding-based components."""
        if self._embedder is None:
            raise MetricError(f"{self.name} uses no embedder")
        return self._embedder

    def _bert(self, pivot: _Pivot) -> float:
        _, reference = self.embedder.embed_tokens(pivot.reference)
        # An empty answer has no tokens: en_bert scores it 0 (after checking the reference).
        answer = np.zeros((0, 1)) if is_blank(pivot.output) else self.embedder.embed_tokens(pivot.output)[1]
        return en_bert(reference, answer)

    def _kc(self, pivot: _Pivot, detail: dict[str, Any]) -> float:
        clauses = split_clauses(pivot.reference, min_tokens=self.min_clause_tokens)
        if not clauses:
            raise MetricError(f"{self.name}: the reference has no clauses, so EN-KC is undefined")
        if is_blank(pivot.question):
            raise MetricError(f"{self.name} needs an input (the question), but the case has none")
        embedder = self.embedder
        vectors = embedder.embed_texts([*clauses, pivot.question])
        if is_blank(pivot.output):
            units: FloatMatrix = np.zeros((0, vectors.shape[1]))
        elif self.kc_answer_units == "tokens":
            _, units = embedder.embed_tokens(pivot.output)
        else:
            answer_clauses = split_clauses(pivot.output, min_tokens=self.min_clause_tokens)
            units = embedder.embed_texts(answer_clauses or [pivot.output])
        result = en_kc(vectors[:-1], vectors[-1], units, eta=self.eta)
        detail["kc_clauses"] = clauses
        detail["kc_attention"] = [round(w, 6) for w in result.attention]
        detail["kc_coverage"] = [round(c, 6) for c in result.coverage]
        return result.score

    def _num(self, pivot: _Pivot, detail: dict[str, Any]) -> float:
        overlap = numeric_overlap(pivot.reference, pivot.output, decimal_comma=self.decimal_comma)
        detail["reference_numbers"] = sorted(overlap.reference_numbers)
        detail["output_numbers"] = sorted(overlap.output_numbers)
        return overlap.score

    def _ef(self, pivot: _Pivot, detail: dict[str, Any]) -> float:
        sentences = [s for passage in pivot.context for s in split_sentences(passage)]
        source = "context"
        if not sentences:
            sentences = split_sentences(pivot.reference)
            source = "reference"
        if not sentences:
            raise MetricError(f"{self.name} needs context passages or a reference, but the case has neither")
        detail["ef_context"] = source
        if is_blank(pivot.output):
            return 0.0
        vectors = self.embedder.embed_texts([pivot.output, *sentences])
        return en_ef(vectors[0], vectors[1:])

    def compute(self, item: MetricInput) -> MetricValue:
        check_required(self.name, self.requires, item)
        pivot = _Pivot(item, self.translator)
        detail: dict[str, Any] = {"translator": translator_name(self.translator)}
        wanted = COMPONENTS if self.component is None else (self.component,)
        components: dict[str, float] = {}
        for key in wanted:
            if key == "bert":
                components[key] = self._bert(pivot)
            elif key == "kc":
                components[key] = self._kc(pivot, detail)
            elif key == "num":
                components[key] = self._num(pivot, detail)
            else:
                components[key] = self._ef(pivot, detail)
        if wanted != ("num",):
            detail["embedder"] = embedder_name(self.embedder)
        if "kc" in wanted:
            detail["eta"] = self.eta
        if self.component is not None:
            return MetricValue(components[self.component], detail)
        detail["components"] = components
        detail["lambdas"] = dict(self.lambdas)
        return MetricValue(combine(components, self.lambdas), detail)


# --- fitting lambdas to human scores ------------------------------------------------------


@dataclass(frozen=True)
class LambdaFit:
    """The lambdas that best align LRM2QAS with human scores, and how well they do."""

    lambdas: Mapping[str, float]
    objective: str
    correlations: Correlations
    candidates: int
    tied: int


DEFAULT_GRID: Mapping[str, tuple[float, ...]] = MappingProxyType(
    {key: tuple(round(0.1 * step, 1) for step in range(11)) for key in COMPONENTS}
)
# Rows of the (grid x items) score matrix evaluated at once; bounds memory for big grids.
_CHUNK_CELLS = 2_000_000


def _row_pearson(scores: FloatMatrix, target: FloatMatrix) -> FloatMatrix:
    centred = scores - scores.mean(axis=1, keepdims=True)
    t = target - target.mean()
    norms = np.linalg.norm(centred, axis=1) * np.linalg.norm(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: FloatMatrix = np.where(norms > 0, centred @ t / norms, np.nan)
    return result


def fit_lambdas(
    components: Sequence[Mapping[str, float]],
    human_scores: Sequence[float],
    grid: Mapping[str, Sequence[float]] | None = None,
    *,
    objective: Literal["spearman", "pearson", "kendall"] = "spearman",
    prior: str | Mapping[str, Any] = DEFAULT_PRESET,
) -> LambdaFit:
    """Grid-search the lambdas that maximise the correlation of LRM2QAS with human scores.

    ``components`` holds one mapping of ``bert``/``kc``/``num``/``ef`` values per item (e.g.
    ``MetricValue.detail["components"]``). ``grid`` gives candidate values per component;
    components it leaves out stay at their ``prior`` value, and without a grid every
    lambda ranges over 0.0, 0.1, ..., 1.0. The objective is Spearman's rho by default
    (ranking systems is what a metric is used for); ``pearson`` and ``kendall`` can be
    chosen. Many settings reach the same rank correlation, so among ties the one closest
    (L1) to the ``prior`` preset wins, then the first in grid order. The returned
    :class:`~pytest_llmjudge.stats.correlation.Correlations` are those of the fitted score.
    """
    if len(components) != len(human_scores):
        raise ValueError(f"got {len(components)} component rows but {len(human_scores)} human scores")
    if len(components) < MIN_PAIRS:
        raise StatisticsError(f"fitting lambdas needs at least {MIN_PAIRS} items, got {len(components)}")
    try:
        values = np.array([[float(row[key]) for key in COMPONENTS] for row in components])
    except KeyError as exc:
        raise ValueError(f"every component row needs the keys {', '.join(COMPONENTS)}") from exc
    if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
        raise ValueError("component values must be finite and in [0, 1]")
    target = np.asarray(human_scores, dtype=np.float64)
    if not np.all(np.isfinite(target)):
        raise ValueError("human scores must be finite")

    if objective not in ("spearman", "pearson", "kendall"):
        raise ValueError(f"unknown objective {objective!r}; use spearman, pearson or kendall")
    prior_lambdas = resolve_lambdas(prior)
    if grid is not None and not set(grid) <= set(COMPONENTS):
        raise ValueError(f"unknown grid keys {sorted(set(grid) - set(COMPONENTS))}; use {', '.join(COMPONENTS)}")

    def axis(key: str) -> tuple[float, ...]:
        if grid is None:
            return DEFAULT_GRID[key]
        if key in grid:
            return tuple(float(v) for v in grid[key])
        return (prior_lambdas[key],)

    axes = [axis(key) for key in COMPONENTS]
    if any(len(values_) == 0 or min(values_) < 0 for values_ in axes):
        raise ValueError("every grid axis needs at least one value, all >= 0")
    candidates = np.array(list(itertools.product(*axes)), dtype=np.float64)

    with np.errstate(divide="ignore"):
        logs = np.log(values)  # log 0 = -inf: a zero component zeroes the product
    objectives = np.empty(len(candidates))
    chunk = max(1, _CHUNK_CELLS // max(1, values.size))
    if objective == "spearman":
        from scipy.stats import rankdata

        ranked_target = rankdata(target)
    for start in range(0, len(candidates), chunk):
        lam = candidates[start : start + chunk]
        with np.errstate(invalid="ignore"):
            terms = lam[:, None, :] * logs[None, :, :]
        terms[np.isnan(terms)] = 0.0  # 0 * -inf: a lambda of 0 ignores the component
        scores = np.exp(terms.sum(axis=2))
        if objective == "pearson":
            objectives[start : start + len(lam)] = _row_pearson(scores, target)
        elif objective == "spearman":
            objectives[start : start + len(lam)] = _row_pearson(rankdata(scores, axis=1), ranked_target)
        else:
            objectives[start : start + len(lam)] = [correlations(row, target).kendall for row in scores]
    if np.all(np.isnan(objectives)):
        raise StatisticsError("no lambda setting gives a defined correlation (constant scores?)")
    best = np.nanmax(objectives)
    tied = np.flatnonzero(objectives >= best - 1e-12)
    prior_vector = np.array([prior_lambdas[key] for key in COMPONENTS])
    distances = np.abs(candidates[tied] - prior_vector).sum(axis=1)
    chosen = candidates[tied[int(np.argmin(distances))]]
    lambdas = {key: float(value) for key, value in zip(COMPONENTS, chosen, strict=True)}
    fitted = [combine(dict(zip(COMPONENTS, row, strict=True)), lambdas) for row in values]
    return LambdaFit(
        lambdas=lambdas,
        objective=objective,
        correlations=correlations(fitted, target.tolist()),
        candidates=len(candidates),
        tied=len(tied),
    )
