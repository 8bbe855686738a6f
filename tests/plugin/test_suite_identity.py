"""Suite identity and the plugin's writes, end to end (in-process pytester runs, recorded scores only).

* two files declaring one suite name: the second is an invalid suite naming both; the first runs;
* a suite whose own ``regression.baseline`` lacks it fails (``missing_suite: skip`` opts out);
* NFC applies to outputs files too (the corpus and the unit tests cover refused ids);
* a ``suite:`` supplied by a YAML merge key is collected; a symlink loop collects a suite once;
  a FIFO given as a path is named as a FIFO;
* report and baseline targets that are not regular files, or are inputs of the run, are a
  usage error before anything runs, and the target is left as it was;
* an ESC in a file name is escaped in the terminal and in JUnit, which stays valid.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import builders
import pytest
import xmlschema

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"


def suite(name: str, *, score: int = 2, ids: tuple[str, ...] = ("c1",), extra: str = "") -> str:
    cases = [
        {"id": case, "language": "hi", "output": "x", "recorded": {"linguistic_acceptability": score}} for case in ids
    ]
    return builders.suite_text(name, cases, head=extra, asserts=["linguistic_acceptability >= 2"])


def outcomes(result: pytest.RunResult) -> dict[str, tuple[str, str]]:
    return {
        report.nodeid: (report.outcome, report.longreprtext)
        for report in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
        if report.when == "call" or report.outcome != "passed"
    }


def test_two_files_with_one_suite_name_the_second_is_an_error_naming_both(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", a=suite("dup"), b=suite("dup", score=0), c=suite("other"))
    result = pytester.runpytest("--llmjudge", "-p", "no:randomly")
    seen = outcomes(result)
    assert seen["a.yaml::c1[linguistic_acceptability]"][0] == "passed"
    assert seen["c.yaml::c1[linguistic_acceptability]"][0] == "passed"
    outcome, text = seen["b.yaml::suite-error"]
    assert outcome == "failed"
    assert "b.yaml:1: suite: suite name 'dup' is also declared by" in text and "a.yaml" in text
    assert not any(node.startswith("b.yaml::c1") for node in seen)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_suite_names_are_compared_in_nfc_and_invisible_characters_are_refused(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", a=suite("caf\u00e9"), b=suite("cafe\u0301"), z=suite("zw\u200bsp"))
    seen = outcomes(pytester.runpytest("--llmjudge", "-p", "no:randomly"))
    assert seen["a.yaml::c1[linguistic_acceptability]"][0] == "passed"
    assert "suite name 'café' is also declared by" in seen["b.yaml::suite-error"][1]
    outcome, text = seen["z.yaml::suite-error"]
    assert outcome == "failed" and "z.yaml:1:" in text and "U+200B ZERO WIDTH SPACE" in text


def test_an_nfd_case_id_matches_its_nfc_outputs_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        s='suite: s\noutputs: {file: out.jsonl}\ncases:\n  - id: "cafe\u0301"\n    language: hi\n'
        "    reference: x\nassert:\n  - chrf >= 99\n",
    )
    (pytester.path / "out.jsonl").write_text('{"id": "caf\u00e9", "output": "x"}\n', encoding="utf-8")
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=1)


def test_a_suite_key_from_a_merge_key_is_collected(pytester: pytest.Pytester) -> None:
    merged = "<<: {suite: merged, description: from a merge key}\n" + suite("x", score=0).split("\n", 1)[1]
    pytester.makefile(".yaml", merged=merged)
    seen = outcomes(pytester.runpytest("--llmjudge"))
    assert seen["merged.yaml::c1[linguistic_acceptability]"][0] == "failed"


def test_a_symlink_loop_collects_each_suite_once(pytester: pytest.Pytester) -> None:
    (pytester.path / "d").mkdir()
    (pytester.path / "d" / "s.yaml").write_text(suite("looped"), encoding="utf-8")
    os.symlink(".", pytester.path / "d" / "loop")
    os.symlink("..", pytester.path / "d" / "up")
    os.symlink("d", pytester.path / "alias")
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=1)


def test_a_fifo_given_as_a_suite_path_is_named_as_one(pytester: pytest.Pytester) -> None:
    os.mkfifo(pytester.path / "pipe.yaml")
    result = pytester.runpytest("--llmjudge", "pipe.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pipe.yaml: it is a FIFO, not a regular file or a directory*"])


def test_a_suite_the_declared_baseline_lacks_fails_unless_it_opts_out(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite("release"))
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod").assert_outcomes(passed=1)
    renamed = suite("renamed", extra="regression: {baseline: prod}\n")
    pytester.makefile(".yaml", suite=renamed)
    result = pytester.runpytest("--llmjudge", "-k", "regression")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*suite 'renamed' is not in baseline 'prod'*which its regression section names*"])
    opted = suite("renamed", extra="regression: {baseline: prod, missing_suite: skip}\n")
    pytester.makefile(".yaml", suite=opted)
    pytester.runpytest("--llmjudge", "-k", "regression").assert_outcomes(skipped=1, deselected=1)
    # A baseline named on the command line alone: a new suite has nothing to compare with.
    pytester.makefile(".yaml", suite=suite("renamed"))
    pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression").assert_outcomes(
        skipped=1, deselected=1
    )


def _refused(pytester: pytest.Pytester, *args: str, cause: str) -> None:
    result = pytester.runpytest("--llmjudge", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert cause in result.stderr.str(), result.stderr.str()
    assert "passed" not in result.stdout.str()


def test_report_and_baseline_targets_that_are_not_regular_files_are_refused(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", s=suite("s"))
    os.mkfifo(pytester.path / "fifo")
    (pytester.path / "dir").mkdir()
    os.symlink("fifo", pytester.path / "to-fifo")
    _refused(pytester, "--llmjudge-report=html:fifo", cause="fifo: it is a FIFO, not a regular file")
    _refused(pytester, "--llmjudge-report=json:to-fifo", cause="it is a FIFO")
    _refused(pytester, "--llmjudge-report=json:dir", cause="dir: it is a directory, not a regular file")
    _refused(pytester, "--llmjudge-save-baseline=dir/", cause="it is a directory")
    _refused(pytester, "--llmjudge-report=html:/dev/null", cause="/dev/null: it is a character device")
    (pytester.path / "hist").mkdir()
    os.mkfifo(pytester.path / "hist" / "history.jsonl")  # appended to at the end: would block
    _refused(pytester, "--llmjudge-history=hist", cause="history.jsonl: it is a FIFO")
    assert stat.S_ISFIFO((pytester.path / "fifo").stat().st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_report_and_baseline_targets_that_are_inputs_are_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "sub").mkdir()
    text = "suite: s\ncases_file: cases.jsonl\nassert:\n  - linguistic_acceptability >= 2\n"
    (pytester.path / "sub" / "s.yaml").write_text(text, encoding="utf-8")
    cases = '{"id": "c1", "language": "hi", "output": "x", "recorded": {"linguistic_acceptability": 2}}\n'
    (pytester.path / "sub" / "cases.jsonl").write_text(cases, encoding="utf-8")
    (pytester.path / "other.yaml").write_text(suite("other"), encoding="utf-8")
    (pytester.path / "test_plain.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    os.link(pytester.path / "sub" / "cases.jsonl", pytester.path / "hardlink.json")
    before = {path: path.read_bytes() for path in pytester.path.rglob("*") if path.is_file()}

    _refused(pytester, "sub", "--llmjudge-report=html:sub/s.yaml", cause="it is a suite file")
    _refused(pytester, "sub", "--llmjudge-report=html:other.yaml", cause="it is a suite file")  # not collected
    # One collecting run: every clash is listed; inputs are matched by inode (a hard link to a cases file).
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-report=html:hardlink.json", "--llmjudge-report=json:test_plain.py"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert "hardlink.json: it is " in errors and "test_plain.py: it is " in errors, errors
    assert errors.count("an input of this run") == 2 and "cases.jsonl, an input" in errors
    # Two targets of one file are refused when pytest starts.
    _refused(pytester, "--llmjudge-report=json:r.json", "--llmjudge-report=html:./r.json", cause="also the path of")
    assert not (pytester.path / "r.json").exists()
    assert {path: path.read_bytes() for path in before} == before


def test_an_esc_in_a_file_name_is_escaped_in_the_terminal_and_junit(pytester: pytest.Pytester) -> None:
    (pytester.path / "e\x1b[31mred.yaml").write_text(suite("esc", score=0), encoding="utf-8")
    (pytester.path / "bad\x07.yaml").write_text("suite: bad\n", encoding="utf-8")
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("--llmjudge", "-v", "-rA", f"--junitxml={junit}")
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    assert "\x1b" not in output and "\x07" not in output
    assert "e\\x1b[31mred.yaml::c1[linguistic_acceptability]" in output and "bad\\x07.yaml" in output
    xml = junit.read_text(encoding="utf-8")
    assert "\x1b" not in xml and "\x07" not in xml
    assert list(xmlschema.XMLSchema(SCHEMA).iter_errors(str(junit))) == []


def test_under_xdist_a_report_over_an_input_is_refused_and_not_written(pytester: pytest.Pytester) -> None:
    """The worker collects and finds the clash; the controller, which writes reports, writes none."""
    pytester.makefile(".yaml", s="suite: s\ncases_file: cases.jsonl\nassert:\n  - linguistic_acceptability >= 2\n")
    cases = '{"id": "c1", "language": "hi", "output": "x", "recorded": {"linguistic_acceptability": 2}}\n'
    (pytester.path / "cases.jsonl").write_text(cases, encoding="utf-8")
    result = pytester.runpytest("--llmjudge", "-n", "1", "--llmjudge-report=json:cases.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*ERROR: pytest-llmjudge: --llmjudge-report=json: *cases.jsonl: it is *an input*"])
    assert (pytester.path / "cases.jsonl").read_text(encoding="utf-8") == cases


def test_calibration_sets_share_the_suite_namespace(pytester: pytest.Pytester) -> None:
    """A calibration set ``x`` keys its cases as suite ``calibration:x``: a second set, or a suite of that name, clashes."""
    cal = (
        "calibration: cal\ngate: {threshold: 0.1, min_items: 1}\nitems:\n"
        "  - {id: i1, language: hi, output: x, metric: linguistic_acceptability, labels: {a: 1},"
        " recorded: {linguistic_acceptability: 1}}\n"
    )
    pytester.makefile(".yaml", a_cal=cal, b_cal=cal, c_suite=suite("calibration:cal"))
    seen = outcomes(pytester.runpytest("--llmjudge", "-p", "no:randomly"))
    assert seen["a_cal.yaml::agreement[hi-linguistic_acceptability]"][0] == "passed"
    outcome, text = seen["b_cal.yaml::calibration-error"]
    assert outcome == "failed" and "b_cal.yaml:1: calibration: calibration set name 'cal' is also declared by" in text
    assert "a_cal.yaml" in seen["c_suite.yaml::suite-error"][1]
