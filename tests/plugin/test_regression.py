"""Baselines and regression items end to end: pytester runs of suites against saved baselines."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

BASE = {"hi": [2] * 12, "fr": [2] * 12, "de": [1] * 12}


def suite_text(
    scores: dict[str, list[int]], *, name: str = "release", extra: str = "", drop: set[str] = frozenset()
) -> str:
    lines = [f"suite: {name}", extra, "cases:"]
    for language, values in scores.items():
        for index, value in enumerate(values):
            case = f"{language}-{index}"
            if case not in drop:
                lines.append(
                    f"  - {{id: {case}, language: {language}, output: x, recorded: {{task_quality: {value}}}}}"
                )
    lines += ["assert:", "  - task_quality >= 0"]
    return "\n".join(lines) + "\n"


def save_baseline(pytester: pytest.Pytester, name: str = "prod", scores: dict[str, list[int]] = BASE) -> Path:
    pytester.makefile(".yaml", suite=suite_text(scores))
    result = pytester.runpytest("--llmjudge", f"--llmjudge-save-baseline={name}")
    result.assert_outcomes(passed=sum(len(v) for v in scores.values()))
    return pytester.path / "llmjudge_baselines" / f"{name}.json"


def test_save_baseline_writes_small_versioned_json(pytester: pytest.Pytester) -> None:
    path = save_baseline(pytester)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "pytest-llmjudge-baseline" and data["version"] == 1 and data["name"] == "prod"
    metric = data["suites"]["release"]["metrics"]["task_quality"]
    assert metric["sources"] == ["recorded"] and metric["higher_is_better"] is True
    assert metric["scores"]["hi"]["hi-3"] == 2.0 and len(metric["scores"]["de"]) == 12
    assert data["suites"]["release"]["path"] == "suite.yaml"
    assert set(data["run"]) >= {"plugin_version", "python", "pytest", "items", "failed_items"}


def test_drop_fails_when_significant_warns_when_not_and_improvement_passes(pytester: pytest.Pytester) -> None:
    save_baseline(pytester)
    candidate = {"hi": [0] * 8 + [2] * 4, "fr": [1] + [2] * 11, "de": [2] * 12}
    pytester.makefile(".yaml", suite=suite_text(candidate))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-baseline=prod", f"--junitxml={junit}", "-rA", "--llmjudge-junit-properties"
    )
    result.assert_outcomes(passed=36 + 2, failed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: release task_quality [[]hi[]] vs baseline prod: candidate - baseline = -1.333*regressed",
            "*means:*candidate 0.667, baseline 2.000 over 12 paired cases (higher is better)",
            "*largest drops: hi-0 2 -> 0*",
        ]
    )
    result.stdout.fnmatch_lines(["*RegressionWarning: WARNING: release task_quality [[]fr[]]*drop not significant*"])
    # The comparisons are printed once, in the llmjudge summary (no llmjudge baseline section of their own).
    assert "llmjudge baseline" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*= llmjudge summary =*",
            "regression against the baseline: 3 comparison(s), 1 fail, 1 warn, 1 improved",
            "  suite * gate",
            "  release * task_quality * fr * 12 * warn",
            "  release * task_quality * hi * 12 * -1.333 * fail",
        ]
    )
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["regression[task_quality-hi]"].iter("property")}
    assert props["gate"] == "fail" and props["baseline"] == "prod" and props["n_paired"] == "12"
    assert float(props["score"]) == pytest.approx(-4 / 3) and float(props["p_value"]) < 0.05
    assert float(props["ci_high"]) < 0
    improved = {p.get("name"): p.get("value") for p in cases["regression[task_quality-de]"].iter("property")}
    assert improved["gate"] == "pass" and improved["verdict"] == "improved"


def test_missing_cases_are_reported_and_can_fail(pytester: pytest.Pytester) -> None:
    save_baseline(pytester)
    scores = {**BASE, "hi": BASE["hi"] + [2]}  # hi-12 is new
    pytester.makefile(".yaml", suite=suite_text(scores, drop={"hi-0"}))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression")
    result.assert_outcomes(passed=3, deselected=36, warnings=1)
    result.stdout.fnmatch_lines(["*cases missing: 1 not in the baseline (hi-12); 1 no longer in the suite (hi-0)*"])
    pytester.makefile(".yaml", suite=suite_text(scores, drop={"hi-0"}, extra="regression: {fail_on_missing: true}"))
    failed = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression")
    failed.assert_outcomes(passed=2, failed=1, deselected=36)
    failed.stdout.fnmatch_lines(["*cases missing (fail_on_missing)*"])


def test_lower_is_better_metric_and_permutation_method(pytester: pytest.Pytester) -> None:
    """Hallucinations (1 = present) going up is a drop; the permutation test gates it too."""
    text = (
        "suite: h\ncases:\n"
        + "".join(f"  - {{id: c{i}, language: hi, output: x, recorded: {{hallucinations: 0}}}}\n" for i in range(10))
        + "assert:\n  - hallucinations <= 1\n"
    )
    pytester.makefile(".yaml", suite=text)
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=h").assert_outcomes(passed=10)
    worse = text.replace("hallucinations: 0}", "hallucinations: 1}", 6)
    pytester.makefile(".yaml", suite=worse)
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-baseline=h", "--llmjudge-regression-method=permutation", "-k", "regression"
    )
    result.assert_outcomes(failed=1, deselected=10)
    result.stdout.fnmatch_lines(
        ["*candidate - baseline = 0.600*regressed", "*(lower is better)", "*paired sign-flip permutation test (exact*"]
    )


def test_suite_section_names_baseline_and_margin_and_options_override(pytester: pytest.Pytester) -> None:
    path = save_baseline(pytester)
    (pytester.path / "gates").mkdir()
    path.rename(pytester.path / "gates" / "prod.json")
    candidate = {"hi": [1] * 12, "fr": [2] * 12, "de": [1] * 12}
    section = "regression: {baseline: gates/prod.json, margin: 1.0}"
    pytester.makefile(".yaml", suite=suite_text(candidate, extra=section))
    lenient = pytester.runpytest("--llmjudge", "-k", "regression")
    lenient.assert_outcomes(passed=3, deselected=36)
    strict = pytester.runpytest("--llmjudge", "-k", "regression", "--llmjudge-regression-margin=0")
    strict.assert_outcomes(passed=2, failed=1, deselected=36)


def test_unreadable_baseline_fails_and_unknown_suite_is_skipped(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite_text(BASE, extra="regression: {baseline: nowhere.json}"))
    result = pytester.runpytest("--llmjudge", "-k", "regression")
    result.assert_outcomes(failed=1, deselected=36)
    result.stdout.fnmatch_lines(["*ERROR: baseline file not found:*nowhere.json*"])
    save_baseline(pytester)
    pytester.makefile(".yaml", suite=suite_text(BASE, name="other"))
    skipped = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression", "-rs")
    skipped.assert_outcomes(skipped=1, deselected=36)
    skipped.stdout.fnmatch_lines(["*suite 'other' is not in baseline 'prod'*"])
    usage = pytester.runpytest("--llmjudge", "--llmjudge-baseline=absent")
    assert usage.ret == pytest.ExitCode.USAGE_ERROR
    usage.stderr.fnmatch_lines(["*baseline 'absent' not found*"])


def test_candidate_scored_by_the_judge_without_case_items(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """Regression items ask the scoreboard themselves: -k deselects every case item."""
    baseline = {
        "format": "pytest-llmjudge-baseline",
        "version": 1,
        "name": "judged",
        "created": "2026-01-01T00:00:00Z",
        "run": {},
        "suites": {
            "live": {
                "metrics": {
                    "linguistic_acceptability": {
                        "higher_is_better": True,
                        "judges": ["openai:loopback-judge"],
                        "scores": {"fr": {f"fr-{i}": 2.0 for i in range(10)}},
                    }
                }
            }
        },
    }
    (pytester.path / "judged.json").write_text(json.dumps(baseline), encoding="utf-8")
    scripted_judge.scores = lambda q: 0 if "bad" in q.output else 2
    cases = "".join(
        f"  - {{id: fr-{i}, language: fr, output: '{'bad' if i < 7 else 'bon'} texte {i}'}}\n" for i in range(10)
    )
    pytester.makefile(
        ".yaml",
        suite=f"suite: live\njudge: {{model: loopback-judge, base_url: '{loopback.openai_base_url}'}}\n"
        f"cases:\n{cases}assert:\n  - linguistic_acceptability >= 0\n",
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=judged.json", "-k", "regression")
    result.assert_outcomes(failed=1, deselected=10)
    result.stdout.fnmatch_lines(["*candidate 0.600, baseline 2.000 over 10 paired cases*"])
    assert loopback.stats()["requests"] == 10


def test_save_and_compare_under_xdist(pytester: pytest.Pytester) -> None:
    """One distributed run compares with one baseline and saves another from the workers' records."""
    pytest.importorskip("xdist")
    save_baseline(pytester)
    pytester.makefile(".yaml", suite=suite_text({"hi": [0] * 12, "fr": [2] * 12, "de": [1] * 12}))
    result = pytester.runpytest_inprocess(
        "--llmjudge", "-n", "2", "--llmjudge-baseline=prod", "--llmjudge-save-baseline=next", "-p", "xdist"
    )
    result.assert_outcomes(passed=38, failed=1)
    result.stdout.fnmatch_lines(
        ["regression against the baseline: 3 comparison(s), 1 fail*", "llmjudge: baseline 'next' saved to *"]
    )
    data = json.loads((pytester.path / "llmjudge_baselines" / "next.json").read_text(encoding="utf-8"))
    scores = data["suites"]["release"]["metrics"]["task_quality"]["scores"]
    assert sum(len(v) for v in scores.values()) == 36 and set(scores["hi"].values()) == {0.0}


def test_the_suite_file_is_built_once_for_its_items_and_its_regression_items(pytester: pytest.Pytester) -> None:
    save_baseline(pytester)
    items, _ = pytester.inline_genitems("--llmjudge", "--llmjudge-baseline=prod")
    suites = {id(item.suite) for item in items}  # type: ignore[attr-defined]
    kinds = {type(item).__name__ for item in items}
    assert kinds == {"CaseItem", "RegressionItem"} and len(suites) == 1


def test_the_reports_show_each_case_old_and_new_score_and_output(pytester: pytest.Pytester) -> None:
    save_baseline(pytester, scores={"hi": [2] * 3})
    candidate = suite_text({"hi": [0, 2, 2]}).replace(
        "{id: hi-0, language: hi, output: x,", "{id: hi-0, language: hi, output: y,"
    )
    pytester.makefile(".yaml", suite=candidate)
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=4, warnings=1)  # threshold >= 0 holds; the drop of 3 cases is not significant
    cases = {c["case"]: c for c in json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["cases"]}
    assert (cases["hi-0"]["output"], cases["hi-0"]["score"]) == ("y", 0.0)
    assert cases["hi-0"]["baseline"] == {"score": 2.0, "output": "x"}
    assert cases["hi-1"]["baseline"] == {"score": 2.0, "output": "x"}


def test_a_saved_baseline_keeps_no_credential_from_an_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline is committed and shared: an output that echoes a key is stored redacted."""
    secret = "sk-baseline-leak-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    pytester.makefile(
        ".yaml",
        suite=f"""
        suite: leak
        cases:
          - {{id: a, language: en, output: "my key is {secret}", recorded: {{task_quality: 2}}}}
        assert:
          - task_quality >= 0
        """,
    )
    pytester.runpytest("--llmjudge", "--llmjudge-save-baseline=prod").assert_outcomes(passed=1)
    text = (pytester.path / "llmjudge_baselines" / "prod.json").read_text(encoding="utf-8")
    assert secret not in text
    assert json.loads(text)["suites"]["leak"]["outputs"]["a"] == "my key is ***"


def test_the_report_lists_at_most_a_hundred_missing_cases_with_their_count(pytester: pytest.Pytester) -> None:
    """A baseline of 250 cases per language the suite no longer has (and a suite with 130 the
    baseline lacks): each list in the regression record holds the first 100, with the count of
    all; the paired cases are the run's own and the first 100 only in the baseline."""
    from pytest_llmjudge.regression.items import MAX_LISTED

    save_baseline(pytester, scores={"hi": [2] * 252})
    pytester.makefile(".yaml", suite=suite_text({"hi": [2] * 2 + [2] * 130}, drop={f"hi-{i}" for i in range(2, 252)}))
    suite = (pytester.path / "suite.yaml").read_text(encoding="utf-8")
    extra = "".join(
        f"  - {{id: new-{i}, language: hi, output: x, recorded: {{task_quality: 2}}}}\n" for i in range(130)
    )
    (pytester.path / "suite.yaml").write_text(suite.replace("assert:", extra + "assert:"), encoding="utf-8")
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "--llmjudge-report=json:report.json")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    document = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    (record,) = [r for r in document["regressions"] if r["metric"] == "task_quality"]
    assert MAX_LISTED == 100
    assert record["missing_in_candidate_count"] == 250 and len(record["missing_in_candidate"]) == 100
    assert record["missing_in_candidate"] == sorted(f"hi-{i}" for i in range(2, 252))[:100]
    assert record["missing_in_baseline_count"] == 130 and len(record["missing_in_baseline"]) == 100
    assert len(record["cases"]) == 2 + 130 + 100
    assert "250 no longer in the suite" in result.stdout.str()
