"""Collection, selection and the plugin's inertness, through pytester."""

from __future__ import annotations

import subprocess
import sys

import pytest

RECORDED_SUITE = """\
suite: recorded
cases:
  - id: hi-1
    language: hi
    output: "नमस्ते, आप कैसे हैं?"
    recorded:
      linguistic_acceptability: {score: 2, justification: "natural"}
  - id: ja-1
    language: ja
    output: "こんにちは"
    recorded:
      linguistic_acceptability: 1
assert:
  - linguistic_acceptability >= 1
aggregate:
  - expr: mean(linguistic_acceptability) >= 1.6
    per_language: {ja: ">= 1"}
"""


def _comparable(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("plugins:") and " passed in " not in line]


def test_inert_without_the_flag(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=RECORDED_SUITE)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    with_plugin = pytester.runpytest("-v", "-p", "no:cacheprovider")
    without_plugin = pytester.runpytest("-v", "-p", "no:cacheprovider", "-p", "no:llmjudge")
    with_plugin.assert_outcomes(passed=1)
    assert _comparable(with_plugin.outlines) == _comparable(without_plugin.outlines)
    assert not (pytester.path / ".llmjudge_cache").exists()


def test_without_the_flag_no_heavy_module_is_imported(pytester: pytest.Pytester) -> None:
    """Every pytest run of a project with the plugin installed loads it: pydantic, numpy, yaml
    and the SDKs wait for --llmjudge (the report plugin's models alone were 0.11 s of start-up)."""
    pytester.makepyfile(
        "import sys\n"
        "HEAVY = {'pydantic', 'numpy', 'scipy', 'yaml', 'openai', 'anthropic', 'httpx', 'httpx2'}\n"
        "def test_plain():\n"
        "    assert sorted(m for m in sys.modules if m.split('.')[0] in HEAVY) == []\n"
    )
    # A fresh interpreter: this one has all of them loaded already.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]


def test_a_script_that_imports_the_package_before_pytest_main_gets_no_rewrite_warning(
    pytester: pytest.Pytester,
) -> None:
    """docs/judges.md's offline script imports ``pytest_llmjudge.testing`` and then calls ``pytest.main``:
    pytest marks the plugin's package for assertion rewriting, finds it already imported and warned
    ("Module already imported so cannot be rewritten") in every such run. This process has imported it too."""
    pytester.makefile(".yaml", suite=RECORDED_SUITE)
    result = pytester.runpytest_inprocess("--llmjudge", "-W", "error::pytest.PytestAssertRewriteWarning", "-q")
    result.assert_outcomes(passed=4, failed=1)  # the suite's own verdicts (its all-row mean is 1.5 < 1.6)


def test_recorded_suite_collects_cases_and_aggregates(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=RECORDED_SUITE)
    result = pytester.runpytest("--llmjudge", "-v")
    result.stdout.fnmatch_lines(
        [
            "suite.yaml::hi-1[[]linguistic_acceptability[]] PASSED*",
            "suite.yaml::ja-1[[]linguistic_acceptability[]] PASSED*",
            "suite.yaml::mean(linguistic_acceptability)[[]hi[]] PASSED*",
            "suite.yaml::mean(linguistic_acceptability)[[]ja[]] PASSED*",
            "suite.yaml::mean(linguistic_acceptability)[[]all[]] FAILED*",
        ]
    )
    result.assert_outcomes(passed=4, failed=1)
    assert result.ret == 1


def test_yaml_without_suite_key_is_ignored(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", config="name: not a suite\nsteps: [1, 2]\n")
    result = pytester.runpytest("--llmjudge")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_other_yaml_with_suite_words_is_ignored(pytester: pytest.Pytester) -> None:
    # Only a file with suite sections *and* checks, but no 'suite:' key, is taken for a broken suite.
    pytester.makefile(".yaml", workflow="name: ci\ncases: [unit, e2e]\n", nested="jobs:\n  suite: nightly\n")
    result = pytester.runpytest("--llmjudge")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_a_utf16_suite_from_powershell_is_collected_and_can_fail(pytester: pytest.Pytester) -> None:
    text = RECORDED_SUITE.replace("mean(linguistic_acceptability) >= 1.6", "mean(linguistic_acceptability) >= 1.9")
    (pytester.path / "suite.yaml").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=4, failed=1)  # the mean over all languages, 1.5, is below 1.9


def test_a_misspelt_suite_key_fails_instead_of_being_skipped(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=RECORDED_SUITE.replace("suite: recorded", "suit: recorded"))
    result = pytester.runpytest("--llmjudge", "-rN")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["invalid suite: *suite.yaml:1: unknown field 'suit'*", "  hint: did you mean 'suite'?"]
    )


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("hi-1", ["hi-1[linguistic_acceptability]"]),
        ("ja", ["ja-1[linguistic_acceptability]", "mean(linguistic_acceptability)[ja]"]),
        ("aggregate and hi", ["mean(linguistic_acceptability)[hi]"]),
        (
            "linguistic_acceptability and not aggregate",
            ["hi-1[linguistic_acceptability]", "ja-1[linguistic_acceptability]"],
        ),
    ],
)
def test_k_selects_by_case_metric_and_language(pytester: pytest.Pytester, expression: str, selected: list[str]) -> None:
    pytester.makefile(".yaml", suite=RECORDED_SUITE)
    result = pytester.runpytest("--llmjudge", "--collect-only", "-q", "-k", expression)
    collected = sorted(line.split("::", 1)[1] for line in result.outlines if line.startswith("suite.yaml::"))
    assert collected == sorted(selected)


def test_invalid_suite_is_reported_with_file_and_line_and_others_still_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", good=RECORDED_SUITE)
    pytester.makefile(
        ".yaml",
        bad="""\
suite: bad
cases:
  - id: a
    language: en
    output: hi
    asert: ["x >= 1"]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        ["*invalid suite: *bad.yaml:6: cases[[]0[]]: unknown field 'asert'*", "*hint: did you mean 'assert'?*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_threshold_on_undefined_metric_names_the_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: typo
cases:
  - id: a
    language: en
    output: hello
    recorded: {linguistic_acceptability: 2}
assert:
  - linguistic_acceptability >= 1
  - lingustic_acceptability >= 1
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(
        [
            "*suite.yaml:9: threshold on undefined metric 'lingustic_acceptability'*",
            "*did you mean 'linguistic_acceptability'?*",
        ]
    )


def test_help_lists_options_in_llmjudge_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*LLM-judge evaluation suites*",
            "*--llmjudge *",
            "*--llmjudge-concurrency*",
            "*--llmjudge-cache=*",
            "*--llmjudge-base-url*",
        ]
    )


def test_bad_option_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=RECORDED_SUITE)
    result = pytester.runpytest("--llmjudge", "--llmjudge-concurrency=zero")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmjudge-concurrency must be a whole number*"])


def test_an_interrupt_while_importing_a_target_still_stops_the_run(pytester: pytest.Pytester) -> None:
    # Any other exception (SyntaxError, SystemExit, ...) fails only its suite (tests/hostile);
    # Ctrl-C must keep meaning "stop".
    pytester.makepyfile(interrupting_target="raise KeyboardInterrupt\n")
    pytester.makefile(
        ".yaml",
        suite="suite: interrupted\noutputs: {target: 'interrupting_target:f'}\n"
        "cases: [{id: c1, language: hi}]\nassert: ['chrf >= 0']\n",
    )
    # A subprocess: in-process, pytester hands the KeyboardInterrupt on to this session.
    result = pytester.runpytest_subprocess("--llmjudge")
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_suite_with_a_regression_section_is_collected_once(pytester: pytest.Pytester) -> None:
    """One File node per YAML file: a suite's regression items are collected with its own items,
    under the same node, not by a second collector of the same file."""
    pytester.makefile(".yaml", suite=RECORDED_SUITE + "regression: {baseline: missing}\n")
    result = pytester.runpytest("--llmjudge", "--collect-only", "-p", "no:randomly")
    files = [line.strip() for line in result.outlines if line.strip().startswith("<")]
    assert [line for line in files if "suite.yaml" in line] == ["<SuiteFile suite.yaml>"]
    items = [line.split(" ", 1)[1].rstrip(">") for line in files if not line.startswith(("<Dir", "<SuiteFile"))]
    # The suite's own items first, then its regression item (the baseline can't be read: a failing item).
    assert items[-1] == "regression[baseline]" and len(items) == len(set(items)) > 1
