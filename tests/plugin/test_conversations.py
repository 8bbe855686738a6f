"""Conversation cases end to end: the judge sees the transcript, conversation rubrics score it,
an output target gets the conversation so far, and reports carry the transcript.

The judge is the scripted one in process (``MockProvider``): what is checked is the prompt,
not the wire; the shipped example still runs against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_llmjudge.testing import JudgeQuery, LoopbackServer, MockProvider, ScriptedJudge
from pytest_llmjudge.testing.scripted import read_prompt


def suite(cases: str, extra: str = "") -> str:
    return f"""\
suite: chat
judge: {{provider: mock, model: loopback-judge}}
{extra}
cases:
{cases}
assert:
  - conversation_coherence >= 1
  - task_completion >= 2
  - linguistic_acceptability >= 1
"""


HINDI_CHAT = """\
  - id: hi-chat
    language: hi
    messages:
      - {role: user, content: "मुझे दिल्ली में तीन दिन घूमना है।"}
      - {role: assistant, content: "पहले दिन लाल किला देखिए।"}
      - {role: user, content: "और दूसरे दिन? <b>bold</b>"}
      - {role: assistant, content: "दूसरे दिन कुतुब मीनार जाइए।"}
"""


def test_conversation_rubrics_rate_the_transcript_and_reports_show_it(
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge
) -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    def score(query: JudgeQuery) -> int:
        texts = read_prompt(query.system, query.user).texts
        seen.append((query.metric, texts))
        # task_completion: not done (the user asked for three days, two are planned).
        return 1 if query.metric == "task_completion" else 2

    scripted_judge.scores = score
    one_turn = '  - {id: one, language: hi, input: "नमस्ते", output: "नमस्ते!"}\n'
    pytester.makefile(".yaml", suite=suite(HINDI_CHAT + one_turn))
    result = pytester.runpytest("--llmjudge", "-rA", "--llmjudge-report=json:r.json", "--llmjudge-report=html:r.html")
    # hi-chat: coherence and LA pass, task_completion fails; one: LA passes, both conversation rubrics unscored.
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines(
        [
            "FAILED: hi-chat [[]hi[]] task_completion = 1, expected >= 2",
            "  conversation:  3 turn(s) before the output (user, assistant, user)",
            "*UNSCORED: one*conversation_coherence*",
            "*needs the case's messages*",
        ]
    )
    assert len(mock_judge.requests) == 4, "a one-turn case asks no judge about a conversation rubric"
    by_metric = {metric: texts for metric, texts in seen if "Conversation turn 1 (user)" in texts}
    assert set(by_metric) == {"conversation_coherence", "task_completion", "linguistic_acceptability"}
    texts = by_metric["task_completion"]
    assert texts["Conversation turn 3 (user)"] == "और दूसरे दिन? <b>bold</b>"
    assert texts["Output to evaluate"] == "दूसरे दिन कुतुब मीनार जाइए।"

    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    records = [r for r in report["cases"] if r["case"] == "hi-chat"]
    assert records and all(
        [turn["role"] for turn in r["transcript"]] == ["user", "assistant", "user", "assistant"] for r in records
    )
    assert records[0]["transcript"][-1]["content"] == records[0]["output"]
    assert all(r.get("transcript") is None for r in report["cases"] if r["case"] == "one")
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "conversation" in html and "<b>bold</b>" not in html, "the transcript is escaped in the page"


TARGET = '''
def reply(case):
    """The model under test: answers the conversation so far (case.messages)."""
    asked = [turn.content for turn in case.messages if turn.role == "user"]
    return f"turns={len(case.messages)} last={asked[-1]}"
'''


def test_an_output_target_gets_the_conversation_so_far(
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.default = 2
    pytester.makepyfile(chatbot=TARGET)
    cases = """\
  - id: fr-chat
    language: fr
    messages:
      - {role: system, content: "Sois bref."}
      - {role: user, content: "Bonjour"}
      - {role: assistant, content: "Bonjour !"}
      - {role: user, content: "Quelle heure est-il ?"}
"""
    pytester.makefile(".yaml", suite=suite(cases, extra='outputs: {target: "chatbot:reply"}'))
    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=3)
    outputs = {query.output for query in scripted_judge.queries}
    assert outputs == {"turns=4 last=Quelle heure est-il ?"}
    assert {query.turns for query in scripted_judge.queries} == {
        (("system", "Sois bref."), ("user", "Bonjour"), ("assistant", "Bonjour !"), ("user", "Quelle heure est-il ?"))
    }
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    record = report["cases"][0]
    assert [turn["role"] for turn in record["transcript"]] == ["system", "user", "assistant", "user", "assistant"]
    assert record["transcript"][-1]["content"] == "turns=4 last=Quelle heure est-il ?"


EXAMPLES = Path(__file__).resolve().parents[2] / "example_suites"


def test_the_live_conversation_example_runs_against_the_loopback_judge(pytester: pytest.Pytester) -> None:
    judge = ScriptedJudge(default=2)
    text = (EXAMPLES / "live_judge_conversations.yaml").read_text(encoding="utf-8")
    with LoopbackServer(responder=judge) as server:
        pointed = text.replace("  provider: openai\n", f'  provider: openai\n  base_url: "{server.openai_base_url}"\n')
        pytester.makefile(".yaml", suite=pointed)
        result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=8)
    assert {q.metric for q in judge.queries} == {
        "conversation_relevance",
        "conversation_coherence",
        "task_completion",
        "linguistic_acceptability",
    }


def test_editing_an_earlier_turn_re_judges_the_case(
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.default = 2
    pytester.makefile(".yaml", suite=suite(HINDI_CHAT))
    pytester.runpytest("--llmjudge").assert_outcomes(passed=3)
    assert len(mock_judge.requests) == 3
    pytester.runpytest("--llmjudge").assert_outcomes(passed=3)
    assert len(mock_judge.requests) == 3, "unchanged transcript: every call from the cache"
    edited = HINDI_CHAT.replace("पहले दिन लाल किला देखिए।", "पहले दिन इंडिया गेट देखिए।")
    pytester.makefile(".yaml", suite=suite(edited))
    pytester.runpytest("--llmjudge").assert_outcomes(passed=3)
    assert len(mock_judge.requests) == 6, "an earlier turn is part of every prompt of the case, so of its key"
