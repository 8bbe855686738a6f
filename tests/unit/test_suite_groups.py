"""Groups of suite cases (``Case.group``) and the aggregate threshold each group gets (``AggregateCheck.for_group``)."""

from __future__ import annotations

from pytest_llmjudge.stats.grouping import MISSING
from pytest_llmjudge.suite.aggregate import ScoredValue, compute_rows
from pytest_llmjudge.suite.expressions import parse_aggregate
from pytest_llmjudge.suite.model import AggregateCheck, Case

FIELDS = ("language", "task")


def _case(case_id: str, language: str, **metadata: str) -> Case:
    return Case(suite="s", id=case_id, language=language, output="x", metadata=metadata)


def test_a_case_field_or_metadata_key_names_the_group_and_a_missing_one_is_visible() -> None:
    assert _case("a", "hi", task="qa").group(FIELDS).name == "hi-task=qa"
    assert _case("a", "hi").group(FIELDS).name == f"hi-task={MISSING}"
    assert _case("a", "hi", task="qa").group(("language",)).name == "hi"
    assert _case("a", "hi").group(("language", "id")).name == "hi-id=a"


def test_per_group_beats_per_language_which_applies_to_every_group_of_its_language() -> None:
    check = AggregateCheck(
        spec=parse_aggregate("mean(task_quality) >= 1.5"),
        overrides={"bn": (">=", 1.0)},
        group_overrides={"hi-task=qa": (">=", 1.9)},
        group_by=FIELDS,
    )
    cases = [_case("1", "hi", task="qa"), _case("2", "hi", task="summary"), _case("3", "bn", task="qa")]
    thresholds = {group.name: check.for_group(group).value for group in check.groups(cases)}
    assert thresholds == {"bn-task=qa": 1.0, "hi-task=qa": 1.9, "hi-task=summary": 1.5}


def test_rows_are_keyed_by_group_and_the_all_row_takes_every_case() -> None:
    spec = parse_aggregate("mean(task_quality) >= 1.5")
    values = [
        ScoredValue("hi", 2.0, True, group="hi-task=qa"),
        ScoredValue("hi", 1.0, True, group="hi-task=qa"),
        ScoredValue("hi", 2.0, True, group="hi-task=summary"),
    ]
    rows = compute_rows({"hi-task=qa": spec.with_threshold(">=", 1.6)}, spec, values)
    assert [(row.language, row.n, row.value, row.passed) for row in rows] == [
        ("hi-task=qa", 2, 1.5, False),
        ("hi-task=summary", 1, 2.0, True),
        ("all", 3, 5 / 3, True),
    ]
    # Without group names, rows are per language, as before grouping existed.
    assert [row.language for row in compute_rows({}, spec, [ScoredValue("hi", 2.0, True)])] == ["hi", "all"]
