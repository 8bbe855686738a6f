"""A cheap surrogate judge: heuristic features of the outputs -> Bradley-Terry strengths.

What it is (MIRAGE-BENCH, Thakur et al., sec. 4.3, Algorithm 1, and sec. 6.2)
    Pairwise judging of every pair of systems costs ``k(k-1)/2`` judge calls per query.
    MIRAGE-BENCH trains a regression model ("learning to rank" surrogate) from cheap
    heuristic features of each system's answers to the Bradley-Terry strengths an LLM judge
    gave the systems, and reports how well the surrogate's ranking agrees with the judge's
    (Kendall tau, 0.909 on average over 18 languages). This module does the same per
    language, on held-out *cases* so the number says whether the surrogate could replace the
    judge on queries it has not seen:

    1. The language's cases are split (seeded) into training cases and ``holdout`` share of
       held-out cases.
    2. ``tournaments`` times (Algorithm 1's TOURNAMENT): resample the training cases with
       replacement, fit Bradley-Terry on their verdicts (target ``y``, one value per
       system) and average each system's features over the same cases (``X``); stack the
       rows of all tournaments. A resample whose comparison graph is disconnected is skipped
       and counted.
    3. Fit a ridge regression on the standardised features,
       ``beta = (Z'Z + lambda I)^-1 Z'(y - mean(y))`` (closed form, numpy; the paper's
       random forest needs scikit-learn, which is only a development dependency here, and its
       Table 3 shows tree ensembles over-fitting with few systems; a linear model with an L2
       penalty is the small, transparent choice). Standardised coefficients are reported as
       the features' weights (the counterpart of the paper's feature importance, fig. 5).
    4. On the held-out cases: predict each system's strength from its mean features there,
       fit Bradley-Terry on the held-out verdicts (the judge's ranking on those cases) and
       report Kendall's tau-b between the two over the systems present in both, plus R^2.

Features (per output; averaged per system over a set of cases), after MIRAGE-BENCH sec. 4.1
and appendix A, restricted to what needs no model download:

* ``length``: ``log(1 + characters)``;
* ``script_share``: share of the letters (and combining marks) written in the script of the case's language (a
  stand-in for the paper's language detection; e.g. Devanagari for ``hi``/``mr``);
* ``latin_share``: share of Latin letters (the paper's "English detection");
* ``input_overlap`` / ``reference_overlap``: F1 of character-trigram overlap with the
  case's input / reference (a cheap stand-in for the paper's answer-overlap features);
* ``recorded:<name>``: a number recorded with the output (``responses.features``), e.g. a
  pointwise judge score, like the paper's LLM-measured fluency and answer overlap;
* ``metric:<name>``: a registered reference metric's numeric value (given by the caller).

Degenerate cases (``SurrogateResult.error``): fewer than two training or one held-out case
with verdicts; no tournament with a connected comparison graph; fewer than three systems
with features and held-out strengths (a rank correlation of two points is meaningless);
constant predictions. A feature a system lacks in some case is averaged over the cases
where it exists; a feature with zero variance in training is dropped.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pytest_llmjudge.pairwise.ranking import Matchup, RankedCase, Ranking
    from pytest_llmjudge.pairwise.schema import SurrogateConfig

MetricFeature = Callable[[str, "RankedCase", str], float | None]

_SCRIPTS: dict[str, tuple[str, ...]] = {
    "hi": ("DEVANAGARI",),
    "mr": ("DEVANAGARI",),
    "ne": ("DEVANAGARI",),
    "sa": ("DEVANAGARI",),
    "bn": ("BENGALI",),
    "as": ("BENGALI",),
    "gu": ("GUJARATI",),
    "pa": ("GURMUKHI",),
    "or": ("ORIYA",),
    "ta": ("TAMIL",),
    "te": ("TELUGU",),
    "kn": ("KANNADA",),
    "ml": ("MALAYALAM",),
    "si": ("SINHALA",),
    "ar": ("ARABIC",),
    "fa": ("ARABIC",),
    "ur": ("ARABIC",),
    "he": ("HEBREW",),
    "ru": ("CYRILLIC",),
    "uk": ("CYRILLIC",),
    "bg": ("CYRILLIC",),
    "sr": ("CYRILLIC",),
    "el": ("GREEK",),
    "th": ("THAI",),
    "ko": ("HANGUL",),
    "ja": ("CJK", "HIRAGANA", "KATAKANA"),
    "zh": ("CJK",),
    "am": ("ETHIOPIC",),
}


def _script(char: str) -> str:
    try:
        return unicodedata.name(char).split(" ", 1)[0]
    except ValueError:
        return ""


def script_shares(text: str, language: str) -> tuple[float, float]:
    """(share of letters and marks in the language's script, share of Latin ones); 0, 0 without letters."""
    expected = _SCRIPTS.get(language.split("-")[0].lower(), ("LATIN",))
    # Letters and combining marks: Indic vowel signs and viramas are marks, not letters.
    letters = [c for c in text if unicodedata.category(c)[0] in "LM"]
    if not letters:
        return 0.0, 0.0
    scripts = Counter(_script(c) for c in letters)
    native = sum(count for name, count in scripts.items() if name in expected)
    return native / len(letters), scripts.get("LATIN", 0) / len(letters)


def trigram_f1(text: str, other: str | None) -> float | None:
    """F1 of the character-trigram multisets of two texts (whitespace collapsed); None without ``other``."""
    if not other:
        return None

    def grams(value: str) -> Counter[str]:
        flat = " ".join(value.split())
        return Counter(flat[i : i + 3] for i in range(max(len(flat) - 2, 0)))

    a, b = grams(text), grams(other)
    if not a or not b:
        return 0.0
    common = sum((a & b).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def features_of(
    case: RankedCase, system: str, names: Sequence[str], metric_feature: MetricFeature | None = None
) -> dict[str, float]:
    """The requested features of ``system``'s output on ``case`` (absent ones left out)."""
    output = case.outputs[system]
    values: dict[str, float] = {}
    native, latin = script_shares(output, case.language)
    for name in names:
        value: float | None
        if name == "length":
            value = math.log1p(len(output))
        elif name == "script_share":
            value = native
        elif name == "latin_share":
            value = latin
        elif name == "input_overlap":
            value = trigram_f1(output, case.input)
        elif name == "reference_overlap":
            value = trigram_f1(output, case.reference)
        elif name.startswith("recorded:"):
            value = case.features.get(system, {}).get(name.split(":", 1)[1])
        elif name.startswith("metric:") and metric_feature is not None:
            value = metric_feature(name.split(":", 1)[1], case, system)
        else:
            raise ValueError(f"unknown surrogate feature {name!r}")
        if value is not None and math.isfinite(value):
            values[name] = float(value)
    return values


@dataclass(frozen=True)
class SurrogateResult:
    language: str
    source: str
    features: tuple[str, ...]
    kendall_tau: float | None = None
    kendall_p: float | None = None
    r2: float | None = None
    n_systems: int = 0
    n_train_cases: int = 0
    n_holdout_cases: int = 0
    tournaments: int = 0
    skipped_tournaments: int = 0
    weights: Mapping[str, float] = field(default_factory=dict)
    predicted: Mapping[str, float] = field(default_factory=dict)
    judged: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "source": self.source,
            "features": list(self.features),
            "kendall_tau": self.kendall_tau,
            "kendall_p": self.kendall_p,
            "r2": self.r2,
            "n_systems": self.n_systems,
            "n_train_cases": self.n_train_cases,
            "n_holdout_cases": self.n_holdout_cases,
            "tournaments": self.tournaments,
            "skipped_tournaments": self.skipped_tournaments,
            "weights": dict(self.weights),
            "predicted": dict(self.predicted),
            "judged": dict(self.judged),
            "error": self.error,
        }


def _mean_features(
    rows: Mapping[tuple[str, str], Mapping[str, float]], cases: Sequence[str], names: Sequence[str]
) -> dict[str, np.ndarray[Any, np.dtype[np.float64]]]:
    """Per system, the mean of each feature over ``cases`` (NaN where it never occurs)."""
    sums: dict[str, np.ndarray[Any, np.dtype[np.float64]]] = {}
    counts: dict[str, np.ndarray[Any, np.dtype[np.float64]]] = {}
    by_case: dict[str, list[tuple[str, np.ndarray[Any, np.dtype[np.float64]]]]] = {}
    for (case_id, system), values in rows.items():
        by_case.setdefault(case_id, []).append((system, np.array([values.get(n, np.nan) for n in names])))
    for case in cases:
        for system, vector in by_case.get(case, []):
            present = ~np.isnan(vector)
            sums.setdefault(system, np.zeros(len(names)))[present] += vector[present]
            counts.setdefault(system, np.zeros(len(names)))[present] += 1
    return {
        system: np.where(counts[system] > 0, sums[system] / np.maximum(counts[system], 1), np.nan) for system in sums
    }


def _fit_strengths(matchups: Sequence[Matchup], prior: float) -> dict[str, float] | None:
    """Bradley-Terry strengths of the systems in ``matchups`` (Newton, ``pairwise.bootstrap``);
    None when fewer than two systems or the comparison graph is disconnected."""
    from pytest_llmjudge.pairwise.bootstrap import _disconnected, newton_refit
    from pytest_llmjudge.stats.bradley_terry import PairwiseOutcomes

    systems = sorted({s for m in matchups for s in m[:2]})
    if len(systems) < 2:
        return None
    index = {s: i for i, s in enumerate(systems)}
    points = PairwiseOutcomes.from_matchups([(index[a], index[b], o) for a, b, o in matchups]).score_matrix(
        len(systems)
    )
    games = points + points.T
    if _disconnected(games[None])[0]:
        return None
    played = games > 0
    points, games = points + 0.5 * prior * played, games + prior * played
    if prior == 0 and (points.sum(axis=1) == 0).any():
        return None
    theta, _ = newton_refit(points[None], games[None], np.zeros((1, len(systems))))
    return {s: float(theta[0, i]) for s, i in index.items()}


def run_surrogate(
    ranking: Ranking,
    language: str,
    by_case: Mapping[str, Sequence[Matchup]],
    config: SurrogateConfig,
    metric_feature: MetricFeature | None = None,
) -> SurrogateResult:
    """Train on bootstrap tournaments of the training cases, report tau on held-out cases."""
    names = tuple(config.features)
    source = config.source or ranking.primary
    result = SurrogateResult(language=language, source=source, features=names)
    cases = {case.id: case for case in ranking.cases if case.language == language}
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for case in cases.values():
        for system in case.outputs:
            if ranking.systems is None or system in ranking.systems:
                rows[(case.id, system)] = features_of(case, system, names, metric_feature)
    judged_cases = sorted(c for c, m in by_case.items() if m and c in cases)
    rng = np.random.default_rng(config.seed)
    shuffled = [judged_cases[i] for i in rng.permutation(len(judged_cases))]
    n_holdout = int(round(config.holdout * len(shuffled)))
    holdout, train = sorted(shuffled[:n_holdout]), sorted(shuffled[n_holdout:])
    fields: dict[str, Any] = {"n_train_cases": len(train), "n_holdout_cases": len(holdout)}
    if len(train) < 2 or not holdout:
        return _with(
            result, error="needs at least two training and one held-out case with verdicts and outputs", **fields
        )

    xs: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    ys: list[float] = []
    skipped = 0
    for _ in range(config.tournaments):
        drawn = [train[i] for i in rng.integers(0, len(train), size=len(train))]
        strengths = _fit_strengths([m for c in drawn for m in by_case[c]], ranking.prior)
        if strengths is None:
            skipped += 1
            continue
        means = _mean_features(rows, drawn, names)
        for system, value in strengths.items():
            if system in means:
                xs.append(means[system])
                ys.append(value)
    fields.update(tournaments=config.tournaments - skipped, skipped_tournaments=skipped)
    if not xs:
        return _with(result, error="no training tournament had a connected comparison graph and features", **fields)
    x = np.vstack(xs)
    y = np.array(ys)
    column_mean = np.nanmean(x, axis=0)
    x = np.where(np.isnan(x), column_mean, x)
    scale = x.std(axis=0)
    usable = np.isfinite(column_mean) & (scale > 1e-12)
    if not usable.any():
        return _with(result, error="every feature is constant (or missing) in training", **fields)
    z = (x[:, usable] - column_mean[usable]) / scale[usable]
    beta = np.linalg.solve(z.T @ z + config.ridge * np.eye(z.shape[1]), z.T @ (y - y.mean()))
    weights = {str(name): float(w) for name, w in zip(np.array(names)[usable], beta, strict=True)}

    judged = _fit_strengths([m for c in holdout for m in by_case[c]], ranking.prior) or {}
    held_means = _mean_features(rows, holdout, names)
    predicted: dict[str, float] = {}
    for system, vector in held_means.items():
        if system not in judged:
            continue
        filled = np.where(np.isnan(vector), column_mean, vector)
        predicted[system] = float(y.mean() + ((filled[usable] - column_mean[usable]) / scale[usable]) @ beta)
    common = sorted(predicted)
    fields.update(weights=weights, predicted=predicted, judged={s: judged[s] for s in common}, n_systems=len(common))
    if len(common) < 3:
        return _with(result, error=f"only {len(common)} systems have held-out features and verdicts (need 3)", **fields)
    from pytest_llmjudge.stats.correlation import correlations

    pred = np.array([predicted[s] for s in common])
    truth = np.array([judged[s] for s in common])
    corr = correlations(pred, truth)
    if not corr.defined:
        return _with(result, error=f"Kendall tau undefined: {corr.reason}", **fields)
    residual = float(np.sum((truth - pred) ** 2))
    total = float(np.sum((truth - truth.mean()) ** 2))
    return _with(
        result,
        kendall_tau=corr.kendall,
        kendall_p=corr.kendall_p,
        r2=1 - residual / total if total > 0 else None,
        **fields,
    )


def _with(result: SurrogateResult, **changes: Any) -> SurrogateResult:
    from dataclasses import replace

    return replace(result, **changes)
