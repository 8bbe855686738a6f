"""Reference metrics asserted in suites, per case and per language, through pytester."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SUITE = """\
suite: metrics
metric_options:
  bleu: {tokenize: char}
cases:
  - id: fr-1
    language: fr
    input: "Quelle est la hauteur de la tour Eiffel ?"
    output: "La tour Eiffel mesure 330 mètres [p1]."
    reference: "La tour Eiffel mesure 330 mètres de haut."
    metadata: {relevant_passages: [p1, p2]}
  - id: ja-1
    language: ja
    input: "富士山の高さは？"
    output: "富士山の高さは3776メートルです [p1]。"
    reference: "富士山の高さは3776メートルです。"
    metadata: {relevant_passages: [p1]}
assert:
  - chrf++ >= 40
  - bleu >= 20
  - rouge_l >= 0.5
  - language == case.language
  - numeric_fidelity == 1
  - lrm2qas >= 0.3
  - citation_recall@2 >= 0.5
aggregate:
  - expr: mean(chrf++) >= 60
    per_language: {ja: ">= 50"}
"""


def test_metric_thresholds_pass_and_record_values(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    result = pytester.runpytest("--llmjudge", "-v", "--junitxml=r.xml", "--llmjudge-junit-properties")
    result.assert_outcomes(passed=17)
    xml = (pytester.path / "r.xml").read_text(encoding="utf-8")
    assert 'name="metric" value="citation_recall@2"' in xml
    assert 'name="score" value="ja"' in xml  # the language metric records the detected code


def test_a_metric_that_needs_a_reference_is_unscored_without_one(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: no-reference
cases:
  - {id: a, language: en, output: "Paris is the capital."}
assert: [chrf >= 10]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UNSCORED: a [[]en[]] chrf = -, expected >= 10", "*reason:*needs a reference*"])


def test_a_wrong_language_fails_with_the_detected_language(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: wrong-language
cases:
  - {id: hi-1, language: hi, output: "The capital of India is New Delhi, a large and busy city."}
assert: [language == case.language]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FAILED: hi-1 [[]hi[]] language = 'en', expected == 'hi'*"])


def test_bad_metric_parameters_are_a_located_suite_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: bad-params
metric_options:
  bleu: {tokenizer: char}
cases:
  - {id: a, language: en, output: x, reference: x}
assert:
  - bleu >= 10
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invalid suite: *suite.yaml:7: bleu: *tokenizer*"])


def test_correlate_command_fits_lambdas_on_the_example_file() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_llmjudge.metrics.correlate",
            str(REPO / "example_suites" / "data" / "qa_ratings.jsonl"),
            "--metric",
            "chrf++",
            "--fit-lambdas",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].split()[:6] == ["metric", "language", "n", "pearson", "spearman", "kendall"]
    assert any(line.startswith("chrf++") and " all " in line for line in lines)
    assert lines[-1].startswith("fitted lrm2qas lambdas {bert: ")


def test_case_language_compares_base_languages(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite="""\
suite: regional
cases:
  - {id: br, language: pt-BR, output: "O Brasil é o maior país da América do Sul e tem muitas cidades grandes."}
assert: [language == case.language]
""",
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(passed=1)
