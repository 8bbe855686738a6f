"""A cheap surrogate judge: heuristic features of the outputs -> Bradley-Terry strengths.

What it is (MIRAGE-BENCH, Thakur et al., sec. 4.3, Algorithm 1, sec. 6.2 and 6.3)
    Pairwise judging of every pair of systems costs ``k(k-1)/2`` judge calls per query.
    MIRAGE-BENCH trains a regression model (a random forest, "learning to rank") from cheap
    heuristic features of each system's answers to the Bradley-Terry strengths an LLM judge
    gave the systems, so that a *new* system can be ranked from its features alone, without
    judge calls. It reports the Kendall tau between the surrogate's ranking and the judge's
    (0.909 on average over 18 languages, training on 17 models and holding 2 out; Table 3
    compares regressors on held-out models, where the random forest does best and linear
    regression over-fits). This module does the same per language, under one of two
    protocols (``hold_out``):

    ``systems`` (MIRAGE-BENCH's protocol)
        Leave each system ``s`` out in turn. ``tournaments`` times (Algorithm 1's
        TOURNAMENT): resample the cases with replacement, fit Bradley-Terry on the verdicts
        of those cases *between the other systems only* (no verdict involving ``s`` is used),
        centre the strengths on their mean (strengths are defined up to a shift), and pair
        each system's strength with its mean features over the same cases; stack the rows of
        all tournaments and fit the model. Predict ``s``'s strength from its mean features
        over all its cases. After every system had its turn, compare the held-out
        predictions with the judge's Bradley-Terry fit on all verdicts: Kendall's tau-b over
        all systems, and R^2 against the centred judge strengths.
    ``cases`` (this project's earlier protocol: can the surrogate rank on prompts it has not seen?)
        Split the cases (seeded) into training cases and a ``holdout`` share of held-out
        cases. Train as above on tournaments of the training cases with every system;
        predict each system's strength from its mean features on the held-out cases, and
        compare with the judge's Bradley-Terry fit on the held-out verdicts.

    Two models (``model``):

    * ``ridge`` (default, numpy only): ``beta = (Z'Z + lambda I)^-1 Z'(y - mean(y))`` on the
      standardised features; the standardised coefficients are the reported weights.
    * ``random_forest`` (the paper's model): scikit-learn's ``RandomForestRegressor`` with
      ``trees`` trees and ``seed``; the impurity importances are the reported weights (the
      paper's fig. 5). Needs the ``surrogate`` extra; without scikit-learn the result is an
      error naming it.

    With ``hold_out: systems`` the weights are averaged over the folds.

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
constant predictions; scikit-learn missing for ``random_forest``. A feature a system lacks
in some case is averaged over the cases where it exists (missing values in training are
filled with the column mean); a feature with zero variance in training is dropped.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pytest_llmjudge.pairwise.cases import Matchup, RankedCase
from pytest_llmjudge.pairwise.schema import SurrogateConfig

MetricFeature = Callable[[str, RankedCase, str], float | None]
Vector = np.ndarray[Any, np.dtype[np.float64]]

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
    # Letters and combining marks: Indic vowel signs and viramas are marks, not letters. Each
    # distinct character is classified once (a text repeats a few dozen characters).
    letters = 0
    scripts: Counter[str] = Counter()
    for char, count in Counter(text).items():
        if unicodedata.category(char)[0] in "LM":
            letters += count
            scripts[_script(char)] += count
    if not letters:
        return 0.0, 0.0
    native = sum(count for name, count in scripts.items() if name in expected)
    return native / letters, scripts["LATIN"] / letters


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
    hold_out: str = "cases"
    model: str = "ridge"
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
            "hold_out": self.hold_out,
            "model": self.model,
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
) -> dict[str, Vector]:
    """Per system, the mean of each feature over ``cases`` (NaN where it never occurs)."""
    sums: dict[str, Vector] = {}
    counts: dict[str, Vector] = {}
    by_case: dict[str, list[tuple[str, Vector]]] = {}
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
    from pytest_llmjudge.stats.bradley_terry import PairwiseOutcomes

    systems = tuple(sorted({s for m in matchups for s in m[:2]}))
    if len(systems) < 2:
        return None
    index = {s: i for i, s in enumerate(systems)}
    points = PairwiseOutcomes.from_matchups([(index[a], index[b], o) for a, b, o in matchups]).score_matrix(
        len(systems)
    )
    return _fit_points(points[None], systems, prior)[0]


def _fit_points(points: Vector, systems: Sequence[str], prior: float) -> list[dict[str, float] | None]:
    """Strengths from a batch of ``(k, k)`` points matrices over ``systems``: per matrix, of the
    systems that played, or None (fewer than two, or a disconnected graph)."""
    theta, fitted, present = _fit_batch(points, prior)
    return [
        {name: float(value) for name, value, keep in zip(systems, row, mask, strict=True) if keep} if ok else None
        for row, ok, mask in zip(theta, fitted, present, strict=True)
    ]


def _fit_batch(points: Vector, prior: float) -> tuple[Vector, np.ndarray[Any, np.dtype[np.bool_]], Any]:
    """Centred strengths ``(batch, k)`` of every points matrix of a batch in one Newton call,
    whether each was fitted (at least two systems played, connected graph) and which systems
    played (``(batch, k)``; the others' strengths are 0)."""
    from pytest_llmjudge.pairwise.bootstrap import _disconnected, newton_refit

    games = points + np.swapaxes(points, 1, 2)
    present = games.sum(axis=2) > 0
    played = games > 0
    points, games = points + 0.5 * prior * played, games + prior * played
    fitted = present.sum(axis=1) >= 2
    fitted[fitted] &= ~_disconnected(games[fitted], present[fitted])
    if prior == 0:
        fitted &= ~((points.sum(axis=2) == 0) & present).any(axis=1)
    theta = np.zeros(points.shape[:2])
    if fitted.any():
        theta[fitted], _ = newton_refit(
            points[fitted], games[fitted], np.zeros((int(fitted.sum()), points.shape[1])), present=present[fitted]
        )
    return theta, fitted, present


@dataclass(frozen=True)
class _Arena:
    """One language's verdicts and features as arrays over fixed case and system indices, so
    that a tournament is a weighted sum over cases (built once per run)."""

    cases: tuple[str, ...]
    systems: tuple[str, ...]
    points: Vector
    """``(cases, k, k)``: points system ``i`` earned against ``j`` on each case."""
    features: Vector
    """``(cases, k, features)``, NaN where a system has no output (or no value) on a case."""

    @classmethod
    def build(
        cls,
        by_case: Mapping[str, Sequence[Matchup]],
        cases: Sequence[str],
        rows: Mapping[tuple[str, str], Mapping[str, float]],
        names: Sequence[str],
    ) -> _Arena:
        from pytest_llmjudge.stats.bradley_terry import PairwiseOutcomes

        systems = tuple(sorted({s for c in cases for m in by_case[c] for s in m[:2]}))
        index = {s: i for i, s in enumerate(systems)}
        points = np.zeros((len(cases), len(systems), len(systems)))
        features = np.full((len(cases), len(systems), len(names)), np.nan)
        for row, case in enumerate(cases):
            games = [(index[a], index[b], o) for a, b, o in by_case[case]]
            points[row] = PairwiseOutcomes.from_matchups(games).score_matrix(len(systems))
            for system, column in index.items():
                values = rows.get((case, system))
                if values is not None:
                    features[row, column] = [values.get(name, np.nan) for name in names]
        return cls(tuple(cases), systems, points, features)

    def mean_features(self, weights: Vector) -> Vector:
        """``(tournaments, k, features)``: each system's mean over the cases weighted by each row
        of ``weights`` (``(tournaments, cases)``), NaN where it never occurs."""
        present = ~np.isnan(self.features)
        sums = np.einsum("tc,csf->tsf", weights, np.where(present, self.features, 0.0))
        counts = np.einsum("tc,csf->tsf", weights, present.astype(float))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1e-300), np.nan)


def _centred(strengths: Mapping[str, float]) -> dict[str, float]:
    """Strengths minus their mean: Bradley-Terry strengths are defined up to a shift."""
    mean = sum(strengths.values()) / len(strengths)
    return {system: value - mean for system, value in strengths.items()}


@dataclass(frozen=True)
class _Model:
    """A fitted regressor on standardised features, and what it reports as feature weights."""

    column_mean: Vector
    scale: Vector
    usable: Vector
    predict_z: Callable[[Vector], Vector]
    weights: dict[str, float]

    def predict(self, vector: Vector) -> float:
        filled = np.where(np.isnan(vector), self.column_mean, vector)
        z = (filled[self.usable] - self.column_mean[self.usable]) / self.scale[self.usable]
        return float(self.predict_z(z[None, :])[0])


def _fit_model(x: Vector, y: Vector, names: Sequence[str], config: SurrogateConfig) -> _Model | str:
    """Fit ``config.model`` on rows ``x`` (NaN = missing) and targets ``y``; a string is the reason it can't."""
    column_mean = np.nanmean(x, axis=0)
    x = np.where(np.isnan(x), column_mean, x)
    scale = x.std(axis=0)
    usable = np.isfinite(column_mean) & (scale > 1e-12)
    if not usable.any():
        return "every feature is constant (or missing) in training"
    z = (x[:, usable] - column_mean[usable]) / scale[usable]
    kept = [str(name) for name in np.array(names)[usable]]
    if config.model == "random_forest":
        try:
            from sklearn.ensemble import RandomForestRegressor  # type: ignore[import-untyped]
        except ImportError:
            return "model random_forest needs scikit-learn: pip install 'pytest-llmjudge[surrogate]'"
        forest = RandomForestRegressor(n_estimators=config.trees, random_state=config.seed)
        forest.fit(z, y)
        importances = forest.feature_importances_
        return _Model(
            column_mean,
            scale,
            usable,
            lambda rows: np.asarray(forest.predict(rows), dtype=float),
            {name: float(w) for name, w in zip(kept, importances, strict=True)},
        )
    offset = float(y.mean())
    beta = np.linalg.solve(z.T @ z + config.ridge * np.eye(z.shape[1]), z.T @ (y - offset))
    return _Model(
        column_mean,
        scale,
        usable,
        lambda rows: offset + rows @ beta,
        {name: float(w) for name, w in zip(kept, beta, strict=True)},
    )


_BATCH_CELLS = 2_000_000
"""At most this many points-matrix cells (tournaments x k x k) per Newton call, to bound memory."""


def _tournament_rows(
    arena: _Arena,
    config: SurrogateConfig,
    prior: float,
    rng: np.random.Generator,
    excluded: Sequence[str | None],
) -> list[tuple[Vector | None, Vector | None, int]]:
    """Algorithm 1's tournaments over the arena's cases, once per entry of ``excluded`` (a fold
    without that system's battles; None: with all): stacked features, centred strengths, and
    the number of tournaments skipped for a disconnected graph. The folds draw their resamples
    in turn; their tournaments are fitted together in batched Newton calls."""
    n, per_fold, k = len(arena.cases), config.tournaments, len(arena.systems)
    folds_per_call = max(1, _BATCH_CELLS // (per_fold * k * k))
    results: list[tuple[Vector | None, Vector | None, int]] = []
    for first in range(0, len(excluded), folds_per_call):
        chunk = excluded[first : first + folds_per_call]
        weights = np.stack(
            [np.bincount(rng.integers(0, n, size=n), minlength=n) for _ in range(per_fold * len(chunk))]
        ).astype(np.float64)
        points = np.einsum("tc,cij->tij", weights, arena.points)
        for fold, system in enumerate(chunk):
            if system is not None:
                gone = arena.systems.index(system)
                points[fold * per_fold : (fold + 1) * per_fold, gone, :] = 0.0
                points[fold * per_fold : (fold + 1) * per_fold, :, gone] = 0.0
        theta, fitted, present = _fit_batch(points, prior)
        means = arena.mean_features(weights)
        # A row per system that played in a fitted tournament and had an output in its cases.
        has_row = fitted[:, None] & present & ~np.isnan(means).all(axis=2)
        for fold in range(len(chunk)):
            block = slice(fold * per_fold, (fold + 1) * per_fold)
            skipped = int((~fitted[block]).sum())
            rows = has_row[block]
            if rows.any():
                results.append((means[block][rows], theta[block][rows], skipped))
            else:
                results.append((None, None, skipped))
    return results


def run_surrogate(
    cases: Sequence[RankedCase],
    language: str,
    by_case: Mapping[str, Sequence[Matchup]],
    config: SurrogateConfig,
    *,
    source: str,
    prior: float,
    systems: Sequence[str] | None = None,
    metric_feature: MetricFeature | None = None,
) -> SurrogateResult:
    """Train the surrogate of ``source``'s verdicts in ``language`` and evaluate it (module docstring)."""
    names = tuple(config.features)
    result = SurrogateResult(
        language=language, source=source, features=names, hold_out=config.hold_out, model=config.model
    )
    mine = {case.id: case for case in cases if case.language == language}
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for case in mine.values():
        for system in case.outputs:
            if systems is None or system in systems:
                rows[(case.id, system)] = features_of(case, system, names, metric_feature)
    judged_cases = sorted(c for c, m in by_case.items() if m and c in mine)
    rng = np.random.default_rng(config.seed)
    if config.hold_out == "systems":
        return _leave_systems_out(result, rows, by_case, judged_cases, names, config, prior, rng)
    shuffled = [judged_cases[i] for i in rng.permutation(len(judged_cases))]
    n_holdout = int(round(config.holdout * len(shuffled)))
    holdout, train = sorted(shuffled[:n_holdout]), sorted(shuffled[n_holdout:])
    fields: dict[str, Any] = {"n_train_cases": len(train), "n_holdout_cases": len(holdout)}
    if len(train) < 2 or not holdout:
        return replace(
            result, error="needs at least two training and one held-out case with verdicts and outputs", **fields
        )
    [(x, y, skipped)] = _tournament_rows(_Arena.build(by_case, train, rows, names), config, prior, rng, [None])
    fields.update(tournaments=config.tournaments - skipped, skipped_tournaments=skipped)
    if x is None or y is None:
        return replace(result, error="no training tournament had a connected comparison graph and features", **fields)
    model = _fit_model(x, y, names, config)
    if isinstance(model, str):
        return replace(result, error=model, **fields)
    judged = _fit_strengths([m for c in holdout for m in by_case[c]], prior) or {}
    held_means = _mean_features(rows, holdout, names)
    predicted = {system: model.predict(vector) for system, vector in held_means.items() if system in judged}
    fields["weights"] = model.weights
    return _scored(result, predicted, judged, fields)


def _leave_systems_out(
    result: SurrogateResult,
    rows: Mapping[tuple[str, str], Mapping[str, float]],
    by_case: Mapping[str, Sequence[Matchup]],
    cases: Sequence[str],
    names: Sequence[str],
    config: SurrogateConfig,
    prior: float,
    rng: np.random.Generator,
) -> SurrogateResult:
    """MIRAGE-BENCH's protocol: each system predicted by a model that never saw its verdicts."""
    fields: dict[str, Any] = {"n_train_cases": len(cases), "n_holdout_cases": len(cases)}
    if len(cases) < 2:
        return replace(result, error="needs at least two cases with verdicts and outputs", **fields)
    judged = _fit_strengths([m for c in cases for m in by_case[c]], prior)
    if judged is None:
        return replace(result, error="the judge's comparison graph is disconnected", **fields)
    arena = _Arena.build(by_case, cases, rows, names)
    all_means = dict(zip(arena.systems, arena.mean_features(np.ones((1, len(arena.cases))))[0], strict=True))
    candidates = sorted(s for s in judged if s in all_means and not np.isnan(all_means[s]).all())
    predicted: dict[str, float] = {}
    weight_sums: dict[str, float] = {}
    folds = tournaments = skipped = 0
    problems: list[str] = []
    for system, (x, y, fold_skipped) in zip(
        candidates, _tournament_rows(arena, config, prior, rng, candidates), strict=True
    ):
        tournaments += config.tournaments - fold_skipped
        skipped += fold_skipped
        if x is None or y is None:
            problems.append(f"{system}: no tournament without it had a connected comparison graph")
            continue
        model = _fit_model(x, y, names, config)
        if isinstance(model, str):
            problems.append(model)
            continue
        predicted[system] = model.predict(all_means[system])
        folds += 1
        for name, weight in model.weights.items():
            weight_sums[name] = weight_sums.get(name, 0.0) + weight
    fields.update(
        tournaments=tournaments,
        skipped_tournaments=skipped,
        weights={name: total / folds for name, total in weight_sums.items()} if folds else {},
    )
    if not predicted and problems:
        return replace(result, error=problems[0], **fields)
    return _scored(result, predicted, _centred(judged), fields)


def _scored(
    result: SurrogateResult, predicted: Mapping[str, float], judged: Mapping[str, float], fields: dict[str, Any]
) -> SurrogateResult:
    """Kendall tau-b and R^2 of ``predicted`` against ``judged`` over the systems both have."""
    from pytest_llmjudge.stats.correlation import correlations

    common = sorted(s for s in predicted if s in judged)
    fields.update(
        predicted={s: predicted[s] for s in common}, judged={s: judged[s] for s in common}, n_systems=len(common)
    )
    if len(common) < 3:
        problem = f"only {len(common)} systems have predictions and judge strengths (need 3)"
        return replace(result, error=problem, **fields)
    pred = np.array([predicted[s] for s in common])
    truth = np.array([judged[s] for s in common])
    corr = correlations(pred, truth)
    if not corr.defined:
        return replace(result, error=f"Kendall tau undefined: {corr.reason}", **fields)
    residual = float(np.sum((truth - pred) ** 2))
    total = float(np.sum((truth - truth.mean()) ** 2))
    return replace(
        result,
        kendall_tau=corr.kendall,
        kendall_p=corr.kendall_p,
        r2=1 - residual / total if total > 0 else None,
        **fields,
    )
