"""Regression items: one suite file's comparisons of the candidate's scores with a baseline.

:func:`regression_items` collects, for a suite, one :class:`RegressionItem` per metric of the
baseline and group of cases (``group_by``, default ``[language]``), node id
``suite.yaml::regression[metric-hi]``; a suite the baseline does not have gets one
``regression[not-in-baseline]`` item, failing when the suite's own ``regression`` section
names the baseline (unless ``missing_suite: skip``), else skipped (:class:`RegressionSkipItem`);
a baseline that can't be read gets one failing ``regression[baseline]`` item
(:class:`RegressionErrorItem`).

A :class:`RegressionItem` asks the scorer for the candidate's scores itself (recorded,
judged or computed), so it does not depend on the suite's case items having run in the same
process, and compares them with the baseline (``regression.compare``).

The family. An item's adjusted p-value depends on every comparison of its family (the run's
selected regression items by default; ``family: suite`` or ``metric`` narrows it), so the
first item of a family to run measures all of them (:func:`_family`), decides them together
(``compare.decide``) and keeps the decisions in the :class:`RegressionState`; the others take
theirs. Under pytest-xdist every worker has the same selected items and computes the same
family from the same scores (the family is a function of the data and the settings, not of
which worker runs which item), at the cost of each worker scoring the family's cases.
Aggregate rows that joined the release family (``family: release`` on the aggregate, or
``--llmjudge-family-include=aggregates``; the aggregate items' ``release_family_key``) are
decided in the same pass (:func:`decide_family`): their betting p-values
(``stats/betting.py``) are corrected with the regression items' and each row passes when its
adjusted p is ``<= alpha`` (:class:`JoinedDecision`).

Agreement gates join the run's family the same way (``gate: {family: release}`` in a
calibration set, or ``--llmjudge-family-include=gates``; the gate items'
``release_family_key``, :func:`run_family_key`): their p-value is the posterior probability
that weighted F1 is below the threshold (``calibration/agreement_gate.py``), and a gate passes the
criterion when its adjusted p is ``<= alpha``.

Outcomes: a regression fails; an inconclusive drop passes with a
:class:`~pytest_llmjudge.regression.compare.RegressionWarning`; "too few cases to decide" is
a warning and a skip reported as ``UNDECIDED`` (``regression/run_phase.py``), never a pass;
with ``fail_on: warn`` both fail with the regression text. Missing cases are listed in a
warning. The options and the phases that create the :class:`RegressionState` are in
``regression/run_phase.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.errors import RegressionFailure
from pytest_llmjudge.session.item_base import LLMJudgeItem, record
from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
from pytest_llmjudge.session.state import scorer_key
from pytest_llmjudge.util.formatting import format_fixed, format_value

if TYPE_CHECKING:
    from pytest_llmjudge.errors import BaselineError
    from pytest_llmjudge.history import History
    from pytest_llmjudge.records import CaseDrop, ReleaseMember
    from pytest_llmjudge.regression.compare import RegressionResult, RegressionSettings
    from pytest_llmjudge.regression.human import HumanChange
    from pytest_llmjudge.regression.schema import Baseline, MetricScores
    from pytest_llmjudge.stats.grouping import Group
    from pytest_llmjudge.suite.model import Case, Suite

_EXCERPT = 5
MAX_LISTED = 100
"""Case ids a regression record lists per kind of missing case (with the count of all): a baseline
of a million cases the suite no longer has made a JSON report of every one (docs/baselines.md)."""


UNDECIDED = "too few cases to decide"
"""Start of the skip reason of an undecided item (``regression/run_phase.py`` reports it as UNDECIDED)."""


@dataclass(frozen=True)
class _Prepared:
    """One comparison's scores: the candidate's (None: unscored, with a reason), the baseline's."""

    candidate: dict[str, float | None]
    base: dict[str, float | None]
    reasons: dict[str, str]
    higher: bool
    notes: tuple[str, ...]


@dataclass
class RegressionState:
    baseline_dir: Path
    rootdir: Path
    invocation_dir: Path
    cli_baseline: Path | None = None
    save_path: Path | None = None
    save_name: str | None = None
    method: str | None = None
    margin: float | None = None
    alpha: float | None = None
    correction: str | None = None
    family: str | None = None
    fail_on: str | None = None
    mode: str | None = None
    loaded: dict[Path, Baseline | BaselineError] = field(default_factory=dict)
    families: dict[tuple[str, ...], dict[str, RegressionResult]] = field(default_factory=dict)
    """Family key -> node id -> its decided comparison (computed once per process)."""
    saved: str | None = None
    save_problem: str | None = None
    history: History | None = None
    """``--llmjudge-history``: where ``history:BRANCH`` baselines live."""
    joined: dict[str, JoinedDecision] = field(default_factory=dict)
    """Node id of an aggregate item that joined a family -> its decision (:func:`decide_family`)."""
    include: tuple[str, ...] = ()
    """``--llmjudge-family-include``: kinds of checks that join the family without a ``family:`` of their own."""


@dataclass(frozen=True)
class JoinedDecision:
    """An aggregate bound check or agreement gate decided in a release family (``family: release``).

    ``p_value`` is the check's own (an aggregate's betting test, ``stats/betting.py``, bets at
    ``design_level``; a gate's posterior p), ``p_adjusted`` after the family's correction; the
    check passes when ``p_adjusted <= alpha``.
    """

    p_value: float | None
    p_adjusted: float | None
    design_level: float
    family: str
    correction: str
    alpha: float
    size: int
    testable: int

    @property
    def passed(self) -> bool:
        return self.p_adjusted is not None and self.p_adjusted <= self.alpha

    def member(self) -> ReleaseMember:
        """The record's form of this decision."""
        from pytest_llmjudge.records import ReleaseMember

        return ReleaseMember(
            family=self.family,
            correction=self.correction,
            alpha=self.alpha,
            p_value=self.p_value,
            p_adjusted=self.p_adjusted,
            design_level=self.design_level,
            size=self.size,
        )


def joined_decision(item: pytest.Item, key: tuple[str, ...]) -> JoinedDecision:
    """The decision of a check that joined the family ``key`` (deciding the family on first use)."""
    joined = item.config.stash[state_key].joined
    if item.nodeid not in joined:
        decide_family(item, key)
    return joined[item.nodeid]


def _family_settings(config: pytest.Config, suite: Suite | None) -> RegressionSettings:
    """The family's alpha, correction and scope: the suite's ``regression:`` section (none
    without a suite), overridden by the command line, else the defaults."""
    from pytest_llmjudge.regression.compare import RegressionSettings

    state = config.stash[state_key]
    rc = suite.regression if suite is not None else None
    values: dict[str, Any] = {}
    if rc is not None:
        values = {"alpha": rc.alpha, "correction": rc.correction, "family": rc.family}
    for name in ("alpha", "correction", "family"):
        if getattr(state, name) is not None:
            values[name] = getattr(state, name)
    return RegressionSettings(**values)


def family_key_of(config: pytest.Config, suite: Suite, metric: str) -> tuple[str, ...]:
    """The family key (as :meth:`RegressionItem.family_key`) of a check on ``metric`` of ``suite``."""
    s = _family_settings(config, suite)
    where = {"run": (), "suite": (str(suite.path),), "metric": (str(suite.path), metric)}
    return (s.family, *where[s.family], s.correction, repr(s.alpha))


def run_family_key(config: pytest.Config) -> tuple[str, ...]:
    """The key of the run-wide family with the command line's correction and alpha (or the defaults).

    Agreement gates join this family (``gate: {family: release}``,
    ``--llmjudge-family-include=gates``): a calibration set belongs to no suite, so it joins
    the run's family, together with the regression items of suites whose family is ``run``.
    """
    s = _family_settings(config, None)  # its scope is always the run, whatever --llmjudge-family says
    return ("run", s.correction, repr(s.alpha))


def decide_family(item: pytest.Item, key: tuple[str, ...]) -> None:
    """Decide the family ``key``: its regression items and the aggregate checks that joined it.

    Aggregate items join by having ``release_family_key()`` return ``key``; their raw p-value
    (``release_pvalue(level)``) is computed with the bets tuned to the level one item must
    reach in a family of this size (``per_item_level``; a function of the family's size, not
    of the scores, so the p-value stays valid).
    """
    from pytest_llmjudge.regression.compare import decide_joined
    from pytest_llmjudge.stats.multiplicity import per_item_level

    state = item.config.stash[state_key]
    items = list(item.session.items)
    if item not in items:
        items.append(item)
    regression = [i for i in items if isinstance(i, RegressionItem) and i.family_key() == key]
    joined = [i for i in items if (f := getattr(i, "release_family_key", None)) is not None and f() == key]
    correction, alpha = key[-2], float(key[-1])
    design = per_item_level(alpha, max(1, len(regression) + len(joined)), correction)
    raw: list[float | None] = [i.release_pvalue(design) for i in joined]  # type: ignore[attr-defined]
    decided = decide_joined([i.measure() for i in regression], raw, correction=correction, alpha=alpha)
    state.families[key] = {i.nodeid: r for i, r in zip(regression, decided.results, strict=True)}
    for i, p, adjusted in zip(joined, raw, decided.joined_adjusted, strict=True):
        state.joined[i.nodeid] = JoinedDecision(
            p, adjusted, design, key[0], correction, alpha, decided.size, decided.testable
        )


state_key = pytest.StashKey[RegressionState]()


def _load(state: RegressionState, path: Path) -> Baseline:
    from pytest_llmjudge.errors import BaselineError
    from pytest_llmjudge.regression.build import load_baseline

    cached = state.loaded.get(path)
    if cached is None:
        try:
            cached = load_baseline(path)
        except BaselineError as exc:
            cached = exc
        state.loaded[path] = cached
    if isinstance(cached, BaselineError):
        raise cached
    return cached


def _applies(suite: Suite, case: Case, metric: str) -> bool:
    """Whether ``case`` is scored on ``metric`` in this suite (as its items would be)."""
    return (
        metric in case.recorded
        or any(t.metric == metric for t in case.thresholds)
        or any(check.spec.metric == metric for check in suite.aggregates)
    )


def regression_items(self: pytest.Collector) -> list[pytest.Item]:
    """The regression items of one suite file (``self``, its ``SuiteFile`` node), collected after the
    suite's own items: the Run adds them to the suite file's collection, so the file is collected once."""
    from pytest_llmjudge.errors import BaselineError, LLMJudgeError
    from pytest_llmjudge.regression.baseline import resolve_path
    from pytest_llmjudge.session.suites import built_suite
    from pytest_llmjudge.stats.grouping import MISSING, Group
    from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls

    state = self.config.stash[state_key]
    try:
        suite = built_suite(self.config, self.path, self.ihook)
    except LLMJudgeError:
        return []  # the suite's own collector reports the error
    config = suite.regression
    name: str | None
    try:
        if state.cli_baseline is not None:
            path, name = state.cli_baseline, str(self.config.getoption("llmjudge_baseline"))
        elif config is not None and config.baseline:
            name = config.baseline
            path = resolve_path(config.baseline, state.baseline_dir, self.path.parent, state.history)
        else:
            return []
        baseline = _load(state, path)
    except BaselineError as exc:
        return [RegressionErrorItem.from_parent(self, name="regression[baseline]", message=str(exc))]
    suite_name = (config.baseline_suite if config is not None else None) or suite.name
    entry = baseline.suites.get(suite_name)
    if entry is None:
        message = f"suite {suite_name!r} is not in baseline {baseline.name!r} ({path})"
        # A suite whose own section names a baseline asked to be gated: renaming it must not
        # switch the gate off. Only an explicit missing_suite: skip (or a baseline given on the
        # command line alone) lets a suite the baseline lacks pass as "nothing to compare".
        if config is not None and (config.baseline or config.baseline_suite) and config.missing_suite == "fail":
            return [
                RegressionErrorItem.from_parent(
                    self,
                    name="regression[not-in-baseline]",
                    message=message + ", which its regression section names; save a baseline with it, "
                    "fix regression.baseline_suite, or set regression.missing_suite: skip for a new suite",
                )
            ]
        return [
            RegressionSkipItem.from_parent(
                self, name="regression[not-in-baseline]", message=message + ": nothing to compare"
            )
        ]
    wanted = config.metrics if config is not None and config.metrics is not None else sorted(entry.metrics)
    fields = tuple((config.group_by if config is not None else None) or suite.group_by)
    items: list[pytest.Item] = []
    for metric in wanted:
        scores = entry.metrics.get(metric)
        groups = {case.group(fields) for case in suite.cases if _applies(suite, case, metric)}
        # A baseline keeps scores per language, not case fields: a language the suite no
        # longer scores gets one group, "(none)" for the other fields.
        placed = {group.value("language") for group in groups}
        groups |= {
            Group(fields, (language, *[MISSING] * (len(fields) - 1)))
            for language in (scores.scores if scores is not None else ())
            if language not in placed
        }
        for group in sorted(groups):
            items.append(
                RegressionItem.from_parent(
                    self,
                    name=escape_controls(f"regression[{metric}-{group.name}]", ONE_LINE),
                    suite=suite,
                    metric=metric,
                    group=group,
                    baseline=baseline,
                    baseline_name=name,
                    baseline_suite=suite_name,
                )
            )
    return items


class RegressionErrorItem(LLMJudgeItem):
    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise RegressionFailure(f"ERROR: {self.message}")


class RegressionSkipItem(LLMJudgeItem):
    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise pytest.skip.Exception(self.message, _use_item_location=True)


def _listing(values: tuple[str, ...]) -> str:
    shown = ", ".join(values[:_EXCERPT])
    return shown + (f", … (+{len(values) - _EXCERPT})" if len(values) > _EXCERPT else "")


class RegressionItem(LLMJudgeItem):
    """Candidate vs baseline for one suite, metric and group of cases (a language by default)."""

    def __init__(
        self,
        *,
        suite: Suite,
        metric: str,
        group: Group,
        baseline: Baseline,
        baseline_name: str,
        baseline_suite: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.metric = metric
        self.group = group
        self.language = group.value("language") or group.name
        self.baseline = baseline
        self.baseline_name = baseline_name
        self.baseline_suite = baseline_suite
        self.extra_keyword_matches.update({self.language, group.name, metric, "regression"})

    @property
    def cases(self) -> list[Case]:
        return [
            case
            for case in self.suite.cases
            if case.group(self.group.fields) == self.group and _applies(self.suite, case, self.metric)
        ]

    def settings(self) -> RegressionSettings:
        from pytest_llmjudge.regression.compare import RegressionSettings

        state = self.config.stash[state_key]
        config = self.suite.regression
        margin = 0.0
        values: dict[str, Any] = {}
        if config is not None:
            margin = config.per_group.get(
                self.group.name,
                config.per_language.get(self.language, config.per_metric.get(self.metric, config.margin)),
            )
            values = {
                "alpha": config.alpha,
                "confidence": config.confidence,
                "method": config.method,
                "resamples": config.resamples,
                "seed": config.seed,
                "max_unscored_rate": config.max_unscored_rate,
                "fail_on_missing": config.fail_on_missing,
                "mode": config.per_metric_mode.get(self.metric, config.mode),
                "correction": config.correction,
                "family": config.family,
                "fail_on": config.fail_on,
            }
        if state.margin is not None:
            margin = state.margin
        if state.alpha is not None:
            values["alpha"] = state.alpha
        if state.method is not None:
            values["method"] = state.method
            if config is None or config.method != state.method:
                values["resamples"] = None
        for name in ("correction", "family", "fail_on", "mode"):
            if getattr(state, name) is not None:
                values[name] = getattr(state, name)
        return RegressionSettings(margin=margin, **values)

    def family_key(self) -> tuple[str, ...]:
        """Which comparisons are adjusted together with this one (same scope, correction and alpha)."""
        s = self.settings()
        where = {"run": (), "suite": (str(self.suite.path),), "metric": (str(self.suite.path), self.metric)}
        return (s.family, *where[s.family], s.correction, repr(s.alpha))

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        kind = self.suite.metric_kinds.get(self.metric)
        if kind is None:
            return []
        return [(self.suite, case, self.metric) for case in self.cases]

    def setup(self) -> None:
        board = self.config.stash[scorer_key]
        if self.suite.metric_kinds.get(self.metric) not in ("rubric", "judged"):
            return
        if all(self.metric in case.recorded for case in self.cases):
            return
        problem = board.judge_problem(self.suite.judge)
        if problem is None:
            return
        reason = f"judge {self.suite.judge.provider}:{self.suite.judge.model} {problem}"
        skip_or_fail_without_judge(board.settings, reason, self.suite.judge.required)

    def _candidate(self) -> tuple[dict[str, float | None], dict[str, str], bool | None, set[str]]:
        board = self.config.stash[scorer_key]
        board.plan(self.planned_calls())
        scores: dict[str, float | None] = {}
        reasons: dict[str, str] = {}
        higher: bool | None = None
        judges: set[str] = set()
        known = self.metric in self.suite.metric_kinds
        for case in self.cases:
            if not known and self.metric not in case.recorded:
                scores[case.id], reasons[case.id] = None, f"the suite no longer scores {self.metric!r}"
                continue
            score = board.score(self.suite, case, self.metric)
            value = score.value
            if score.judge:
                judges.add(score.judge)
            if not score.scored or value is None:
                scores[case.id], reasons[case.id] = None, score.error or "no score"
            elif isinstance(value, str):
                scores[case.id], reasons[case.id] = None, f"categorical value {value!r} has no mean"
            else:
                scores[case.id] = float(value)
                higher = score.higher_is_better if higher is None else higher
        return scores, reasons, higher, judges

    def _prepare(self) -> _Prepared:
        """The baseline's and the candidate's scores of this comparison (scored once per item)."""
        prepared: _Prepared | None = getattr(self, "_prepared", None)
        if prepared is not None:
            return prepared
        stored: MetricScores | None = self.baseline.metric(self.baseline_suite, self.metric)
        in_language = {case.id for case in self.suite.cases if case.language == self.language}
        base, unplaced = (
            stored.group(
                self.language,
                {case.id for case in self.suite.cases if case.group(self.group.fields) == self.group},
                in_language,
            )
            if stored is not None
            else ({}, ())
        )
        candidate, reasons, higher, judges = self._candidate()
        if higher is None:
            higher = stored.higher_is_better if stored is not None else True
        notes: list[str] = []
        if not self.cases:
            notes.append(
                f"the suite no longer scores {self.metric!r} in {self.group.name!r} (no threshold or aggregate on it)"
            )
        if unplaced and len(self.group.fields) > 1:
            notes.append(
                f"{len(unplaced)} baseline case(s) of {self.language!r} are no longer in the suite; a baseline "
                f"stores no case fields, so they are listed in every {self.language!r} group"
            )
        if stored is not None and stored.judges and judges and stored.judges != judges:
            notes.append(
                f"judge differs: baseline {', '.join(sorted(stored.judges))}, candidate {', '.join(sorted(judges))} "
                "(the difference mixes a judge change with a system change)"
            )
        prepared = _Prepared(candidate, base, reasons, higher, tuple(notes))
        self._prepared = prepared
        return prepared

    def measure(self) -> RegressionResult:
        """This comparison's raw statistics, before the family decides it."""
        from pytest_llmjudge.regression.compare import measure

        prepared = self._prepare()
        return measure(
            prepared.candidate,
            prepared.base,
            higher_is_better=prepared.higher,
            settings=self.settings(),
            unscored_reasons=prepared.reasons,
            notes=prepared.notes,
        )

    def decided(self) -> RegressionResult:
        """This comparison decided with its family (computed by the family's first item to run)."""
        state = self.config.stash[state_key]
        key = self.family_key()
        family = state.families.get(key)
        if family is None or self.nodeid not in family:
            decide_family(self, key)
            family = state.families[key]
        return family[self.nodeid]

    def runtest(self) -> None:
        from pytest_llmjudge.records import CaseDrop, PairedCase, RegressionRecord
        from pytest_llmjudge.regression.compare import RegressionWarning

        prepared = self._prepare()
        candidate, base, higher = prepared.candidate, prepared.base, prepared.higher
        result = self.decided()
        sign = 1.0 if higher else -1.0
        drops: list[tuple[float, str, float, float]] = []
        for case_id, now in candidate.items():
            before = base.get(case_id)
            if now is not None and before is not None and (now - before) * sign < 0:
                drops.append(((now - before) * sign, case_id, before, now))
        largest_drops = [
            CaseDrop(case=case_id, baseline=before, candidate=now)
            for _, case_id, before, now in sorted(drops)[:_EXCERPT]
        ]
        outputs = entry.outputs if (entry := self.baseline.suites.get(self.baseline_suite)) is not None else {}
        # Per case, baseline and candidate score and the baseline's output: the reports show what changed.
        paired = [
            PairedCase(
                case=case_id,
                baseline=base.get(case_id),
                candidate=candidate.get(case_id),
                baseline_output=outputs.get(case_id),
            )
            # Every case of the run, and the first MAX_LISTED the suite no longer has (counted in the record).
            for case_id in sorted(set(candidate) | set(sorted(set(base) - set(candidate))[:MAX_LISTED]))
        ]
        listed = result.to_dict()
        human = self._human_change(prepared)
        if human is not None:
            listed |= {
                "human_delta": human.value,
                "human_delta_low": human.low,
                "human_delta_high": human.high,
                "human_n": human.n,
                "human_lambda": human.lam,
            }
        for kind in ("missing_in_baseline", "missing_in_candidate", "baseline_unscored"):
            listed[f"{kind}_count"] = len(listed[kind])
            listed[kind] = listed[kind][:MAX_LISTED]
        kept = RegressionRecord(
            suite=self.suite.name,
            suite_path=str(self.suite.path),
            metric=self.metric,
            language=self.group.name,
            group_by=list(self.group.fields),
            baseline=self.baseline_name,
            baseline_path=str(self.baseline.path) if self.baseline.path else None,
            baseline_suite=self.baseline_suite,
            baseline_created=self.baseline.created,
            passed=not result.fails_run,
            largest_drops=largest_drops,
            cases=paired,
            **listed,
        )
        self.llmjudge_result = kept
        record(self, kept.junit_properties())
        message = self._explain(result, largest_drops)
        if human is not None:
            message += f"\n  human scale:  {human.text()}"
        missing = result.missing_in_baseline or result.missing_in_candidate or result.baseline_unscored
        if result.fails_run:
            raise RegressionFailure(message)
        if result.gate in ("warn", "undecided"):
            self._warn(RegressionWarning(message))
        elif missing:
            self._warn(RegressionWarning(self._missing_text(result)))
        if result.gate == "undecided":
            raise pytest.skip.Exception(
                f"{UNDECIDED}: {self.suite.name} {self.metric} [{self.group.name}], {result.n} pairs, "
                f"{result.nonzero} changed; the smallest possible p-value {format_fixed(result.min_p, 4)} is above "
                f"the level {format_fixed(result.level, 4)}",
                _use_item_location=True,
            )

    def _human_change(self, prepared: _Prepared) -> HumanChange | None:
        """The PPI++ human-scale change when cases carry human labels in the suite and the baseline."""
        from pytest_llmjudge.regression.human import human_change

        stored = self.baseline.metric(self.baseline_suite, self.metric)
        if stored is None or not stored.human:
            return None
        labels = {case.id: case.human[self.metric] for case in self.cases if self.metric in case.human}
        if not labels:
            return None
        return human_change(
            prepared.candidate,
            prepared.base,
            labels,
            stored.human.get(self.language, {}),
            scale=self.suite.scale_of(self.metric),
            confidence=self.settings().confidence,
        )

    def _warn(self, warning: Warning) -> None:
        # Attributed to the suite file (line 0: no source line is echoed), not to this module.
        try:
            warnings.warn_explicit(
                warning, type(warning), filename=shown_path(self.path, self.config), lineno=0, module=__name__
            )
        except type(warning) as raised:
            # -W error::RegressionWarning: the same text as a failure, not a traceback through the plugin.
            raise RegressionFailure(str(raised)) from None

    def _missing_text(self, result: RegressionResult) -> str:
        parts = []
        if result.missing_in_baseline:
            parts.append(
                f"{len(result.missing_in_baseline)} not in the baseline ({_listing(result.missing_in_baseline)})"
            )
        if result.missing_in_candidate:
            parts.append(
                f"{len(result.missing_in_candidate)} no longer in the suite ({_listing(result.missing_in_candidate)})"
            )
        if result.baseline_unscored:
            parts.append(
                f"{len(result.baseline_unscored)} unscored in the baseline ({_listing(result.baseline_unscored)})"
            )
        return f"{self.suite.name} {self.metric} [{self.group.name}]: cases missing: " + "; ".join(parts)

    def _explain(self, result: RegressionResult, largest_drops: list[CaseDrop]) -> str:
        from pytest_llmjudge.stats.multiplicity import method_name

        s = result.settings
        head = {"fail": "REGRESSION", "error": "ERROR", "warn": "WARNING", "pass": "OK", "undecided": "UNDECIDED"}[
            result.gate
        ]
        if result.fails_run and result.gate in ("warn", "undecided"):
            head = "REGRESSION (fail_on: warn)"
        direction = "higher is better" if result.higher_is_better else "lower is better"
        if s.mode == "non_inferiority":
            tested = f"p = {format_fixed(result.p_non_inferiority, 4)} that the drop is below margin {s.margin:g}"
        else:
            tested = f"p = {format_fixed(result.p_value, 4)} for a drop beyond margin {s.margin:g}"
        lines = [
            f"{head}: {self.suite.name} {self.metric} [{self.group.name}] vs baseline {self.baseline_name}: "
            + (
                result.problem
                if result.problem
                else f"candidate - baseline = {format_fixed(result.mean_difference)} "
                f"({s.confidence:.0%} CI [{format_fixed(result.ci_low)}, {format_fixed(result.ci_high)}]), "
                f"{tested}, adjusted {format_fixed(result.p_adjusted, 4)} (alpha {s.alpha:g}): {result.verdict}"
            ),
        ]
        if result.mean_candidate is not None:
            lines.append(
                f"  means:        candidate {format_fixed(result.mean_candidate)}, baseline {format_fixed(result.mean_baseline)} "
                f"over {result.n} paired cases, {result.nonzero} changed ({direction})"
            )
            lines.append(f"  method:       {result.method_detail}, seed {s.seed}")
        if result.family_size is not None and result.level is not None:
            counted = (
                f" over Tarone's K = {result.family_testable} (those that could never be significant don't count)"
                if result.family_testable is not None and result.family_testable < result.family_size
                else ""
            )
            lines.append(
                f"  family:       {result.family_size} comparison(s) ({s.family}), {method_name(s.correction)}"
                f"{counted}; level per item {format_fixed(result.level, 4)}, mode {s.mode}"
            )
            lines.append("  power:        " + self._power_text(result))
        lines.append(
            f"  baseline:     {self.baseline.path} (created {self.baseline.created or '?'}), suite {self.baseline_suite!r}"
        )
        if largest_drops:
            shown = ", ".join(
                f"{d.case} {format_value(d.baseline)} -> {format_value(d.candidate)}" for d in largest_drops
            )
            lines.append(f"  largest drops: {shown}")
        if result.candidate_unscored:
            shown = "; ".join(f"{c}: {r}" for c, r in result.candidate_unscored[:_EXCERPT])
            lines.append(f"  unscored now: {len(result.candidate_unscored)} ({shown})")
        if result.n_missing:
            lines.append("  " + self._missing_text(result).split(": ", 1)[1])
        for note in result.notes:
            lines.append(f"  note:         {note}")
        return "\n".join(lines)

    @staticmethod
    def _power_text(result: RegressionResult) -> str:
        import math

        s = result.settings
        level = result.level or s.alpha
        upper = result.drop_upper
        bound = (
            "no drop is ruled out"
            if upper is None or not math.isfinite(upper)
            else f"drop at most {format_fixed(upper)} ({1 - level:.2%} upper bound)"
        )
        mde = result.mde
        if result.sd == 0:
            detect = "every pair moved by the same amount: no spread to size a drop against"
        elif mde is not None and math.isfinite(mde):
            detect = f"smallest drop detectable with 80% power at n={result.n}: {format_fixed(mde)}"
        else:
            detect = f"no drop is detectable with 80% power at n={result.n}"
        if s.margin > 0:
            need = (
                f"~{result.cases_needed} cases to rule out a drop of {s.margin:g}"
                if result.cases_needed is not None
                else f"cases needed for a drop of {s.margin:g}: unknown (no variance estimate)"
            )
        else:
            need = "margin 0: set a margin to get the cases needed to rule out a drop"
        return f"{bound}; {detect}; {need}"


def shown_path(path: Path, config: pytest.Config) -> str:
    """``path`` relative to the rootdir when it is inside it: what pytest's own lines show, and
    what reads the same on every machine (a warning's location, a saved baseline's path)."""
    try:
        return Path(path).resolve().relative_to(Path(config.rootpath).resolve()).as_posix()
    except ValueError:
        return str(path)
