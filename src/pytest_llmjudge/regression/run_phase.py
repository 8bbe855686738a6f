"""Baseline regression gating: save a run's scores, compare a run with them (called by the Run).

Plain functions of the Run's phases (``session/run.py``); no hook here.

* ``--llmjudge-save-baseline=NAME``: at the end of the run, the process that owns the
  terminal (the controller under pytest-xdist, which receives every item's record) writes
  the scores of the run's case and aggregate items as baseline ``NAME``
  (``regression.baseline`` has the format).
* ``--llmjudge-baseline=NAME``, or a suite's ``regression: {baseline: ...}``: every suite
  file also collects, after its own items, its regression items
  (:func:`~pytest_llmjudge.regression.items.regression_items`): one regression item per metric of the baseline and group of cases (``group_by``, default
  ``[language]``), node id ``suite.yaml::regression[metric-hi]``, or
  ``regression[metric-hi-task=qa]`` with ``group_by: [language, task]``
  (``regression/items.py`` says what each checks).
* ``--llmjudge-regression-method/-margin/-alpha/-mode``, ``--llmjudge-correction``,
  ``--llmjudge-family`` and ``--llmjudge-fail-on`` override every suite's settings; ini
  ``llmjudge_baseline_dir`` is where bare baseline names live (default
  ``llmjudge_baselines`` under the rootdir).

An undecided regression item ("too few cases to decide") is reported as ``UNDECIDED``
(:func:`report_teststatus`); the release verdict of the run's regression records
(``regression/verdict.py``) goes into the JUnit file as a ``<testsuite>`` property.

A suite the baseline does not have gets one ``regression[not-in-baseline]`` item: failing
when the suite's own ``regression`` section names that baseline (a renamed suite must not
switch its gate off; ``missing_suite: skip`` opts out), skipped when only the command line
names it (a new suite can't regress); a baseline that can't be read is a failing
``regression[baseline]`` item (the run must not pass a gate it could not check).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.regression.items import UNDECIDED, RegressionState, shown_path, state_key

if TYPE_CHECKING:
    from pytest_llmjudge.history import History
    from pytest_llmjudge.records import ItemRecord, ReleaseVerdict
    from pytest_llmjudge.regression.schema import Baseline


def add_options(parser: pytest.Parser) -> None:
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
        help="Paired test of the regression items (overrides suites; default permutation).",
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
    group.addoption(
        "--llmjudge-correction",
        default=None,
        choices=("holm", "bh", "bonferroni", "none"),
        dest="llmjudge_correction",
        help="Multiple-testing correction of the regression family (overrides suites; default holm).",
    )
    group.addoption(
        "--llmjudge-family",
        default=None,
        choices=("run", "suite", "metric"),
        dest="llmjudge_family",
        help="Which regression items are corrected together (overrides suites; default run).",
    )
    group.addoption(
        "--llmjudge-fail-on",
        default=None,
        choices=("fail", "warn"),
        dest="llmjudge_fail_on",
        help="warn: an inconclusive drop or too few cases to decide fails too (overrides suites; default fail).",
    )
    group.addoption(
        "--llmjudge-regression-mode",
        default=None,
        choices=("regression", "non_inferiority"),
        dest="llmjudge_regression_mode",
        help="regression: fail on a shown drop; non_inferiority: pass only when a drop beyond the margin "
        "is ruled out (overrides suites; default regression).",
    )
    group.addoption(
        "--llmjudge-family-include",
        default=None,
        type=_family_kinds,
        metavar="KINDS",
        dest="llmjudge_family_include",
        help="aggregates, gates, or aggregates,gates: every lower(mean(...)) >= t / upper(mean(...)) <= t aggregate "
        "row on a known scale (betting p-value), and every human-agreement gate (posterior p-value of "
        "F1 >= threshold), joins the release family and is corrected with the regression items; default: only "
        "those with family: release.",
    )
    parser.addini(
        "llmjudge_baseline_dir",
        "Directory of named baselines (default llmjudge_baselines under the rootdir).",
        default=None,
    )


_FAMILY_KINDS = ("aggregates", "gates")


def _family_kinds(value: str) -> tuple[str, ...]:
    """``--llmjudge-family-include``'s comma-separated kinds of checks."""
    import argparse

    kinds = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [kind for kind in kinds if kind not in _FAMILY_KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {value!r} (choose from {', '.join(_FAMILY_KINDS)}, or both separated by a comma)"
        )
    return kinds


def configure(config: pytest.Config, history: History | None) -> RegressionState:
    """The run's regression state (stashed for the items), from the options; a usage error if bad."""
    from pytest_llmjudge.errors import BaselineError
    from pytest_llmjudge.regression.baseline import DEFAULT_DIR, resolve_path

    rootdir = Path(config.rootpath)
    raw_dir = config.getini("llmjudge_baseline_dir") or DEFAULT_DIR
    baseline_dir = Path(str(raw_dir)).expanduser()
    if not baseline_dir.is_absolute():
        baseline_dir = rootdir / baseline_dir
    state = RegressionState(
        baseline_dir=baseline_dir,
        rootdir=rootdir,
        invocation_dir=config.invocation_params.dir,
        history=history,
    )
    margin = config.getoption("llmjudge_regression_margin")
    alpha = config.getoption("llmjudge_regression_alpha")
    if margin is not None and margin < 0:
        raise pytest.UsageError("pytest-llmjudge: --llmjudge-regression-margin can't be negative")
    if alpha is not None and not 0 < alpha < 1:
        raise pytest.UsageError("pytest-llmjudge: --llmjudge-regression-alpha must be in (0, 1)")
    state.method, state.margin, state.alpha = config.getoption("llmjudge_regression_method"), margin, alpha
    state.correction = config.getoption("llmjudge_correction")
    state.family = config.getoption("llmjudge_family")
    state.fail_on = config.getoption("llmjudge_fail_on")
    state.mode = config.getoption("llmjudge_regression_mode")
    state.include = config.getoption("llmjudge_family_include") or ()
    try:
        name = config.getoption("llmjudge_baseline")
        if name:
            state.cli_baseline = resolve_path(name, baseline_dir, state.invocation_dir, state.history)
            if not state.cli_baseline.is_file():
                raise BaselineError(f"baseline {name!r} not found: {state.cli_baseline}")
        save = config.getoption("llmjudge_save_baseline")
        if save:
            state.save_name = Path(save).stem if save.endswith(".json") else save
            state.save_path = resolve_path(save, baseline_dir, state.invocation_dir)
    except BaselineError as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None
    config.stash[state_key] = state
    return state


def _redact_outputs(baseline: Baseline, config: pytest.Config) -> None:
    """Replace the run's credentials in the judged outputs a baseline keeps.

    A baseline is meant to be committed and shared; a model output that echoes a key (or a
    base URL with a password) must not carry it there, as it doesn't into the reports.
    """
    from pytest_llmjudge.session.secrets import run_secrets
    from pytest_llmjudge.util.redaction import redact

    secrets = run_secrets(config)
    for suite in baseline.suites.values():
        suite.outputs = {case: redact(text, secrets) for case, text in suite.outputs.items()}


def report_teststatus(report: pytest.TestReport) -> tuple[str, str, Any] | None:
    """A regression item with too few cases to decide is UNDECIDED (letter U), not a plain skip or pass."""
    longrepr = report.longrepr
    if (
        report.when == "call"
        and report.skipped
        and isinstance(longrepr, tuple)
        and len(longrepr) == 3
        and str(longrepr[2]).startswith(f"Skipped: {UNDECIDED}")
    ):
        return "undecided", "U", ("UNDECIDED", {"yellow": True})
    return None


def junit_verdict(config: pytest.Config, records: list[ItemRecord]) -> None:
    """Put the release verdict into the JUnit file as a ``<testsuite>`` property (before pytest writes it)."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    verdict = _verdict(records) if xml is not None else None
    if xml is not None and verdict is not None:
        from pytest_llmjudge.session.secrets import run_secrets
        from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls
        from pytest_llmjudge.util.redaction import redact

        # As every other text the plugin writes into JUnit: the run's credentials replaced, controls visible.
        text = escape_controls(redact(verdict.text, run_secrets(config)), ONE_LINE)
        xml.add_global_property("llmjudge_release_verdict", text)


def _verdict(records: list[ItemRecord]) -> ReleaseVerdict | None:
    from pytest_llmjudge.records import AggregateRecord, GateRecord, RegressionRecord
    from pytest_llmjudge.regression.verdict import release_verdict

    return release_verdict(
        [r for r in records if isinstance(r, RegressionRecord)],
        [r for r in records if isinstance(r, AggregateRecord)],
        [r for r in records if isinstance(r, GateRecord)],
    )


def save(session: pytest.Session, exitstatus: int, state: RegressionState, records: list[ItemRecord]) -> None:
    """``--llmjudge-save-baseline``: the run's scores saved (the process that owns the terminal)."""
    config = session.config
    if state.save_path is None:
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.save_problem = "the run was interrupted; baseline not saved"
        return
    from pytest_llmjudge.regression.baseline import build_baseline, run_metadata, save_baseline

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
        f"baseline {baseline.name!r} saved to {shown_path(state.save_path, config)}: {len(baseline.suites)} suite(s), "
        f"{metrics} metric(s), {baseline.n_scores} case scores"
    )


def write_summary(terminalreporter: Any, state: RegressionState, records: list[ItemRecord]) -> None:
    """What the one ``llmjudge summary`` section does not say: cases missing on one side, the saved baseline.

    The comparisons themselves are in that section (``report/terminal.py``), from the same
    records; these lines are the plugin's own, each starting ``llmjudge:``.
    """
    from pytest_llmjudge.records import RegressionRecord

    lines: list[tuple[str, dict[str, bool]]] = []
    regressions = [r for r in records if isinstance(r, RegressionRecord)]
    missing = sum(len(r.missing_in_baseline) + len(r.missing_in_candidate) for r in regressions)
    if missing:
        lines.append((f"llmjudge: {missing} case(s) missing on one side of the baseline (listed in the warnings)", {}))
    if state.saved:
        lines.append((f"llmjudge: {state.saved}", {"green": True}))
    if state.save_problem:
        lines.append((f"llmjudge: baseline not saved: {state.save_problem}", {"red": True}))
    from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls

    for text, markup in lines:
        terminalreporter.write_line(escape_controls(text, ONE_LINE), **markup)
