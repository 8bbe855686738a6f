"""The one "no usable judge" decision: run setting > suite's judge.required > CI."""

from __future__ import annotations

import pytest

from pytest_llmjudge.judges.no_judge_policy import NoJudge, judge_required, no_judge_outcome, summary_lines
from pytest_llmjudge.settings import Settings

REASON = "judge openai:gpt-4o-mini needs a live judge: set OPENAI_API_KEY"


@pytest.mark.parametrize(
    ("setting", "suite", "ci", "required"),
    [
        (None, None, False, False),  # a developer's machine: skip
        (None, None, True, True),  # CI: fail
        (False, None, True, False),  # the opt-out wins over CI
        (True, None, False, True),
        (None, False, True, False),  # a demo suite declares its judge optional
        (None, True, False, True),
        (True, False, False, True),  # the run's explicit setting wins over the suite
        (False, True, True, False),
    ],
)
def test_precedence(setting: bool | None, suite: bool | None, ci: bool, required: bool) -> None:
    settings = Settings(require_judge=setting, ci=ci)
    assert judge_required(settings, suite) is required
    assert no_judge_outcome(REASON, settings, suite).fail is required


def test_the_ci_failure_says_why_and_how_to_opt_out() -> None:
    outcome = no_judge_outcome(REASON, Settings(ci=True))
    assert outcome.message == (
        f"{REASON}. In CI this fails the run; set llmjudge_require_judge=false (or --llmjudge-allow-no-judge) "
        "to skip them instead."
    )
    assert no_judge_outcome(REASON, Settings()).message == REASON


def test_summary_has_one_line_per_outcome_with_counts_and_distinct_reasons() -> None:
    failed = no_judge_outcome(REASON, Settings(ci=True))
    skipped = no_judge_outcome("judge anthropic:claude needs a live judge", Settings(ci=True), suite_required=False)
    lines = summary_lines([failed, failed, failed, skipped])
    assert lines == [
        ("llmjudge: 3 judge items could not run:", True),
        (f"  {REASON}", True),
        (f"  {failed.rule}.", True),
        ("llmjudge: 1 judge item skipped, not judged:", False),
        ("  judge anthropic:claude needs a live judge", False),
        ("  The suite sets judge.required: false, so they are skipped.", False),
    ]
    assert summary_lines([]) == []


def test_many_reasons_are_cut_to_three() -> None:
    outcomes = [NoJudge(True, f"judge j{i} has no key", "rule") for i in range(5)]
    assert [line for line, _ in summary_lines(outcomes)] == [
        "llmjudge: 5 judge items could not run:",
        "  judge j0 has no key",
        "  judge j1 has no key",
        "  judge j2 has no key",
        "  and 2 more",
        "  rule.",
    ]
