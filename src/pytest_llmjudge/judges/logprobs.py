"""Probability-weighted scores from token log-probabilities (G-Eval, Liu et al. 2023, sec. 2.3).

G-Eval replaces the sampled score by the expected score under the judge's own token
distribution at the score position::

    score = sum_i p(s_i) * s_i

over the scale's scores ``s_i``, with ``p(s_i)`` the probability the judge gives the token
``s_i`` where it wrote its score, normalised over the scale's tokens (probability mass on
other tokens, e.g. ``"two"``, is dropped and reported as ``mass``). Near a threshold the
sampled integer flips between neighbours from repeat to repeat, while the expected score
moves only as much as the distribution does (``benchmarks/expected_scores.py``).

Where the probabilities come from: OpenAI Chat Completions (and OpenAI-compatible servers
such as vLLM) with ``logprobs: true, top_logprobs: k`` answer, per generated token, its
``logprob`` and its ``top_logprobs`` alternatives. The provider keeps only the tokens that
are integers (:func:`digit_tokens`): their character offset in the reply, the token and the
alternatives. This module then finds the token of each rubric's score in the JSON reply
(the first ``"score":`` after the rubric's name for a compound reply, the one ``"score":``
otherwise) and reads the distribution from its alternatives (:func:`score_distribution`).

Degenerate cases (each gives ``None`` with the reason, never a made-up distribution): no
token log-probabilities (Anthropic gives none; a server that ignores ``logprobs``); tokens
that do not spell the reply; no integer token at the score's position; no alternative on
the scale (all mass elsewhere). A score written as a multi-token number (``10`` as ``1``,
``0``) is read at its first token, so for scales beyond 9 the distribution covers only the
alternatives that are whole scale values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DigitToken = tuple[int, str, tuple[tuple[str, float], ...]]
"""``(offset, token, alternatives)``: an integer token of a reply, where it starts, and its top alternatives."""

_INTEGER = re.compile(r"\s*-?\d+\s*")
_SCORE = re.compile(r'"score"\s*:\s*"?\s*')


def digit_tokens(content: Any) -> tuple[DigitToken, ...] | None:
    """The integer tokens of a Chat Completions ``logprobs.content`` list; None when it is not one.

    Offsets count characters of the concatenated tokens, which spell the reply text.
    """
    if not isinstance(content, list):
        return None
    found: list[DigitToken] = []
    offset = 0
    for entry in content:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        token = entry["token"]
        if _INTEGER.fullmatch(token):
            alternatives = [
                (str(alt["token"]), float(alt["logprob"]))
                for alt in entry.get("top_logprobs") or ()
                if isinstance(alt, dict) and isinstance(alt.get("token"), str) and _finite(alt.get("logprob"))
            ]
            if not alternatives and _finite(entry.get("logprob")):
                alternatives = [(token, float(entry["logprob"]))]
            found.append((offset, token, tuple(alternatives)))
        offset += len(token)
    return tuple(found)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class ScoreDistribution:
    """The judge's probabilities over the scale at its score token."""

    probabilities: Mapping[int, float]
    """Score -> probability, normalised over the scale's scores (every scale value present)."""
    mass: float
    """The raw probability the scale's tokens had together, before normalising (1.0: none elsewhere)."""

    @property
    def expected(self) -> float:
        return sum(score * p for score, p in self.probabilities.items())

    def to_dict(self) -> dict[str, Any]:
        return {
            "expected": round(self.expected, 6),
            "probabilities": {str(score): round(p, 6) for score, p in sorted(self.probabilities.items())},
            "mass": round(self.mass, 6),
        }


def _score_position(text: str, rubric: str, rubrics: Sequence[str]) -> int | None:
    start = 0
    if len(rubrics) > 1:
        named = re.search(rf'"{re.escape(rubric)}"\s*:\s*\{{', text)
        if named is None:
            return None
        start = named.end()
    match = _SCORE.search(text, start)
    return match.end() if match is not None else None


def score_distribution(
    text: str, tokens: Iterable[DigitToken] | None, rubric: str, scale: Sequence[int], rubrics: Sequence[str] = ()
) -> ScoreDistribution | str:
    """The distribution at ``rubric``'s score token in ``text``, or why there is none."""
    if tokens is None:
        return "the provider returned no token log-probabilities"
    position = _score_position(text, rubric, rubrics or (rubric,))
    if position is None:
        return "no score found in the reply to read probabilities at"
    token = next((t for t in tokens if t[0] <= position < t[0] + len(t[1])), None)
    if token is None:
        return "no integer token at the score's position"
    weights: dict[int, float] = {}
    for alternative, logprob in token[2]:
        if _INTEGER.fullmatch(alternative) and int(alternative) in scale:
            value = int(alternative)
            weights[value] = weights.get(value, 0.0) + math.exp(logprob)  # " 2" and "2" are one score
    mass = sum(weights.values())
    if mass <= 0.0:
        return "no probability on the scale's scores at the score token"
    return ScoreDistribution({score: weights.get(score, 0.0) / mass for score in scale}, mass)
