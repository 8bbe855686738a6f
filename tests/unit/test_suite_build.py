"""Suite files -> validated ``Suite`` objects, or ``file:line: field: message`` errors.

Every error test names the exact line a reader should look at; the suites are written so the
line numbers can be read off the YAML in the test (line 1 is the ``suite:`` key).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS, LINGUISTIC_ACCEPTABILITY
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.suite.build import build_suite
from pytest_llmjudge.suite.expressions import MetricThreshold
from pytest_llmjudge.suite.loader import load_yaml
from pytest_llmjudge.suite.model import RecordedValue, Suite


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def jsonl(directory: Path, name: str, *records: dict[str, object] | str) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path = directory / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build(tmp_path: Path, registry: Registry, text: str) -> Suite:
    return build_suite(write(tmp_path, "suite.yaml", text), registry)


def build_error(tmp_path: Path, registry: Registry, text: str) -> SuiteError:
    with pytest.raises(SuiteError) as excinfo:
        build(tmp_path, registry, text)
    return excinfo.value


# --------------------------------------------------------------------------- a valid suite

VALID = """\
suite: demo
description: A demo suite
task: Greet the user in the case's language.
judge:
  provider: anthropic
  model: claude-x
assert:
  - linguistic_acceptability >= 1
cases:
  - id: hi-1
    language: hi
    input: Say hello
    output: नमस्ते
    reference: नमस्ते
    context: one passage
    assert:
      - chrf >= 40
  - id: en-1
    language: en
    output: Hello
    context: [a, b]
    metadata: {topic: greeting}
    recorded:
      linguistic_acceptability: 2
      human_rating: {score: 4.5, justification: fine, judge: annotator-1}
    assert:
      - human_rating >= 4
aggregate:
  - mean(linguistic_acceptability) >= 1.5
  - expr: pass_rate(chrf >= 45) >= 0.5
    per_language: {hi: 0.25, en: "> 0.75"}
    min_cases: 2
    max_unscored_rate: 0.5
"""


def test_a_valid_suite(tmp_path: Path, registry: Registry) -> None:
    suite = build(tmp_path, registry, VALID)

    assert suite.name == "demo"
    assert suite.path == tmp_path / "suite.yaml"
    assert suite.description == "A demo suite"
    assert suite.task == "Greet the user in the case's language."
    assert (suite.judge.provider, suite.judge.model) == ("anthropic", "claude-x")
    assert suite.judge.mode == "single"  # schema default
    assert suite.output_target is None
    assert [case.id for case in suite.cases] == ["hi-1", "en-1"]
    assert suite.languages == ("en", "hi")


def test_cases_carry_their_fields_and_lines(tmp_path: Path, registry: Registry) -> None:
    hi, en = build(tmp_path, registry, VALID).cases

    assert (hi.suite, hi.id, hi.language, hi.key) == ("demo", "hi-1", "hi", "demo::hi-1")
    assert (hi.input, hi.output, hi.reference) == ("Say hello", "नमस्ते", "नमस्ते")
    assert hi.context == ("one passage",)  # a single string becomes a one-item tuple
    assert en.context == ("a", "b")
    assert en.metadata == {"topic": "greeting"}
    assert en.input is None and en.reference is None
    assert (hi.path, hi.line) == (tmp_path / "suite.yaml", 10)
    assert (en.path, en.line) == (tmp_path / "suite.yaml", 18)


def test_suite_thresholds_come_first_then_the_case_s_own(tmp_path: Path, registry: Registry) -> None:
    hi, en = build(tmp_path, registry, VALID).cases

    assert hi.thresholds == (
        MetricThreshold("linguistic_acceptability", ">=", 1.0),
        MetricThreshold("chrf", ">=", 40.0),
    )
    assert en.thresholds == (
        MetricThreshold("linguistic_acceptability", ">=", 1.0),
        MetricThreshold("human_rating", ">=", 4.0),
    )


def test_recorded_scores(tmp_path: Path, registry: Registry) -> None:
    hi, en = build(tmp_path, registry, VALID).cases

    assert hi.recorded == {}
    assert en.recorded == {
        "linguistic_acceptability": RecordedValue(score=2.0),
        "human_rating": RecordedValue(score=4.5, justification="fine", judge="annotator-1"),
    }
    assert isinstance(en.recorded["linguistic_acceptability"].score, float)


def test_metric_kinds(tmp_path: Path, registry: Registry) -> None:
    suite = build(tmp_path, registry, VALID)

    assert dict(suite.metric_kinds) == {
        "linguistic_acceptability": "rubric",  # built-in rubric: an LLM judge
        "chrf": "metric",  # reference metric
        "human_rating": "recorded",  # neither, but recorded on cases
    }
    assert suite.rubrics["linguistic_acceptability"] is BUILTIN_RUBRICS["linguistic_acceptability"]
    assert "chrf" not in suite.rubrics
    # hi-1 has no recorded linguistic_acceptability, so a live judge is needed.
    assert suite.needs_live_judge


def test_aggregates_with_per_language_overrides(tmp_path: Path, registry: Registry) -> None:
    plain, overridden = build(tmp_path, registry, VALID).aggregates

    assert plain.spec.render() == "mean(linguistic_acceptability) >= 1.5"
    assert plain.line == 29
    assert (plain.min_cases, plain.max_unscored_rate, dict(plain.overrides)) == (1, 0.0, {})

    assert overridden.spec.render() == "pass_rate(chrf >= 45) >= 0.5"
    assert overridden.line == 30
    assert dict(overridden.overrides) == {"hi": (">=", 0.25), "en": (">", 0.75)}
    assert (overridden.min_cases, overridden.max_unscored_rate) == (2, 0.5)
    assert overridden.for_language("hi").render() == "pass_rate(chrf >= 45) >= 0.25"
    assert overridden.for_language("en").render() == "pass_rate(chrf >= 45) > 0.75"
    assert overridden.for_language("mr") == overridden.spec
    assert overridden.for_language(None) == overridden.spec


def test_an_aliased_rubric_resolves_to_the_built_in(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: s
        cases:
          - {id: a, language: hi, output: x, assert: [la >= 1]}
        """,
    )
    assert suite.metric_kinds == {"la": "rubric"}
    # The alias keeps the built-in's text and scale, under the name the suite uses.
    assert suite.rubrics["la"].name == "la"
    assert suite.rubrics["la"].description == LINGUISTIC_ACCEPTABILITY.description
    assert suite.rubrics["la"].scale == (0, 1, 2)


def test_a_fully_recorded_suite_needs_no_live_judge(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: s
        assert: [hallucinations <= 0]
        cases:
          - {id: a, language: hi, output: x, recorded: {hallucinations: 0}}
          - {id: b, language: hi, output: y, recorded: {hallucinations: {score: null}}}
        """,
    )
    assert not suite.needs_live_judge
    assert suite.cases[1].recorded["hallucinations"] == RecordedValue(score=None)


def test_a_prebuilt_document_is_used_as_is(tmp_path: Path, registry: Registry) -> None:
    path = tmp_path / "not-on-disk.yaml"
    document = load_yaml(path, text="suite: s\ncases:\n  - {id: a, language: hi, output: x}\n")
    suite = build_suite(path, registry, document=document)
    assert suite.cases[0].line == 3


# --------------------------------------------------------------------------- user rubrics


def test_a_user_rubric(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          politeness:
            description: Is the reply polite?
            scale: [3, 1, 2, 2]
            scores: {1: rude, 3: polite, 2: neutral}
            per_language: {ja: Keigo must match the addressee.}
            needs: [input]
        assert:
          - politeness >= 2
        cases:
          - id: a
            language: ja
            output: x
            recorded: {politeness: 3}
        """,
    )
    rubric = suite.rubrics["politeness"]

    assert rubric.scale == (1, 2, 3)  # sorted and deduplicated
    assert rubric.score_descriptions == {1: "rude", 2: "neutral", 3: "polite"}
    assert rubric.scoring == "1: rude; 2: neutral; 3: polite"
    assert rubric.per_language == {"ja": "Keigo must match the addressee."}
    assert rubric.needs == frozenset({"input"})
    assert rubric.higher_is_better
    assert suite.metric_kinds == {"politeness": "rubric"}
    assert not suite.needs_live_judge


def test_a_user_rubric_without_score_texts_describes_its_range(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          errors:
            description: How many errors?
            scale: [0, 1, 2, 3]
            higher_is_better: false
        cases:
          - {id: a, language: en, output: x, assert: [errors <= 1]}
        """,
    )
    assert suite.rubrics["errors"].scoring == "an integer from 0 (best) to 3 (worst)"


def test_a_user_rubric_overrides_a_built_in_name(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          hallucinations:
            description: Our own definition.
            scale: [1, 5]
        cases:
          - {id: a, language: en, output: x, assert: [hallucinations >= 1]}
        """,
    )
    assert suite.rubrics["hallucinations"].scale == (1, 5)


def test_user_rubric_scores_must_be_on_the_scale(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          politeness:
            description: Is it polite?
            scale: [1, 2]
            scores: {3: polite}
        cases:
          - {id: a, language: ja, output: x}
        """,
    )
    assert error.line == 3
    assert error.field == "rubrics.politeness"
    assert "scores [3] are not on the scale [1, 2]" in error.message


def test_a_scale_needs_two_distinct_scores(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          politeness:
            description: Is it polite?
            scale: [1, 1]
        cases:
          - {id: a, language: ja, output: x}
        """,
    )
    assert (error.line, error.field) == (5, "rubrics.politeness.scale")
    assert "at least two distinct scores" in error.message


def test_a_recorded_score_off_a_user_rubric_scale(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          politeness: {description: 'Is it polite?', scale: [1, 2, 3]}
        assert: [politeness >= 2]
        cases:
          - id: a
            language: ja
            output: x
          - id: b
            language: ja
            output: y
            recorded: {politeness: 5}
        """,
    )
    assert (error.line, error.field) == (9, "recorded.politeness")
    assert "recorded politeness score 5 of case 'b' is not on the scale [1, 2, 3]" in error.message


# --------------------------------------------------------------------------- schema errors


def test_unknown_field_suggests_the_close_match(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        asert:
          - linguistic_acceptability >= 1
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    path = tmp_path / "suite.yaml"
    assert (error.path, error.line, error.field) == (path, 2, None)
    assert error.message == "unknown field 'asert'"
    assert error.hint == "did you mean 'assert'?"
    assert str(error) == f"{path}:2: unknown field 'asert'\n  hint: did you mean 'assert'?"


def test_unknown_field_in_a_case(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            output: x
            asert: [chrf >= 1]
        """,
    )
    assert (error.line, error.field, error.hint) == (6, "cases[0]", "did you mean 'assert'?")
    assert str(error).startswith(f"{tmp_path / 'suite.yaml'}:6: cases[0]: unknown field 'asert'")


def test_unknown_field_in_the_judge_lists_near_names(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        judge:
          provder: openai
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert (error.line, error.field, error.hint) == (3, "judge", "did you mean 'provider'?")


def test_unknown_field_without_a_close_match_lists_the_allowed_ones(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        zzzz: 1
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert error.hint is not None
    assert error.hint.startswith("allowed fields: aggregate, assert, cases, cases_file, description")


def test_unknown_field_in_an_aggregate(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x}
        aggregate:
          - expr: mean(chrf) >= 1
            per_languge: {hi: 2}
        """,
    )
    assert (error.line, error.field, error.hint) == (6, "aggregate[0]", "did you mean 'per_language'?")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("5", "Input should be a valid string"), ("[hi]", "Input should be a valid string"), ("h", "at least 2")],
)
def test_wrong_type_names_the_field(tmp_path: Path, registry: Registry, value: str, expected: str) -> None:
    error = build_error(
        tmp_path,
        registry,
        f"""\
        suite: demo
        cases:
          - id: a
            output: x
            language: {value}
        """,
    )
    assert (error.line, error.field) == (5, "cases[0].language")
    assert expected in error.message
    assert str(error).startswith(f"{tmp_path / 'suite.yaml'}:5: cases[0].language: ")


def test_out_of_range_judge_setting(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        judge:
          model: m
          temperature: 3
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert (error.line, error.field) == (4, "judge.temperature")
    assert "less than or equal to 2" in error.message


def test_a_bad_case_id(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a/b
            language: hi
            output: x
        """,
    )
    assert (error.line, error.field) == (3, "cases[0].id")
    assert "they become node ids" in error.message


def test_missing_suite_name(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert (error.line, error.field) == (1, None)
    assert error.message == "missing required field 'suite'"


def test_a_missing_case_field_names_the_case(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            output: x
        """,
    )
    assert (error.line, error.field) == (3, "cases[0]")
    assert error.message == "missing required field 'language'"


@pytest.mark.parametrize("cases", ["", "cases: []\n"])
def test_missing_cases(tmp_path: Path, registry: Registry, cases: str) -> None:
    error = build_error(tmp_path, registry, "suite: demo\n" + cases)
    assert error.line == 1
    assert "a suite needs 'cases' or 'cases_file'" in error.message


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just text\n"])
def test_a_suite_must_be_a_mapping(tmp_path: Path, registry: Registry, text: str) -> None:
    error = build_error(tmp_path, registry, text)
    assert error.line == 1
    assert "a suite file must be a YAML mapping with a 'suite:' key" in error.message


def test_several_problems_are_counted(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            output: 3
        """,
    )
    assert error.message.endswith("(and 1 more problem)")


# --------------------------------------------------------------------------- thresholds and metrics


def test_an_unparseable_threshold_names_its_list_item(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        assert:
          - linguistic_acceptability >= 1
          - chrf => 3
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert (error.line, error.field) == (4, "assert[1]")
    assert "can't parse assertion 'chrf => 3'" in error.message


def test_an_unparseable_case_threshold_names_its_list_item(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            output: x
          - id: b
            language: hi
            output: y
            assert:
              - chrf >= 1
              - language >= "hi"
        """,
    )
    assert (error.line, error.field) == (11, "cases[1].assert[1]")
    assert "needs == or !=" in error.message


def test_an_unparseable_aggregate_names_its_entry(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x}
        aggregate:
          - mean(chrf) >= 40
          - expr: pass_rate(chrf >= 45) >= 0.8
            per_language: {hi: junk}
        """,
    )
    assert (error.line, error.field) == (6, "aggregate[1]")
    assert "'junk'" in error.message


def test_pass_rate_without_an_assertion_in_a_suite(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x}
        aggregate:
          - pass_rate(chrf) >= 0.8
        """,
    )
    assert (error.line, error.field) == (5, "aggregate[0]")
    assert "pass_rate needs a case assertion" in error.message


def test_a_threshold_on_an_undefined_metric_suggests_a_close_match(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            output: x
          - id: b
            language: hi
            output: y
            assert: [linguistic_acceptabilty >= 1]
        """,
    )
    # The assertion that names the metric.
    assert error.line == 9
    assert error.message == "threshold on undefined metric 'linguistic_acceptabilty'"
    assert error.hint is not None
    assert error.hint.startswith("did you mean 'linguistic_acceptability'? define it under 'rubrics:'")


def test_an_undefined_metric_without_a_close_match(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x, assert: [zzqx >= 1]}
        """,
    )
    assert error.hint is not None
    assert not error.hint.startswith("did you mean")
    assert "record scores for it" in error.hint


def test_an_undefined_metric_in_an_aggregate_names_the_aggregate(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x}
        aggregate:
          - mean(chrf) >= 40
          - mean(chrff) >= 40
        """,
    )
    assert error.line == 6
    assert error.message == "threshold on undefined metric 'chrff'"
    assert error.hint is not None and error.hint.startswith("did you mean 'chrf")


def test_an_undefined_metric_in_the_suite_assert_names_that_line(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        assert:
          - linguistic_acceptabilty >= 1
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert error.line == 3
    assert error.path == tmp_path / "suite.yaml"
    assert error.hint is not None and error.hint.startswith("did you mean 'linguistic_acceptability'?")


def test_an_undefined_metric_in_a_multi_line_case_assert(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        assert:
          - chrf >= 1
        cases:
          - id: a
            language: hi
            output: x
            assert:
              - chrf >= 2
              - bleu >= 3
              - rouge_k >= 0.5
        """,
    )
    assert error.line == 11
    assert error.hint is not None and error.hint.startswith("did you mean 'rouge_l'?")


def test_bad_metric_options_are_located(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        metric_options:
          chrf: {no_such_option: 1}
        cases:
          - {id: a, language: hi, output: x, assert: [chrf >= 1]}
        """,
    )
    # Located at the assertion that uses the metric (the metric is built for it).
    assert (error.line, error.field) == (5, "chrf")
    assert "bad parameters for metric 'chrf'" in error.message


# --------------------------------------------------------------------------- cases and outputs


def test_duplicate_case_ids_name_the_first_definition(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            output: x
          - id: b
            language: hi
            output: y
          - id: a
            language: en
            output: z
        """,
    )
    path = tmp_path / "suite.yaml"
    assert (error.path, error.line, error.field) == (path, 9, "id")
    assert error.message == f"duplicate case id 'a' (first defined at {path}:3)"


def test_a_case_without_output_or_target(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            output: x
          - id: b
            language: hi
        """,
    )
    assert error.line == 6
    assert error.message == "case 'b' has no output"
    assert error.hint is not None and "outputs.target" in error.hint


def test_an_output_target_allows_cases_without_output(tmp_path: Path, registry: Registry) -> None:
    with_target = dataclasses.replace(registry, targets={"my-model": lambda case: "generated"})
    suite = build(
        tmp_path,
        with_target,
        """\
        suite: demo
        outputs:
          target: my-model
        cases:
          - {id: a, language: hi}
        """,
    )
    assert suite.output_target == "my-model"
    assert suite.cases[0].output is None


def test_an_unknown_output_target_is_located(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        outputs:
          target: no-such-target
        cases:
          - {id: a, language: hi}
        """,
    )
    assert (error.line, error.field) == (3, "outputs.target")
    assert "'no-such-target'" in error.message


def test_outputs_needs_exactly_one_source(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        outputs: {file: a.jsonl, target: "m:f"}
        cases:
          - {id: a, language: hi}
        """,
    )
    assert (error.line, error.field) == (2, "outputs")
    assert "exactly one of 'file' or 'target'" in error.message


def test_a_recorded_score_off_the_rubric_scale(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        assert:
          - linguistic_acceptability >= 1
        cases:
          - id: a
            language: hi
            output: x
            recorded:
              linguistic_acceptability: 3
        """,
    )
    assert (error.line, error.field) == (5, "recorded.linguistic_acceptability")
    assert error.message == ("recorded linguistic_acceptability score 3 of case 'a' is not on the scale [0, 1, 2]")


def test_a_fractional_recorded_score_is_off_the_scale(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        assert: [hallucinations <= 0]
        cases:
          - id: a
            language: hi
            output: x
            recorded: {hallucinations: {score: 0.5, judge: gpt-4}}
        """,
    )
    assert "score 0.5" in error.message and "[0, 1]" in error.message


def test_a_recorded_entry_needs_a_score(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            output: x
            recorded:
              linguistic_acceptability: {scor: 1}
        """,
    )
    assert (error.line, error.field) == (7, "cases[0].recorded.linguistic_acceptability")
    assert error.message.startswith("missing required field 'score'")


def test_the_language_filter_keeps_matching_cases(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: demo
        languages: [hi, mr]
        cases:
          - {id: a, language: hi, output: x}
          - {id: b, language: en, output: y}
          - {id: c, language: mr, output: z}
        """,
    )
    assert [case.id for case in suite.cases] == ["a", "c"]


def test_a_language_filter_that_leaves_nothing(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x}
        languages: [fr]
        """,
    )
    assert error.line == 4
    assert error.message == "no cases left after the language filter"


def test_the_language_filter_drops_duplicates_in_other_languages(tmp_path: Path, registry: Registry) -> None:
    # Filtering happens before the duplicate check; a filtered-out case can't clash.
    suite = build(
        tmp_path,
        registry,
        """\
        suite: demo
        languages: [hi]
        cases:
          - {id: a, language: hi, output: x}
          - {id: a, language: en}
        """,
    )
    assert [case.language for case in suite.cases] == ["hi"]


# --------------------------------------------------------------------------- side files


def test_outputs_file_fills_outputs_by_id(tmp_path: Path, registry: Registry) -> None:
    jsonl(tmp_path, "outputs.jsonl", {"id": "a", "output": "from file a"}, {"id": "b", "output": "from file b"})
    suite = build(
        tmp_path,
        registry,
        """\
        suite: demo
        outputs:
          file: outputs.jsonl
        cases:
          - {id: a, language: hi}
          - {id: b, language: hi, output: inline wins}
        """,
    )
    assert [case.output for case in suite.cases] == ["from file a", "inline wins"]


def test_a_case_missing_from_the_outputs_file(tmp_path: Path, registry: Registry) -> None:
    jsonl(tmp_path, "outputs.jsonl", {"id": "a", "output": "x"})
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        outputs: {file: outputs.jsonl}
        cases:
          - {id: a, language: hi}
          - {id: b, language: hi}
        """,
    )
    assert (error.line, error.message) == (5, "case 'b' has no output")


def test_a_missing_outputs_file(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        outputs:
          file: missing.jsonl
        cases:
          - {id: a, language: hi}
        """,
    )
    assert (error.path, error.line, error.field) == (tmp_path / "suite.yaml", 3, "outputs.file")
    assert error.message == f"outputs file not found: {tmp_path / 'missing.jsonl'}"
    assert error.hint == "outputs.file is resolved relative to the suite file"


def test_a_bad_outputs_line(tmp_path: Path, registry: Registry) -> None:
    outputs = jsonl(tmp_path, "outputs.jsonl", {"id": "a", "output": "x"}, {"id": "b"})
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        outputs: {file: outputs.jsonl}
        cases:
          - {id: a, language: hi}
        """,
    )
    assert (error.path, error.line) == (outputs, 2)
    assert "needs string 'id' and 'output'" in error.message


def test_a_missing_cases_file(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases_file: nope.jsonl
        """,
    )
    assert (error.path, error.line, error.field) == (tmp_path / "suite.yaml", 2, "cases_file")
    assert error.message == f"cases file not found: {tmp_path / 'nope.jsonl'}"
    assert error.hint == "cases_file is resolved relative to the suite file"


def test_a_missing_file_in_a_cases_file_list(tmp_path: Path, registry: Registry) -> None:
    jsonl(tmp_path, "a.jsonl", {"id": "q", "language": "hi", "output": "o"})
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases_file:
          - a.jsonl
          - path: nope.jsonl
        """,
    )
    assert (error.line, error.field) == (4, "cases_file[1]")


CASES: list[dict[str, object] | str] = [
    {"id": "c1", "language": "hi", "output": "o1", "split": "test", "domain": "health"},
    {"id": "c2", "language": "hi", "output": "o2", "split": "dev", "domain": "law"},
    "",
    {"id": "c3", "language": "en", "output": "o3", "split": "test", "domain": "y", "metadata": {"domain": "x", "k": 1}},
]


def test_cases_file_with_extra_fields_as_metadata_and_a_filter(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(tmp_path, "cases.jsonl", *CASES)
    suite = build(
        tmp_path,
        registry,
        """\
        suite: demo
        cases_file:
          path: cases.jsonl
          extra_fields: metadata
          where: {split: test}
        assert:
          - chrf >= 10
        """,
    )
    c1, c3 = suite.cases
    assert (c1.id, c1.language, c1.output) == ("c1", "hi", "o1")
    assert c1.metadata == {"split": "test", "domain": "health"}
    # An explicit metadata value wins over a same-named extra field.
    assert c3.metadata == {"split": "test", "domain": "x", "k": 1}
    # JSONL cases point at their own file and line.
    assert (c1.path, c1.line) == (cases_path, 1)
    assert (c3.path, c3.line) == (cases_path, 4)
    assert c1.thresholds == (MetricThreshold("chrf", ">=", 10.0),)


def test_cases_file_rejects_extra_fields_by_default(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(tmp_path, "cases.jsonl", *CASES)
    error = build_error(tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\n")
    assert (error.path, error.line) == (cases_path, 1)
    assert error.message.startswith("unknown field 'split'")


def test_inline_and_file_cases_together(tmp_path: Path, registry: Registry) -> None:
    jsonl(tmp_path, "cases.jsonl", {"id": "f1", "language": "hi", "output": "o", "assert": ["chrf >= 5"]})
    suite = build(
        tmp_path,
        registry,
        """\
        suite: demo
        cases_file: cases.jsonl
        cases:
          - {id: i1, language: hi, output: x}
        """,
    )
    assert [case.id for case in suite.cases] == ["i1", "f1"]
    assert suite.cases[1].thresholds == (MetricThreshold("chrf", ">=", 5.0),)


def test_a_duplicate_between_inline_and_file_cases(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(tmp_path, "cases.jsonl", {"id": "c1", "language": "hi", "output": "o"})
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases_file: cases.jsonl
        cases:
          - id: c1
            language: hi
            output: x
        """,
    )
    assert (error.path, error.line) == (cases_path, 1)
    assert error.message == f"duplicate case id 'c1' (first defined at {tmp_path / 'suite.yaml'}:4)"


def test_a_bad_jsonl_case_reports_the_jsonl_file_and_line(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(
        tmp_path,
        "cases.jsonl",
        {"id": "c1", "language": "hi", "output": "o"},
        "",
        {"id": "c2", "language": 7, "output": "o"},
    )
    error = build_error(tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\n")
    assert (error.path, error.line, error.field) == (cases_path, 3, "language")
    assert str(error) == f"{cases_path}:3: language: Input should be a valid string"


def test_invalid_json_in_a_cases_file(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(tmp_path, "cases.jsonl", {"id": "c1", "language": "hi", "output": "o"}, "{bad")
    error = build_error(tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\n")
    assert (error.path, error.line) == (cases_path, 2)
    assert error.message.startswith("invalid JSON")


def test_an_undefined_metric_in_a_jsonl_case(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(
        tmp_path,
        "cases.jsonl",
        {"id": "c1", "language": "hi", "output": "o"},
        {"id": "c2", "language": "hi", "output": "o", "assert": ["chrg >= 2"]},
    )
    error = build_error(tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\n")
    assert (error.path, error.line) == (cases_path, 2)
    assert error.hint is not None and error.hint.startswith("did you mean 'chrf'?")


def test_a_recorded_score_off_scale_in_a_jsonl_case(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(
        tmp_path,
        "cases.jsonl",
        {"id": "c1", "language": "hi", "output": "o", "recorded": {"linguistic_acceptability": 5}},
    )
    error = build_error(
        tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\nassert: [linguistic_acceptability >= 1]\n"
    )
    assert (error.path, error.line, error.field) == (cases_path, 1, "recorded.linguistic_acceptability")


def test_a_where_filter_that_matches_nothing(tmp_path: Path, registry: Registry) -> None:
    jsonl(tmp_path, "cases.jsonl", *CASES)
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases_file: {path: cases.jsonl, extra_fields: metadata, where: {split: train}}
        """,
    )
    assert error.message == "the suite has no cases"


def test_an_unparseable_jsonl_threshold_names_the_assert_field(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(
        tmp_path,
        "cases.jsonl",
        {"id": "c1", "language": "hi", "output": "o"},
        {"id": "c2", "language": "hi", "output": "o", "assert": ["chrf >= 1", "chrf => 2"]},
    )
    error = build_error(tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\n")
    assert (error.path, error.line) == (cases_path, 2)
    assert error.field == "assert[1]"


def test_an_unknown_jsonl_case_field_suggests_a_case_field(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(tmp_path, "cases.jsonl", {"id": "c1", "language": "hi", "output": "o", "refrence": "r"})
    error = build_error(tmp_path, registry, "suite: demo\ncases_file: cases.jsonl\n")
    assert (error.path, error.line) == (cases_path, 1)
    assert error.message == "unknown field 'refrence'"
    assert error.hint == "did you mean 'reference'?"


def test_a_null_metadata_with_extra_fields_is_a_suite_error(tmp_path: Path, registry: Registry) -> None:
    cases_path = jsonl(tmp_path, "cases.jsonl", {"id": "c1", "language": "hi", "output": "o", "metadata": None})
    with pytest.raises(SuiteError) as excinfo:
        build(tmp_path, registry, "suite: demo\ncases_file: {path: cases.jsonl, extra_fields: metadata}\n")
    assert (excinfo.value.path, excinfo.value.line) == (cases_path, 1)


def test_an_error_under_a_capitalised_key_keeps_that_key(tmp_path: Path, registry: Registry) -> None:
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: s
        rubrics:
          Fluency:
            description: Is it fluent?
            scale: [1]
        cases:
          - {id: a, language: hi, output: x}
        """,
    )
    assert (error.line, error.field) == (5, "rubrics.Fluency.scale")


@pytest.mark.parametrize(
    ("yaml_tail", "line", "field"),
    [
        ("cases_file: 5\n", 2, "cases_file"),
        (
            "cases:\n  - id: a\n    language: hi\n    output: x\n    context: 5\n",
            6,
            "cases[0].context",
        ),
        (
            "cases:\n  - {id: a, language: hi, output: x}\naggregate:\n  - expr: mean(chrf) >= 1\n"
            "    per_language: {pt-BR: [1]}\n",
            6,
            "aggregate[0].per_language.pt-BR",
        ),
    ],
)
def test_union_fields_are_reported_without_pydantic_tags(
    tmp_path: Path, registry: Registry, yaml_tail: str, line: int, field: str
) -> None:
    error = build_error(tmp_path, registry, "suite: s\n" + yaml_tail)
    assert (error.line, error.field) == (line, field)


def test_each_metric_knows_its_scale_and_an_aggregate_may_declare_one(tmp_path: Path, registry: Registry) -> None:
    suite = build(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x, reference: y, recorded: {linguistic_acceptability: 2, stars: 4, votes: 1}}
        aggregate:
          - mean(linguistic_acceptability) >= 1
          - mean(chrf) >= 40
          - mean(votes) >= 3
          - expr: lower(mean(stars)) >= 3
            scale: [1, 5]
        """,
    )
    assert suite.scale_of("linguistic_acceptability") == (0.0, 2.0)
    assert suite.scale_of("chrf") == (0.0, 100.0)
    assert suite.scale_of("stars") == (1.0, 5.0)  # declared once, for every aggregate of stars
    assert suite.scale_of("votes") is None
    assert [check.scale for check in suite.aggregates] == [None, None, None, (1.0, 5.0)]


@pytest.mark.parametrize(
    ("metric", "scale", "message"),
    [
        ("stars", "[5, 1]", "finite low < high"),
        ("linguistic_acceptability", "[0, 3]", "has a known scale"),
        ("stars", "[1, 5]\n          - expr: mean(stars) >= 2\n            scale: [0, 5]", "two scales"),
    ],
)
def test_a_bad_aggregate_scale_names_its_entry(
    tmp_path: Path, registry: Registry, metric: str, scale: str, message: str
) -> None:
    error = build_error(
        tmp_path,
        registry,
        f"""\
        suite: demo
        cases:
          - {{id: a, language: hi, output: x, recorded: {{linguistic_acceptability: 2, stars: 4}}}}
        aggregate:
          - expr: mean({metric}) >= 3
            scale: {scale}
        """,
    )
    assert message in error.message
    assert error.field is not None and error.field.startswith(("aggregate[0]", "aggregate[1]"))
    assert error.line in (5, 6, 8)


def test_metric_names_in_a_suite_are_spelt_as_registered(tmp_path: Path, registry: Registry) -> None:
    # resolve_metric() forgives case ("ChrF" is chrf); a suite does not: its results, scales and
    # metric_options are keyed by the name as written, so "ChrF" would be a metric without chrF's scale.
    error = build_error(
        tmp_path,
        registry,
        """\
        suite: demo
        cases:
          - {id: a, language: hi, output: x, reference: y, assert: [ChrF >= 1]}
        """,
    )
    assert (error.line, error.message) == (3, "threshold on undefined metric 'ChrF'")
