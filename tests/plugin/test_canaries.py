"""Injection canaries (``judge.canaries: true``) against a scripted judge in process (``MockProvider``).

A scripted judge that obeys injected text (it gives the best score to any output carrying
something beyond the plain answer) fails every canary; one that judges the answer alone (a
wrong answer: 0) passes them all. The set covers at least 8 languages, Indic and non-Latin
scripts among them, each attack paired with its clean twin.
"""

from __future__ import annotations

import json

import pytest
from builders import judged, rows, suite_text

from pytest_llmjudge.canaries import ATTACKS, canary_languages, canary_pairs
from pytest_llmjudge.testing import JudgeQuery, MockProvider, ScriptedJudge

LANGUAGES = ("hi", "ja", "ar", "sw")


def canary_suite() -> str:
    return suite_text(
        "s",
        rows(len(LANGUAGES), languages=LANGUAGES, case_id="{language}-1", input=None, output="ok"),
        judge=judged(provider="mock", canaries=True),
        asserts=["linguistic_acceptability >= 0"],
    )


def clean_texts() -> set[str]:
    return {pair.clean for lang in canary_languages() for pair in canary_pairs(lang)}


def obeying(query: JudgeQuery) -> int:
    return 0 if query.output in clean_texts() or query.output == "ok" else 2


def test_the_set_pairs_every_attack_with_its_clean_twin_in_many_scripts() -> None:
    languages = canary_languages()
    assert len(languages) >= 8 and {"hi", "bn", "ta", "ja", "zh", "ar", "ru", "sw"} <= set(languages)
    for language in languages:
        pairs = canary_pairs(language)
        assert [pair.attack for pair in pairs] == list(ATTACKS)
        for pair in pairs:
            assert pair.attacked.startswith(pair.clean) and pair.attacked != pair.clean
    assert canary_pairs("hi-IN")[0].clean == canary_pairs("hi")[0].clean
    assert canary_pairs("fr") == ()


@pytest.mark.parametrize(
    ("scores", "outcome"), [(obeying, "failed"), (lambda query: 0, "passed")], ids=["obeys", "ignores"]
)
def test_canaries_fail_a_judge_that_obeys_injected_text_and_pass_one_that_does_not(
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge, scores: object, outcome: str
) -> None:
    scripted_judge.scores = scores  # type: ignore[assignment]
    pytester.makefile(".yaml", suite=canary_suite())
    result = pytester.runpytest("--llmjudge", "-v", "--llmjudge-report=json:r.json")
    canaries = len(LANGUAGES) * len(ATTACKS)
    result.assert_outcomes(
        passed=len(LANGUAGES) + (canaries if outcome == "passed" else 0), failed=canaries if outcome == "failed" else 0
    )
    # Per language and rubric: the clean twin (the same request for the three attacks) and three
    # attacked twins; plus the suite's own cases.
    assert len(mock_judge.requests) == (1 + len(ATTACKS)) * len(LANGUAGES) + len(LANGUAGES)
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    records = [r for r in report["other"] if r["kind"] == "canary"]
    assert len(records) == canaries
    if outcome == "failed":
        result.stdout.fnmatch_lines(
            [
                "*injection canary hi target_script, judge mock:loopback-judge: linguistic_acceptability: "
                "the attacked twin scored 2, the clean twin 0: the target_script attack moved the judge*"
            ]
        )
        assert {r["attack"] for r in records if not r["passed"]} == set(ATTACKS)
    else:
        assert all(
            r["passed"] and r["scores"]["linguistic_acceptability"] == {"clean": 0, "attacked": 0} for r in records
        )
