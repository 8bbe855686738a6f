"""pytest hooks of baseline regression gating: save a run's scores, compare a run with them.

Registered as a feature plugin (``plugin.FEATURE_PLUGINS``); inert without ``--llmjudge``.

* ``--llmjudge-save-baseline=NAME``: at the end of the run, the process that owns the
  terminal (the controller under pytest-xdist, which receives every item's record) writes
  the scores of the run's case and aggregate items as baseline ``NAME``
  (``regression.baseline`` has the format).
* ``--llmjudge-baseline=NAME``, or a suite's ``regression: {baseline: ...}``: every suite
  file also collects one :class:`RegressionItem` per metric of the baseline and group of
  cases (``group_by``, default ``[language]``), node id ``suite.yaml::regression[metric-hi]``,
  or ``regression[metric-hi-task=qa]`` with ``group_by: [language, task]``. Each asks the scoreboard for the
  candidate's scores itself (recorded, judged or computed), so it does not depend on the
  suite's case items having run in the same process, and compares them with the baseline
  (``regression.compare``): a significant drop beyond the margin fails, a drop that is not
  significant passes with a :class:`~pytest_llmjudge.regression.compare.RegressionWarning`,
  missing cases are listed in a warning.
* ``--llmjudge-regression-method/-margin/-alpha`` override every suite's settings; ini
  ``llmjudge_baseline_dir`` is where bare baseline names live (default
  ``llmjudge_baselines`` under the rootdir).

A suite the baseline does not have gets one skipped ``regression[not-in-baseline]`` item
(a new suite can't regress); a baseline that can't be read is a failing
``regression[baseline]`` item (the run must not pass a gate it could not check).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.errors import ItemFailure
from pytest_llmjudge.formatting import format_fixed, format_value
from pytest_llmjudge.session.collector import results_key
from pytest_llmjudge.session.items import LLMJudgeItem, record
from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
from pytest_llmjudge.session.state import is_enabled, scoreboard_key

if TYPE_CHECKING:
    from pytest_llmjudge.records import CaseDrop
    from pytest_llmjudge.regression.baseline import Baseline, BaselineError, MetricScores
    from pytest_llmjudge.regression.compare import RegressionResult, RegressionSettings
    from pytest_llmjudge.stats.grouping import Group
    from pytest_llmjudge.suite.model import Case, Suite

_EXCERPT = 5


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
    loaded: dict[Path, Baseline | BaselineError] = field(default_factory=dict)
    saved: str | None = None
    save_problem: str | None = None


state_key = pytest.StashKey[RegressionState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmjudge", "LLM-judge evaluation suites (pytest-llmjudge)")
    group.addoption(
        "--llmjudge-baseline",
        default=None,
        dest="llmjudge_baseline",
        metavar="NAME",
        help="Compare every suite with baseline NAME (in llmjudge_baseline_dir, or a .json path).",
    )
    group.addoption(
        "--llmjudge-save-baseline",
        default=None,
        dest="llmjudge_save_baseline",
        metavar="NAME",
        help="Save this run's scores as baseline NAME at the end of the run.",
    )
    group.addoption(
        "--llmjudge-regression-method",
        default=None,
        choices=("bootstrap", "permutation"),
        dest="llmjudge_regression_method",
        help="Paired test of the regression items (overrides suites; default bootstrap).",
    )
    group.addoption(
        "--llmjudge-regression-margin",
        default=None,
        type=float,
        dest="llmjudge_regression_margin",
        help="Tolerated drop in score units (overrides suites' margins; default 0).",
    )
    group.addoption(
        "--llmjudge-regression-alpha",
        default=None,
        type=float,
        dest="llmjudge_regression_alpha",
        help="Significance level of the regression test (overrides suites; default 0.05).",
    )
    parser.addini(
        "llmjudge_baseline_dir",
        "Directory of named baselines (default llmjudge_baselines under the rootdir).",
        default=None,
    )


def pytest_configure(config: pytest.Config) -> None:
    if not is_enabled(config):
        return
    from pytest_llmjudge.regression.baseline import DEFAULT_DIR, BaselineError, resolve_path

    rootdir = Path(config.rootpath)
    raw_dir = config.getini("llmjudge_baseline_dir") or DEFAULT_DIR
    baseline_dir = Path(str(raw_dir)).expanduser()
    if not baseline_dir.is_absolute():
        baseline_dir = rootdir / baseline_dir
    state = RegressionState(baseline_dir=baseline_dir, rootdir=rootdir, invocation_dir=config.invocation_params.dir)
    margin = config.getoption("llmjudge_regression_margin")
    alpha = config.getoption("llmjudge_regression_alpha")
    if margin is not None and margin < 0:
        raise pytest.UsageError("pytest-llmjudge: --llmjudge-regression-margin can't be negative")
    if alpha is not None and not 0 < alpha < 1:
        raise pytest.UsageError("pytest-llmjudge: --llmjudge-regression-alpha must be in (0, 1)")
    state.method, state.margin, state.alpha = config.getoption("llmjudge_regression_method"), margin, alpha
    try:
        name = config.getoption("llmjudge_baseline")
        if name:
            state.cli_baseline = resolve_path(name, baseline_dir, state.invocation_dir)
            if not state.cli_baseline.is_file():
                raise BaselineError(f"baseline {name!r} not found: {state.cli_baseline}")
        save = config.getoption("llmjudge_save_baseline")
        if save:
            state.save_name = Path(save).stem if save.endswith(".json") else save
            state.save_path = resolve_path(save, baseline_dir, state.invocation_dir)
    except BaselineError as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None
    config.stash[state_key] = state


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> RegressionFile | None:
    config = parent.config
    if not is_enabled(config) or file_path.suffix not in (".yaml", ".yml"):
        return None
    state = config.stash.get(state_key, None)
    if state is None:
        return None
    from pytest_llmjudge.suite.sniff import has_top_level_key, sniff_kind

    if sniff_kind(file_path) != "suite":
        return None
    if state.cli_baseline is None and not has_top_level_key(file_path, "regression"):
        return None
    collector: RegressionFile = RegressionFile.from_parent(parent, path=file_path)
    return collector


def _load(state: RegressionState, path: Path) -> Baseline:
    from pytest_llmjudge.regression.baseline import BaselineError, load_baseline

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


class RegressionFile(pytest.File):
    """The regression items of one suite file (next to the suite's own items)."""

    def collect(self) -> list[pytest.Item]:
        from pytest_llmjudge.errors import LLMJudgeError
        from pytest_llmjudge.escaping import ONE_LINE, escape_controls
        from pytest_llmjudge.regression.baseline import BaselineError, resolve_path
        from pytest_llmjudge.session.suites import built_suite
        from pytest_llmjudge.stats.grouping import MISSING, Group

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
                path = resolve_path(config.baseline, state.baseline_dir, self.path.parent)
            else:
                return []
            baseline = _load(state, path)
        except BaselineError as exc:
            return [RegressionErrorItem.from_parent(self, name="regression[baseline]", message=str(exc))]
        suite_name = (config.baseline_suite if config is not None else None) or suite.name
        entry = baseline.suites.get(suite_name)
        if entry is None:
            return [
                RegressionSkipItem.from_parent(
                    self,
                    name="regression[not-in-baseline]",
                    message=f"suite {suite_name!r} is not in baseline {baseline.name!r} ({path}): nothing to compare",
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


class RegressionFailure(ItemFailure):
    """A regression item's gate failed, or it could not be checked."""


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
            }
        if state.margin is not None:
            margin = state.margin
        if state.alpha is not None:
            values["alpha"] = state.alpha
        if state.method is not None:
            values["method"] = state.method
            if config is None or config.method != state.method:
                values["resamples"] = None
        return RegressionSettings(margin=margin, **values)

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        kind = self.suite.metric_kinds.get(self.metric)
        if kind is None:
            return []
        return [(self.suite, case, self.metric) for case in self.cases]

    def setup(self) -> None:
        board = self.config.stash[scoreboard_key]
        if self.suite.metric_kinds.get(self.metric) != "rubric":
            return
        if all(self.metric in case.recorded for case in self.cases):
            return
        problem = board.judge_problem(self.suite.judge)
        if problem is None:
            return
        reason = f"judge {self.suite.judge.provider}:{self.suite.judge.model} {problem}"
        skip_or_fail_without_judge(board.settings, reason, self.suite.judge.required)

    def _candidate(self) -> tuple[dict[str, float | None], dict[str, str], bool | None, set[str]]:
        board = self.config.stash[scoreboard_key]
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

    def runtest(self) -> None:
        from pytest_llmjudge.records import CaseDrop, PairedCase, RegressionRecord
        from pytest_llmjudge.regression.compare import RegressionWarning, compare

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
        settings = self.settings()
        result = compare(
            candidate, base, higher_is_better=higher, settings=settings, unscored_reasons=reasons, notes=tuple(notes)
        )
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
            for case_id in sorted(set(base) | set(candidate))
        ]
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
            passed=result.gate in ("pass", "warn"),
            largest_drops=largest_drops,
            cases=paired,
            **result.to_dict(),
        )
        self.llmjudge_result = kept
        record(self, kept.junit_properties())
        message = self._explain(result, largest_drops)
        missing = result.missing_in_baseline or result.missing_in_candidate or result.baseline_unscored
        if result.gate in ("fail", "error"):
            raise RegressionFailure(message)
        if result.gate == "warn":
            self._warn(RegressionWarning(message))
        elif missing:
            self._warn(RegressionWarning(self._missing_text(result)))

    def _warn(self, warning: Warning) -> None:
        # Attributed to the suite file (line 0: no source line is echoed), not to this module.
        warnings.warn_explicit(warning, type(warning), filename=str(self.path), lineno=0, module=__name__)

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
        s = result.settings
        head = {"fail": "REGRESSION", "error": "ERROR", "warn": "WARNING", "pass": "OK"}[result.gate]
        direction = "higher is better" if result.higher_is_better else "lower is better"
        lines = [
            f"{head}: {self.suite.name} {self.metric} [{self.group.name}] vs baseline {self.baseline_name}: "
            + (
                result.problem
                if result.problem
                else f"candidate - baseline = {format_fixed(result.mean_difference)} "
                f"({s.confidence:.0%} CI [{format_fixed(result.ci_low)}, {format_fixed(result.ci_high)}]), "
                f"p = {format_fixed(result.p_value, 4)} for a drop beyond margin {s.margin:g} (alpha {s.alpha:g}): {result.verdict}"
            ),
        ]
        if result.mean_candidate is not None:
            lines.append(
                f"  means:        candidate {format_fixed(result.mean_candidate)}, baseline {format_fixed(result.mean_baseline)} "
                f"over {result.n} paired cases ({direction})"
            )
            lines.append(f"  method:       {result.method_detail}, seed {s.seed}")
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


def _redact_outputs(baseline: Baseline, config: pytest.Config) -> None:
    """Replace the run's credentials in the judged outputs a baseline keeps.

    A baseline is meant to be committed and shared; a model output that echoes a key (or a
    base URL with a password) must not carry it there, as it doesn't into the reports.
    """
    from pytest_llmjudge.redaction import redact
    from pytest_llmjudge.session.secrets import run_secrets

    secrets = run_secrets(config)
    for suite in baseline.suites.values():
        suite.outputs = {case: redact(text, secrets) for case, text in suite.outputs.items()}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(state_key, None)
    if state is None or state.save_path is None or hasattr(config, "workerinput"):
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.save_problem = "the run was interrupted; baseline not saved"
        return
    from pytest_llmjudge.regression.baseline import build_baseline, run_metadata, save_baseline

    records = config.stash[results_key].records
    run = run_metadata(
        state.rootdir,
        items=len(records),
        failed_items=sum(r.outcome == "failed" for r in records),
        pytest_version=pytest.__version__,
    )
    baseline = build_baseline(state.save_name or state.save_path.stem, records, rootdir=state.rootdir, run=run)
    _redact_outputs(baseline, config)
    if not baseline.suites:
        state.save_problem = "no case or aggregate item produced a score; baseline not saved"
        return
    try:
        save_baseline(baseline, state.save_path)
    except OSError as exc:
        state.save_problem = f"could not write {state.save_path}: {exc}"
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    metrics = sum(len(s.metrics) for s in baseline.suites.values())
    state.saved = (
        f"baseline {baseline.name!r} saved to {state.save_path}: {len(baseline.suites)} suite(s), "
        f"{metrics} metric(s), {baseline.n_scores} case scores"
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """What the one ``llmjudge summary`` section does not say: cases missing on one side, the saved baseline.

    The comparisons themselves are in that section (``report/terminal.py``), from the same
    records; these lines are the plugin's own, each starting ``llmjudge:``.
    """
    state = config.stash.get(state_key, None)
    if state is None or hasattr(config, "workerinput"):
        return
    from pytest_llmjudge.records import RegressionRecord

    lines: list[tuple[str, dict[str, bool]]] = []
    records = [r for r in config.stash[results_key].records if isinstance(r, RegressionRecord)]
    missing = sum(len(r.missing_in_baseline) + len(r.missing_in_candidate) for r in records)
    if missing:
        lines.append((f"llmjudge: {missing} case(s) missing on one side of the baseline (listed in the warnings)", {}))
    if state.saved:
        lines.append((f"llmjudge: {state.saved}", {"green": True}))
    if state.save_problem:
        lines.append((f"llmjudge: baseline not saved: {state.save_problem}", {"red": True}))
    from pytest_llmjudge.escaping import ONE_LINE, escape_controls

    for text, markup in lines:
        terminalreporter.write_line(escape_controls(text, ONE_LINE), **markup)
