"""Selecting suite items: ``--llmjudge-language``, suite and case ``tags`` with ``-m``, ``--lf``/``--ff``.

Every suite here carries recorded scores, so no judge is called.
"""

from __future__ import annotations

import json

import pytest

SUITE = """\
suite: sel
tags: [nightly]
assert: [task_quality >= 1]
aggregate: [mean(task_quality) >= 1.5]
cases:
  - {id: hi-1, language: hi, output: x, recorded: {task_quality: 2}, tags: [smoke]}
  - {id: hi-2, language: hi, output: x, recorded: {task_quality: 2}}
  - {id: ta-1, language: ta, output: x, recorded: {task_quality: 2}, tags: [smoke, math]}
  - {id: ship-1, language: de, output: x, recorded: {task_quality: 0}}
"""


def test_language_filter_keeps_only_items_of_those_languages(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    result = pytester.runpytest("--llmjudge", "--llmjudge-language", "hi", "-v", "-p", "no:randomly")
    # hi-1, hi-2 and the hi aggregate; ta, de (ship-1 too, which "-k hi" would match) and "all" deselected.
    result.assert_outcomes(passed=3, deselected=5)
    result.stdout.fnmatch_lines(["*suite.yaml::hi-1*PASSED*", "*suite.yaml::mean(task_quality)[[]hi[]] PASSED*"])
    result.stdout.no_fnmatch_line("*ship-1*")
    result.stdout.no_fnmatch_line("*[[]all[]]*")


def test_language_filter_from_the_environment_keeps_all_row_when_every_language_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    monkeypatch.setenv("LLMJUDGE_LANGUAGE", "hi,ta,de")
    result = pytester.runpytest("--llmjudge", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=6, failed=2)  # ship-1 fails its floor, and so does de's aggregate
    result.stdout.fnmatch_lines(["*suite.yaml::mean(task_quality)[[]all[]] PASSED*"])


def test_bad_language_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    result = pytester.runpytest("--llmjudge", "--llmjudge-language", "hi,,ta")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmjudge-language must be comma-separated language codes*"])


def test_tags_select_with_dash_m_under_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    result = pytester.runpytest("--llmjudge", "--strict-markers", "-m", "smoke and not math", "-v")
    result.assert_outcomes(passed=1, deselected=7)
    result.stdout.fnmatch_lines(["*suite.yaml::hi-1*PASSED*"])
    # The suite-level tag marks every item of the suite, aggregates included.
    result = pytester.runpytest("--llmjudge", "--strict-markers", "-m", "nightly", "-p", "no:randomly")
    result.assert_outcomes(passed=6, failed=2)


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ("[smoke, hi-fi]", "tag 'hi-fi' must be a name like smoke"),
        ("[skip]", "tag 'skip' is one of pytest's own markers"),
    ],
)
def test_bad_tags_are_reported_with_file_and_line(pytester: pytest.Pytester, tags: str, message: str) -> None:
    pytester.makefile(
        ".yaml",
        suite=f"suite: bad\nassert: [task_quality >= 1]\ncases:\n"
        f"  - {{id: a, language: hi, output: x, recorded: {{task_quality: 2}}}}\n"
        f"  - {{id: b, language: hi, output: x, recorded: {{task_quality: 2}}, tags: {tags}}}\n",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*suite.yaml:5*{message}*"])


def _calibration(pytester: pytest.Pytester) -> None:
    """A calibration set whose hi gate fails: the recorded judge always says 2, humans say 1 on a quarter."""
    records = [
        {
            "id": f"hi-{i:02d}",
            "language": "hi",
            "output": "x",
            "human": {"linguistic_acceptability": {"a1": 1 if i % 4 == 0 else 2, "a2": 1 if i % 4 == 0 else 2}},
            "recorded": {"linguistic_acceptability": {"score": 2, "judge": "scripted"}},
        }
        for i in range(12)
    ]
    (pytester.path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    pytester.makefile(".yaml", cal="calibration: c\nitems_file: items.jsonl\ngate: {threshold: 0.7, min_items: 10}\n")


def test_last_failed_and_failed_first_select_and_order_suite_items(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    _calibration(pytester)
    first = pytester.runpytest("--llmjudge", "-p", "no:randomly")
    first.assert_outcomes(passed=6, failed=3)  # ship-1, de's aggregate and the hi gate
    failed = [
        "cal.yaml::agreement[hi-linguistic_acceptability]",
        "suite.yaml::ship-1[task_quality]",
        "suite.yaml::mean(task_quality)[de]",
    ]

    result = pytester.runpytest("--llmjudge", "--lf", "-v", "-p", "no:randomly")
    result.assert_outcomes(failed=3)  # and nothing else ran
    result.stdout.fnmatch_lines(["run-last-failure: rerun previous 3 failures"])
    ran = [line.split(" ")[0] for line in result.outlines if line.endswith("%]") and " FAILED " in line]
    assert sorted(ran) == sorted(failed)
    result.stdout.no_fnmatch_line("*known failures not in selected tests*")

    result = pytester.runpytest("--llmjudge", "--ff", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=6, failed=3)
    outcomes = [line.split(" ")[1] for line in result.outlines if line.endswith("%]")]
    assert outcomes[:3] == ["FAILED"] * 3 and set(outcomes[3:]) == {"PASSED"}


def test_language_filter_covers_calibration_gates_and_keeps_invalid_files(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE, broken="suite: broken\ncases: []\n")
    _calibration(pytester)
    result = pytester.runpytest("--llmjudge", "--llmjudge-language", "de", "-v", "-p", "no:randomly")
    # de's case and aggregate run (both fail), the hi gate is deselected, the broken suite still reports.
    result.assert_outcomes(failed=3, deselected=7)
    result.stdout.fnmatch_lines(["*broken.yaml::suite-error FAILED*"])
    result.stdout.no_fnmatch_line("*agreement*")
