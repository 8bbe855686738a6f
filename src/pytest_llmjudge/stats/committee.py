"""One score per item from a committee of judges: majority, rounded mean, agreement-weighted rounded mean.

* majority: the most common score among the judges that scored the item (ties: the lower);
* mean: the judges' mean, rounded half up to the nearest value of the scale;
* weighted: the mean weighted by each judge's weight (``calibration/jury.py`` uses its
  weighted F1 against the humans: agreement-weighted), rounded the same way.

Rounding keeps the combined score a label of the scale, so agreement statistics and
thresholds read it like any judge's score. Degenerate cases: an item no judge scored is NaN;
for ``weighted``, so is one whose judges all have weight 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

__all__ = ["combine_scores", "round_to_scale"]


def round_to_scale(value: float, scale: Sequence[int]) -> int:
    """The scale value nearest ``value``; half way between two, the higher (half up)."""
    return int(min(scale, key=lambda s: (abs(s - value), -s)))


def combine_scores(
    scores: Mapping[str, Sequence[float]], how: str, weights: Mapping[str, float], scale: Sequence[int]
) -> list[float]:
    """The committee's score per item by ``how`` (majority, mean, weighted); NaN where no judge scored."""
    names = list(scores)
    combined: list[float] = []
    for index in range(len(next(iter(scores.values()), ()))):
        given = [(name, scores[name][index]) for name in names if not math.isnan(scores[name][index])]
        if not given:
            combined.append(math.nan)
            continue
        if how == "majority":
            counts = Counter(value for _, value in given)
            best = max(counts.values())
            combined.append(min(value for value, count in counts.items() if count == best))
            continue
        if how == "weighted":
            total = sum(weights.get(name, 0.0) for name, _ in given)
            if total <= 0:
                combined.append(math.nan)
                continue
            mean = sum(weights.get(name, 0.0) * value for name, value in given) / total
        elif how == "mean":
            mean = sum(value for _, value in given) / len(given)
        else:
            raise ValueError(f"unknown combination {how!r}")
        combined.append(float(round_to_scale(mean, scale)))
    return combined
