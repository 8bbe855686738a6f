"""``answer_relevance``: a judge-rated rubric for RAG answers (does the answer address the question?).

RAGAS (Es et al., EACL 2024 demo, sec. 3) scores answer relevance without a rubric: an LLM
writes questions the answer would answer, and the score is their mean embedding cosine
similarity to the real question. Here the judge rates it directly on a 0-2 scale, like the
other rubrics (one call, planned, cached, per language); what it looks for is the same as
RAGAS's: an answer is relevant when it addresses the question directly and completely,
and loses relevance for missing parts and for redundant or off-topic material. Whether the
answer is *true* is not rated (that is ``faithfulness``'s and ``hallucinations``' job).

Degenerate cases: it needs the input (the question): a case without one is unscored with
that reason, without a judge call.
"""

from __future__ import annotations

from pytest_llmjudge.judges.rubrics import Rubric

ANSWER_RELEVANCE = Rubric(
    name="answer_relevance",
    description="Does the output address the question in the input, directly and completely, without "
    "off-topic or redundant material? Correctness is not rated here.",
    scale=(0, 1, 2),
    scoring="0: does not answer the question; 1: answers part of it, or buries the answer in off-topic or "
    "redundant text; 2: answers all of it, to the point",
    score_descriptions={
        0: "Does not answer the question (another question, a refusal without reason, only generalities).",
        1: "Partly relevant: a part of the question is left out, or the answer is padded with off-topic or "
        "repeated material.",
        2: "Answers every part of the question directly, with nothing beside the point.",
    },
    needs=frozenset({"input"}),
    detailed_description="Answer relevance asks how well the output addresses the question it was given, not "
    "whether what it says is true. Read the question, work out every part it asks, then check the output "
    "answers each part and stays on the question. Redundant repetition and unrelated material lower the score; "
    "so does answering a different or narrower question.",
)
