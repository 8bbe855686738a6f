"""Built-in rubrics that rate a whole conversation, not its last reply.

A conversation case (``messages:``) has an output under test, the assistant's last turn;
the METAL rubrics (``judges/rubrics.py``) rate that turn, with the turns before it shown to
the judge as the context it answered. The three rubrics here have ``target:
conversation``: the judge rates every assistant turn of the transcript, the last one
included. They are written for this project; what they look at is the usual split of
multi-turn evaluation (staying on what the user asked, not contradicting oneself over the
turns, finishing what the user came for), on a three-point scale like METAL's so that
thresholds read the same (``>= 1`` acceptable, ``2`` good):

=========================  =====  ==============================================
rubric                     scale  2 means
=========================  =====  ==============================================
conversation_relevance     0-2    every assistant turn answers the turn before it
conversation_coherence     0-2    the assistant is consistent with itself and with what
                                  the user said earlier
task_completion            0-2    by the end, what the user asked for is done
=========================  =====  ==============================================

Degenerate cases: they need ``messages`` (``needs``): a one-turn case is unscored with
that reason, without a judge call. A system turn is instructions to the assistant under
test, shown to the judge as part of the framed transcript (data, never instructions to the
judge); the rubrics ask whether the assistant followed it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_llmjudge.judges.rubrics import Rubric


def _conversation_rubric(
    name: str, simple: tuple[str, str], detailed: str, scores: Mapping[int, tuple[str, tuple[str, ...]]]
) -> Rubric:
    description, scoring = simple
    return Rubric(
        name=name,
        description=description,
        scale=tuple(sorted(scores)),
        scoring=scoring,
        score_descriptions={score: meaning for score, (meaning, _) in scores.items()},
        needs=frozenset({"messages"}),
        detailed_description=detailed
        + " Rate the whole conversation: every assistant turn, the last one included. For each score below you "
        "get its meaning and typical reasons; the reasons are examples, not a complete list.",
        score_reasons={score: reasons for score, (_, reasons) in scores.items()},
        target="conversation",
    )


CONVERSATION_RELEVANCE = _conversation_rubric(
    "conversation_relevance",
    (
        "Does every assistant turn respond to what the user had just said, given the conversation so far?",
        "0: several turns miss the point; 1: mostly relevant, one turn drifts or ignores part of a request; "
        "2: every turn is on point",
    ),
    "Conversation relevance checks that each assistant turn is an answer to the user turn before it, read in "
    "the light of everything said earlier (a short follow-up such as 'and in winter?' refers back). Padding, "
    "changing the subject, answering an earlier question again or ignoring part of a request lower it; style "
    "and correctness do not, unless they make a turn miss the point.",
    {
        0: (
            "Off the point.",
            (
                "Two or more assistant turns answer something the user did not ask.",
                "The assistant ignores a follow-up that only makes sense with the earlier turns.",
            ),
        ),
        1: (
            "Mostly relevant.",
            (
                "One turn drifts off topic or pads its answer with unrelated material.",
                "Part of a multi-part request is left unaddressed.",
            ),
        ),
        2: ("Every turn is on point.", ("Each assistant turn answers the turn before it, read in context.",)),
    },
)

CONVERSATION_COHERENCE = _conversation_rubric(
    "conversation_coherence",
    (
        "Is the assistant consistent over the conversation: with its own earlier turns, with facts and "
        "preferences the user gave, and with the system turn's instructions?",
        "0: contradicts itself or the user; 1: a lapse (forgets a detail, repeats itself); 2: fully consistent",
    ),
    "Conversation coherence checks that the conversation holds together. The assistant must not contradict "
    "what it said before without saying so, must remember what the user told it (names, numbers, constraints, "
    "preferences), must keep following a system turn's instructions, and must not repeat itself as if earlier "
    "turns had not happened. Judge consistency, not whether the facts are true.",
    {
        0: (
            "Incoherent.",
            (
                "The assistant contradicts one of its earlier answers without acknowledging it.",
                "A constraint the user stated (a budget, a date, a name) is ignored or changed later.",
                "The system turn's instructions are dropped part-way through.",
            ),
        ),
        1: (
            "A lapse.",
            (
                "A minor detail the user gave is forgotten, or an earlier answer is repeated needlessly.",
                "Terminology or tone shifts in a way that confuses, without contradicting anything.",
            ),
        ),
        2: ("Coherent.", ("Every turn is consistent with the earlier ones and with what the user said.",)),
    },
)

TASK_COMPLETION = _conversation_rubric(
    "task_completion",
    (
        "By the end of the conversation, has the assistant done what the user came for?",
        "0: not done; 1: partly done or done with something the user must still fix; 2: done",
    ),
    "Task completion looks at the user's goal over the whole conversation, as it was stated and refined in the "
    "user turns (a later turn may change or narrow it), and asks whether the assistant's turns, taken "
    "together, achieve it by the final turn. An honest explanation of why a goal can't be met counts as "
    "completion only when the goal really can't be met with what was given.",
    {
        0: (
            "Not done.",
            (
                "The final state leaves the user's goal unmet, or the assistant gave up without reason.",
                "The assistant asks for information the user already gave and stops there.",
            ),
        ),
        1: (
            "Partly done.",
            (
                "Some parts of the request are done, others are missing.",
                "The result needs corrections the user would have to make.",
            ),
        ),
        2: ("Done.", ("Every part of the goal, as refined over the turns, is achieved by the end.",)),
    },
)

CONVERSATION_RUBRICS: Mapping[str, Rubric] = {
    rubric.name: rubric for rubric in (CONVERSATION_RELEVANCE, CONVERSATION_COHERENCE, TASK_COMPLETION)
}
"""The built-in conversation rubrics by name."""
