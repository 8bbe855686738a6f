"""RAG metrics end to end against the loopback judge: faithfulness (two chained calls per case),
context precision and recall (one call), answer_relevance (a rubric). The scripted replies read
the framed texts of each prompt and answer in the case's language (Hindi claims for a Hindi
answer); scores are checked against hand-computed values, and reports carry the claims."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.testing import LoopbackServer, ReceivedRequest
from pytest_llmjudge.testing.scripted import read_prompt

_SPLIT = re.compile(r"(?<=[।.!?])\s+")


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SPLIT.split(text) if part.strip()]


@dataclass
class RagJudge:
    """Answers the RAG prompts: claims are the answer's sentences (in its own language, as the
    prompt asks), and a claim, passage or statement is supported when a passage contains it."""

    override: Callable[[str, dict[str, str]], str | None] | None = None
    kinds: list[str] = field(default_factory=list)

    def __call__(self, request: ReceivedRequest) -> str:
        prompt = read_prompt(request.system, request.last_user_text)
        texts = prompt.texts
        passages = [body for title, body in texts.items() if title.startswith("Context passage")]
        if '{"claims"' in prompt.skeleton:
            kind = "claims"
        elif '"claim": 1' in prompt.skeleton:
            kind = "support"
        elif '"passage": 1' in prompt.skeleton:
            kind = "usefulness"
        else:
            kind = "attribution"
        self.kinds.append(kind)
        if self.override is not None:
            scripted = self.override(kind, texts)
            if scripted is not None:
                return scripted
        if kind == "claims":
            return json.dumps({"claims": sentences(texts["Answer"])}, ensure_ascii=False)
        if kind == "support":
            claims = [body for title, body in texts.items() if title.startswith("Claim ")]
            verdicts = [
                {
                    "claim": n,
                    "reason": "संदर्भ में है" if any(c in p for p in passages) else "संदर्भ में नहीं",
                    "supported": any(c in p for p in passages),
                }
                for n, c in enumerate(claims, 1)
            ]
            return json.dumps({"verdicts": verdicts}, ensure_ascii=False)
        if kind == "usefulness":
            reference = sentences(texts["Reference answer"])
            verdicts = [
                {"passage": n, "reason": "", "useful": any(s in p for s in reference)}
                for n, p in enumerate(passages, 1)
            ]
            return json.dumps({"verdicts": verdicts}, ensure_ascii=False)
        statements = [
            {"statement": s, "reason": "", "attributed": any(s in p for p in passages)}
            for s in sentences(texts["Reference answer"])
        ]
        return json.dumps({"statements": statements}, ensure_ascii=False)


CONTEXT = ["ताजमहल आगरा में है। यह सफ़ेद संगमरमर से बना है।", "शाहजहाँ ने इसे बनवाया।"]


def rag_suite(base_url: str, cases: str, asserts: str, provider: str = "openai") -> str:
    tool = ", structured_output: tool" if provider == "anthropic" else ""
    return f"""\
suite: rag
judge: {{provider: {provider}, model: loopback-judge, base_url: "{base_url}"{tool}}}
cases:
{cases}
assert:
{asserts}
"""


HINDI_CASES = f"""\
  - id: hi-faithful
    language: hi
    input: "ताजमहल के बारे में बताइए।"
    output: "ताजमहल आगरा में है। शाहजहाँ ने इसे बनवाया। यह 1700 में बना।"
    context: {json.dumps(CONTEXT, ensure_ascii=False)}
  - id: hi-unfaithful
    language: hi
    input: "ताजमहल कहाँ है?"
    output: "ताजमहल दिल्ली में है। यह लाल पत्थर से बना है।"
    context: {json.dumps(CONTEXT, ensure_ascii=False)}
"""


def report_cases(pytester: pytest.Pytester, name: str = "r.json") -> dict[tuple[str, str], dict[str, Any]]:
    document = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return {(record["case"], record["metric"]): record for record in document["cases"]}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_faithfulness_decomposes_then_verifies_and_reports_the_claims(pytester: pytest.Pytester, provider: str) -> None:
    judge = RagJudge()
    with LoopbackServer(responder=judge) as server:
        base_url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
        pytester.makefile(".yaml", suite=rag_suite(base_url, HINDI_CASES, "  - faithfulness >= 0.6", provider))
        first = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json", "--llmjudge-report=html:r.html")
        first.assert_outcomes(passed=1, failed=1)
        assert sorted(judge.kinds) == ["claims", "claims", "support", "support"], "two chained calls per case"
        if provider == "anthropic":
            assert all(r.forced_tool for r in server.requests), "structured output: Anthropic's forced tool"
        records = report_cases(pytester)
        faithful = records[("hi-faithful", "faithfulness")]
        assert faithful["score"] == pytest.approx(2 / 3)
        assert faithful["detail"]["claims"] == [
            {"claim": "ताजमहल आगरा में है।", "supported": True, "reason": "संदर्भ में है"},
            {"claim": "शाहजहाँ ने इसे बनवाया।", "supported": True, "reason": "संदर्भ में है"},
            {"claim": "यह 1700 में बना।", "supported": False, "reason": "संदर्भ में नहीं"},
        ]
        assert (faithful["detail"]["supported"], faithful["detail"]["total"]) == (2, 3)
        assert records[("hi-unfaithful", "faithfulness")]["score"] == 0.0
        first.stdout.fnmatch_lines(
            [
                "*FAILED: hi-unfaithful [[]hi[]] faithfulness = 0, expected >= 0.6*",
                "  claims:",
                "    [[]not supported[]] ताजमहल दिल्ली में है। (संदर्भ में नहीं)",
            ]
        )
        html = (pytester.path / "r.html").read_text(encoding="utf-8")
        assert "judged items" in html and "not supported" in html

        requests = len(server.requests)
        second = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r2.json")
        second.assert_outcomes(passed=1, failed=1)
        assert len(server.requests) == requests, "both steps come from the cache on a re-run"
        assert report_cases(pytester, "r2.json")[("hi-faithful", "faithfulness")]["cached"] is True


def test_no_claims_and_no_context_are_unscored_with_their_reason(pytester: pytest.Pytester) -> None:
    judge = RagJudge(override=lambda kind, texts: '{"claims": []}' if kind == "claims" else None)
    cases = f"""\
  - {{id: greeting, language: hi, input: "नमस्ते", output: "नमस्ते!", context: {json.dumps(CONTEXT, ensure_ascii=False)}}}
  - {{id: no-context, language: hi, input: "ताजमहल कहाँ है?", output: "ताजमहल आगरा में है।"}}
"""
    with LoopbackServer(responder=judge) as server:
        pytester.makefile(".yaml", suite=rag_suite(server.openai_base_url, cases, "  - faithfulness >= 0.5"))
        result = pytester.runpytest("--llmjudge", "-rf")
        assert judge.kinds == ["claims"], "no claims: no verification call; no context: no call at all"
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "UNSCORED: greeting [[]hi[]] faithfulness = -, expected >= 0.5",
            "*reason: *faithfulness is undefined: the judge found no claims in the output",
            "UNSCORED: no-context [[]hi[]] faithfulness = -, expected >= 0.5",
            "*reason: *faithfulness needs context passages, but the case has none (the case's 'context' field)",
        ]
    )


def test_disagreeing_verdicts_are_re_asked_then_unscored_with_the_raw_reply(pytester: pytest.Pytester) -> None:
    forged = (
        '{"verdicts": [{"claim": 1, "reason": "", "supported": true}, {"claim": 1, "reason": "", "supported": false}]}'
    )
    judge = RagJudge(override=lambda kind, texts: forged if kind == "support" else None)
    case = (
        f'  - {{id: c, language: hi, output: "ताजमहल आगरा में है।", context: {json.dumps(CONTEXT, ensure_ascii=False)}}}\n'
    )
    with LoopbackServer(responder=judge) as server:
        pytester.makefile(".yaml", suite=rag_suite(server.openai_base_url, case, "  - faithfulness >= 0.5"))
        result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    result.assert_outcomes(failed=1)
    assert judge.kinds == ["claims", "support", "support", "support"], "two re-asks after the first reply"
    record = report_cases(pytester)[("c", "faithfulness")]
    assert record["score"] is None
    assert "2 verdicts that disagree on claim 1" in record["unscored_reason"]
    assert record["raw_reply"] == forged
    assert record["detail"]["claims"] == [{"claim": "ताजमहल आगरा में है।"}]


def test_context_precision_recall_and_answer_relevance(pytester: pytest.Pytester) -> None:
    judge = RagJudge()
    scores: list[str] = []

    def relevance(request: ReceivedRequest) -> str:
        if "## Metrics" in request.last_user_text:  # the answer_relevance rubric's prompt
            scores.append(read_prompt(request.system, request.last_user_text).texts["Input"])
            return '{"answer_relevance": {"justification": "पूरा उत्तर", "score": 2}}'
        return judge(request)

    passages = ["मौसम आज अच्छा है।", "ताजमहल आगरा में है।", "शाहजहाँ ने इसे बनवाया।"]
    cases = f"""\
  - id: hi-rag
    language: hi
    input: "ताजमहल कहाँ है और किसने बनवाया?"
    output: "ताजमहल आगरा में है।"
    reference: "ताजमहल आगरा में है। शाहजहाँ ने इसे बनवाया। यह 1653 में पूरा हुआ।"
    context: {json.dumps(passages, ensure_ascii=False)}
"""
    asserts = "  - context_precision >= 0.5\n  - context_recall >= 0.5\n  - answer_relevance >= 2\n"
    with LoopbackServer(responder=relevance) as server:
        pytester.makefile(".yaml", suite=rag_suite(server.openai_base_url, cases, asserts))
        result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=3)
    records = report_cases(pytester)
    # Useful at ranks 2 and 3: (1/2 + 2/3) / 2.
    assert records[("hi-rag", "context_precision")]["score"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert [p["useful"] for p in records[("hi-rag", "context_precision")]["detail"]["passages"]] == [False, True, True]
    # Two of the reference's three statements are in the passages.
    assert records[("hi-rag", "context_recall")]["score"] == pytest.approx(2 / 3)
    assert records[("hi-rag", "context_recall")]["detail"]["attributed"] == 2
    assert records[("hi-rag", "answer_relevance")]["score"] == 2
    assert scores == ["ताजमहल कहाँ है और किसने बनवाया?"]


def test_context_precision_without_a_reference_names_the_field(pytester: pytest.Pytester) -> None:
    judge = RagJudge()
    case = f'  - {{id: c, language: hi, input: "q", output: "o", context: {json.dumps(CONTEXT, ensure_ascii=False)}}}\n'
    with LoopbackServer(responder=judge) as server:
        pytester.makefile(".yaml", suite=rag_suite(server.openai_base_url, case, "  - context_precision >= 0.5"))
        result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    assert judge.kinds == []
    result.stdout.fnmatch_lines(
        ["*context_precision needs a reference, but the case has none (the case's 'reference' field)*"]
    )


def test_a_rag_suite_without_a_judge_key_is_skipped_when_not_required(pytester: pytest.Pytester) -> None:
    case = f'  - {{id: c, language: hi, output: "o", context: {json.dumps(CONTEXT, ensure_ascii=False)}}}\n'
    pytester.makefile(
        ".yaml",
        suite=f"suite: rag\njudge: {{provider: openai, required: false}}\ncases:\n{case}assert:\n  - faithfulness >= 0.5\n",
    )
    result = pytester.runpytest("--llmjudge", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs a live judge*"])


EXAMPLES = Path(__file__).resolve().parents[2] / "example_suites"


def test_the_live_rag_example_is_scored_case_for_case_against_the_loopback_judge(pytester: pytest.Pytester) -> None:
    judge = RagJudge()

    def respond(request: ReceivedRequest) -> str:
        if "## Metrics" in request.last_user_text:
            return '{"answer_relevance": {"justification": "ok", "score": 2}}'
        return judge(request)

    text = (EXAMPLES / "live_judge_rag.yaml").read_text(encoding="utf-8")
    with LoopbackServer(responder=respond) as server:
        pointed = text.replace("  provider: openai\n", f'  provider: openai\n  base_url: "{server.openai_base_url}"\n')
        assert pointed != text
        pytester.makefile(".yaml", suite=pointed)
        pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    records = report_cases(pytester)
    assert len(records) == 8 and all(record["score"] is not None for record in records.values()), records
    assert sorted(set(judge.kinds)) == ["attribution", "claims", "support", "usefulness"]


def test_the_spend_cap_stops_the_second_step_and_the_case_is_not_judged(pytester: pytest.Pytester) -> None:
    judge = RagJudge()
    case = (
        f'  - {{id: c, language: hi, output: "ताजमहल आगरा में है।", context: {json.dumps(CONTEXT, ensure_ascii=False)}}}\n'
    )
    with LoopbackServer(responder=judge) as server:
        pytester.makefile(".yaml", suite=rag_suite(server.openai_base_url, case, "  - faithfulness >= 0.5"))
        result = pytester.runpytest("--llmjudge", "--llmjudge-max-calls=1", "-rf")
    assert judge.kinds == ["claims"], "the verification call would pass the cap: not sent"
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*faithfulness*not judged: *"])
