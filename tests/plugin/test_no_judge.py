"""No usable judge: skipped on a developer's machine, a failing run in CI, and always counted in the summary."""

from __future__ import annotations

import pytest

NEEDS_KEY = """\
suite: needs-key
judge: {provider: openai, model: gpt-4o-mini%s}
cases:
  - {id: a, language: fr, output: "Bonjour !", reference: "Bonjour !"}
  - {id: b, language: fr, output: "Salut", reference: "Salut"}
assert: [linguistic_acceptability >= 1, chrf >= 50]
"""

CI_HEADLINE = [
    "llmjudge: 2 judge items could not run:",
    "  judge openai:gpt-4o-mini needs a live judge: set OPENAI_API_KEY*",
    "  In CI this fails the run; set llmjudge_require_judge=false (or --llmjudge-allow-no-judge) to skip them instead.",
]
LOCAL_HEADLINE = [
    "llmjudge: 2 judge items skipped, not judged:",
    "  judge openai:gpt-4o-mini needs a live judge: set OPENAI_API_KEY*",
    "  In CI (CI=true) they would fail the run.",
]


def _suite(pytester: pytest.Pytester, judge_extra: str = "") -> None:
    pytester.makefile(".yaml", suite=NEEDS_KEY % judge_extra)


def test_in_ci_a_run_without_a_judge_fails_with_one_headline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    _suite(pytester)
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=2)  # the chrf items still run
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(CI_HEADLINE)
    assert sum("judge items could not run" in line for line in result.outlines) == 1
    result.stdout.no_fnmatch_line("*Traceback*")


def test_locally_the_items_are_skipped_and_the_summary_counts_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "false")  # a false word is no CI
    _suite(pytester)
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, skipped=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(LOCAL_HEADLINE)  # also with -q


@pytest.mark.parametrize(
    ("args", "env", "ini"),
    [
        (["--llmjudge-allow-no-judge"], {}, ""),
        ([], {"LLMJUDGE_REQUIRE_JUDGE": "false"}, ""),
        ([], {}, "[pytest]\nllmjudge_require_judge = false\n"),
    ],
    ids=["flag", "env", "ini"],
)
def test_in_ci_the_opt_out_skips(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str], ini: str
) -> None:
    monkeypatch.setenv("CI", "true")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if ini:
        pytester.makeini(ini)
    _suite(pytester)
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=2, skipped=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["llmjudge: 2 judge items skipped, not judged:", "  *they are skipped."])


def test_a_suite_can_declare_its_judge_optional_but_the_run_setting_wins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    _suite(pytester, ", required: false")
    optional = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider")
    optional.assert_outcomes(passed=2, skipped=2)
    assert optional.ret == pytest.ExitCode.OK
    optional.stdout.fnmatch_lines(
        ["llmjudge: 2 judge items skipped, not judged:", "  The suite sets judge.required: false, so they are skipped."]
    )

    required = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "--llmjudge-require-judge")
    required.assert_outcomes(passed=2, errors=2)
    required.stdout.fnmatch_lines(
        [
            "llmjudge: 2 judge items could not run:",
            "  The setting llmjudge_require_judge is true, so this fails the run.",
        ]
    )


def test_a_suite_that_requires_its_judge_fails_outside_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(pytester, ", required: true")
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(["*The suite sets judge.required: true, so this fails the run.*"])


def test_an_unknown_provider_fails_in_ci(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    _suite(pytester)
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "--llmjudge-provider", "nonexistent")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        ["llmjudge: 2 judge items could not run:", "  judge *unknown judge provider 'nonexistent'*"]
    )


@pytest.mark.parametrize("ci", [True, False], ids=["ci", "local"])
def test_the_fixture_follows_the_same_policy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: bool
) -> None:
    if ci:
        monkeypatch.setenv("CI", "true")
    pytester.makepyfile(
        test_judged="""
def test_one(llmjudge_judge):
    assert llmjudge_judge.score("Bonjour", rubric="linguistic_acceptability", language="fr").value >= 1

def test_two(llmjudge_judge):
    assert llmjudge_judge.score("Salut", rubric="linguistic_acceptability", language="fr").value >= 1
"""
    )
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider")
    if ci:
        result.assert_outcomes(errors=2)
        result.stdout.fnmatch_lines(["llmjudge: 2 judge items could not run:", "  In CI this fails the run*"])
    else:
        result.assert_outcomes(skipped=2)
        result.stdout.fnmatch_lines(["llmjudge: 2 judge items skipped, not judged:", "  *OPENAI_API_KEY*"])


def test_under_xdist_the_workers_items_are_counted(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    _suite(pytester)
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(CI_HEADLINE)
