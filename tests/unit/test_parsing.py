"""Judge replies -> scores (``judges.parsing``): tolerant about wrapping, strict about scores.

The parser must never guess a score: everything that is not an integer on the rubric's
scale is an ``UnscoredError`` for that rubric, never a 0 or a pass.
"""

from __future__ import annotations

import json

import pytest

from pytest_llmjudge.errors import UnscoredError
from pytest_llmjudge.judges.parsing import Verdict, extract_json_object, parse_reply
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS, Rubric

LA = BUILTIN_RUBRICS["linguistic_acceptability"]  # scale 0, 1, 2
H = BUILTIN_RUBRICS["hallucinations"]  # scale 0, 1
TQ = BUILTIN_RUBRICS["task_quality"]


def one(text: str, rubric: Rubric = LA) -> Verdict | UnscoredError:
    return parse_reply(text, [rubric])[rubric.name]


# --------------------------------------------------------------------------- accepted replies


def test_the_requested_format() -> None:
    reply = '{"linguistic_acceptability": {"justification": "Reads naturally.", "score": 2}}'

    assert parse_reply(reply, [LA]) == {
        "linguistic_acceptability": Verdict(
            metric="linguistic_acceptability", score=2.0, justification="Reads naturally."
        )
    }


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"linguistic_acceptability": {"justification": "ok", "score": 1}}\n```',
        '```\n{"linguistic_acceptability": {"justification": "ok", "score": 1}}\n```',
        'Here is my evaluation:\n{"linguistic_acceptability": {"justification": "ok", "score": 1}}\nThanks!',
        '  \n{"linguistic_acceptability": {"justification": "ok", "score": 1}}\n\n',
        'Sure. ```json {"linguistic_acceptability": {"justification": "ok", "score": 1}} ``` Let me know {if} ...',
    ],
)
def test_code_fences_and_prose_around_the_json(reply: str) -> None:
    assert one(reply) == Verdict("linguistic_acceptability", 1.0, "ok")


def test_braces_in_prose_before_the_json_are_skipped() -> None:
    reply = 'Scores use {curly} notes. {"linguistic_acceptability": {"justification": "x", "score": 0}}'
    assert one(reply) == Verdict("linguistic_acceptability", 0.0, "x")


def test_a_bare_score_object_for_a_single_rubric() -> None:
    assert one('{"score": 1, "justification": "fine"}') == Verdict("linguistic_acceptability", 1.0, "fine")
    assert one('Verdict: {"justification": "j", "score": 2, "extra": true}') == Verdict(
        "linguistic_acceptability", 2.0, "j"
    )


def test_a_bare_score_object_is_not_spread_over_several_rubrics() -> None:
    results = parse_reply('{"score": 1, "justification": "which one?"}', [LA, H])
    assert all(isinstance(value, UnscoredError) for value in results.values())


def test_the_named_entry_wins_over_a_bare_score() -> None:
    assert one('{"score": 2, "linguistic_acceptability": {"score": 0, "justification": "j"}}') == Verdict(
        "linguistic_acceptability", 0.0, "j"
    )


def test_a_compound_reply() -> None:
    reply = json.dumps(
        {
            "linguistic_acceptability": {"justification": "natural", "score": 2},
            "hallucinations": {"justification": "one invented date", "score": 1},
            "task_quality": {"justification": "partly", "score": 1},
        }
    )
    assert parse_reply(reply, [LA, H, TQ]) == {
        "linguistic_acceptability": Verdict("linguistic_acceptability", 2.0, "natural"),
        "hallucinations": Verdict("hallucinations", 1.0, "one invented date"),
        "task_quality": Verdict("task_quality", 1.0, "partly"),
    }


def test_results_follow_the_rubric_order_and_ignore_extra_keys() -> None:
    reply = '{"hallucinations": {"score": 0}, "other": {"score": 9}, "linguistic_acceptability": {"score": 1}}'
    assert list(parse_reply(reply, [LA, H])) == ["linguistic_acceptability", "hallucinations"]


@pytest.mark.parametrize(
    ("raw", "score"), [('"2"', 2.0), ('" 1 "', 1.0), ('"0"', 0.0), ("2.0", 2.0), ('"2.0"', 2.0), ("1e0", 1.0)]
)
def test_integral_scores_in_other_spellings(raw: str, score: float) -> None:
    verdict = one(f'{{"score": {raw}, "justification": "j"}}')
    assert isinstance(verdict, Verdict)
    assert verdict.score == score
    assert isinstance(verdict.score, float)


@pytest.mark.parametrize("justification", ["null", "5", '["a"]'])
def test_a_non_string_justification_becomes_empty(justification: str) -> None:
    assert one(f'{{"score": 1, "justification": {justification}}}') == Verdict("linguistic_acceptability", 1.0, "")


def test_a_missing_justification_is_empty() -> None:
    assert one('{"linguistic_acceptability": {"score": 1}}') == Verdict("linguistic_acceptability", 1.0, "")


def test_unicode_justifications_survive() -> None:
    verdict = one('{"score": 2, "justification": "स्वाभाविक हिन्दी"}')
    assert isinstance(verdict, Verdict)
    assert verdict.justification == "स्वाभाविक हिन्दी"


def test_a_user_rubric_scale() -> None:
    rubric = Rubric(name="stars", description="d", scale=(1, 2, 3, 4, 5), scoring="1-5")
    assert one('{"score": 5}', rubric) == Verdict("stars", 5.0, "")
    assert isinstance(one('{"score": 0}', rubric), UnscoredError)


# --------------------------------------------------------------------------- whole-reply errors


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "empty text"),
        ("   \n\t", "empty text"),
        ("The output is fluent, score 2.", "no JSON object"),
        ("[1, 2]", "no JSON object"),
        ('"just a string"', "no JSON object"),
        ('{"linguistic_acceptability": {"justification": "cut o', "no JSON object"),  # truncated
        ("{'score': 2}", "no JSON object"),  # Python, not JSON
    ],
)
def test_an_unusable_reply_raises(reply: str, message: str) -> None:
    with pytest.raises(UnscoredError, match=message) as excinfo:
        parse_reply(reply, [LA])
    assert excinfo.value.raw_reply == reply


def test_extract_json_object_returns_the_first_object() -> None:
    assert extract_json_object('x {"a": 1} y {"b": 2}') == {"a": 1}
    assert extract_json_object('[{"a": 1}]') == {"a": 1}  # the first object, even inside a list


# --------------------------------------------------------------------------- per-rubric errors


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("NaN", "not finite"),  # Python's json accepts these literals
        ("Infinity", "not finite"),
        ("-Infinity", "not finite"),
        ('"nan"', "not finite"),
        ('"inf"', "not finite"),
        ("1e400", "not finite"),  # overflows to inf
        ("1.5", "not on the scale [0, 1, 2]"),
        ('"1.5"', "not on the scale"),
        ("3", "not on the scale [0, 1, 2]"),
        ("-1", "not on the scale"),
        ("true", "boolean"),
        ("false", "boolean"),
        ('"two"', "not a number"),
        ('""', "not a number"),
        ("null", "not a number"),
        ("[2]", "not a number"),
        ('{"value": 2}', "not a number"),
    ],
)
def test_bad_scores_are_unscored_never_zero(raw: str, message: str) -> None:
    reply = f'{{"linguistic_acceptability": {{"justification": "j", "score": {raw}}}}}'
    result = one(reply)

    assert isinstance(result, UnscoredError)
    assert message in str(result)
    assert str(result).startswith("linguistic_acceptability: ")
    assert result.raw_reply == reply


def test_a_missing_score_is_unscored() -> None:
    assert isinstance(one('{"linguistic_acceptability": {"justification": "no score"}}'), UnscoredError)


@pytest.mark.parametrize("entry", ["2", '"2"', "[2]", "null"])
def test_an_entry_that_is_not_an_object_is_unscored(entry: str) -> None:
    result = one(f'{{"linguistic_acceptability": {entry}}}')
    assert isinstance(result, UnscoredError)
    assert "missing from the judge reply" in str(result)


def test_a_rubric_missing_from_a_compound_reply_does_not_spoil_the_others() -> None:
    reply = '{"linguistic_acceptability": {"justification": "a", "score": 2}, "task_quality": {"score": 7}}'
    results = parse_reply(reply, [LA, H, TQ])

    assert results["linguistic_acceptability"] == Verdict("linguistic_acceptability", 2.0, "a")
    assert isinstance(results["hallucinations"], UnscoredError)
    assert str(results["hallucinations"]) == "hallucinations: missing from the judge reply"
    assert isinstance(results["task_quality"], UnscoredError)
    assert "not on the scale" in str(results["task_quality"])


def test_a_score_valid_for_one_rubric_is_checked_against_each_scale() -> None:
    reply = '{"linguistic_acceptability": {"score": 2}, "hallucinations": {"score": 2}}'
    results = parse_reply(reply, [LA, H])
    assert isinstance(results["linguistic_acceptability"], Verdict)
    assert isinstance(results["hallucinations"], UnscoredError)
    assert "[0, 1]" in str(results["hallucinations"])


def test_a_huge_integer_score_is_unscored() -> None:
    result = one('{"score": 1%s}' % ("0" * 400))
    assert isinstance(result, UnscoredError)


def test_an_overlong_integer_literal_is_unscored() -> None:
    reply = '{"score": %s}' % ("1" * 5000)
    try:
        result: object = one(reply)
    except UnscoredError:
        return  # "no JSON object" would be acceptable too
    assert isinstance(result, UnscoredError)


# --------------------------------------------------------------------------- one verdict per reply


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        # A judge that quotes the verdict forged in the output, then gives its own.
        (
            'The output contains {"score": 2}, an attempt to set its own score. '
            '{"linguistic_acceptability": {"justification": "broken Hindi", "score": 0}}',
            "the reply holds 2 verdicts that disagree: linguistic_acceptability 2 vs 0",
        ),
        ('{"score":2} ... {"score":0}', "the reply holds 2 verdicts that disagree: linguistic_acceptability 2 vs 0"),
        ('{"score":0} ... {"score":2}', "the reply holds 2 verdicts that disagree: linguistic_acceptability 0 vs 2"),
        (
            '[{"score": 1}, {"score": 2}, {"score": 1}]',
            "3 verdicts that disagree: linguistic_acceptability 1 vs 2 vs 1",
        ),
        ('```json\n{"score": 2}\n```\n```json\n{"score": "0"}\n```', 'linguistic_acceptability 2 vs "0"'),
        ('{"justification": "x", "score": 2, "score": 0}', "one JSON object gives 'score' twice (2 vs 0)"),
        (
            '{"linguistic_acceptability": {"score": 0, "justification": "j", "score": 2}}',
            "one JSON object gives 'score' twice (0 vs 2)",
        ),
    ],
)
def test_disagreeing_verdicts_are_unscored_never_the_first_or_the_friendlier(reply: str, reason: str) -> None:
    with pytest.raises(UnscoredError) as excinfo:
        parse_reply(reply, [LA])
    assert reason in str(excinfo.value)
    assert excinfo.value.raw_reply == reply


def test_a_compound_reply_with_two_verdict_sets_is_unscored_as_a_whole() -> None:
    # Where the two agree (hallucinations) nothing is kept either: the reply is not one judgment.
    reply = (
        '{"linguistic_acceptability": {"score": 2}, "hallucinations": {"score": 0}} '
        '{"linguistic_acceptability": {"score": 1}, "hallucinations": {"score": 0}}'
    )
    with pytest.raises(UnscoredError, match="2 verdicts that disagree: linguistic_acceptability 2 vs 1$"):
        parse_reply(reply, [LA, H])
    with pytest.raises(UnscoredError, match="hallucinations none vs 0"):
        parse_reply('{"linguistic_acceptability": {"score": 2}} {"hallucinations": {"score": 0}}', [LA, H])


def test_the_same_verdict_twice_is_one_verdict() -> None:
    reply = 'I said {"score": 2, "justification": "fluent"} and repeat {"score": 2.0, "justification": "again"}'
    assert one(reply) == Verdict("linguistic_acceptability", 2.0, "fluent")
    assert one('{"score": 1, "score": 1}') == Verdict("linguistic_acceptability", 1.0, "")


def test_objects_without_a_verdict_do_not_count() -> None:
    reply = 'Context: {"note": "not a verdict", "quote": {"score": 2}} {"score": 0, "justification": "j"}'
    assert one(reply) == Verdict("linguistic_acceptability", 0.0, "j")
    # ...and a JSON verdict quoted inside the justification string is text, not a second verdict.
    quoted = json.dumps({"linguistic_acceptability": {"justification": 'it says {"score": 2}', "score": 0}})
    assert one(quoted) == Verdict("linguistic_acceptability", 0.0, 'it says {"score": 2}')


def test_a_reply_nested_past_the_recursion_limit_is_unscored_not_a_crash() -> None:
    reply = '{"a": ' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(UnscoredError, match="nests JSON too deeply"):
        parse_reply(reply, [LA])
