"""Typed item records: every kind survives its wire form, numbers are finite or None, bad input raises.

The plugin-level counterpart (the collector's records after a real run, under xdist, equal
the items' own) is ``tests/plugin/test_record_transport.py``.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import pydantic
import pytest

from pytest_llmjudge.records import (
    AggregateRecord,
    AggregateRow,
    AnyRecord,
    BaselineCase,
    Battle,
    CanaryRecord,
    CaseDrop,
    CaseRecord,
    CaseScore,
    ConsistencyRecord,
    ConsistencyResult,
    DriftRecord,
    GateRecord,
    Interval,
    ItemRecord,
    JuryRecord,
    LeaderboardRecord,
    PairedCase,
    Perturbation,
    PositionBias,
    RankingCheckRecord,
    RegressionRecord,
    SensitivityRecord,
    SensitivityResult,
    Skew,
    Standing,
    SurrogateRecord,
    Threshold,
    UncalibratedRecord,
    UnscoredCase,
    record_from_wire,
)

NAN = float("nan")


def _samples() -> list[ItemRecord]:
    """One record of every kind, with nested parts filled in."""
    return [
        CaseRecord(
            suite="s",
            suite_path="/r/s.yaml",
            case="hi-1",
            language="hi",
            metric="task_quality",
            threshold=Threshold(op=">=", value=1),
            score=2.0,
            samples=[2.0, 1.0],
            spread=1.0,
            source="judge",
            judge="openai:m",
            cached=False,
            justification="ok",
            detail={"reasons": ["a", "b"]},
            higher_is_better=True,
            passed=True,
            input="q",
            output="a",
            reference="r",
            baseline=BaselineCase(score=1.0, output="old"),
        ),
        AggregateRecord(
            suite="s",
            suite_path="/r/s.yaml",
            aggregate="mean(task_quality)",
            metric="task_quality",
            language="hi",
            passed=False,
            case_scores=[CaseScore(case="hi-1", language="hi", score=None, source="unscored")],
            rows=[
                AggregateRow(
                    language="hi",
                    n_scored=0,
                    n_unscored=1,
                    value=None,
                    threshold=Threshold(op=">=", value=1.5),
                    passed=False,
                    problem="no scored case",
                )
            ],
        ),
        UncalibratedRecord(
            suite="s",
            suite_path="/r/s.yaml",
            case="hi-1",
            language="hi",
            metric="task_quality",
            judge="openai:m",
            policy="xfailed",
            checks=[{"calibration": "cal", "message": "judge openai:m is not calibrated for hi", "f1": 0.4}],
            passed=False,
        ),
        GateRecord(
            suite="cal",
            calibration="cal",
            calibration_path="/r/cal.yaml",
            judge="openai:m",
            language="hi",
            group="hi",
            metric="linguistic_acceptability",
            labels=[0, 1, 2],
            f1=0.71234567,
            ci=Interval(low=0.5, high=0.9, confidence=0.95, resamples=1000, seed=0),
            threshold=0.7,
            compared="f1",
            n=40,
            n_items=40,
            n_unscored=0,
            skew=Skew(skew=0.2, judge_top_share=0.6, human_top_share=0.4, best_label=2),
            single_annotator=3,
            passed=True,
        ),
        ConsistencyRecord(
            calibration="cal",
            calibration_path="/r/cal.yaml",
            judge="openai:m",
            language="hi",
            metric="linguistic_acceptability",
            result=ConsistencyResult(
                n_items=2,
                n_consistent=1,
                n_unscored=1,
                rate=0.5,
                min_agreement=0.8,
                repeats=3,
                samples=[[1.0, 1.0, 1.0], [None, 2.0, 2.0]],
                passed=False,
            ),
            passed=False,
        ),
        SensitivityRecord(
            calibration="cal",
            calibration_path="/r/cal.yaml",
            judge="openai:m",
            language="hi",
            metric="linguistic_acceptability",
            result=SensitivityResult(
                n_items=3,
                n_worse=2,
                n_same=1,
                n_better=0,
                n_unscored=0,
                n_at_worst=0,
                n_unperturbable=0,
                rate=2 / 3,
                min_lowered=0.6,
                fraction=0.5,
                pairs=[[2.0, 1.0], None],
                passed=True,
            ),
            perturbations=[Perturbation(id="hi-1", seed=1, unit="word", n_units=4, positions=[2, 0, 1, 3]), None],
            passed=True,
        ),
        RegressionRecord(
            suite="s",
            suite_path="/r/s.yaml",
            metric="task_quality",
            language="hi",
            group_by=["language"],
            baseline="prod",
            baseline_suite="s",
            largest_drops=[CaseDrop(case="hi-1", baseline=2.0, candidate=0.0)],
            cases=[PairedCase(case="hi-1", baseline=2.0, candidate=0.0, baseline_output="old")],
            gate="fail",
            verdict="regressed",
            n=1,
            higher_is_better=True,
            mean_difference=-2.0,
            method="bootstrap",
            candidate_unscored=[UnscoredCase(case="hi-2", reason="no score")],
            passed=False,
        ),
        LeaderboardRecord(
            suite="arena",
            metric="judge [hi]",
            ranking="arena",
            ranking_path="/r/arena.yaml",
            source="judge",
            language="hi",
            position_bias=PositionBias(
                requests=4, decisive=4, first_slot=3, first_slot_rate=0.75, battles_both_orders=2, inconsistent=1
            ),
            battles=[
                Battle(
                    case="c1",
                    system_1="a",
                    system_2="b",
                    shown_first=["a", "b"],
                    slot_verdicts=["first", None],
                    inconsistent=False,
                )
            ],
            systems=[
                Standing(
                    name="a",
                    rank=1,
                    strength=0.5,
                    ci_low=0.1,
                    ci_high=0.9,
                    rank_ci=[1, 2],
                    wins=3,
                    losses=1,
                    ties=0,
                    games=4,
                )
            ],
            n_cases=1,
            n_battles=4,
            n_unjudged=0,
            resamples=200,
            passed=True,
        ),
        SurrogateRecord(
            ranking="arena",
            language="hi",
            source="judge",
            features=["length"],
            hold_out="half",
            model="linear",
            kendall_tau=0.6,
            n_systems=4,
            n_train_cases=10,
            n_holdout_cases=10,
            tournaments=5,
            skipped_tournaments=0,
            weights={"length": 0.1},
            passed=True,
        ),
        RankingCheckRecord(
            ranking="arena",
            check="rank(a)<=2",
            expr="rank(a) <= 2",
            source="judge",
            language="hi",
            value=1.0,
            threshold=Threshold(op="<=", value=2),
            detail={"rank": 1, "of": 4, "strength": 0.5, "measured": True},
            passed=True,
        ),
        DriftRecord(
            suite="s",
            calibration="cal",
            judge="openai:m",
            language="hi",
            metric="task_quality",
            certified={"served_model": "m-1", "rubric_version": "abc"},
            served={"served_model": "m-2", "system_fingerprint": "fp_2", "rubric_version": "abc"},
            before=0.9,
            after=0.7,
            ci_low=0.5,
            ci_high=0.85,
            n=20,
            tolerance=0.1,
            problem="agreement dropped",
            passed=False,
        ),
        CanaryRecord(
            suite="s",
            judge="openai:m",
            language="hi",
            attack="target_script",
            scores={"task_quality": {"clean": 0.0, "attacked": 2.0}},
            problem="moved",
            passed=False,
        ),
        JuryRecord(
            calibration="cal",
            calibration_path="/r/cal.yaml",
            language="hi",
            group="hi",
            metric="task_quality",
            judges=[{"judge": "openai:a", "f1": 0.9, "passed": True, "calls": 40, "cached": 40}],
            alpha=0.61234567,
            level="ordinal",
            error_correlation={"openai:a | openai:b": 0.4},
            effective_committee_size=1.43,
            combined_f1={"best": 0.9, "majority": 0.8},
            combine="best",
            chosen="openai:a",
            passed=True,
        ),
    ]


def test_the_samples_cover_every_kind_of_record() -> None:
    # A kind added to AnyRecord without a sample here fails, so the round trip below covers it.
    union = typing.get_args(typing.get_args(AnyRecord)[0])
    assert {cls.model_fields["kind"].default for cls in union} == {record.kind for record in _samples()}
    assert len(_samples()) == len(union)


@pytest.mark.parametrize("record", _samples(), ids=lambda r: r.kind)
def test_every_kind_round_trips_through_its_wire_form(record: ItemRecord) -> None:
    wire = record.to_wire()
    assert json.loads(json.dumps(wire, allow_nan=False)) == wire, "the wire form is plain JSON"
    back = record_from_wire(wire)
    assert type(back) is type(record) and back == record
    located = record_from_wire({**wire, "nodeid": "s.yaml::x", "outcome": "xfailed"})
    assert (located.nodeid, located.outcome) == ("s.yaml::x", "xfailed")


def test_nan_and_infinities_become_none_at_every_depth() -> None:
    case = _samples()[0]
    case = CaseRecord(**{**case.model_dump(), "score": NAN, "spread": float("inf"), "samples": [NAN, 1.0]})
    assert (case.score, case.spread, case.samples) == (None, None, [None, 1.0])
    row = AggregateRow(
        language="all",
        n_scored=1,
        n_unscored=0,
        value=float("-inf"),
        threshold=Threshold(op=">=", value=NAN),
        passed=False,
    )
    assert (row.value, row.threshold.value) == (None, None)
    # Diagnostic detail keeps the domain's shape; its wire form still holds no NaN.
    check = _samples()[-4]
    assert isinstance(check, RankingCheckRecord)
    check.detail = {"ci_low": NAN, "nested": {"p": float("inf")}}
    assert check.to_wire()["detail"] == {"ci_low": None, "nested": {"p": None}}


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "verdict"},  # an unknown kind
        {"kind": None},
        {"n": "many"},  # a wrong type
        {"gate": "maybe"},  # not one of the gate's values
        {"passed": None},
        {"unknown_field": 1},  # a field no reader knows
    ],
    ids=["unknown-kind", "no-kind", "wrong-type", "bad-literal", "missing-verdict", "extra-field"],
)
def test_a_wire_form_that_is_not_a_record_raises(change: dict[str, Any]) -> None:
    regression = next(r for r in _samples() if isinstance(r, RegressionRecord))
    with pytest.raises(pydantic.ValidationError):
        record_from_wire({**regression.to_wire(), **change})


def test_a_wire_form_without_a_kind_or_not_a_mapping_raises() -> None:
    wire = _samples()[0].to_wire()
    del wire["kind"]
    for bad in (wire, ["case"], "case", None):
        with pytest.raises(pydantic.ValidationError):
            record_from_wire(bad)


def test_junit_properties_name_what_the_items_recorded() -> None:
    (
        case,
        aggregate,
        uncalibrated,
        gate,
        consistency,
        sensitivity,
        regression,
        board,
        surrogate,
        check,
        drift,
        canary,
        jury,
    ) = _samples()
    assert case.junit_properties() == [
        ("suite", "s"),
        ("case", "hi-1"),
        ("metric", "task_quality"),
        ("language", "hi"),
        ("score", 2.0),
        ("threshold", ">= 1"),
        ("source", "judge"),
        ("judge", "openai:m"),
        ("served", None),
        ("cached", "false"),
        ("spread", 1.0),
        ("unscored_reason", None),
    ]
    assert dict(aggregate.junit_properties()) == {
        "suite": "s",
        "metric": "task_quality",
        "aggregate": "mean(task_quality)",
        "language": "hi",
        "judge": None,
        "score": None,
        "threshold": ">= 1.5",
        "ci_low": None,
        "ci_high": None,
        "n_scored": 0,
        "n_unscored": 1,
    }
    assert dict(uncalibrated.junit_properties())["calibration"] == "cal"
    assert uncalibrated.junit_properties()[-1] == ("case", "hi-1")
    gate_props = dict(gate.junit_properties())
    assert gate_props["f1"] == 0.712346, "calibration numbers are rounded to 6 decimals"
    assert gate_props["group"] is None, "the group is named only when it is not the language"
    assert (gate_props["ci_low"], gate_props["skew"], gate_props["n"]) == (0.5, 0.2, 40)
    assert gate_props["single_annotator"] == 3, "a count of items, not a flag"
    assert dict(consistency.junit_properties())["threshold"] == 0.8
    assert dict(sensitivity.junit_properties())["n"] == 3
    regression_props = dict(regression.junit_properties())
    assert (regression_props["score"], regression_props["n_paired"], regression_props["n_unscored"]) == (-2.0, 1, 1)
    assert dict(board.junit_properties())["rank_1"] == "a 0.500 [0.100, 0.900]"
    assert dict(board.junit_properties())["n_unjudged"] is None, "no unjudged battle: left out"
    assert dict(surrogate.junit_properties())["kendall_tau"] == 0.6
    check_props = check.junit_properties()
    assert check_props[4:6] == [("score", 1.0), ("threshold", "<= 2")]
    assert ("measured", True) not in check_props and ("rank", 1) in check_props
    drift_props = dict(drift.junit_properties())
    assert drift_props["certified"] == "m-1, rubric abc"
    assert drift_props["served"] == "m-2 (fp_2), rubric abc", "the fingerprint shown when the reply had one"
    assert (drift_props["before"], drift_props["after"], drift_props["n"]) == (0.9, 0.7, 20)
    assert dict(canary.junit_properties())["scores"] == "task_quality: clean 0, attacked 2"
    jury_props = dict(jury.junit_properties())
    assert jury_props["judges"] == "openai:a: F1 0.9 pass, 40 calls (40 cached)"
    assert (jury_props["alpha"], jury_props["chosen"]) == (0.612346, "openai:a")
