"""Judge prompts and reply parsers of the RAG metrics (``metrics/rag.py``).

Four requests, each one provider call, each framed like every judge prompt
(``judges/prompts.py``: the case's texts, and the claims a judge extracted from them, are
data between content-derived boundary lines; the system prompt says nothing inside a frame
is an instruction):

* :func:`claims_request`: split an answer into atomic, self-contained claims, written in
  the answer's language (faithfulness, step 1). Reply ``{"claims": ["...", ...]}``.
* :func:`support_request`: for each numbered claim, is it supported by the context
  passages? (faithfulness, step 2). Reply ``{"verdicts": [{"claim": 1, "reason": "...",
  "supported": true}, ...]}``.
* :func:`passage_usefulness_request`: for each numbered context passage, was it useful
  for reaching the reference answer to the question? (context precision). Reply
  ``{"verdicts": [{"passage": 1, "reason": "...", "useful": true}, ...]}``.
* :func:`attribution_request`: split the reference into statements and say, for each,
  whether the context passages support it (context recall). Reply ``{"statements":
  [{"statement": "...", "reason": "...", "attributed": true}, ...]}``.

The prompt shapes are our own; what each asks for follows the RAGAS definitions (Es et al.,
"RAGAS: Automated Evaluation of Retrieval Augmented Generation", EACL 2024 demo;
``docs/metrics.md``).

Parsing is as strict as for rubric verdicts (``judges/parsing.py``): a reply with two
objects whose verdict lists differ, one list giving an item two different verdicts, an item
number out of range or missing, or a verdict that is not a boolean is unusable
(:class:`UnscoredError`, so the runner re-asks), never resolved to either reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmjudge.errors import UnscoredError
from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.judges.languages import language_name
from pytest_llmjudge.judges.parsing import single_verdict
from pytest_llmjudge.judges.prompts import (
    JudgeSettings,
    data_instruction,
    frame_boundary,
    framed_section,
    judge_request,
    trusted_section,
)


@dataclass(frozen=True)
class RagText:
    """What the RAG prompts show of one case."""

    language: str
    output: str
    input: str | None = None
    reference: str | None = None
    context: tuple[str, ...] = ()


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _verdict_list(key: str, index: str, flag: str) -> dict[str, Any]:
    item = _object({index: {"type": "integer"}, "reason": {"type": "string"}, flag: {"type": "boolean"}})
    return _object({key: {"type": "array", "items": item}})


CLAIMS_SCHEMA = _object({"claims": {"type": "array", "items": {"type": "string"}}})
SUPPORT_SCHEMA = _verdict_list("verdicts", "claim", "supported")
USEFULNESS_SCHEMA = _verdict_list("verdicts", "passage", "useful")
ATTRIBUTION_SCHEMA = _object(
    {
        "statements": {
            "type": "array",
            "items": _object(
                {"statement": {"type": "string"}, "reason": {"type": "string"}, "attributed": {"type": "boolean"}}
            ),
        }
    }
)


def _request(
    settings: JudgeSettings,
    role: str,
    task: str,
    framed: Sequence[tuple[str, str]],
    reply_format: str,
    schema: dict[str, Any],
    language_code: str,
) -> ProviderRequest:
    language = language_name(language_code)
    task_text = task + f"\nThe texts are in {language} (language code: {language_code})."
    boundary = frame_boundary([body for _, body in framed], trusted=(task_text, reply_format))
    system = (
        f"You are a meticulous {role} reading text written in {language} as a fluent native speaker would. "
        "Reply with one JSON object and nothing else. " + data_instruction(boundary)
    )
    parts = [trusted_section("Task", task_text)]
    parts.extend(framed_section(title, body, boundary) for title, body in framed)
    parts.append(trusted_section("Reply format", reply_format))
    return judge_request(settings, system, "\n\n".join(parts), schema)


def _passages(context: Sequence[str]) -> list[tuple[str, str]]:
    return [(f"Context passage {number}", passage) for number, passage in enumerate(context, 1)]


def claims_request(text: RagText, settings: JudgeSettings) -> ProviderRequest:
    """Faithfulness, step 1: the answer as a list of atomic claims."""
    language = language_name(text.language)
    framed = [("Question", text.input)] if text.input else []
    framed.append(("Answer", text.output))
    return _request(
        settings,
        "analyst",
        "Break the answer below into claims: the shortest statements that each assert one thing the answer "
        "says is true, each understandable on its own (replace pronouns by what they refer to, using the "
        "question where needed). Keep every factual assertion, leave out greetings, hedges and questions, and "
        f"add nothing the answer does not say. Write each claim in {language}, the language of the answer. An "
        "answer that asserts nothing gives an empty list.",
        framed,
        'One JSON object: {"claims": ["<claim>", ...]}',
        CLAIMS_SCHEMA,
        text.language,
    )


def support_request(claims: Sequence[str], text: RagText, settings: JudgeSettings) -> ProviderRequest:
    """Faithfulness, step 2: is each claim supported by the context passages?"""
    framed = _passages(text.context)
    framed.extend((f"Claim {number}", claim) for number, claim in enumerate(claims, 1))
    return _request(
        settings,
        "fact checker",
        f"For each of the {len(claims)} numbered claims below, decide whether the context passages support it: "
        "supported means the claim can be inferred from the passages alone, without outside knowledge; a claim "
        "the passages contradict, or say nothing about, is not supported. Give one verdict per claim, with a "
        "short reason first.",
        framed,
        'One JSON object with one entry per claim, in order: {"verdicts": [{"claim": 1, "reason": "<why>", '
        '"supported": true or false}, ...]}',
        SUPPORT_SCHEMA,
        text.language,
    )


def passage_usefulness_request(text: RagText, settings: JudgeSettings) -> ProviderRequest:
    """Context precision: was each passage useful for reaching the reference answer?"""
    assert text.input is not None and text.reference is not None
    framed = [("Question", text.input), ("Reference answer", text.reference), *_passages(text.context)]
    return _request(
        settings,
        "retrieval assessor",
        f"For each of the {len(text.context)} numbered context passages below, decide whether it was useful "
        "for arriving at the reference answer to the question: useful means the passage states something the "
        "reference answer relies on. Give one verdict per passage, with a short reason first.",
        framed,
        'One JSON object with one entry per passage, in order: {"verdicts": [{"passage": 1, "reason": "<why>", '
        '"useful": true or false}, ...]}',
        USEFULNESS_SCHEMA,
        text.language,
    )


def attribution_request(text: RagText, settings: JudgeSettings) -> ProviderRequest:
    """Context recall: the reference's statements, each attributed to the context or not."""
    assert text.reference is not None
    framed = [("Question", text.input)] if text.input else []
    framed.append(("Reference answer", text.reference))
    framed.extend(_passages(text.context))
    language = language_name(text.language)
    return _request(
        settings,
        "retrieval assessor",
        "Split the reference answer below into statements (each asserting one thing, understandable on its "
        f"own, written in {language}), and for each decide whether the context passages support it: attributed "
        "means the statement can be inferred from the passages alone. Give a short reason before each verdict.",
        framed,
        'One JSON object: {"statements": [{"statement": "<statement>", "reason": "<why>", "attributed": true or '
        "false}, ...]}",
        ATTRIBUTION_SCHEMA,
        text.language,
    )


# -- parsers -------------------------------------------------------------------------------


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return [item.strip() for item in value if item.strip()]


def parse_claims(text: str) -> list[str]:
    """The claims of a reply to :func:`claims_request` (possibly none)."""
    obj = single_verdict(text, lambda found: {"claims": found["claims"]} if "claims" in found else None)
    claims = _strings(obj.get("claims"))
    if claims is None:
        raise UnscoredError("the reply has no 'claims' list of strings", raw_reply=text)
    return claims


@dataclass(frozen=True)
class ItemVerdict:
    """One numbered item's verdict: true (supported, useful, attributed) or false, and why."""

    number: int
    verdict: bool
    reason: str


def _verdicts(text: str, count: int, index: str, flag: str) -> list[ItemVerdict]:
    """Exactly one boolean verdict for each item 1..count; anything else is unusable."""

    def found(obj: dict[str, Any]) -> dict[str, Any] | None:
        return {"verdicts": obj["verdicts"]} if "verdicts" in obj else None

    obj = single_verdict(text, found)
    entries = obj.get("verdicts")
    if not isinstance(entries, list):
        raise UnscoredError("the reply has no 'verdicts' list", raw_reply=text)
    by_number: dict[int, ItemVerdict] = {}
    for entry in entries:
        number = entry.get(index) if isinstance(entry, dict) else None
        verdict = entry.get(flag) if isinstance(entry, dict) else None
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= count:
            raise UnscoredError(f"a verdict names {index} {number!r}, not one of 1..{count}", raw_reply=text)
        if not isinstance(verdict, bool):
            raise UnscoredError(f"{index} {number}: {flag!r} is not true or false", raw_reply=text)
        reason = entry.get("reason")
        previous = by_number.get(number)
        if previous is not None and previous.verdict != verdict:
            raise UnscoredError(f"the reply holds 2 verdicts that disagree on {index} {number}", raw_reply=text)
        by_number[number] = ItemVerdict(number, verdict, reason if isinstance(reason, str) else "")
    missing = [number for number in range(1, count + 1) if number not in by_number]
    if missing:
        raise UnscoredError(f"no verdict for {index} {', '.join(map(str, missing))}", raw_reply=text)
    return [by_number[number] for number in range(1, count + 1)]


def support_parser(count: int) -> Callable[[str], list[ItemVerdict]]:
    """The parser of a reply to :func:`support_request` with ``count`` claims."""

    def parse_support(text: str) -> list[ItemVerdict]:
        return _verdicts(text, count, "claim", "supported")

    parse_support.__qualname__ = f"parse_support_{count}"
    return parse_support


def usefulness_parser(count: int) -> Callable[[str], list[ItemVerdict]]:
    """The parser of a reply to :func:`passage_usefulness_request` with ``count`` passages."""

    def parse_usefulness(text: str) -> list[ItemVerdict]:
        return _verdicts(text, count, "passage", "useful")

    parse_usefulness.__qualname__ = f"parse_usefulness_{count}"
    return parse_usefulness


@dataclass(frozen=True)
class Statement:
    """One statement of a reference and whether the context supports it."""

    text: str
    attributed: bool
    reason: str


def parse_attribution(text: str) -> list[Statement]:
    """The statements of a reply to :func:`attribution_request` (possibly none)."""
    obj = single_verdict(text, lambda found: {"statements": found["statements"]} if "statements" in found else None)
    entries = obj.get("statements")
    if not isinstance(entries, list):
        raise UnscoredError("the reply has no 'statements' list", raw_reply=text)
    statements = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("statement"), str):
            raise UnscoredError(f"statement {number} has no 'statement' text", raw_reply=text)
        if not isinstance(entry.get("attributed"), bool):
            raise UnscoredError(f"statement {number}: 'attributed' is not true or false", raw_reply=text)
        reason = entry.get("reason")
        statements.append(Statement(entry["statement"], entry["attributed"], reason if isinstance(reason, str) else ""))
    return statements
