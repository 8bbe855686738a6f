"""Judge sanity checks: consistency of repeated requests and sensitivity to shuffled words.

Both come from Hada et al. (2024a): sec. 3.5 describes them, sec. 4.2.1 reports GPT-4 at
temperature 0 giving the same score in all five tries, sec. 4.3 reports how often the
linguistic-acceptability score dropped after "randomly shuffling 10% of the words", and
sec. 4.4/6 warn that higher temperatures make judgments stochastic.

**Consistency.** Each checked item is sent ``k`` times (the plugin varies only the request
seed, ``seed + i``, so every repeat is a real provider call with its own cache entry; at
temperature 0 the seed should not matter). An item is *consistent* when all ``k`` scores are
equal. The check passes when ``consistent / items >= min_agreement``. An item with an
unscored repeat counts as inconsistent: agreement that could not be observed is not agreement.

**Sensitivity.** Each checked item is judged as written and after :func:`shuffle_words`,
which picks ``m = max(2, round(fraction * W))`` of its ``W`` words at random and permutes
them among their own positions (never the identity; whitespace is kept as it was). Texts in
scripts written without spaces (fewer than 5 words but at least 10 characters) are
shuffled by characters instead. Each item's generator is seeded from the configured seed and
the item id (SHA-256), so the perturbed text is the same on every run and is recorded in the
result. The judge should rate the perturbed text *worse*: lower for a higher-is-better
metric, higher for one where lower is better. Items already at the worst score can't get
worse and are left out (counted as ``at_worst``); texts that can't be perturbed (one word)
too. The check passes when ``worse / (eligible + unscored) >= min_lowered``, so unscored
items count against it. With nothing eligible the check fails: no evidence is not a pass.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ConsistencyResult",
    "Perturbation",
    "SensitivityResult",
    "item_seed",
    "shuffle_words",
    "summarize_consistency",
    "summarize_sensitivity",
]

_TOKENS = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class Perturbation:
    """A shuffled text and how it was made."""

    text: str
    seed: int
    unit: str
    n_units: int
    positions: tuple[int, ...]


def item_seed(seed: int, item_id: str) -> int:
    """A stable 32-bit seed for one item: SHA-256 of ``"<seed>:<item id>"``."""
    return int(hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()[:8], 16)


def shuffle_words(text: str, fraction: float = 0.1, seed: int = 0) -> Perturbation | None:
    """``text`` with about ``fraction`` of its words permuted; None when it can't change."""
    parts = _TOKENS.findall(text)
    word_slots = [index for index, part in enumerate(parts) if not part.isspace()]
    unit = "word"
    if len(word_slots) < 5 and len(text.strip()) >= 10:
        parts = list(text)
        word_slots = [index for index, part in enumerate(parts) if not part.isspace()]
        unit = "character"
    n = len(word_slots)
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    m = min(n, max(2, int(np.floor(fraction * n + 0.5))))
    chosen = np.sort(rng.choice(n, size=m, replace=False))
    words = [parts[word_slots[i]] for i in chosen]
    if len(set(words)) < 2:
        return None
    order = rng.permutation(m)
    for _ in range(10):
        if [words[i] for i in order] != words:
            break
        order = rng.permutation(m)
    else:
        order = np.roll(np.arange(m), 1)
    shuffled = list(parts)
    for target, source in zip(chosen, order, strict=True):
        shuffled[word_slots[target]] = words[source]
    result = "".join(shuffled)
    if result == text:
        return None
    return Perturbation(text=result, seed=seed, unit=unit, n_units=n, positions=tuple(int(i) for i in chosen))


@dataclass(frozen=True)
class ConsistencyResult:
    n_items: int
    n_consistent: int
    n_unscored: int
    min_agreement: float
    repeats: int
    samples: tuple[tuple[float | None, ...], ...] = field(default=())

    @property
    def rate(self) -> float | None:
        return self.n_consistent / self.n_items if self.n_items else None

    @property
    def problem(self) -> str | None:
        return "no items to check" if self.n_items == 0 else None

    @property
    def passed(self) -> bool:
        rate = self.rate
        return self.problem is None and rate is not None and rate + 1e-12 >= self.min_agreement

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_items": self.n_items,
            "n_consistent": self.n_consistent,
            "n_unscored": self.n_unscored,
            "rate": self.rate,
            "min_agreement": self.min_agreement,
            "repeats": self.repeats,
            "samples": [list(s) for s in self.samples],
            "problem": self.problem,
            "passed": self.passed,
        }


def summarize_consistency(
    samples: Sequence[Sequence[float | None]], *, min_agreement: float, repeats: int
) -> ConsistencyResult:
    """``samples`` holds each item's ``k`` scores (None = unscored)."""
    consistent = unscored = 0
    for item in samples:
        if any(value is None for value in item):
            unscored += 1
        elif len(set(item)) == 1:
            consistent += 1
    return ConsistencyResult(
        n_items=len(samples),
        n_consistent=consistent,
        n_unscored=unscored,
        min_agreement=min_agreement,
        repeats=repeats,
        samples=tuple(tuple(item) for item in samples),
    )


@dataclass(frozen=True)
class SensitivityResult:
    n_items: int
    n_worse: int
    n_same: int
    n_better: int
    n_unscored: int
    n_at_worst: int
    n_unperturbable: int
    min_lowered: float
    fraction: float
    pairs: tuple[tuple[float | None, float | None], ...] = field(default=())

    @property
    def eligible(self) -> int:
        return self.n_worse + self.n_same + self.n_better

    @property
    def rate(self) -> float | None:
        denominator = self.eligible + self.n_unscored
        return self.n_worse / denominator if denominator else None

    @property
    def problem(self) -> str | None:
        if self.eligible + self.n_unscored == 0:
            return "no item could get worse (all at the worst score or not perturbable)"
        return None

    @property
    def passed(self) -> bool:
        rate = self.rate
        return self.problem is None and rate is not None and rate + 1e-12 >= self.min_lowered

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_items": self.n_items,
            "n_worse": self.n_worse,
            "n_same": self.n_same,
            "n_better": self.n_better,
            "n_unscored": self.n_unscored,
            "n_at_worst": self.n_at_worst,
            "n_unperturbable": self.n_unperturbable,
            "rate": self.rate,
            "min_lowered": self.min_lowered,
            "fraction": self.fraction,
            "pairs": [list(p) for p in self.pairs],
            "problem": self.problem,
            "passed": self.passed,
        }


def summarize_sensitivity(
    pairs: Sequence[tuple[float | None, float | None] | None],
    *,
    worst: float,
    higher_is_better: bool,
    min_lowered: float,
    fraction: float,
) -> SensitivityResult:
    """``pairs`` holds (original, perturbed) scores per item, None for an unperturbable text."""
    worse = same = better = unscored = at_worst = unperturbable = 0
    kept: list[tuple[float | None, float | None]] = []
    for pair in pairs:
        if pair is None:
            unperturbable += 1
            continue
        kept.append(pair)
        original, perturbed = pair
        if original is None or perturbed is None:
            unscored += 1
        elif original == worst:
            at_worst += 1
        elif (perturbed < original) if higher_is_better else (perturbed > original):
            worse += 1
        elif perturbed == original:
            same += 1
        else:
            better += 1
    return SensitivityResult(
        n_items=len(pairs),
        n_worse=worse,
        n_same=same,
        n_better=better,
        n_unscored=unscored,
        n_at_worst=at_worst,
        n_unperturbable=unperturbable,
        min_lowered=min_lowered,
        fraction=fraction,
        pairs=tuple(kept),
    )
