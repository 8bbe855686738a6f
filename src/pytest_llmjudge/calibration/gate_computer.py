"""Per-run registry of calibration sets, their judge scores and their gate verdicts.

One :class:`GateComputer` lives in ``config.stash`` for a run (one per xdist worker).
Everything is computed lazily and cached: a calibration file is loaded once, a gate
(language x metric x judge) is computed once, whether a gate item or a suite item asked
first. Verdicts are deterministic (seeded interval draws and splits), so every xdist worker
reaches the same verdicts independently.

Judge scores of a calibration set come from one of two places:

* ``scores: recorded``: the items' recorded scores. A missing or null recorded score makes
  the item unscored; the live judge is never called in this mode.
* ``scores: judge``: the live judge, through the run's
  :class:`~pytest_llmjudge.execution.scorer.Scorer` (cache, concurrency, retries,
  xdist sharing). The calibration items become cases of a synthetic suite whose name
  carries a hash of the judge's settings, so two judges never share a call. Which judge:
  the calibration file's own ``judge:`` for its gate items, and the *suite's* judge when a
  suite names the file in ``judge.calibration``, so the verdict is about the judge that
  will score the suite. Repeats are forced to 1 (agreement needs one label per item).

Degenerate cases: a metric or language the calibration set has no items for makes the judge
uncalibrated there (with a message saying so), never calibrated by default; an invalid
calibration file makes every suite item that relies on it fail with the file's error.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Collection, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_llmjudge.calibration.agreement_gate import GateOptions, GateResult, evaluate_gate
from pytest_llmjudge.calibration.build import CalibrationSet, LabelledItem, build_calibration
from pytest_llmjudge.calibration.sanity import (
    ConsistencyResult,
    Perturbation,
    SensitivityResult,
    item_seed,
    shuffle_words,
    summarize_consistency,
    summarize_sensitivity,
)
from pytest_llmjudge.errors import LLMJudgeError, SuiteError
from pytest_llmjudge.execution.scorer import JuryChoice, Score, Scorer
from pytest_llmjudge.suite.expressions import MetricThreshold
from pytest_llmjudge.suite.model import Case, Suite
from pytest_llmjudge.suite.schema import JudgeConfig

if TYPE_CHECKING:
    from pytest_llmjudge.calibration.jury import JuryResult

__all__ = ["CalibrationCheck", "GateComputer", "SensitivityRun", "judge_scored_languages"]


@dataclass(frozen=True)
class CalibrationCheck:
    """Whether a suite's judge may score one language x metric, and why not."""

    calibration: str
    path: Path
    judge: str
    language: str
    metric: str
    gate: GateResult | None
    message: str | None

    @property
    def calibrated(self) -> bool:
        return self.message is None

    def to_dict(self) -> dict[str, Any]:
        gate = self.gate
        return {
            "calibration": self.calibration,
            "calibration_path": str(self.path),
            "judge": self.judge,
            "language": self.language,
            "metric": self.metric,
            "calibrated": self.calibrated,
            "message": self.message,
            "f1": None if gate is None else gate.f1,
            "ci_low": None if gate is None else gate.ci_low,
            "threshold": None if gate is None else gate.threshold,
            "problem": None if gate is None else gate.problem,
        }


@dataclass(frozen=True)
class SensitivityRun:
    """The sensitivity check of one language: its verdict and the perturbed texts."""

    result: SensitivityResult
    metric: str
    perturbations: tuple[tuple[str, Perturbation | None], ...]


def judge_scored_languages(suite: Suite, metric: str, cases: Iterable[Case]) -> list[str]:
    """Languages of ``cases`` whose ``metric`` score will come from the suite's live judge,
    when the suite's calibration set covers ``metric`` (``judge.calibration_metrics``)."""
    if suite.metric_kinds.get(metric) != "rubric" or not suite.judge.calibration_covers(metric):
        return []
    return sorted({case.language for case in cases if metric not in case.recorded})


def _annotator_order(annotators: tuple[str, ...]) -> Any:
    """Sort key of an item's annotator ids: numeric ids as numbers, else as text."""
    if all(annotator.strip().lstrip("-").isdigit() for annotator in annotators):
        return lambda annotator: (int(annotator), annotator)
    return lambda annotator: annotator


def _number(value: float | str | None) -> float:
    if value is None or isinstance(value, str):
        return math.nan
    return float(value)


class GateComputer:
    """Loads calibration sets and computes verdicts on demand (thread-safe, cached)."""

    def __init__(self, board: Scorer) -> None:
        self.board = board
        self._lock = threading.RLock()
        self._sets: dict[Path, CalibrationSet | SuiteError] = {}
        self._suites: dict[tuple[Path, str, str], Suite] = {}
        self._gates: dict[tuple[Path, str, str, str], GateResult] = {}
        self._planned: set[tuple[Path, str, str]] = set()
        self._consistency: dict[tuple[Path, str, str], ConsistencyResult] = {}
        self._sensitivity: dict[tuple[Path, str], SensitivityRun] = {}
        self._perturbed: dict[tuple[Path, str], list[tuple[Case, Case | None, Perturbation | None]]] = {}
        self._juries: dict[tuple[Path, str, str], JuryResult] = {}

    # -- files ---------------------------------------------------------------------------

    def load(self, path: Path | str) -> CalibrationSet:
        """The calibration set at ``path``; raises :class:`SuiteError` (cached) when invalid."""
        key = Path(path).resolve()
        with self._lock:
            found = self._sets.get(key)
            if found is None:
                try:
                    found = build_calibration(key, self.board.registry)
                except SuiteError as exc:
                    found = exc
                except LLMJudgeError as exc:
                    found = SuiteError(str(exc), path=key)
                self._sets[key] = found
        if isinstance(found, SuiteError):
            raise found
        return found

    # -- judges --------------------------------------------------------------------------

    def gate_judge(self, cal: CalibrationSet, judge: JudgeConfig | None = None) -> JudgeConfig:
        """The judge config used to score the set: a suite's judge or the set's own, one repeat."""
        base = judge if judge is not None else cal.judge
        return base.model_copy(
            update={
                "repeats": 1,
                "calibration": None,
                "correction": False,
                "uncalibrated": "fail",
                "drift": None,
                "scoring": "sampled",
            }
        )

    def _suite(self, cal: CalibrationSet, judge: JudgeConfig, purpose: str) -> Suite:
        key = (cal.path, judge.model_dump_json(), purpose)
        with self._lock:
            found = self._suites.get(key)
            if found is None:
                found = self._suites[key] = self._make_suite(cal, judge, purpose)
            return found

    def _make_suite(self, cal: CalibrationSet, judge: JudgeConfig, purpose: str) -> Suite:
        settings = asdict(self.board.judge_settings(judge))
        settings.update(
            mode=judge.mode,
            repeats=judge.repeats,
            max_reasks=judge.max_reasks,
            api_key_env=judge.api_key_env,
            repeat_aggregate=judge.repeat_aggregate,
        )
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:12]
        name = f"calibration:{cal.name}#{purpose}-{digest}"
        sensitivity = cal.sanity.sensitivity if cal.sanity is not None else None
        extra = (sensitivity.metric,) if sensitivity is not None else ()
        cases = []
        for case in cal.cases:
            metrics = [t.metric for t in case.thresholds]
            wanted = metrics + [m for m in extra if m not in metrics]
            cases.append(
                replace(
                    case,
                    suite=name,
                    recorded={},
                    thresholds=tuple(
                        MetricThreshold(metric=m, op=">=", value=float(cal.rubrics[m].scale[0])) for m in wanted
                    ),
                )
            )
        return Suite(
            name=name,
            path=cal.path,
            cases=tuple(cases),
            judge=judge,
            rubrics=cal.rubrics,
            metric_kinds={name: "rubric" for name in cal.rubrics},
            task=cal.task,
            description=cal.description,
        )

    def scoring_suite(self, cal: CalibrationSet, judge: JudgeConfig | None = None) -> Suite:
        """The synthetic suite whose cases are the set's items, scored by the live judge."""
        return self._suite(cal, self.gate_judge(cal, judge), "gate")

    def _judge_key(self, cal: CalibrationSet, judge: JudgeConfig | None) -> str:
        if cal.scores == "recorded":
            return "recorded"
        return self.scoring_suite(cal, judge).name

    def judge_label(self, cal: CalibrationSet, judge: JudgeConfig | None = None) -> str:
        """Who scored the set: the recorded judge's name, or ``provider:model`` of the live one."""
        if cal.scores == "recorded":
            return cal.recorded_label()
        return self.live_label(cal, judge)

    def live_label(self, cal: CalibrationSet, judge: JudgeConfig | None = None) -> str:
        """``provider:model`` of the live judge (the one the sanity checks call)."""
        return self.board.judge_settings(self.gate_judge(cal, judge)).label

    def judge_problem(self, cal: CalibrationSet, judge: JudgeConfig | None = None) -> str | None:
        """Why the live judge can't be called (no key), or None."""
        return self.board.judge_problem(self.gate_judge(cal, judge))

    # -- planning ------------------------------------------------------------------------

    def _by_id(self, suite: Suite) -> dict[str, Case]:
        return {case.id: case for case in suite.cases}

    def gate_needs(
        self,
        cal: CalibrationSet,
        judge: JudgeConfig | None = None,
        only: Collection[tuple[str, str]] | None = None,
    ) -> Iterator[tuple[Suite, Case, str]]:
        """The judge calls of the set's gates; with ``only``, of those (group, metric) gates alone
        (each gate is computed from its own group's items, :meth:`gate`)."""
        if cal.scores == "recorded":
            return
        suite = self.scoring_suite(cal, judge)
        cases = self._by_id(suite)
        for group, metric in cal.groups():
            if only is not None and (group, metric) not in only:
                continue
            for item in cal.items(group, metric):
                yield suite, cases[item.case.id], metric

    def plan(self, needs: Iterable[tuple[Suite, Case, str]], key: tuple[Path, str, str]) -> int:
        """Submit judge calls once per key (all xdist workers plan the same calls)."""
        with self._lock:
            if key in self._planned:
                return 0
            self._planned.add(key)
        return self.board.plan(needs)

    # -- gates ---------------------------------------------------------------------------

    def options(self, cal: CalibrationSet, group: str, metric: str) -> GateOptions:
        gate = cal.gate
        criteria = gate.criteria_for(cal.group_language(group), metric, group)
        return GateOptions(
            threshold=float(criteria["threshold"] or 0.0),
            min_kappa=criteria["min_kappa"],
            min_ceiling_ratio=criteria["min_ceiling_ratio"],
            max_abs_skew=criteria["max_abs_skew"],
            ci_lower_bound=gate.ci_lower_bound,
            family=gate.family,
            confidence=gate.confidence,
            resamples=gate.resamples,
            seed=gate.seed,
            min_items=gate.min_items,
            max_unscored_rate=gate.max_unscored_rate,
            aggregation=cal.aggregation,
            ceiling=cal.ceiling,
            convention=cal.convention,
            correction_method=cal.correction.method,
            holdout=cal.correction.holdout,
            correction_seed=cal.correction.seed,
            correction_min_holdout=cal.correction.min_holdout,
            correction_resamples=cal.correction.resamples,
        )

    def _judge_scores(
        self, cal: CalibrationSet, judge: JudgeConfig | None, items: tuple[LabelledItem, ...], metric: str
    ) -> tuple[list[float], list[str]]:
        values: list[float] = []
        reasons: list[str] = []
        if cal.scores == "recorded":
            for item in items:
                recorded = item.case.recorded.get(metric)
                if recorded is None or recorded.score is None:
                    values.append(math.nan)
                    reasons.append(f"{item.case.id}: no recorded {metric} score")
                else:
                    values.append(float(recorded.score))
            return values, reasons
        suite = self.scoring_suite(cal, judge)
        cases = self._by_id(suite)
        # This gate's items only: a selected gate (or a calibrated suite's language) pays for its own group.
        self.board.plan((suite, cases[item.case.id], metric) for item in items)
        for item in items:
            score = self.board.score(suite, cases[item.case.id], metric)
            values.append(_number(score.value) if score.scored else math.nan)
            if not score.scored:
                reasons.append(f"{item.case.id}: {score.error or 'no score'}")
        return values, reasons

    @staticmethod
    def label_matrix(items: tuple[LabelledItem, ...], mode: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Items x annotators (``annotators``: one column per id) or x label slots (``slots``).

        Slots are each item's labels ordered by annotator id (numerically when every id of
        the item is a whole number, else as text), so the ceiling does not depend on the order
        a label mapping was written in."""
        # Items share a few annotator id sequences (build.py shares each one's tuple): the labels of
        # all items with one sequence become one block, placed with a single numpy assignment per
        # sequence. Filling the matrix element by element cost seconds at 100,000 items.
        rows_of: dict[tuple[str, ...], list[int]] = {}
        for index, item in enumerate(items):
            rows_of.setdefault(item.annotators, []).append(index)
        if mode == "annotators":
            ids = sorted({annotator for sequence in rows_of for annotator in sequence})
            column = {annotator: index for index, annotator in enumerate(ids)}
            width = len(ids)
        else:
            width = max((len(sequence) for sequence in rows_of), default=0)
        matrix = np.full((len(items), width), math.nan)
        for sequence, rows in rows_of.items():
            if not sequence:
                continue
            block = np.array([items[row].values for row in rows], dtype=float)
            if mode == "annotators":
                matrix[np.ix_(rows, [column[annotator] for annotator in sequence])] = block
            else:
                by = _annotator_order(sequence)
                order = sorted(range(len(sequence)), key=lambda index: by(sequence[index]))
                matrix[rows, : len(order)] = block[:, order]
        return matrix

    def gate(self, cal: CalibrationSet, group: str, metric: str, judge: JudgeConfig | None = None) -> GateResult:
        """The gate of one group (the language by default) x metric for ``judge`` (default: the set's own)."""
        key = (cal.path, self._judge_key(cal, judge), group, metric)
        with self._lock:
            found = self._gates.get(key)
            if found is not None:
                return found
            items = cal.items(group, metric)
            scores, reasons = self._judge_scores(cal, judge, items, metric)
            rubric = cal.rubrics[metric]
            result = evaluate_gate(
                self.label_matrix(items, cal.ceiling),
                np.asarray(scores, dtype=float),
                rubric.scale,
                self.options(cal, group, metric),
                language=cal.group_language(group),
                group=group,
                metric=metric,
                higher_is_better=rubric.higher_is_better,
                unscored_reasons=reasons,
            )
            self._gates[key] = result
            return result

    def scores_of(
        self, cal: CalibrationSet, group: str, metric: str, judge: JudgeConfig | None = None
    ) -> tuple[list[float], int]:
        """``judge``'s scores of a group's items (NaN: unscored) and how many came from the cache."""
        values, _ = self._judge_scores(cal, judge, cal.items(group, metric), metric)
        if cal.scores == "recorded":
            return values, 0
        suite = self.scoring_suite(cal, judge)
        cases = self._by_id(suite)
        cached = sum(bool(self.board.score(suite, cases[i.case.id], metric).cached) for i in cal.items(group, metric))
        return values, cached

    def jury(self, cal: CalibrationSet, group: str, metric: str) -> JuryResult:
        """The set's jury on one group x metric (``calibration/jury.py``), computed once."""
        from pytest_llmjudge.calibration.jury import JuryMember, evaluate_jury
        from pytest_llmjudge.stats.annotators import aggregate_labels

        assert cal.jury is not None
        key = (cal.path, group, metric)
        with self._lock:
            found = self._juries.get(key)
            if found is not None:
                return found
            labels = [self.judge_label(cal, judge) for judge in cal.jury.judges]
            members = []
            for index, judge in enumerate(cal.jury.judges):
                scores, cached = self.scores_of(cal, group, metric, judge)
                label = labels[index]
                if labels.count(label) > 1:  # one model at two endpoints: judges are told apart by position
                    label += f" #{index + 1}"
                gate = self.gate(cal, group, metric, judge)
                members.append(JuryMember(label, gate, tuple(scores), len(scores), cached))
            items = cal.items(group, metric)
            scale = cal.rubrics[metric].scale
            human = aggregate_labels(self.label_matrix(items, cal.ceiling), cal.aggregation, scale).labels
            threshold = self.options(cal, group, metric).threshold
            found = self._juries[key] = evaluate_jury(cal.jury, group, metric, members, list(human), scale, threshold)
            return found

    def jury_choice(self, suite: Suite, case: Case, metric: str) -> JuryChoice:
        """Who of the calibration set's jury scores ``case`` on ``metric`` (``judge.jury``)."""
        assert suite.judge.calibration is not None
        try:
            cal = self.load(suite.judge.calibration)
        except SuiteError as exc:
            return JuryChoice("best", problem=f"judge.jury: invalid calibration set: {exc}")
        if cal.jury is None:
            return JuryChoice("best", problem=f"judge.jury: calibration set {cal.name!r} has no jury")
        groups = cal.language_groups(case.language, metric)
        if not groups:
            return JuryChoice(
                "best", problem=f"jury: calibration set {cal.name!r} has no {case.language} items for {metric}"
            )
        result = self.jury(cal, groups[0], metric)
        if cal.jury.combine == "best":
            if result.chosen is None:
                return JuryChoice("best", problem=f"jury: no judge passes its gate in {groups[0]} ({metric})")
            indices = [next(i for i, m in enumerate(result.members) if m.label == result.chosen)]
        else:
            indices = list(range(len(cal.jury.judges)))
        output = case.output if case.output is not None else self.board.output(suite, case)
        members = []
        for index in indices:
            member = self._jury_suite(suite, index, cal.jury.judges[index])
            member_case = replace(case, suite=member.name, output=output)
            members.append((member, member_case, result.members[index].f1 or 0.0))
        return JuryChoice(cal.jury.combine, tuple(members))

    def _jury_suite(self, suite: Suite, index: int, judge: JudgeConfig) -> Suite:
        key = (suite.path, f"{suite.name}@jury{index}", "jury")
        with self._lock:
            found = self._suites.get(key)
            if found is None:
                member = judge.model_copy(update={"calibration": None, "jury": False, "drift": None})
                found = self._suites[key] = replace(
                    suite, name=f"{suite.name}@jury{index}", judge=member, output_target=None
                )
            return found

    def gate_identity(
        self, cal: CalibrationSet, group: str, metric: str, judge: JudgeConfig | None = None
    ) -> dict[str, str] | None:
        """Who served the scores a live gate certified (``served_model``, ``system_fingerprint``,
        ``rubric_version``; several values comma-separated), or None for recorded scores."""
        if cal.scores == "recorded":
            return None
        suite = self.scoring_suite(cal, judge)
        cases = self._by_id(suite)
        seen: dict[str, set[str]] = {}
        for item in cal.items(group, metric):
            identity = self.board.score(suite, cases[item.case.id], metric).identity or {}
            for name, value in identity.items():
                seen.setdefault(name, set()).update(part for part in value.split(", ") if part)
        return {name: ", ".join(sorted(values)) for name, values in sorted(seen.items())} or None

    # -- suites relying on a calibration --------------------------------------------------

    def check(self, suite: Suite, language: str, metric: str) -> CalibrationCheck:
        """May ``suite``'s judge score ``metric`` in ``language``? (its ``judge.calibration``)"""
        assert suite.judge.calibration is not None
        path = Path(suite.judge.calibration)
        label = self.board.judge_settings(suite.judge).label
        prefix = f"judge {label} is not calibrated for {language}"
        try:
            cal = self.load(path)
        except SuiteError as exc:
            return CalibrationCheck(
                path.name, path, label, language, metric, None, f"{prefix}: invalid calibration set: {exc}"
            )

        def verdict(gate: GateResult | None, message: str | None) -> CalibrationCheck:
            return CalibrationCheck(cal.name, cal.path, label, language, metric, gate, message)

        if metric not in cal.metrics:
            return verdict(None, f"{prefix}: calibration set {cal.name!r} has no {metric} labels")
        groups = cal.language_groups(language, metric)
        if not groups:
            return verdict(None, f"{prefix}: calibration set {cal.name!r} has no {language} items for {metric}")
        if suite.judge.jury:
            if cal.jury is None:
                return verdict(None, f"{prefix}: judge.jury, but calibration set {cal.name!r} has no jury")
            results = [self.jury(cal, group, metric) for group in groups]
            failing = next((r for r in results if r.problem is not None), None)
            if failing is None:
                return verdict(None, None)
            return verdict(
                None, f"jury is not calibrated for {language}: {failing.problem} ({metric}, calibration {cal.name!r})"
            )
        # With group_by beyond language, the judge is calibrated in a language when every
        # group of that language passes; the first failing group is reported.
        gates = [self.gate(cal, group, metric, suite.judge) for group in groups]
        gate = next((g for g in gates if not g.passed), gates[0])
        if gate.passed:
            return verdict(gate, None)
        if gate.group != language:
            prefix += f" (group {gate.group})"
        source = "" if cal.scores == "judge" else f", scores recorded from {cal.recorded_label()}"
        where = f" ({metric}, calibration {cal.name!r}{source})"
        if gate.problem is not None:
            return verdict(gate, f"{prefix}: {gate.problem}{where}")
        failed = list(gate.failed_criteria)
        if failed and failed[0].startswith("weighted F1"):
            # The short form suite messages have always used for the F1 criterion.
            compared = "F1" if not gate.options.ci_lower_bound else "F1 CI lower bound"
            value = gate.compared_value
            failed[0] = f"{compared} {'-' if value is None else f'{value:.2f}'} < {gate.threshold:.2f}"
        return verdict(gate, f"{prefix}: {'; '.join(failed)}{where}")

    def suite_gate_needs(
        self, suite: Suite, languages: Collection[tuple[str, str]] | None = None
    ) -> Iterator[tuple[Suite, Case, str]]:
        """The live calibration calls a suite's calibrated judge needs (none for a set that
        does not load: the suite's items report that); with ``languages``, only the gates of
        those (language, metric) pairs (:meth:`check` and :meth:`adjust` read no other)."""
        if suite.judge.calibration is None:
            return
        try:
            cal = self.load(suite.judge.calibration)
        except SuiteError:
            return
        only = (
            None
            if languages is None
            else {(group, metric) for language, metric in languages for group in cal.language_groups(language, metric)}
        )
        judges = cal.jury.judges if suite.judge.jury and cal.jury is not None else [suite.judge]
        for judge in judges:
            for need in self.gate_needs(cal, judge, only):
                if suite.judge.calibration_covers(need[2]):
                    yield need

    def adjust(self, suite: Suite, case: Case, score: Score) -> Score:
        """The score correction (``judge.correction: true``) applied to one live judge score."""
        if not suite.judge.correction or suite.judge.calibration is None:
            return score
        if not suite.judge.calibration_covers(score.metric):
            return score
        if score.source != "judge" or not score.scored or isinstance(score.value, str) or score.value is None:
            return score
        try:
            cal = self.load(suite.judge.calibration)
        except SuiteError:
            return score
        groups = cal.language_groups(case.language, score.metric)
        if len(groups) != 1:
            # The correction is fitted per group; with several groups in a language the
            # case's group is ambiguous from the language alone, so nothing is corrected.
            return score
        gate = self.gate(cal, groups[0], score.metric, suite.judge)
        correction = gate.correction_map
        if correction is None:
            return replace(score, detail={**score.detail, "correction": "none (no scored calibration items)"})
        if gate.correction is not None and not gate.correction.usable:
            refused = "; ".join(gate.correction.problems)
            return replace(score, detail={**score.detail, "correction": f"refused, score left raw: {refused}"})
        raw = float(score.value)
        corrected = correction.apply(raw)
        held_out = ""
        if gate.correction is not None:
            held_out = f"; held-out F1 {gate.correction.f1_before:.2f} -> {gate.correction.f1_after:.2f}"
        return replace(
            score,
            value=corrected,
            detail={
                **score.detail,
                "raw judge score": f"{raw:g}",
                "correction": f"{correction.describe()} fitted on {correction.n_items} {case.language} items{held_out}",
            },
        )

    # -- sanity checks -------------------------------------------------------------------

    def sanity_languages(self, cal: CalibrationSet) -> tuple[str, ...]:
        if cal.sanity is None:
            return ()
        return tuple(cal.sanity.languages) if cal.sanity.languages is not None else cal.languages

    def consistency_metrics(self, cal: CalibrationSet) -> tuple[str, ...]:
        if cal.sanity is None or cal.sanity.consistency is None:
            return ()
        chosen = cal.sanity.consistency.metrics
        return tuple(chosen) if chosen is not None else cal.metrics

    def _consistency_suite(self, cal: CalibrationSet) -> Suite:
        assert cal.sanity is not None and cal.sanity.consistency is not None
        judge = self.gate_judge(cal).model_copy(update={"repeats": cal.sanity.consistency.repeats})
        return self._suite(cal, judge, "consistency")

    def _consistency_cases(self, cal: CalibrationSet, language: str, metric: str) -> tuple[Suite, list[Case]]:
        assert cal.sanity is not None and cal.sanity.consistency is not None
        suite = self._consistency_suite(cal)
        cases = self._by_id(suite)
        chosen = [cases[item.case.id] for item in cal.language_items(language, metric)][: cal.sanity.consistency.items]
        return suite, chosen

    def consistency_needs(self, cal: CalibrationSet, language: str, metric: str) -> list[tuple[Suite, Case, str]]:
        suite, cases = self._consistency_cases(cal, language, metric)
        return [(suite, case, metric) for case in cases]

    def plan_consistency(self, cal: CalibrationSet, language: str, metric: str) -> int:
        key = (cal.path, self._consistency_suite(cal).name, f"{language}/{metric}")
        return self.plan(self.consistency_needs(cal, language, metric), key)

    def consistency(self, cal: CalibrationSet, language: str, metric: str) -> ConsistencyResult:
        key = (cal.path, language, metric)
        with self._lock:
            found = self._consistency.get(key)
            if found is not None:
                return found
            assert cal.sanity is not None and cal.sanity.consistency is not None
            config = cal.sanity.consistency
            self.plan_consistency(cal, language, metric)
            suite, cases = self._consistency_cases(cal, language, metric)
            samples: list[tuple[float | None, ...]] = []
            for case in cases:
                score = self.board.score(suite, case, metric)
                if not score.scored:
                    samples.append((None,) * config.repeats)
                else:
                    samples.append(score.samples or (_number(score.value),))
            result = summarize_consistency(samples, min_agreement=config.min_agreement, repeats=config.repeats)
            self._consistency[key] = result
            return result

    def _sensitivity_cases(
        self, cal: CalibrationSet, language: str
    ) -> list[tuple[Case, Case | None, Perturbation | None]]:
        key = (cal.path, language)
        with self._lock:
            found = self._perturbed.get(key)
            if found is not None:
                return found
            assert cal.sanity is not None and cal.sanity.sensitivity is not None
            config = cal.sanity.sensitivity
            suite = self.scoring_suite(cal)
            chosen = [case for case in suite.cases if case.language == language][: config.items]
            rows: list[tuple[Case, Case | None, Perturbation | None]] = []
            for case in chosen:
                assert case.output is not None
                perturbation = shuffle_words(case.output, config.fraction, item_seed(config.seed, case.id))
                shuffled = (
                    None if perturbation is None else replace(case, id=f"{case.id}~shuffled", output=perturbation.text)
                )
                rows.append((case, shuffled, perturbation))
            self._perturbed[key] = rows
            return rows

    def sensitivity_needs(self, cal: CalibrationSet, language: str) -> list[tuple[Suite, Case, str]]:
        assert cal.sanity is not None and cal.sanity.sensitivity is not None
        metric = cal.sanity.sensitivity.metric
        suite = self.scoring_suite(cal)
        needs: list[tuple[Suite, Case, str]] = []
        for case, shuffled, _ in self._sensitivity_cases(cal, language):
            if shuffled is not None:
                needs += [(suite, case, metric), (suite, shuffled, metric)]
        return needs

    def plan_sensitivity(self, cal: CalibrationSet, language: str) -> int:
        key = (cal.path, self.scoring_suite(cal).name, f"sensitivity/{language}")
        return self.plan(self.sensitivity_needs(cal, language), key)

    def sensitivity(self, cal: CalibrationSet, language: str) -> SensitivityRun:
        key = (cal.path, language)
        with self._lock:
            found = self._sensitivity.get(key)
            if found is not None:
                return found
            assert cal.sanity is not None and cal.sanity.sensitivity is not None
            config = cal.sanity.sensitivity
            rubric = cal.rubrics[config.metric]
            self.plan_sensitivity(cal, language)
            suite = self.scoring_suite(cal)
            pairs: list[tuple[float | None, float | None] | None] = []
            perturbations: list[tuple[str, Perturbation | None]] = []
            for case, shuffled, perturbation in self._sensitivity_cases(cal, language):
                perturbations.append((case.id, perturbation))
                if shuffled is None:
                    pairs.append(None)
                    continue
                before = self.board.score(suite, case, config.metric)
                after = self.board.score(suite, shuffled, config.metric)
                pairs.append(
                    (
                        _number(before.value) if before.scored else None,
                        _number(after.value) if after.scored else None,
                    )
                )
            worst = min(rubric.scale) if rubric.higher_is_better else max(rubric.scale)
            result = summarize_sensitivity(
                pairs,
                worst=float(worst),
                higher_is_better=rubric.higher_is_better,
                min_lowered=config.min_lowered,
                fraction=config.fraction,
            )
            run = SensitivityRun(result=result, metric=config.metric, perturbations=tuple(perturbations))
            self._sensitivity[key] = run
            return run
