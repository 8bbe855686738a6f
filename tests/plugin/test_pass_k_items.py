"""pass_at_k / pass_hat_k aggregates end to end: recorded samples, and a judge asked ``repeats`` times."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_llmjudge.testing import JudgeQuery, MockProvider, ScriptedJudge

RECORDED = """\
suite: repeats
cases:
  - id: hi-1
    language: hi
    output: "नमस्ते"
    recorded: {task_quality: {samples: [2, 2, 2, 2]}}
  - id: hi-2
    language: hi
    output: "नमस्ते जी"
    recorded: {task_quality: {samples: [2, 1, 2, 2]}}
  - id: sw-1
    language: sw
    output: "Habari"
    recorded: {task_quality: {samples: [2, 0, 1, 2]}}
  - id: sw-2
    language: sw
    output: "Habari yako"
    recorded: {task_quality: {samples: [1, 1, 2, 1]}}
aggregate:
  - mean(task_quality) >= 1.4
  - pass_at_k(task_quality >= 2, k=2) >= 0.8
  - expr: pass_hat_k(task_quality >= 2) >= 0.5
    xfail: {sw: "no sw case passes all four repeats", all: "sw pulls the mean of all cases to 0.25"}
  - pass_hat_k(task_quality >= 2, k=2) >= 0.6
"""


def _properties(path: Path) -> dict[str, dict[str, str]]:
    found = {}
    for case in ET.parse(path).iter("testcase"):
        name = case.get("classname", "") + "::" + case.get("name", "")
        found[name] = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    return found


def test_recorded_samples_give_pass_k_rows(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=RECORDED)
    result = pytester.runpytest("--llmjudge", "-rA", "--junitxml=r.xml", "--llmjudge-junit-properties")
    # Per case, passes of task_quality >= 2 of n = 4: hi-1 4, hi-2 3, sw-1 2, sw-2 1.
    #   pass@2 = 1 - C(4-c, 2)/C(4, 2): 1, 1, 5/6, 1/2; pass^2 = C(c, 2)/C(4, 2): 1, 1/2, 1/6, 0.
    #   pass^4 (k = n): 1, 0, 0, 0.
    properties = _properties(pytester.path / "r.xml")

    def value(item: str) -> float:
        return float(properties[f"suite.yaml::{item}"]["score"])

    assert value("pass_at_k(task_quality >= 2, k=2)[hi]") == pytest.approx(1.0)
    assert value("pass_at_k(task_quality >= 2, k=2)[sw]") == pytest.approx((5 / 6 + 1 / 2) / 2)
    assert value("pass_at_k(task_quality >= 2, k=2)[all]") == pytest.approx((2 + 5 / 6 + 1 / 2) / 4)
    assert value("pass_hat_k(task_quality >= 2)[hi]") == pytest.approx(0.5)
    assert value("pass_hat_k(task_quality >= 2, k=2)[all]") == pytest.approx((1 + 1 / 2 + 1 / 6) / 4)
    # The mean passes everywhere (hi 1.875, sw 1.25 fails 1.4): pass^k says what the mean hides.
    assert _outcomes(result) == {
        "mean(task_quality)[hi]": "passed",
        "mean(task_quality)[sw]": "failed",
        "mean(task_quality)[all]": "passed",
        "pass_at_k(task_quality >= 2, k=2)[hi]": "passed",
        "pass_at_k(task_quality >= 2, k=2)[sw]": "failed",
        "pass_at_k(task_quality >= 2, k=2)[all]": "passed",
        "pass_hat_k(task_quality >= 2)[hi]": "passed",
        "pass_hat_k(task_quality >= 2)[sw]": "xfail",
        "pass_hat_k(task_quality >= 2)[all]": "xfail",
        "pass_hat_k(task_quality >= 2, k=2)[hi]": "passed",
        "pass_hat_k(task_quality >= 2, k=2)[sw]": "failed",
        "pass_hat_k(task_quality >= 2, k=2)[all]": "failed",
    }
    # A failure names the statistic and its interval, then the cases that pulled it down.
    result.stdout.fnmatch_lines(
        [
            "*FAILED: pass_hat_k(task_quality >= 2, k=2) for sw = 0.0833*, expected >= 0.6",
            "*language*95% CI*",
            "*lowest cases (2 of 2 below 1; passing samples of n, k):",
            "*sw-2 ?sw? 1/4, k=2: 0.000",
            "*sw-1 ?sw? 2/4, k=2: 0.167",
        ]
    )


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """Item name -> outcome, from the ``-rA`` short summary (``PASSED suite.yaml::name - ...``)."""
    found = {}
    for line in result.outlines:
        outcome, _, rest = line.partition(" suite.yaml::")
        if outcome in ("PASSED", "FAILED", "XFAIL") and rest:
            found[rest.split(" - ")[0]] = outcome.lower()
    return found


def test_k_above_the_recorded_samples_is_a_load_error_naming_the_case(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: short
cases:
  - {id: a, language: hi, output: x, recorded: {task_quality: {samples: [2, 2, 2]}}}
  - {id: b, language: hi, output: y, recorded: {task_quality: 2}}
aggregate:
  - mean(task_quality) >= 1
  - pass_hat_k(task_quality >= 2, k=3) >= 0.5
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)  # the suite's one error item: nothing is judged
    result.stdout.fnmatch_lines(
        ["*suite.yaml:7: pass_hat_k(task_quality >= 2, k=3) needs k = 3 samples per case; case 'b' has 1 (one score)*"]
    )


def test_a_null_recorded_sample_leaves_the_case_unscored(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: nulls
cases:
  - {id: a, language: hi, output: x, recorded: {task_quality: {samples: [2, 2]}}}
  - {id: b, language: hi, output: y, recorded: {task_quality: {samples: [2, null]}}}
aggregate:
  - expr: pass_at_k(task_quality >= 2) >= 0.5
    max_unscored_rate: 0.5
  - pass_at_k(task_quality >= 2) >= 0.5
""",
    )
    result = pytester.runpytest("--llmjudge", "--junitxml=r.xml", "--llmjudge-junit-properties")
    # The unscored case counts 0, not as the pass its one sample would make it: 1/2 either way;
    # the row that tolerates no unscored case fails on it.
    properties = _properties(pytester.path / "r.xml")
    row = properties["suite.yaml::pass_at_k(task_quality >= 2)[hi]"]
    assert float(row["score"]) == 0.5 and row["n_unscored"] == "1"
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*1 of 2 case(s) unscored in hi (allowed: 0%)*"])


def test_repeats_of_a_live_judge_with_seed_dependent_scores(
    pytester: pytest.Pytester, mock_judge: MockProvider, scripted_judge: ScriptedJudge
) -> None:
    # Seeds 10, 11, 12 (judge.seed + sample): the French output gets 1 on seed 12, the Japanese always 2.
    def score(query: JudgeQuery) -> int:
        return 1 if query.language == "fr" and query.seed == 12 else 2

    scripted_judge.scores = score
    pytester.makefile(
        ".yaml",
        suite="""\
suite: live
judge:
  provider: mock
  model: loopback-judge
  repeats: 3
  seed: 10
cases:
  - {id: fr-1, language: fr, input: "Dis bonjour.", output: "Bonjour !"}
  - {id: ja-1, language: ja, input: "挨拶して", output: "こんにちは。"}
aggregate:
  - pass_hat_k(task_quality >= 2) >= 0.5
  - pass_hat_k(task_quality >= 2, k=2) >= 0.6
  - pass_at_k(task_quality >= 2) >= 1
  - lower(pass_at_k(task_quality >= 2, k=1)) >= 0.9
""",
    )
    result = pytester.runpytest("--llmjudge", "--junitxml=r.xml", "--llmjudge-junit-properties")
    assert sorted(r.seed or 0 for r in mock_judge.requests) == [10, 10, 11, 11, 12, 12]
    properties = _properties(pytester.path / "r.xml")

    def row(item: str) -> dict[str, str]:
        return properties[f"suite.yaml::{item}"]

    # fr: 2 of 3 samples pass; ja: 3 of 3. pass^3: 0 and 1; pass^2 = C(2,2)/C(3,2) = 1/3 and 1.
    assert float(row("pass_hat_k(task_quality >= 2)[all]")["score"]) == pytest.approx(0.5)
    assert float(row("pass_hat_k(task_quality >= 2, k=2)[fr]")["score"]) == pytest.approx(1 / 3)
    assert float(row("pass_hat_k(task_quality >= 2, k=2)[all]")["score"]) == pytest.approx(2 / 3)
    assert float(row("pass_at_k(task_quality >= 2)[all]")["score"]) == 1.0
    # k = 1 is the per-sample pass rate, 5/6; two cases leave its 97.5% lower bound low.
    lower = row("lower(pass_at_k(task_quality >= 2, k=1))[all]")
    assert float(lower["score"]) == pytest.approx(5 / 6) and float(lower["ci_low"]) < 0.9
    result.assert_outcomes(passed=7, failed=5)
    result.stdout.fnmatch_lines(["*fr-1 ?fr? 2/3, k=2: 0.333*"])
