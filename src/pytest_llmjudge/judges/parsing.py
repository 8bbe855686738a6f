"""Judge replies -> validated scores, or :class:`UnscoredError`.

A reply must contain a JSON object with one ``{"justification", "score"}`` entry per rubric
(see ``judges.prompts.reply_schema``). The parser tolerates what models commonly wrap JSON
in (code fences, a sentence before or after) and, for a single rubric, a bare
``{"score", "justification"}`` object. It never guesses a score: no JSON, a missing metric,
a non-numeric, non-finite, non-integer or off-scale score is an error for that metric, so
an unparseable reply can't become a 0 or a pass (methods.md sec. 1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmjudge.errors import UnscoredError
from pytest_llmjudge.judges.rubrics import Rubric


@dataclass(frozen=True)
class Verdict:
    """One rubric's score from one judge reply."""

    metric: str
    score: float
    justification: str


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (inside code fences or prose)."""
    stripped = text.strip()
    if not stripped:
        raise UnscoredError("the judge replied with empty text", raw_reply=text)
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(stripped, start)
        except ValueError:  # JSONDecodeError, and Python's limit on integer literal digits
            start = stripped.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = stripped.find("{", start + 1)
    raise UnscoredError("the judge reply contains no JSON object", raw_reply=text)


def _score_value(raw: Any, rubric: Rubric, reply: str) -> float:
    if isinstance(raw, bool):
        raise UnscoredError(f"{rubric.name}: score is a boolean, not a number", raw_reply=reply)
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            raise UnscoredError(f"{rubric.name}: score {raw!r} is not a number", raw_reply=reply) from None
    if not isinstance(raw, (int, float)):
        raise UnscoredError(f"{rubric.name}: score {raw!r} is not a number", raw_reply=reply)
    try:
        value = float(raw)
    except OverflowError:
        raise UnscoredError(f"{rubric.name}: score is too large to be on any scale", raw_reply=reply) from None
    if not math.isfinite(value):
        raise UnscoredError(f"{rubric.name}: score {raw!r} is not finite", raw_reply=reply)
    if not value.is_integer() or int(value) not in rubric.scale:
        raise UnscoredError(f"{rubric.name}: score {raw!r} is not on the scale {list(rubric.scale)}", raw_reply=reply)
    return value


def parse_reply(text: str, rubrics: Sequence[Rubric]) -> dict[str, Verdict | UnscoredError]:
    """Verdicts per rubric name; a rubric whose entry is unusable maps to its error.

    Raises :class:`UnscoredError` when the reply as a whole is unusable (no JSON object).
    """
    obj = extract_json_object(text)
    if len(rubrics) == 1 and rubrics[0].name not in obj and "score" in obj:
        obj = {rubrics[0].name: obj}
    results: dict[str, Verdict | UnscoredError] = {}
    for rubric in rubrics:
        entry = obj.get(rubric.name)
        if not isinstance(entry, Mapping):
            results[rubric.name] = UnscoredError(f"{rubric.name}: missing from the judge reply", raw_reply=text)
            continue
        try:
            score = _score_value(entry.get("score"), rubric, text)
        except UnscoredError as exc:
            results[rubric.name] = exc
            continue
        justification = entry.get("justification")
        results[rubric.name] = Verdict(
            metric=rubric.name,
            score=score,
            justification=justification if isinstance(justification, str) else "",
        )
    return results
