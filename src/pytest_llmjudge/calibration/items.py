"""pytest nodes of calibration sets, and the guard for suite items with a calibrated judge.

* :class:`CalibrationFile` (``pytest.File``): a YAML file with a top-level ``calibration:``
  key. An invalid file yields one :class:`InvalidCalibrationItem` that fails with
  ``file:line: field: message``, so everything else still runs.
* :class:`GateItem`: ``cal.yaml::agreement[<language>-<metric>]``, the human-agreement gate.
  A language x metric listed under ``gate.xfail`` gets a strict ``xfail`` marker that only
  catches a threshold failure (:class:`GateFailure`): too few items or unscored items
  (:class:`GateError`) still fail, and a marked gate that starts passing fails as XPASS.
* :class:`ConsistencyItem` ``consistency[<language>-<metric>]`` and
  :class:`SensitivityItem` ``sensitivity[<language>-<metric>]``: the judge sanity checks.
  They need the live judge: without credentials they skip (fail with
  ``--llmjudge-require-judge``), like suite items.

Every item keeps a typed record (``records.py``: :class:`~pytest_llmjudge.records.GateRecord`,
``ConsistencyRecord``, ``SensitivityRecord``; the guard an ``UncalibratedRecord``) in
``llmjudge_result``, which travels with the report, and records the record's JUnit
properties (calibration, language, metric, judge and its numbers, rounded to 6 decimals).
:func:`guard_suite_item` runs before a suite item's test body: when the suite's judge names a
calibration set and a judge-scored case's language failed its gate, the item fails (or
xfails/skips, ``judge.uncalibrated``) with "judge <model> is not calibrated for <language>:
F1 0.41 < 0.70 ..." instead of being scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.calibration.agreement_gate import GateResult
from pytest_llmjudge.calibration.build import CalibrationSet
from pytest_llmjudge.calibration.gate_computer import GateComputer, judge_scored_languages
from pytest_llmjudge.calibration.report import gate_message
from pytest_llmjudge.errors import CaseFailure, GateError, GateFailure, LLMJudgeError
from pytest_llmjudge.records import (
    ConsistencyRecord,
    GateRecord,
    ItemRecord,
    JuryRecord,
    Perturbation,
    ReleaseMember,
    SensitivityRecord,
    UncalibratedRecord,
)
from pytest_llmjudge.session.item_base import InvalidFileItem, LLMJudgeItem, record
from pytest_llmjudge.suite.items import AggregateItem, CaseItem
from pytest_llmjudge.suite.model import Case, Suite

store_key = pytest.StashKey["GateComputer"]()


def get_store(config: pytest.Config) -> GateComputer:
    """The run's gate computer (created on first use)."""
    from pytest_llmjudge.session.state import scorer_key

    store = config.stash.get(store_key, None)
    if store is None:
        store = GateComputer(config.stash[scorer_key])
        config.stash[store_key] = store
    return store


class CalibrationFile(pytest.File):
    """A calibration set."""

    calibration: CalibrationSet | None = None

    def collect(self) -> Iterator[pytest.Item]:
        store = get_store(self.config)
        try:
            cal = store.load(self.path)
        except LLMJudgeError as exc:
            yield InvalidCalibrationItem.from_parent(self, name="calibration-error", error=str(exc))
            return
        from pytest_llmjudge.session.suites import name_clash

        key, what = f"calibration:{cal.name}", f"calibration set name {cal.name!r}"
        clash = name_clash(self.config, key, self.path, what, "calibration")
        if clash is not None:  # its cases would share another file's scores
            yield InvalidCalibrationItem.from_parent(self, name="calibration-error", error=str(clash))
            return
        self.calibration = cal
        gate_problem = store.judge_problem(cal) if cal.scores == "judge" else None
        for group, metric in cal.groups():
            item = GateItem.from_parent(
                self,
                name=f"agreement[{group}-{metric}]",
                calibration=cal,
                language=group,
                metric=metric,
                judge_problem=gate_problem,
            )
            reason = cal.gate.xfail_for(cal.group_language(group), metric, group)
            if reason is not None:
                item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=GateFailure))
            yield item
        if cal.jury is not None:
            for group, metric in cal.groups():
                yield JuryItem.from_parent(
                    self,
                    name=f"jury[{group}-{metric}]",
                    calibration=cal,
                    language=group,
                    metric=metric,
                    judge_problem=next(
                        (p for p in (store.judge_problem(cal, judge) for judge in cal.jury.judges) if p), None
                    ),
                )
        if cal.sanity is None:
            return
        problem = store.judge_problem(cal)
        for language in store.sanity_languages(cal):
            if cal.sanity.consistency is not None:
                for metric in store.consistency_metrics(cal):
                    if cal.language_groups(language, metric):
                        yield ConsistencyItem.from_parent(
                            self,
                            name=f"consistency[{language}-{metric}]",
                            calibration=cal,
                            language=language,
                            metric=metric,
                            judge_problem=problem,
                        )
            if cal.sanity.sensitivity is not None:
                metric = cal.sanity.sensitivity.metric
                yield SensitivityItem.from_parent(
                    self,
                    name=f"sensitivity[{language}-{metric}]",
                    calibration=cal,
                    language=language,
                    metric=metric,
                    judge_problem=problem,
                )


class InvalidCalibrationItem(InvalidFileItem):
    """Stands in for a calibration file that failed to load."""

    what = "calibration set"


class _CalibrationItem(LLMJudgeItem):
    calibration: CalibrationSet
    language: str
    metric: str
    judge_problem: str | None

    def __init__(
        self, *, calibration: CalibrationSet, language: str, metric: str, judge_problem: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.calibration = calibration
        self.language = language
        self.metric = metric
        self.judge_problem = judge_problem
        self.extra_keyword_matches.update({language, metric, "calibration"})

    @property
    def store(self) -> GateComputer:
        return get_store(self.config)

    def setup(self) -> None:
        if self.judge_problem is None:
            return
        from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
        from pytest_llmjudge.session.state import scorer_key

        label = self.store.live_label(self.calibration)
        skip_or_fail_without_judge(self.config.stash[scorer_key].settings, f"judge {label} {self.judge_problem}")

    def _keep(self, result: ItemRecord) -> None:
        self.llmjudge_result = result
        record(self, result.junit_properties())

    def _sanity_fields(self, judge: str) -> dict[str, str]:
        """What a consistency or sensitivity record says of where it comes from."""
        cal = self.calibration
        return {
            "calibration": cal.name,
            "calibration_path": str(cal.path),
            "judge": judge,
            "language": self.language,
            "metric": self.metric,
        }

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.calibration.line - 1 if self.calibration.line else 0
        return self.path, line, self.name


class GateItem(_CalibrationItem):
    """Judge-vs-human weighted F1 of one language x metric against its threshold."""

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        # This gate's group and metric only: each gate is computed from its own items (``GateComputer.gate``).
        if self.judge_problem is not None:
            return []
        return list(self.store.gate_needs(self.calibration, only={(self.language, self.metric)}))

    def release_family_key(self) -> tuple[str, ...] | None:
        """The run's release family when this gate joins it (``gate: {family: release}``,
        ``--llmjudge-family-include=gates``), else None."""
        from pytest_llmjudge.regression.items import run_family_key
        from pytest_llmjudge.regression.items import state_key as regression_key

        state = self.config.stash.get(regression_key, None)
        if state is None or self.judge_problem is not None:
            return None
        if self.calibration.gate.family != "release" and "gates" not in state.include:
            return None
        return run_family_key(self.config)

    def release_pvalue(self, design_level: float) -> float | None:
        """The posterior p-value of "weighted F1 < threshold" (``calibration/agreement_gate.py``); None for a gate
        with a problem. ``design_level`` is unused: the posterior does not tune to a level."""
        from pytest_llmjudge.calibration.agreement_gate import release_pvalue

        return release_pvalue(self.store.gate(self.calibration, self.language, self.metric))

    def _released(self, result: GateResult) -> tuple[GateResult, ReleaseMember | None]:
        """The gate as its release family decided it, when it joined one."""
        from pytest_llmjudge.regression.items import joined_decision
        from pytest_llmjudge.stats.multiplicity import method_name

        key = self.release_family_key()
        if key is None:
            return result, None
        d = joined_decision(self, key)
        member = d.member()
        if d.p_value is None:
            return result, member
        text = (
            f"weighted F1 >= threshold {result.threshold:.3f} not shown in the release family: posterior p "
            f"{d.p_value:.3g}, {method_name(d.correction)}-adjusted {d.p_adjusted:.3g} > alpha {d.alpha:g} "
            f"({d.size} comparisons)"
        )
        return replace(result, release_shown=d.passed, release_text=text), member

    def runtest(self) -> None:
        cal = self.calibration
        store = self.store
        result, member = self._released(store.gate(cal, self.language, self.metric))
        judge = store.judge_label(cal)
        xfail = cal.gate.xfail_for(cal.group_language(self.language), self.metric, self.language)
        self._keep(
            GateRecord(
                suite=cal.name,
                calibration=cal.name,
                calibration_path=str(cal.path),
                judge=judge,
                scores=cal.scores,
                xfail=xfail,
                judge_identity=store.gate_identity(cal, self.language, self.metric),
                release=member,
                **result.to_dict(),
            )
        )
        if result.passed:
            return
        message = gate_message(result, calibration=cal.name, judge=judge)
        if result.problem is not None:
            raise GateError(message)
        raise GateFailure(message)


class JuryItem(_CalibrationItem):
    """Every judge of the calibration set's jury on one group x metric (``calibration/jury.py``)."""

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        if self.judge_problem is not None or self.calibration.jury is None:
            return []
        only = {(self.language, self.metric)}
        return [
            need
            for judge in self.calibration.jury.judges
            for need in self.store.gate_needs(self.calibration, judge, only)
        ]

    def runtest(self) -> None:
        cal, store = self.calibration, self.store
        result = store.jury(cal, self.language, self.metric)
        members = result.members
        data = result.to_dict()
        self._keep(
            JuryRecord(
                calibration=cal.name,
                calibration_path=str(cal.path),
                language=cal.group_language(self.language),
                group=data.pop("group"),
                metric=data.pop("metric"),
                judges=data.pop("judges"),
                passed=result.problem is None,
                **data,
            )
        )
        if result.problem is not None:
            lines = [f"{cal.name}: jury, {self.language} {self.metric}: {result.problem}"]
            for member in members:
                f1 = "-" if member.f1 is None else f"{member.f1:.3f}"
                verdict = "passes" if member.gate.passed else "fails"
                lines.append(f"  {member.label:<40} weighted F1 {f1}, {verdict} its gate")
            alpha = "undefined" if result.alpha is None else f"{result.alpha:.3f}"
            lines.append(f"  Krippendorff's alpha ({result.level}) among the judges: {alpha}")
            raise GateFailure("\n".join(lines))


class ConsistencyItem(_CalibrationItem):
    """k repeated requests per item must give the same score (Hada et al. 2024a, sec. 4.2.1)."""

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        if self.judge_problem is not None:
            return []
        return self.store.consistency_needs(self.calibration, self.language, self.metric)

    def runtest(self) -> None:
        cal = self.calibration
        result = self.store.consistency(cal, self.language, self.metric)
        judge = self.store.live_label(cal)
        self._keep(ConsistencyRecord(**self._sanity_fields(judge), passed=result.passed, result=result.to_dict()))
        if result.passed:
            return
        spread = [
            f"{case_id}: {', '.join('-' if v is None else f'{v:g}' for v in samples)}"
            for case_id, samples in zip(
                [item.case.id for item in cal.language_items(self.language, self.metric)],
                result.samples,
                strict=False,
            )
            if None in samples or len(set(samples)) > 1
        ]
        head = (
            f"FAILED: judge {judge} is not consistent in {self.language} {self.metric}: "
            f"{result.n_consistent}/{result.n_items} items gave the same score in all {result.repeats} requests "
            f"(rate {0.0 if result.rate is None else result.rate:.2f} < {result.min_agreement:.2f})"
        )
        if result.problem:
            head = f"ERROR: consistency of judge {judge} in {self.language} {self.metric}: {result.problem}"
        raise GateFailure("\n".join([head, *[f"  {line}" for line in spread[:10]]]))


class SensitivityItem(_CalibrationItem):
    """Shuffled words must lower the score on most items (Hada et al. 2024a, sec. 4.3)."""

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        return [] if self.judge_problem is not None else self.store.sensitivity_needs(self.calibration, self.language)

    def runtest(self) -> None:
        cal = self.calibration
        run = self.store.sensitivity(cal, self.language)
        result = run.result
        judge = self.store.live_label(cal)
        self._keep(
            SensitivityRecord(
                **self._sanity_fields(judge),
                passed=result.passed,
                result=result.to_dict(),
                perturbations=[
                    None
                    if p is None
                    else Perturbation(
                        id=case_id, seed=p.seed, unit=p.unit, n_units=p.n_units, positions=list(p.positions)
                    )
                    for case_id, p in run.perturbations
                ],
            )
        )
        if result.passed:
            return
        if result.problem:
            raise GateFailure(f"ERROR: sensitivity of judge {judge} in {self.language} {self.metric}: {result.problem}")
        raise GateFailure(
            f"FAILED: judge {judge} does not notice shuffled words in {self.language} ({self.metric}): "
            f"{result.n_worse} of {result.eligible + result.n_unscored} items rated worse "
            f"(rate {0.0 if result.rate is None else result.rate:.2f} < {result.min_lowered:.2f}); "
            f"same {result.n_same}, better {result.n_better}, unscored {result.n_unscored}, "
            f"already at the worst score {result.n_at_worst}, not perturbable {result.n_unperturbable}"
        )


def guard_suite_item(item: pytest.Item) -> None:
    """Stop a suite item whose judge is not calibrated for a language it would score."""
    if isinstance(item, CaseItem):
        suite = item.suite
        metric = item.threshold.metric
        languages = judge_scored_languages(suite, metric, (item.case,))
    elif isinstance(item, AggregateItem):
        suite = item.suite
        metric = item.check.spec.metric
        languages = judge_scored_languages(suite, metric, item.cases)
    else:
        return
    if suite.judge.calibration is None or not languages or item.judge_problem is not None:
        return
    store = get_store(item.config)
    failing = [
        check for check in (store.check(suite, language, metric) for language in languages) if not check.calibrated
    ]
    if not failing:
        return
    policy = suite.judge.uncalibrated
    first = failing[0]
    untrusted = _untrusted(item)
    message = "\n".join(str(check.message) for check in failing)
    if untrusted:
        # A truly broken case and a good one must not look alike: show what the judge said.
        message += "\n" + untrusted
    result = UncalibratedRecord(
        suite=suite.name,
        suite_path=str(suite.path),
        case=item.case.id if isinstance(item, CaseItem) else None,
        language=item.case.language if isinstance(item, CaseItem) else item.language,
        metric=metric,
        judge=first.judge,
        policy={"fail": "failed", "xfail": "xfailed", "skip": "skipped"}[policy],
        checks=[check.to_dict() for check in failing],
        untrusted=untrusted or None,
        passed=False,
    )
    item.llmjudge_result = result
    record(item, result.junit_properties())
    if policy == "skip":
        raise pytest.skip.Exception(message, _use_item_location=True)
    if policy == "xfail":
        pytest.xfail(message)
    raise CaseFailure(message)


def _untrusted(item: CaseItem | AggregateItem) -> str:
    """The judge's verdict on an item it is not trusted for: the case's score, justification
    and output, or the aggregate row's value (its calls are planned anyway, so this is free)."""
    try:
        if isinstance(item, CaseItem):
            return item.explain_untrusted()
        row = next(r for r in item.rows() if r.language == item.language)
    except (LLMJudgeError, StopIteration):
        return ""
    value = "n/a" if row.value is None else f"{row.value:.3f}"
    return (
        f"UNTRUSTED: {row.spec.label} for {item.language} = {value} over {row.n_scored} scored case(s) "
        f"(threshold {row.spec.op} {row.spec.value:g}: {'met' if row.passed else 'not met'})"
    )
