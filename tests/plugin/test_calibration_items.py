"""Calibration sets end to end through pytester: gate items, calibrated suites, fixture, sanity checks.

The synthetic calibration data: 40 items per language with a known "true" label (three
annotators, the third one off by one on every fifth item, so the majority is the truth).
In French the judge returns the truth (weighted F1 1.0); in Bengali it gives 2 to everything
(weighted F1 0.333, the high-score bias in its purest form); in Hindi it says one class
higher than the truth.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from pytest_llmjudge.stats.agreement import weighted_f1_from_confusion
from pytest_llmjudge.stats.resampling import posterior_confusion_pvalue
from pytest_llmjudge.testing import JudgeQuery, LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.scripted import read_prompt

TRUTH = (0, 1, 2, 2, 1, 2, 2, 0, 2, 1)
N = 40


def truth(i: int) -> int:
    return TRUTH[i % len(TRUTH)]


def judge_score(language: str, true: int) -> int:
    if language == "fr":
        return true
    if language == "hi":
        return min(true + 1, 2)
    return 2


def output_text(language: str, i: int) -> str:
    return f"{language} answer number {i} has quality {truth(i)} and a few more words"


def write_items(
    path: Path,
    languages: tuple[str, ...] = ("bn", "fr"),
    metrics: tuple[str, ...] = ("linguistic_acceptability",),
    n: int = N,
) -> None:
    lines = []
    for language in languages:
        for i in range(n):
            t = truth(i)
            labels = {"a1": t, "a2": t, "a3": (t + 1) % 3 if i % 5 == 0 else t}
            human = {}
            recorded: dict[str, Any] = {}
            for metric in metrics:
                if metric == "hallucinations":
                    h = 1 if t == 0 else 0
                    human[metric] = {"a1": h, "a2": h, "a3": h}
                    recorded[metric] = {"score": h if language == "fr" else 0}
                else:
                    human[metric] = labels
                    recorded[metric] = {"score": judge_score(language, t), "judge": "scripted-v1"}
            record = {
                "id": f"{language}-{i:03d}",
                "language": language,
                "input": "Write something.",
                "output": output_text(language, i),
                "human": human,
                "recorded": recorded,
                "model": "m1",
            }
            lines.append(json.dumps(record, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def calibration_yaml(gate: str, *, extra: str = "", items: str = "items.jsonl") -> str:
    return f"""\
calibration: tiny
items_file: {{path: {items}, extra_fields: metadata}}
{extra}
gate:
{gate}
"""


def by_quality(query: JudgeQuery) -> int:
    match = re.search(r"quality (\d)", query.output)
    true = int(match[1]) if match else 2
    return judge_score(query.language, true)


def junit_properties(path: Path) -> dict[str, dict[str, str]]:
    found = {}
    for case in ET.parse(path).iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        properties["outcome"] = outcome
        found[case.get("name", "")] = properties
    return found


# -- gate items --------------------------------------------------------------------------


def test_gate_passes_and_fails_per_language_with_full_diagnostics(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 0.7\n  min_items: 20"))
    result = pytester.runpytest("--llmjudge", "-v", "--junitxml=junit.xml", "--llmjudge-junit-properties")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "cal.yaml::agreement[[]bn-linguistic_acceptability[]] FAILED*",
            "cal.yaml::agreement[[]fr-linguistic_acceptability[]] PASSED*",
            "FAILED: tiny: judge scripted-v1 vs native speakers, bn linguistic_acceptability: "
            "weighted F1 0.333 < threshold 0.700",
            "  n               40 scored of 40 labelled items (min_items 20)*",
            "  95% CI          0.* - 0.* (Dirichlet posterior, 1000 draws, seed 0)",
            "  human ceiling   0.* (mean pairwise annotator F1, 3 pairs of label slots ordered by annotator id on 40 items;"
            " all_pairs: items with 2 or more labels, both directions, pairs weighted by shared items)",
            "  Fleiss' kappa   0.* (annotators among themselves, 40 items with 2 or more labels)",
            "  agreement       PA 0.500, Cohen's kappa 0.000 (judge vs human aggregate)",
            "  baseline        0.333 *",
            "  skew            judge mean 2.00 vs human mean 1.30: +0.70; top score 2: judge 100%, human 50%",
            "  annotators      full 32, partial 8, none 0, single 0*",
            "  confusion       rows = human aggregate, columns = judge",
            "                         0   1   2",
            "                    0    0   0   8",
            "                    1    0   0  12",
            "                    2    0   0  20",
            "  at score 2      full (32): judge 100% / human 50%; partial (8): judge 100% / human 50%*",
            "  correction      most_likely (2->2): held-out F1 *",
        ]
    )
    # The gate table is printed once, inside the one llmjudge summary section.
    assert "llmjudge calibration" not in result.stdout.str()
    assert result.stdout.str().count("tiny: judge scripted-v1; 95% CIs") == 1
    result.stdout.fnmatch_lines(
        [
            "*= llmjudge summary =*",
            "tiny: judge scripted-v1; 95% CIs",
            "lang  metric    n     F1 CI *",
            "bn    LA       40  0.333 *0.70 * +0.70 1.00/0.50 *FAIL",
            "fr    LA       40  1.000 0.93-1.00    0.70 *pass",  # all 40 agree: no longer the point 1.00-1.00
            "best-score share by annotator agreement, judge/human (items):",
            "  bn    LA   full 1.00/0.50 (32)  partial 1.00/0.50 (8)",
        ]
    )
    junit = junit_properties(pytester.path / "junit.xml")
    bn = junit["agreement[bn-linguistic_acceptability]"]
    fr = junit["agreement[fr-linguistic_acceptability]"]
    assert (bn["outcome"], fr["outcome"]) == ("failed", "passed")
    assert float(bn["f1"]) == pytest.approx(1 / 3, abs=1e-6) and float(fr["f1"]) == 1.0
    assert bn["threshold"] == fr["threshold"] == "0.7"
    assert bn["n"] == fr["n"] == "40"
    assert float(bn["ceiling"]) == pytest.approx(float(fr["ceiling"])) and 0.8 < float(bn["ceiling"]) < 1
    assert {"ci_low", "ci_high", "pa", "kappa", "fleiss", "skew", "judge", "calibration", "language", "metric"} <= set(
        bn
    )


def test_too_few_items_is_an_error_even_when_marked_xfail(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(
        ".yaml",
        cal=calibration_yaml('  threshold: 0.7\n  min_items: 50\n  xfail: {bn: "known high-score bias"}'),
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "ERROR: tiny: judge scripted-v1 vs native speakers, bn linguistic_acceptability: "
            "too few items: 40 < min_items 50",
            "ERROR: tiny: judge scripted-v1 vs native speakers, fr linguistic_acceptability: "
            "too few items: 40 < min_items 50",
        ]
    )


def test_known_failures_xfail_strictly(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(
        ".yaml",
        cal=calibration_yaml(
            '  threshold: 0.7\n  min_items: 20\n  xfail: {bn: "F1 0.333: judge gives 2 to all", fr: {linguistic_acceptability: "stale mark"}}'
        ),
    )
    result = pytester.runpytest("--llmjudge", "-rxX")
    result.assert_outcomes(xfailed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]XPASS(strict)[]] stale mark",
            "*XFAIL cal.yaml::agreement[[]bn-linguistic_acceptability[]] - F1 0.333: judge gives 2 to all",
        ]
    )


def test_xdist_gives_the_same_verdicts(pytester: pytest.Pytester) -> None:
    write_items(
        pytester.path / "items.jsonl",
        languages=("bn", "fr", "hi"),
        metrics=("linguistic_acceptability", "hallucinations"),
    )
    pytester.makefile(
        ".yaml",
        cal=calibration_yaml(
            '  threshold: 0.7\n  min_items: 20\n  xfail: {hi: {linguistic_acceptability: "one class too high"}}'
        ),
    )
    pytester.runpytest("--llmjudge", "--junitxml=one.xml", "--llmjudge-junit-properties")
    distributed = pytester.runpytest_inprocess(
        "--llmjudge", "-n", "2", "--junitxml=two.xml", "-p", "no:cacheprovider", "--llmjudge-junit-properties"
    )
    distributed.assert_outcomes(passed=4, failed=1, xfailed=1)
    one, two = junit_properties(pytester.path / "one.xml"), junit_properties(pytester.path / "two.xml")
    assert len(one) == 6
    assert {name: (p["outcome"], p["f1"], p["ci_low"], p["ceiling"]) for name, p in one.items()} == {
        name: (p["outcome"], p["f1"], p["ci_low"], p["ceiling"]) for name, p in two.items()
    }
    distributed.stdout.fnmatch_lines(["*= llmjudge summary =*", "hi    LA       40 *xfail"])


def test_invalid_calibration_file_is_one_located_failure(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 1.5"))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["invalid calibration set: *cal.yaml:5: gate.threshold: Input should be less than or equal to 1*"]
    )


# -- suites whose judge names a calibration set ----------------------------------------------


def suite_yaml(name: str, base_url: str, judge_extra: str) -> str:
    return f"""\
suite: {name}
judge:
  provider: openai
  model: loopback-judge
  base_url: "{base_url}"
  calibration: cal.yaml
{judge_extra}
cases:
  - id: fr-1
    language: fr
    output: "{output_text("fr", 2)}"
  - id: bn-1
    language: bn
    output: "{output_text("bn", 2)}"
  - id: bn-recorded
    language: bn
    output: "recorded elsewhere"
    recorded: {{linguistic_acceptability: 2}}
assert:
  - linguistic_acceptability >= 1
aggregate:
  - mean(linguistic_acceptability) >= 1
"""


def live_calibration(base_url: str, gate: str = "  threshold: 0.7\n  min_items: 20") -> str:
    judge = f'judge: {{provider: openai, model: loopback-judge, base_url: "{base_url}"}}\nscores: judge'
    return calibration_yaml(gate, extra=judge)


def test_batch_mode_sends_the_calls_of_a_calibrated_suites_gate(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """One planner: the gate a calibrated suite's judge must pass is asked for by no selected item (only
    the suite is selected here), yet its calls join the plan after collection, so batch mode sends them
    with the suite's own and nothing goes online."""
    scripted_judge.scores = by_quality
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=live_calibration(loopback.openai_base_url))
    pytester.makefile(".yaml", suite=suite_yaml("s", loopback.openai_base_url, "  uncalibrated: fail"))
    result = pytester.runpytest("--llmjudge", "suite.yaml", "--llmjudge-batch", "--llmjudge-batch-poll=0.05")
    result.assert_outcomes(passed=3, failed=3)  # as without batch mode: bn is not calibrated
    assert loopback.requests == [], "the gate's calls went through the batch too"
    assert loopback.stats()["batch"]["batch_requests"] > 2, "more than the suite's two judged cases"


def test_calibrated_suite_items_fail_xfail_or_skip_in_uncalibrated_languages(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = by_quality
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=live_calibration(loopback.openai_base_url))
    for policy in ("fail", "xfail", "skip"):
        pytester.makefile(
            ".yaml",
            **{f"suite_{policy}": suite_yaml(f"s-{policy}", loopback.openai_base_url, f"  uncalibrated: {policy}")},
        )
    result = pytester.runpytest("--llmjudge", "-v", "-rsx", "--junitxml=junit.xml", "--llmjudge-junit-properties")
    # per suite: fr-1, bn-recorded (recorded score: not judge-scored) and mean[fr] pass;
    # bn-1, mean[bn] and mean[all] (it includes bn-1) meet the policy. Gate items: fr pass, bn fail.
    result.assert_outcomes(passed=3 * 3 + 1, failed=3 + 1, xfailed=3, skipped=3)
    message = (
        "judge openai:loopback-judge is not calibrated for bn: F1 0.33 < 0.70 "
        "(linguistic_acceptability, calibration 'tiny')"
    )
    result.stdout.fnmatch_lines(
        [
            "suite_fail.yaml::fr-1[[]linguistic_acceptability[]] PASSED*",
            "suite_fail.yaml::bn-1[[]linguistic_acceptability[]] FAILED*",
            "suite_fail.yaml::bn-recorded[[]linguistic_acceptability[]] PASSED*",
            "suite_skip.yaml::bn-1[[]linguistic_acceptability[]] SKIPPED*",
            "suite_xfail.yaml::bn-1[[]linguistic_acceptability[]] XFAIL*",
        ],
        consecutive=False,
    )
    assert result.stdout.str().count(message) >= 3 + 3 + 1  # failures, xfails, (grouped) skips
    result.stdout.fnmatch_lines(
        ["s-fail: judge openai:loopback-judge not calibrated, 3 judge-scored item(s) failed: bn 3"]
    )
    properties = junit_properties(pytester.path / "junit.xml")
    assert properties["bn-1[linguistic_acceptability]"]["uncalibrated"] == message
    # calibration items were judged once (shared by the gate items and all three suites), plus 2 suite cases
    assert loopback.stats()["requests"] == 2 * N + 2


def test_score_correction_is_applied_only_when_enabled(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = by_quality
    write_items(pytester.path / "items.jsonl", languages=("hi",))
    pytester.makefile(".yaml", cal=live_calibration(loopback.openai_base_url, gate="  threshold: 0.2\n  min_items: 20"))
    cases = f"""
cases:
  - id: hi-low
    language: hi
    output: "{output_text("hi", 0)}"
  - id: hi-mid
    language: hi
    output: "{output_text("hi", 1)}"
assert:
  - linguistic_acceptability >= 1
"""
    head = f'judge: {{provider: openai, model: loopback-judge, base_url: "{loopback.openai_base_url}", calibration: cal.yaml'
    pytester.makefile(".yaml", corrected=f"suite: corrected\n{head}, correction: true}}\n{cases}")
    pytester.makefile(".yaml", raw=f"suite: raw\n{head}}}\n{cases}")
    result = pytester.runpytest("--llmjudge", "-v", "corrected.yaml", "raw.yaml")
    # raw: the judge says 1 and 2 (one class too high): both pass. corrected: 1 -> 0 fails.
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED: hi-low [[]hi[]] linguistic_acceptability = 0, expected >= 1",
            "  raw judge score: 1",
            "  correction:*most_likely (1->0, 2->2) fitted on 40 hi items; held-out F1 * -> *",
        ]
    )


@pytest.mark.parametrize("xdist", [False, True], ids=["in-process", "xdist"])
def test_calibrated_judge_fixture(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge, xdist: bool
) -> None:
    scripted_judge.scores = by_quality
    write_items(pytester.path / "items.jsonl", n=10)
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 0.7\n  min_items: 10", extra="scores: judge"))
    pytester.makepyfile(
        test_judged=f"""
def test_french(llmjudge_calibrated_judge):
    assert llmjudge_calibrated_judge.score("{output_text("fr", 1)}", language="fr") == 1

def test_bengali(llmjudge_calibrated_judge):
    llmjudge_calibrated_judge.score("{output_text("bn", 1)}", language="bn")

def test_unknown_language(llmjudge_calibrated_judge):
    llmjudge_calibrated_judge.score("hola", language="es")
"""
    )
    arguments = [
        "--llmjudge",
        "test_judged.py",
        "--llmjudge-calibration=cal.yaml",
        f"--llmjudge-base-url={loopback.openai_base_url}",
        "--llmjudge-model=loopback-judge",
    ]
    if xdist:  # each worker scores the calibration set itself: no waiting for a peer that never plans it
        result = pytester.runpytest_inprocess(*arguments, "-n", "2", "-p", "no:cacheprovider")
    else:
        result = pytester.runpytest(*arguments)
    result.assert_outcomes(passed=1, failed=2)
    # One line at a time: under xdist the failures are listed in the order the workers finish.
    result.stdout.fnmatch_lines(
        [
            "*judge openai:loopback-judge is not calibrated for bn: F1 0.33 < 0.70 (linguistic_acceptability, calibration 'tiny')"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*judge openai:loopback-judge is not calibrated for es: calibration set 'tiny' has no es items for linguistic_acceptability"
        ]
    )
    requests = [r.last_user_text for r in loopback.requests]
    assert not any("(language code: es)" in text for text in requests), "no judge call for an uncalibrated language"


# -- sanity checks ------------------------------------------------------------------------------


SANITY = """\
judge: {{provider: openai, model: loopback-judge, base_url: "{base_url}"}}
sanity:
  consistency: {{repeats: 3, items: 6, min_agreement: 1.0}}
  sensitivity: {{items: 6, fraction: 0.2, seed: 11, min_lowered: 0.6}}
"""


@pytest.mark.parametrize("good", [True, False], ids=["sensitive-consistent", "insensitive-inconsistent"])
def test_consistency_and_sensitivity_items(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge, good: bool
) -> None:
    originals = {output_text(language, i) for language in ("bn", "fr") for i in range(N)}

    def sensitive_and_consistent(query: JudgeQuery) -> int:
        return 2 if query.output in originals else 1

    def insensitive_and_inconsistent(query: JudgeQuery) -> int:
        return 2 if not query.seed else 1

    scripted_judge.scores = sensitive_and_consistent if good else insensitive_and_inconsistent
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(
        ".yaml",
        cal=calibration_yaml(
            "  threshold: 0.7\n  min_items: 20", extra=SANITY.format(base_url=loopback.openai_base_url)
        ),
    )
    result = pytester.runpytest("--llmjudge", "-v", "-k", "consistency or sensitivity")
    if good:
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(
            [
                "tiny: judge sanity checks",
                "  consistency bn    LA   pass  6/6 items gave the same score 3 times (rate 1.00, need 1.00)",
                "  sensitivity fr    LA   pass  6 of 6 worse with 20% of words shuffled (rate 1.00, need 0.60)",
            ],
            consecutive=False,
        )
    else:
        result.assert_outcomes(failed=4)
        result.stdout.fnmatch_lines(
            [
                "FAILED: judge openai:loopback-judge is not consistent in bn linguistic_acceptability: "
                "0/6 items gave the same score in all 3 requests (rate 0.00 < 1.00)",
                "  bn-000: 2, 1, 1",
                "FAILED: judge openai:loopback-judge does not notice shuffled words in fr (linguistic_acceptability): "
                "0 of 6 items rated worse (rate 0.00 < 0.60); same 6*",
            ],
            consecutive=False,
        )
    texts = [r.last_user_text for r in loopback.requests]
    outputs = [read_prompt(r.system, r.last_user_text).texts["Output to evaluate"] for r in loopback.requests]
    seeds = sorted({r.seed for r in loopback.requests}, key=lambda s: -1 if s is None else s)
    assert seeds == [None, 1, 2], "consistency repeats differ only by seed"
    # 2 languages x 6 items x 3 repeats, plus 6 perturbed texts per language (originals are repeat 0)
    assert len(texts) == 2 * 6 * 3 + 2 * 6
    shuffled = [output for output in outputs if output not in originals]
    assert len(shuffled) == 12


def test_gate_and_sanity_check_calls_are_batched(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """The one planner: a live gate's and the sanity checks' judge calls go through batch mode too."""
    originals = {output_text(language, i) for language in ("bn", "fr") for i in range(N)}
    scripted_judge.scores = lambda query: 2 if query.output in originals else 1
    write_items(pytester.path / "items.jsonl")
    sanity = SANITY.format(base_url=loopback.openai_base_url)
    pytester.makefile(
        ".yaml", cal=calibration_yaml("  threshold: 0.7\n  min_items: 20", extra=sanity + "scores: judge")
    )
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", "--llmjudge-batch-poll=0.05")
    outcomes = result.parseoutcomes()
    assert outcomes.get("error", 0) == 0 and sum(outcomes.get(k, 0) for k in ("passed", "failed")) == 6
    assert loopback.requests == [], "every gate and sanity-check call went through the batch"
    assert loopback.stats()["batch"]["batch_requests"] > 0


def test_calibration_can_cover_some_metrics_and_an_untrusted_item_shows_its_score(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda query: 0 if query.metric == "problematic_content" else by_quality(query)
    write_items(pytester.path / "items.jsonl")  # linguistic_acceptability labels only
    pytester.makefile(".yaml", cal=live_calibration(loopback.openai_base_url))
    text = suite_yaml("s", loopback.openai_base_url, "").replace(
        "  calibration: cal.yaml\n", "  calibration: {path: cal.yaml, metrics: [linguistic_acceptability]}\n"
    )
    pytester.makefile(".yaml", suite=text.replace("assert:\n", "assert:\n  - problematic_content <= 0\n"))
    result = pytester.runpytest("--llmjudge", "suite.yaml", "-v")
    # problematic_content is not covered: judged as usual in every language. linguistic_acceptability
    # in bn: stopped, but the failure shows what the judge said.
    result.stdout.fnmatch_lines(
        [
            "suite.yaml::bn-1[[]problematic_content[]] PASSED*",
            "suite.yaml::bn-1[[]linguistic_acceptability[]] FAILED*",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(
        [
            "*judge openai:loopback-judge is not calibrated for bn: F1 0.33 < 0.70*",
            "UNTRUSTED: bn-1 [[]bn[]] linguistic_acceptability = 2, expected >= 1",
            "*judge:*openai:loopback-judge*",
            f"  output:        {output_text('bn', 2)}",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(["UNTRUSTED: mean(linguistic_acceptability) for bn = 2.000 over 2 scored case(s)*"])
    assert "not calibrated for bn*problematic_content" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["suite s: *", "  judged without a calibration check (cal.yaml does not cover them): problematic_content"]
    )


def test_calibration_metrics_must_be_judged_by_the_suite(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=live_calibration(loopback.openai_base_url))
    text = suite_yaml("s", loopback.openai_base_url, "  calibration_metrics: [linguistic_acceptabilty]")
    pytester.makefile(".yaml", suite=text)
    result = pytester.runpytest("--llmjudge", "suite.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*suite.yaml:7: judge.calibration_metrics: calibration covers 'linguistic_acceptabilty', which no "
            "assertion of this suite has the judge score*",
            "*did you mean 'linguistic_acceptability'?*",
        ]
    )


def test_selection_plans_only_the_gates_the_selected_items_need(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    """A calibrated suite run for one language pays for that language's gate, not the set's other
    languages; a gate item selected alone pays for its own group; the plan's line says what is whose."""
    scripted_judge.scores = by_quality
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=live_calibration(loopback.openai_base_url))
    pytester.makefile(".yaml", suite=suite_yaml("s", loopback.openai_base_url, "  uncalibrated: fail"))
    result = pytester.runpytest("--llmjudge", "suite.yaml", "--llmjudge-language", "fr", "--llmjudge-no-cache")
    result.assert_outcomes(passed=2, deselected=4)  # fr-1 and mean[fr]
    assert loopback.stats()["requests"] == N + 1, "the fr gate's items and fr-1; no bn call"
    result.stdout.fnmatch_lines(
        [f"llmjudge: {N + 1} judge call(s) planned, 1 for the selected items, {N} for the calibration gates they need*"]
    )
    before = loopback.stats()["requests"]
    result = pytester.runpytest("--llmjudge", "cal.yaml", "-k", "bn", "--llmjudge-no-cache")
    result.assert_outcomes(failed=1, deselected=1)
    assert loopback.stats()["requests"] - before == N, "the bn gate's own items only"


# -- gates in the release family (gate: {family: release}, --llmjudge-family-include=gates) --------------
# French judged exactly like the humans (weighted F1 1.0), Bengali always 2 (weighted F1 0.333).


def gates_of(pytester: pytest.Pytester) -> tuple[dict[str, dict[str, object]], dict[str, object]]:
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    gates = {g["language"]: g for g in report["gates"]}
    return gates, report["release"]


def test_joined_gates_are_decided_by_their_holm_adjusted_posterior_p(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl")
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 0.7\n  min_items: 20\n  family: release"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*bn linguistic_acceptability: weighted F1 >= threshold 0.700 not shown in the release family: "
            "posterior p 1, Holm-adjusted 1 > alpha 0.05 (2 comparisons)*",
            "release verdict: FAIL: 2 comparison(s), 2 agreement gate(s) among them in 1 family (run), Holm at*",
        ]
    )
    gates, release = gates_of(pytester)
    assert release["status"] == "fail" and release["comparisons"] == 2
    assert "1 failed: tiny agreement linguistic_acceptability [bn]" in str(release["text"])
    raw = []
    for language in ("bn", "fr"):
        confusion = np.array(gates[language]["confusion"]["matrix"], dtype=np.int64)  # type: ignore[index]
        raw.append(posterior_confusion_pvalue(confusion, weighted_f1_from_confusion, 0.7, n_draws=20_000, rng=0))
    adjusted = multipletests(raw, alpha=0.05, method="holm")[1]
    for language, p, q in zip(("bn", "fr"), raw, adjusted, strict=True):
        member = gates[language]["release"]
        assert isinstance(member, dict)
        assert member["p_value"] == pytest.approx(p) and member["p_adjusted"] == pytest.approx(q)
    assert raw[1] == pytest.approx(1 / 20_001), "40 of 40 agree: no posterior draw is below 0.7"
    assert gates["fr"]["passed"] is True and gates["bn"]["passed"] is False


def test_a_point_f1_above_the_threshold_is_not_enough_in_the_family(pytester: pytest.Pytester) -> None:
    # 12 French items, all agreeing: F1 1.00 >= 0.95, so the plain gate passes; the posterior
    # still puts more than 5% of its mass below 0.95, so the joined gate does not.
    write_items(pytester.path / "items.jsonl", languages=("fr",), n=12)
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 0.95\n  min_items: 10"))
    pytester.runpytest("--llmjudge").assert_outcomes(passed=1)
    result = pytester.runpytest("--llmjudge", "--llmjudge-family-include=gates", "--llmjudge-report=json:r.json")
    result.assert_outcomes(failed=1)
    gates, _ = gates_of(pytester)
    member = gates["fr"]["release"]
    assert isinstance(member, dict) and member["p_value"] > 0.05
    assert gates["fr"]["f1"] == 1.0 and gates["fr"]["passed"] is False


def test_family_include_takes_both_kinds_and_refuses_others(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl", languages=("fr",))
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 0.7\n  min_items: 20"))
    both = pytester.runpytest("--llmjudge", "--llmjudge-family-include=aggregates,gates")
    both.assert_outcomes(passed=1)
    both.stdout.fnmatch_lines(["*release verdict: PASS: 1 comparison(s), 1 agreement gate(s) among them*"])
    wrong = pytester.runpytest("--llmjudge", "--llmjudge-family-include=gate")
    assert wrong.ret == 4
    wrong.stderr.fnmatch_lines(["*--llmjudge-family-include*invalid choice: 'gate' (choose from aggregates, gates*"])


def test_a_gate_with_too_few_items_is_an_error_outside_the_count(pytester: pytest.Pytester) -> None:
    write_items(pytester.path / "items.jsonl", languages=("bn", "fr"), n=12)
    pytester.makefile(".yaml", cal=calibration_yaml("  threshold: 0.7\n  min_items: 20\n  family: release"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:r.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*too few items: 12 < min_items 20*"])
    gates, release = gates_of(pytester)
    assert all(g["release"]["p_value"] is None for g in gates.values())  # type: ignore[index]
    assert release["status"] == "fail"
