"""Baselines and regression items end to end: pytester runs of suites against saved baselines."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import builders
import pytest

from pytest_llmjudge.testing import MockProvider, ScriptedJudge

BASE = {"hi": [2] * 12, "fr": [2] * 12, "de": [1] * 12}


def suite_text(
    scores: dict[str, list[int]], *, name: str = "release", extra: str = "", drop: set[str] = frozenset()
) -> str:
    cases = builders.recorded_rows(scores, "task_quality", drop=drop)
    return builders.suite_text(name, cases, head=extra, asserts=["task_quality >= 0"])


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


def test_drop_fails_when_shown_warns_when_inconclusive_and_too_few_is_undecided(pytester: pytest.Pytester) -> None:
    save_baseline(pytester)
    # hi: 8 of 12 drop by 2 (exact p 2^-8); fr: one drop among 11 ties (smallest possible p 0.5:
    # it can't be significant, so Holm counts only hi and de, Tarone's K = 2: hi's adjusted p is
    # 2 x 2^-8 = 0.0078 and fails; fr is undecided); de: 4 down, 3 up (inconclusive).
    candidate = {"hi": [0] * 8 + [2] * 4, "fr": [1] + [2] * 11, "de": [0, 0, 0, 0, 2, 2, 2] + [1] * 5}
    pytester.makefile(".yaml", suite=suite_text(candidate))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-baseline=prod",
        f"--junitxml={junit}",
        "-rA",
        "--llmjudge-junit-properties",
        "--llmjudge-report=json:r.json",
        "--llmjudge-report=html:r.html",
    )
    result.assert_outcomes(passed=36 + 1, failed=1, skipped=0, warnings=2)
    assert result.parseoutcomes()["undecided"] == 1
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION: release task_quality [[]hi[]] vs baseline prod: candidate - baseline = -1.333*"
            "p = 0.0039 for a drop beyond margin 0, adjusted 0.0078 (alpha 0.05): regressed",
            "*means:*candidate 0.667, baseline 2.000 over 12 paired cases, 8 changed (higher is better)",
            "*method:*exact paired sign-flip test (8 non-tied of 12 pairs, 2^8 signs)*",
            "*family:*3 comparison(s) (run), Holm over Tarone's K = 2 (those that could never be significant "
            "don't count); level per item 0.0250, mode regression",
            "*largest drops: hi-0 2 -> 0*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*RegressionWarning: WARNING: release task_quality [[]de[]]*inconclusive: a drop beyond the margin is not ruled out",
            "*power:*drop at most 0.600 (97.50% upper bound); smallest drop detectable with 80% power at n=12: 0.641;*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*RegressionWarning: UNDECIDED: release task_quality [[]fr[]]*: too few cases to decide"]
    )
    # The comparisons are printed once, in the llmjudge summary (no llmjudge baseline section of their own).
    assert "llmjudge baseline" not in result.stdout.str()
    verdict = (
        "release verdict: FAIL: 3 comparison(s) in 1 family (run), Holm at alpha 0.05 (Tarone K = 2); 1 failed: "
        "release task_quality [hi]; 1 inconclusive; 1 too few cases to decide"
    )
    # One verdict, wrapped at 100 columns in the terminal.
    assert verdict in " ".join(result.stdout.str().split())
    result.stdout.fnmatch_lines(
        [
            "*= llmjudge summary =*",
            "regression against the baseline: 3 comparison(s), 1 fail, 1 warn, 1 undecided, 0 improved",
            "release verdict: FAIL: 3 comparison(s)*",
            "  suite * p adj*gate",
            "  release * task_quality * de * 12 * warn",
            "  release * task_quality * fr * 12 * undecided",
            "  release * task_quality * hi * 12 * -1.333 * 0.008 fail",
        ]
    )
    root = ET.parse(junit).getroot()
    suite_props = {
        p.get("name"): p.get("value") for p in root.iter("testsuite") for p in p.findall("properties/property")
    }
    assert suite_props["llmjudge_release_verdict"] == verdict
    # The same one line in the JSON and HTML reports.
    release = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["release"]
    assert release["text"] == verdict and release["status"] == "fail" and release["comparisons"] == 3
    assert (release["inconclusive"], release["undecided"], release["failed"]) == (1, 1, ["release task_quality [hi]"])
    assert verdict in (pytester.path / "r.html").read_text(encoding="utf-8")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["regression[task_quality-hi]"].iter("property")}
    assert props["gate"] == "fail" and props["baseline"] == "prod" and props["n_paired"] == "12"
    assert float(props["score"]) == pytest.approx(-4 / 3) and float(props["p_value"]) == 2**-8
    assert float(props["p_adjusted"]) == pytest.approx(2 * 2**-8) and props["correction"] == "holm"
    assert float(props["ci_high"]) < 0
    undecided = cases["regression[task_quality-fr]"]
    assert "too few cases to decide" in (undecided.find("skipped").get("message") or "")
    with_bonferroni = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "--llmjudge-correction=none")
    with_bonferroni.stdout.fnmatch_lines(["release verdict: FAIL: 3 comparison(s)*no correction at alpha 0.05*"])


def test_fail_on_warn_fails_inconclusive_and_undecided_items_with_the_regression_text(
    pytester: pytest.Pytester,
) -> None:
    save_baseline(pytester)
    candidate = {"hi": [2] * 12, "fr": [1] + [2] * 11, "de": [0, 0, 0, 0, 2, 2, 2] + [1] * 5}
    pytester.makefile(".yaml", suite=suite_text(candidate))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression", "--llmjudge-fail-on=warn")
    result.assert_outcomes(passed=1, failed=2, deselected=36)
    result.stdout.fnmatch_lines(
        [
            "*REGRESSION (fail_on: warn): release task_quality [[]de[]]*inconclusive*",
            "*REGRESSION (fail_on: warn): release task_quality [[]fr[]]*too few*",
        ]
    )
    assert "Traceback" not in result.stdout.str() and "compare.py" not in result.stdout.str()
    as_error = pytester.runpytest(
        "--llmjudge", "--llmjudge-baseline=prod", "-k", "regression", "-W", "error::UserWarning"
    )
    as_error.assert_outcomes(passed=1, failed=2, deselected=36)
    assert "Traceback" not in as_error.stdout.str() and "warn_explicit" not in as_error.stdout.str()
    pytester.makefile(".yaml", suite=suite_text(candidate, extra="regression: {fail_on: warn}"))
    from_suite = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression")
    from_suite.assert_outcomes(passed=1, failed=2, deselected=36)


def test_non_inferiority_passes_only_when_a_drop_beyond_the_margin_is_ruled_out(pytester: pytest.Pytester) -> None:
    scores = {"hi": [2] * 30, "fr": [2] * 3}
    save_baseline(pytester, scores=scores)
    candidate = {"hi": [1] + [2] * 29, "fr": [2] * 3}
    extra = "regression: {mode: non_inferiority, margin: 0.2}"
    pytester.makefile(".yaml", suite=suite_text(candidate, extra=extra))
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=prod", "-k", "regression")
    # hi: 30 pairs, one drop of 1: a drop beyond 0.2 is ruled out; fr: 3 pairs can show nothing.
    result.assert_outcomes(passed=1, failed=1, deselected=33)
    result.stdout.fnmatch_lines(["*REGRESSION: release task_quality [[]fr[]]*too few cases to show non-inferiority"])
    passed = [line for line in result.stdout.lines if "task_quality" in line and " hi " in line]
    assert not passed, "a passing comparison is not listed"


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
        ["*candidate - baseline = 0.600*regressed", "*(lower is better)", "*exact paired sign-flip test (6 non-tied*"]
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
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge
) -> None:
    """Regression items ask the scorer themselves: -k deselects every case item."""
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
                        "judges": ["mock:loopback-judge"],
                        "scores": {"fr": {f"fr-{i}": 2.0 for i in range(10)}},
                    }
                }
            }
        },
    }
    (pytester.path / "judged.json").write_text(json.dumps(baseline), encoding="utf-8")
    scripted_judge.scores = lambda q: 0 if "bad" in q.output else 2
    cases = [{"id": f"fr-{i}", "language": "fr", "output": f"{'bad' if i < 7 else 'bon'} texte {i}"} for i in range(10)]
    judge = builders.judged(provider="mock")
    pytester.makefile(
        ".yaml", suite=builders.suite_text("live", cases, judge=judge, asserts=["linguistic_acceptability >= 0"])
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-baseline=judged.json", "-k", "regression")
    result.assert_outcomes(failed=1, deselected=10)
    result.stdout.fnmatch_lines(["*candidate 0.600, baseline 2.000 over 10 paired cases*"])
    assert len(mock_judge.requests) == 10


def test_save_and_compare_under_xdist(pytester: pytest.Pytester) -> None:
    """One distributed run compares with one baseline and saves another from the workers' records."""
    save_baseline(pytester)
    pytester.makefile(".yaml", suite=suite_text({"hi": [0] * 12, "fr": [2] * 12, "de": [1] * 12}))
    result = pytester.runpytest_inprocess(
        "--llmjudge",
        "-n",
        "2",
        "--llmjudge-baseline=prod",
        "--llmjudge-save-baseline=next",
        "-p",
        "xdist",
        "--llmjudge-report=json:r.json",
    )
    result.assert_outcomes(passed=38, failed=1)
    # Each worker decided the whole family of 3 itself, from the same scores: the same Holm adjustment
    # (over Tarone's K = 1: the unchanged fr and de, no pair changed, can't be significant).
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    decided = {r["language"]: r for r in report["regressions"]}
    assert {(r["family_size"], r["family_testable"]) for r in decided.values()} == {(3, 1)}
    assert decided["hi"]["p_value"] == 2**-12 and decided["hi"]["p_adjusted"] == 2**-12
    assert report["release"]["failed"] == ["release task_quality [hi]"]
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
    result.assert_outcomes(passed=3, warnings=1)  # threshold >= 0 holds; 3 cases are too few to decide
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


def test_family_scope_run_suite_or_metric_sets_what_is_adjusted_together(pytester: pytest.Pytester) -> None:
    save_baseline(pytester)
    scores = {"hi": [0] * 8 + [2] * 4, "fr": [2] * 12, "de": [1] * 12}
    # Two suites compared with the baseline's "release" (a suite name is one file's): 6 comparisons.
    twin = suite_text(scores, name="release-twin", extra="regression: {baseline_suite: release}")
    pytester.makefile(".yaml", suite=suite_text(scores), twin=twin)

    def sizes(*options: str) -> set[int]:
        pytester.runpytest(
            "--llmjudge", "--llmjudge-baseline=prod", "-k", "regression", "--llmjudge-report=json:r.json", *options
        )
        report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
        return {r["family_size"] for r in report["regressions"]}

    assert sizes("--junitxml=junit.xml") == {6}
    # The release verdict as a <testsuite> property keeps the file valid against junit-10.xsd.
    xmlschema = pytest.importorskip("xmlschema")
    schema = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"))
    assert [str(e.reason) for e in schema.iter_errors(str(pytester.path / "junit.xml"))] == []
    assert "llmjudge_release_verdict" in (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert sizes("--llmjudge-family=suite") == {3}
    assert sizes("--llmjudge-family=metric") == {3}, "one metric per suite file"
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    assert report["release"]["families"] == 2 and report["release"]["text"].startswith(
        "release verdict: FAIL: 6 comparison(s) in 2 families (metric), Holm at alpha 0.05 (Tarone K = 2); 2 failed"
    )
