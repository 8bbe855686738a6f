"""The pairwise judge prompt (two answers in, ``A`` / ``B`` / ``tie`` out) and its reply parser.

What it is
    MIRAGE-BENCH (Thakur et al., sec. 4.2 and fig. 13) ranks systems from head-to-head
    "battles": a judge model sees one query and two systems' answers, labelled A and B,
    explains the difference and names the better one or a tie. The prompt here follows the
    shape of the plugin's pointwise prompts (Hada et al. 2024, sec. 3.2.1): English
    instructions, the language of the texts named explicitly, the parts of the case in
    delimited sections, a JSON reply with the justification asked for before the verdict::

        {"justification": "...", "verdict": "A" | "B" | "tie"}

    The instructions tell the judge that the order of the two answers is arbitrary and that
    length is no merit, the two biases MIRAGE-BENCH (sec. 4.2, after Zheng et al. 2023)
    names for pairwise judges. Telling it is not enough, which is why the caller also
    randomises the order (``pairwise.pairwise_judge``).

Parsing
    The reply must hold a JSON object with a ``verdict`` of ``A``, ``B`` or ``tie``
    (case-insensitive; ``C``, MIRAGE-BENCH's tie label, and ``draw`` are read as ``tie``).
    Anything else raises :class:`~pytest_llmjudge.errors.UnscoredError`, so the runner
    re-asks and finally reports the pair as unjudged: an unusable reply never becomes a tie.
    A reply with several verdicts that disagree (a quoted ``{"verdict": "A"}`` from an
    answer, then the judge's own ``"B"``) is unusable too (``judges.parsing.single_verdict``).

Framing
    The input, reference, context and both answers are untrusted text, framed between
    boundary lines no answer can contain (``judges.prompts.frame_boundary``): an answer
    cannot close its frame, fake the other answer's section or add a reply format.

Degenerate cases: two identical answers are still sent (the judge should say ``tie``; that
it does is a useful sanity check); an empty answer is sent as ``(empty answer)`` so the two
sections stay distinguishable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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

SlotVerdict = Literal["A", "B", "tie"]

DEFAULT_PAIRWISE_TASK = (
    "Two assistants were given the same input and each produced an answer. Decide which answer "
    "serves the person who wrote the input better."
)

DEFAULT_CRITERIA = (
    "Judge correctness, helpfulness, completeness and relevance to the input, and whether the "
    "answer is written in fluent, natural {language} as the input asks. Extra detail is only a "
    "merit when it is correct and answers the input; length alone is not. The order in which "
    "the two answers are shown is arbitrary and says nothing about their quality. Answer 'tie' "
    "only when neither answer is better."
)

REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "justification": {"type": "string"},
        "verdict": {"type": "string", "enum": ["A", "B", "tie"]},
    },
    "required": ["justification", "verdict"],
    "additionalProperties": False,
}

_VERDICT_WORDS: dict[str, SlotVerdict] = {"a": "A", "b": "B", "tie": "tie", "c": "tie", "draw": "tie"}


@dataclass(frozen=True)
class PairwiseText:
    """What the judge sees of one battle, already in slot order (A first)."""

    language: str
    answer_a: str
    answer_b: str
    input: str | None = None
    reference: str | None = None
    context: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlotJudgment:
    """A parsed reply: the verdict about the slots as shown, and why."""

    verdict: SlotVerdict
    justification: str


def build_pairwise_request(
    text: PairwiseText,
    settings: JudgeSettings,
    *,
    task: str | None = None,
    criteria: str | None = None,
) -> ProviderRequest:
    """The provider request asking ``settings``' judge which of the two answers is better."""
    language = language_name(text.language)
    task_text = (task or DEFAULT_PAIRWISE_TASK) + f"\nThe texts are in {language} (language code: {text.language})."
    criteria_text = (criteria or DEFAULT_CRITERIA).format(language=language)
    framed: list[tuple[str, str]] = []
    if text.input:
        framed.append(("Input", text.input))
    if text.reference:
        framed.append(("Reference", text.reference))
    if text.context:
        framed.append(("Context", "\n\n".join(text.context)))
    framed.append(("Answer A", text.answer_a or "(empty answer)"))
    framed.append(("Answer B", text.answer_b or "(empty answer)"))
    boundary = frame_boundary([body for _, body in framed], trusted=(task_text, criteria_text))
    system = (
        f"You are a meticulous, impartial evaluator of text written in {language}. Read every text "
        f"as a fluent native speaker of {language} would. You compare two answers to the same input "
        "and say which one is better, or that they are equally good. Write a short justification "
        "first and then give the verdict. Reply with one JSON object and nothing else. " + data_instruction(boundary)
    )
    parts = [trusted_section("Task", task_text)]
    parts.extend(framed_section(title, body, boundary) for title, body in framed)
    parts.append(trusted_section("Criteria", criteria_text))
    parts.append(
        '## Reply format\nOne JSON object with a justification and a verdict: "A" if answer A is '
        'better, "B" if answer B is better, "tie" if neither is better, for example:\n'
        '{"justification": "...", "verdict": "A"}'
    )
    return judge_request(settings, system, "\n\n".join(parts), REPLY_SCHEMA)


def _slot_verdict(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict an object gives, normalised (``"a"`` and ``"A"`` agree), or ``None``."""
    if "verdict" not in obj:
        return None
    raw = obj["verdict"]
    word = _VERDICT_WORDS.get(raw.strip().strip("[]").strip().lower()) if isinstance(raw, str) else None
    return {"verdict": word or raw}


def parse_pairwise_reply(text: str) -> SlotJudgment:
    """The slot verdict in a judge reply; raises :class:`UnscoredError` when there is none."""
    obj = single_verdict(text, _slot_verdict)
    raw = obj.get("verdict")
    if not isinstance(raw, str):
        raise UnscoredError('the reply has no string \'verdict\' (expected "A", "B" or "tie")', raw_reply=text)
    verdict = _VERDICT_WORDS.get(raw.strip().strip("[]").strip().lower())
    if verdict is None:
        raise UnscoredError(f'verdict {raw!r} is not "A", "B" or "tie"', raw_reply=text)
    justification = obj.get("justification")
    return SlotJudgment(verdict=verdict, justification=justification if isinstance(justification, str) else "")
