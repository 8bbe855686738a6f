"""Drift sentinel items (``judge.drift``): one per language x metric a suite's calibrated judge scores.

The logic is in :mod:`pytest_llmjudge.calibration.drift`; this module collects the items
under a suite file, runs them, and flags suite scores served by another identity than the
certified one (:func:`served_check`, a score adjuster).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.calibration.drift import (
    Certified,
    FreshJudge,
    certification,
    certified_path,
    decide,
    drift_sample,
    identity_changes,
    identity_text,
    merge_identities,
    read_certified,
    sample_agreement,
    score_array,
    write_certified,
)
from pytest_llmjudge.calibration.gate_computer import GateComputer, judge_scored_languages
from pytest_llmjudge.calibration.items import get_store
from pytest_llmjudge.errors import DriftFailure, SuiteError
from pytest_llmjudge.execution.scorer import Score
from pytest_llmjudge.records import DriftRecord
from pytest_llmjudge.session.item_base import LLMJudgeItem, record
from pytest_llmjudge.stats.annotators import aggregate_labels
from pytest_llmjudge.suite.model import Case, Suite

fresh_key = pytest.StashKey[FreshJudge]()
certified_key = pytest.StashKey[dict[Path, "Certified | None"]]()
"""The certifications read this run, by path (``served_check`` reads each once)."""
_certified_lock = threading.Lock()


class JudgeDriftWarning(UserWarning):
    """Another served identity than the certified one (``on_change: warn``)."""


def recertify(config: pytest.Config) -> bool:
    return bool(config.getoption("llmjudge_recertify", default=False))


def _fresh(config: pytest.Config, store: GateComputer) -> FreshJudge:
    found = config.stash.get(fresh_key, None)
    if found is None:
        found = config.stash[fresh_key] = FreshJudge(store.board)
        config.add_cleanup(found.close)
    return found


def drift_items(parent: pytest.Collector, suite: Suite) -> Iterator[DriftItem]:
    """The sentinel items of ``suite`` (none without ``judge.drift`` or a loadable calibration set)."""
    if suite.judge.drift is None or suite.judge.calibration is None or not suite.needs_live_judge:
        return
    store = get_store(parent.config)
    try:
        cal = store.load(suite.judge.calibration)
    except SuiteError:
        return  # the suite's items report the invalid calibration set
    for metric in sorted(cal.metrics):
        if suite.metric_kinds.get(metric) != "rubric" or not suite.judge.calibration_covers(metric):
            continue
        for language in judge_scored_languages(suite, metric, suite.cases):
            if cal.language_groups(language, metric):
                yield DriftItem.from_parent(
                    parent, name=f"drift[{language}-{metric}]", suite=suite, language=language, metric=metric
                )


class DriftItem(LLMJudgeItem):
    """Re-asks a seeded sample of the calibration items uncached and compares with the certification."""

    def __init__(self, *, suite: Suite, language: str, metric: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.language = language
        self.metric = metric
        self.extra_keyword_matches.update({language, metric, "drift"})

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        return list(get_store(self.config).suite_gate_needs(self.suite, {(self.language, self.metric)}))

    def runtest(self) -> None:
        store = get_store(self.config)
        suite, drift = self.suite, self.suite.judge.drift
        assert drift is not None and suite.judge.calibration is not None
        cal = store.load(suite.judge.calibration)
        label = store.board.judge_settings(suite.judge).label
        check = store.check(suite, self.language, self.metric)
        if not check.calibrated:
            message = f"cannot watch {label} for drift in {self.language}: not certified ({check.message})"
            policy = suite.judge.uncalibrated
            if policy == "skip":
                raise pytest.skip.Exception(message, _use_item_location=True)
            if policy == "xfail":
                pytest.xfail(message)
            raise DriftFailure(message)
        scoring = store.scoring_suite(cal, suite.judge)
        cases = {case.id: case for case in scoring.cases}
        problems, notes = [], []
        for group in cal.language_groups(self.language, self.metric):
            items = cal.items(group, self.metric)
            sample = [items[i] for i in drift_sample(len(items), drift)]
            fresh = _fresh(self.config, store).scores(scoring, [cases[item.case.id] for item in sample], self.metric)
            human = aggregate_labels(
                store.label_matrix(tuple(sample), cal.ceiling), cal.aggregation, cal.rubrics[self.metric].scale
            ).labels
            after = sample_agreement(list(human), score_array(fresh), cal.rubrics[self.metric].scale)
            served = merge_identities([score.identity for score in fresh if score.scored])
            gate_served = store.gate_identity(cal, group, self.metric, suite.judge)
            path = certified_path(cal.path, label, group, self.metric)
            ids = tuple(item.case.id for item in sample)
            where = f"judge {label} in {group} ({self.metric}, calibration {cal.name!r})"
            certified = read_certified(path)
            certified_now = False
            problem: str | None = None
            warning: str | None = None
            if certified is not None and certified.items != ids and not recertify(self.config):
                problem = (
                    f"{where}: the certified sample ({len(certified.items)} items) is not this run's "
                    f"({len(ids)} items): the calibration set or drift.sample/seed changed; re-certify with "
                    f"--llmjudge-recertify"
                )
            elif certified is None or recertify(self.config):
                if after is None or served is None:
                    problem = f"{where}: cannot certify: the judge scored none of the {len(ids)} sample items"
                elif gate_served and identity_changes(gate_served, served):
                    problem = (
                        f"{where}: cannot certify: the gate's (cached) scores were served by "
                        f"{identity_text(gate_served)}, the judge now serves {identity_text(served)}; "
                        "refresh the calibration's cache (--llmjudge-cache=refresh) and run again"
                    )
                else:
                    certified = certification(label, group, self.metric, served, after, ids)
                    with _certified_lock:
                        write_certified(path, certified)
                    certified_now = True
            else:
                verdict = decide(drift, where, certified, certified.identity, served, gate_served, after)
                problem, warning = verdict.problem, verdict.warning
            result = DriftRecord(
                suite=suite.name,
                calibration=cal.name,
                judge=label,
                language=group,
                metric=self.metric,
                certified=dict(certified.identity) if certified is not None else None,
                served=served,
                gate_served=gate_served,
                before=certified.agreement.f1 if certified is not None else None,
                after=after.f1 if after is not None else None,
                ci_low=after.low if after is not None else None,
                ci_high=after.high if after is not None else None,
                n=after.n if after is not None else 0,
                tolerance=drift.tolerance,
                certified_now=certified_now,
                certified_path=str(path),
                problem=problem,
                warning=warning,
                passed=problem is None,
            )
            self.llmjudge_result = result
            record(self, result.junit_properties())
            if problem is not None:
                problems.append(problem)
            if warning is not None:
                notes.append(warning)
        for note in notes:
            warnings.warn(JudgeDriftWarning(note), stacklevel=1)
        if problems:
            raise DriftFailure("\n".join(problems))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def served_check(config: pytest.Config, suite: Suite, case: Case, score: Score) -> Score:
    """``score``, flagged when another identity than the certified one served it (``judge.drift.on_change``).

    Fail: unscored, with the two identities named (a cached reply of another model is not
    reused silently). Warn: the score stands, its ``detail`` and a warning say so. Under
    ``--llmjudge-recertify`` nothing is flagged: the run certifies what serves it.
    """
    drift = suite.judge.drift
    if drift is None or suite.judge.calibration is None or score.source != "judge" or not score.identity:
        return score
    if recertify(config):
        return score  # this run certifies the identity that serves it (the drift items), so nothing to compare with
    store = get_store(config)
    try:
        cal = store.load(suite.judge.calibration)
    except SuiteError:
        return score
    label = store.board.judge_settings(suite.judge).label
    with _certified_lock:
        known = config.stash.setdefault(certified_key, {})
    for group in cal.language_groups(case.language, score.metric):
        path = certified_path(cal.path, label, group, score.metric)
        with _certified_lock:
            if path not in known:
                try:
                    known[path] = read_certified(path)
                except SuiteError:
                    known[path] = None  # the drift item reports the invalid file
            certified = known[path]
        if certified is None:
            continue
        changed = identity_changes(certified.identity, score.identity)
        if not changed:
            continue
        cached = " (from cache)" if score.cached else ""
        message = (
            f"served by {identity_text(score.identity)}{cached}, not the certified {identity_text(certified.identity)} "
            f"({'; '.join(changed)})"
        )
        if drift.on_change == "fail":
            return replace(score, error=f"judge drift: {message}")
        warnings.warn(JudgeDriftWarning(f"{case.id} [{score.metric}]: {message}"), stacklevel=1)
        return replace(score, detail={**score.detail, "judge_drift": message})
    return score
