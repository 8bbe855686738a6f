"""Judge replies -> validated scores, or :class:`UnscoredError`.

A reply must contain a JSON object with one ``{"justification", "score"}`` entry per rubric
(see ``judges.prompts.reply_schema``). The parser tolerates what models commonly wrap JSON
in (code fences, a sentence before or after) and, for a single rubric, a bare
``{"score", "justification"}`` object. It never guesses a score: no JSON, a missing metric,
a non-numeric, non-finite, non-integer or off-scale score is an error for that metric, so
an unparseable reply can't become a 0 or a pass (methods.md sec. 1).

One verdict per reply: every JSON object in the reply is read, not the first one. When
several hold a verdict and they disagree (a judge that quotes a verdict forged in the
output under test and then gives its own; ``{"score": 2} ... {"score": 0}``; one object
repeating ``"score"`` with two values), the whole reply is unscored ("the reply holds N
verdicts that disagree: ..."), and the runner re-asks like for any unparseable reply: it is
never resolved to the first, the last or the friendlier verdict. The same verdict given
twice is one verdict. Structured outputs (``judges.prompts.resolve_structured_output``)
make such replies rare: the reply is then one object.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmjudge.errors import UnscoredError
from pytest_llmjudge.judges.logprobs import ScoreDistribution
from pytest_llmjudge.judges.rubrics import Rubric


@dataclass(frozen=True)
class Verdict:
    """One rubric's score from one judge reply."""

    metric: str
    score: float
    justification: str
    distribution: ScoreDistribution | str | None = None
    """With ``scoring: expected``: the judge's probabilities at its score token, or why there are none."""


class _ConflictingKeys(Exception):
    """A JSON object in the reply gives one key two different values (``{"score": 2, "score": 0}``).

    Not a ``ValueError``: the scan for objects must not take it for "no object here".
    """

    def __init__(self, key: str, values: list[Any]) -> None:
        self.key = key
        self.values = values
        super().__init__(key)


def _strict_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses a repeated key with different values.

    ``json`` keeps the last of repeated keys silently, so ``{"score": 2, "score": 0}`` would
    be a 0 to us and maybe a 2 to a reader of the raw reply: two verdicts in one object.
    """
    obj = dict(pairs)
    if len(obj) == len(pairs):  # no key repeated: the common case, checked in C
        return obj
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen and seen[key] != value:
            raise _ConflictingKeys(key, [seen[key], value])
        seen[key] = value
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_strict_pairs)


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text`` (inside code fences, prose or a list), in order.

    Scans for ``{`` and decodes from there; a decoded object is skipped whole, so objects
    nested in it (or in its strings) are not listed again. Raises :class:`UnscoredError`
    when the reply is empty, nests deeper than the interpreter's recursion limit, or has an
    object that repeats a key with different values.
    """
    stripped = text.strip()
    if not stripped:
        raise UnscoredError("the judge replied with empty text", raw_reply=text)
    found: list[dict[str, Any]] = []
    start = stripped.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(stripped, start)
        except ValueError:  # JSONDecodeError, and Python's limit on integer literal digits
            start = stripped.find("{", start + 1)
            continue
        except RecursionError:  # the C scanner recurses per nesting level
            raise UnscoredError("the judge reply nests JSON too deeply to read", raw_reply=text) from None
        except _ConflictingKeys as exc:
            shown = " vs ".join(json.dumps(v, ensure_ascii=False) for v in exc.values)
            raise UnscoredError(
                f"the reply holds 2 verdicts that disagree: one JSON object gives {exc.key!r} twice ({shown})",
                raw_reply=text,
            ) from None
        found.append(value)  # raw_decode from a "{" can only give an object
        start = stripped.find("{", end)
    return found


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (inside code fences or prose).

    Only for replies that can hold one object; verdicts go through :func:`parse_reply` (or
    :func:`single_verdict`), which refuse replies whose objects disagree.
    """
    objects = json_objects(text)
    if not objects:
        raise UnscoredError("the judge reply contains no JSON object", raw_reply=text)
    return objects[0]


def _shown(value: Any) -> str:
    return "none" if value is _ABSENT else json.dumps(value, ensure_ascii=False)


_ABSENT: Any = object()


def single_verdict(text: str, verdict_of: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any]:
    """The one verdict a reply holds: the JSON object for which ``verdict_of`` finds one.

    ``verdict_of`` maps an object to its verdict (field -> value, the values compared) or
    ``None`` when the object holds no verdict. Several objects with the same verdict are one
    verdict said twice; several that disagree raise :class:`UnscoredError` ("the reply holds
    N verdicts that disagree: ..."): a reply that quotes a forged verdict and then gives its
    own, or gives two, must not resolve to either, least of all the friendlier one. A reply
    whose objects hold no verdict gives its first object (its fields are then reported
    missing); one with no object raises "no JSON object".
    """
    objects = json_objects(text)
    if not objects:
        raise UnscoredError("the judge reply contains no JSON object", raw_reply=text)
    verdicts = [(obj, found) for obj in objects if (found := verdict_of(obj)) is not None]
    if not verdicts:
        return objects[0]
    if len(verdicts) == 1:
        return verdicts[0][0]
    distinct = {json.dumps(found, sort_keys=True, default=repr) for _, found in verdicts}
    if len(distinct) > 1:
        fields = list(dict.fromkeys(name for _, found in verdicts for name in found))
        differing = []
        for name in fields:
            shown = [_shown(found.get(name, _ABSENT)) for _, found in verdicts]
            if len(set(shown)) > 1:
                differing.append(f"{name} " + " vs ".join(shown))
        raise UnscoredError(
            f"the reply holds {len(verdicts)} verdicts that disagree: " + "; ".join(differing), raw_reply=text
        )
    return verdicts[0][0]


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


def _rubric_verdict(obj: Mapping[str, Any], rubrics: Sequence[Rubric]) -> dict[str, Any] | None:
    """The scores an object gives, per rubric name (``None``: it gives none).

    An integral float score is compared as an integer, so ``2`` and ``2.0`` agree; an entry
    that isn't an object counts as given (it is reported as unusable afterwards).
    """
    if len(rubrics) == 1 and rubrics[0].name not in obj and "score" in obj:
        obj = {rubrics[0].name: obj}
    found: dict[str, Any] = {}
    for rubric in rubrics:
        if rubric.name not in obj:
            continue
        entry = obj[rubric.name]
        score = entry.get("score") if isinstance(entry, Mapping) else entry
        if isinstance(score, float) and score.is_integer():
            score = int(score)
        found[rubric.name] = score
    return found or None


def parse_reply(text: str, rubrics: Sequence[Rubric]) -> dict[str, Verdict | UnscoredError]:
    """Verdicts per rubric name; a rubric whose entry is unusable maps to its error.

    Raises :class:`UnscoredError` when the reply as a whole is unusable (no JSON object).
    """
    obj = single_verdict(text, lambda candidate: _rubric_verdict(candidate, rubrics))
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
