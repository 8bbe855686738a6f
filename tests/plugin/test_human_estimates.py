"""human_mean / human_pass_rate aggregates: labels on cases and in files, the estimate, its errors."""

from __future__ import annotations

import json

import builders
import pytest

from pytest_llmjudge.stats.prediction_powered import ppi_mean

# Per language: (judge score, human labels or None) of each case. The judge says 2 throughout in
# "hi"; the humans mostly say 1.
HI = [(2, [1, 1, 2]) if i % 3 == 0 else (2, [1]) for i in range(12)] + [(2, None)] * 8 + [(1, [0, 0])] * 2


def suite_text(rows: list[tuple[int, list[int] | None]], aggregate: str, head: str = "") -> str:
    cases = [
        {"id": f"c{index}", "language": "hi", "output": "x", "recorded": {"task_quality": score}}
        | ({"human": {"task_quality": labels}} if labels is not None else {})
        for index, (score, labels) in enumerate(rows)
    ]
    return builders.suite_text("humans", cases, head=head, asserts=(), aggregate=aggregate)


def _expected(rows: list[tuple[int, list[int] | None]]) -> tuple[float, float, float]:
    # The aggregate label: majority, else rounded mean; [1, 1, 2] -> 1, [0, 0] -> 0, [1] -> 1.
    labelled = [(score, max(set(labels), key=labels.count)) for score, labels in rows if labels is not None]
    result = ppi_mean(
        [y for _, y in labelled], [f for f, _ in labelled], [f for f, _ in rows], scale=(0.0, 2.0), student=True
    )
    assert result.estimate.ci_low is not None and result.estimate.ci_high is not None
    return result.estimate.value, result.estimate.ci_low, result.estimate.ci_high


def test_human_mean_fails_where_the_judge_mean_passes(pytester: pytest.Pytester) -> None:
    value, low, high = _expected(HI)
    aggregate = "  - mean(task_quality) >= 1.5\n  - lower(human_mean(task_quality)) >= 1.5"
    pytester.makefile(".yaml", suite=suite_text(HI, aggregate))
    result = pytester.runpytest("--llmjudge", "-rA", "--llmjudge-report=json:report.json")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "FAILED: humans: the native speakers' mean task_quality in hi: "
            f"lower(human_mean(task_quality)) = {low:.4g}*, expected >= 1.5",
            f"  estimate        {value:.3f} (95% CI {low:.3f} - {high:.3f}; prediction-powered, PPI++*",
            "  from            14 human-labelled of 22 judged cases",
            "  human only      *",
            f"  judge           1.909 (the judge's own value; estimated bias {1.909090909 - value:+.3f}, judge minus human)",
        ]
    )
    report = json.loads((pytester.path / "report.json").read_text())
    text = json.dumps(report)
    assert '"n_labelled": 14' in text and '"n_total": 22' in text


def test_too_few_labels_is_an_error_not_a_pass(pytester: pytest.Pytester) -> None:
    rows = [(2, [2])] * 4 + [(2, None)] * 10
    pytester.makefile(".yaml", suite=suite_text(rows, "  - human_mean(task_quality) >= 0"))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["ERROR: humans: * only 4 human-labelled case(s) in hi; human_mean() needs at least 5*"]
    )
    # min_labels moves the documented minimum.
    pytester.makefile(".yaml", suite=suite_text(rows, "  - expr: human_mean(task_quality) >= 0\n    min_labels: 4"))
    pytester.runpytest("--llmjudge").assert_outcomes(passed=2)
    pytester.makefile(".yaml", suite=suite_text(HI, "  - expr: human_mean(task_quality) >= 0\n    min_labels: 20"))
    pytester.runpytest("--llmjudge").assert_outcomes(failed=2)


def test_labels_file_csv_and_human_pass_rate(pytester: pytest.Pytester) -> None:
    rows = [(2, None)] * 20
    labels = ["id,metric,annotator,label"]
    # Ten labelled cases: 6 with label 0 (fails task_quality >= 1), 4 with label 2.
    for index in range(10):
        labels += [
            f"c{index},task_quality,a,{0 if index < 6 else 2}",
            f"c{index},task_quality,b,{0 if index < 6 else 2}",
        ]
    pytester.makefile(".csv", labels="\n".join(labels) + "\n")
    aggregate = "  - human_pass_rate(task_quality >= 1) >= 0.8\n  - pass_rate(task_quality >= 1) >= 0.8"
    pytester.makefile(".yaml", suite=suite_text(rows, aggregate, head="human_labels: labels.csv"))
    result = pytester.runpytest("--llmjudge", "-rA")
    result.assert_outcomes(passed=2, failed=2)
    # A constant judge carries no information: the estimate is the labels' own rate, 0.4.
    result.stdout.fnmatch_lines(["*human_pass_rate(task_quality >= 1) = 0.4, expected >= 0.8"])


def test_labels_file_naming_an_unknown_case_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", labels='{"id": "nope", "human": {"task_quality": [1]}}\n')
    pytester.makefile(
        ".yaml", suite=suite_text(HI, "  - human_mean(task_quality) >= 0", head="human_labels: labels.jsonl")
    )
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["*labels.jsonl:1*labels for case 'nope', which the suite does not have*"])


def test_a_label_off_the_scale_is_an_error(pytester: pytest.Pytester) -> None:
    rows = [(2, [2, 2, 5])] + [(2, None)]
    pytester.makefile(".yaml", suite=suite_text(rows, "  - human_mean(task_quality) >= 0"))
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["*human task_quality label 5 of case 'c0' is not on the scale [[]0, 1, 2[]]*"])


def test_the_pariksha_example(pytester: pytest.Pytester) -> None:
    """The judge's mean passes in all 8 languages; the human estimate fails in 7 and all (strict xfails)."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "example_suites" / "pariksha_human_estimates.yaml"
    result = pytester.runpytest("--llmjudge", str(example), "-p", "no:cacheprovider", "-rxX")
    result.assert_outcomes(passed=10, xfailed=8)
    result.stdout.fnmatch_lines(["XFAIL *human_mean(task_quality)[[]ta[]]*GPT-4's mean 1.86*"])


def test_xfail_must_name_a_row_of_the_suite(pytester: pytest.Pytester) -> None:
    aggregate = "  - expr: human_mean(task_quality) >= 0\n    xfail: {ta: known}"
    pytester.makefile(".yaml", suite=suite_text(HI, aggregate))
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["*suite.yaml:*xfail names 'ta', not a group, language or 'all' of this suite*"])


def test_the_fixture_gives_the_human_scale_estimate(pytester: pytest.Pytester, mock_judge, scripted_judge) -> None:  # type: ignore[no-untyped-def]
    """llmjudge_judge.human_estimate: the judge scores every text, the labelled ones rectify it."""
    scripted_judge.scores = lambda query: 1 if "weak" in query.output else 2
    pytester.makepyfile(
        """
from pytest_llmjudge.stats.prediction_powered import ppi_mean

OUTPUTS = [f"answer {i}" + (" weak" if i % 4 == 0 else "") for i in range(30)]
LABELLED = [(f"labelled {i}" + (" weak" if i % 3 == 0 else ""), [1, 1, 2] if i % 2 else 0) for i in range(12)]

def test_estimate(llmjudge_judge):
    result = llmjudge_judge.human_estimate(OUTPUTS, LABELLED, rubric="task_quality", language="ta")
    judge = [1.0 if "weak" in t else 2.0 for t, _ in LABELLED] + [1.0 if "weak" in t else 2.0 for t in OUTPUTS]
    labels = [1.0 if i % 2 else 0.0 for i in range(12)]
    expected = ppi_mean(labels, judge[:12], judge, scale=(0.0, 2.0), student=True)
    assert result == expected
    assert result.N == 42 and result.n == 12 and result.bias > 0.5
"""
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-provider=mock", "--llmjudge-model=loopback-judge")
    result.assert_outcomes(passed=1)
    assert len(mock_judge.requests) == 42


def test_judged_then_cached_scores(pytester: pytest.Pytester, mock_judge, scripted_judge) -> None:  # type: ignore[no-untyped-def]
    """A live judge's scores feed human_mean as recorded ones do, and a re-run reads them from the cache."""
    scripted_judge.scores = lambda query: 1 if "weak" in query.output else 2
    lines = [
        "suite: live-humans",
        "judge: {provider: mock, model: loopback-judge}",
        "cases:",
    ]
    for i in range(24):
        output = f"answer {i}" + (" weak" if i % 3 == 0 else "")
        human = f", human: {{task_quality: [{1 if i % 2 else 2}]}}" if i < 12 else ""
        lines.append(f'  - {{id: c{i}, language: ta, input: q{i}, output: "{output}"{human}}}')
    lines += ["aggregate:", "  - human_mean(task_quality) >= 1.8", "  - mean(task_quality) >= 1.5"]
    pytester.makefile(".yaml", suite="\n".join(lines) + "\n")
    first = pytester.runpytest("--llmjudge")
    first.assert_outcomes(passed=2, failed=2)
    assert len(mock_judge.requests) == 24
    first.stdout.fnmatch_lines(
        ["*from            12 human-labelled of 24 judged cases", "*judged by       mock:loopback-judge"]
    )
    second = pytester.runpytest("--llmjudge")
    second.assert_outcomes(passed=2, failed=2)
    assert len(mock_judge.requests) == 24, "the re-run reads the judge's scores from the cache"
