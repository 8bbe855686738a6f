"""pytest hooks of the calibration feature: collection, planning, the suite guard, summary, fixture.

Registered by the main plugin (``FEATURE_PLUGINS``) and, like it, inert without
``--llmjudge`` (the fixture excepted, which works like ``llmjudge_judge``):

* ``pytest_collect_file``: YAML files with a top-level ``calibration:`` key become
  :class:`~pytest_llmjudge.calibration.items.CalibrationFile` nodes;
* a planner (``session.items.planners_key``): the live judge calls of the gates that the
  selected items of suites with ``judge.calibration`` need join the one plan after
  collection (gate and sanity items plan theirs as every item does, ``planned_calls``), so
  batch mode, xdist sharing and the cache see them;
* ``pytest_runtest_call`` (first): the guard that stops judge-scored suite items in
  languages where their judge failed the gate (:func:`guard_suite_item`);
* the ``llmjudge_calibrated_judge`` fixture, bound to ``--llmjudge-calibration`` or the ini
  key ``llmjudge_calibration`` (a relative path is taken from the invocation directory on
  the command line, from the rootdir in the ini file).

The score correction is wired in through ``ScoreBoard.score_adjusters``: it changes a live
judge score only for suites that set ``judge.correction: true``. The end-of-run gate table
(per language, the best-score share by annotator agreement, the sanity checks) is printed
once, inside the ``llmjudge summary`` section, from the items' records
(:func:`~pytest_llmjudge.calibration.report.calibration_lines`, called by ``report/terminal.py``).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.session.items import planners_key
from pytest_llmjudge.session.state import has_top_level_key, is_enabled, scoreboard_key

if TYPE_CHECKING:
    from pytest_llmjudge.calibration.calibrated_judge import CalibratedJudge
    from pytest_llmjudge.calibration.items import CalibrationFile
    from pytest_llmjudge.execution.scoreboard import JuryChoice, Score
    from pytest_llmjudge.fixture_judge import Judge
    from pytest_llmjudge.suite.model import Case, Suite


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmjudge")
    help_text = "Calibration set that the llmjudge_calibrated_judge fixture checks the judge against."
    group.addoption("--llmjudge-calibration", default=None, dest="llmjudge_calibration", help=help_text)
    parser.addini("llmjudge_calibration", help_text, default=None)
    group.addoption(
        "--llmjudge-recertify",
        action="store_true",
        default=False,
        dest="llmjudge_recertify",
        help="Drift sentinel (judge.drift): certify the judge's served identity anew, replacing the stored one.",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not is_enabled(config):
        return
    board = config.stash.get(scoreboard_key, None)
    if board is None:
        return

    def adjust(suite: Suite, case: Case, score: Score) -> Score:
        # The calibration machinery (numpy, scipy) loads only for suites that correct scores.
        if not suite.judge.correction or suite.judge.calibration is None:
            return score
        from pytest_llmjudge.calibration.items import get_store

        return get_store(config).adjust(suite, case, score)

    board.score_adjusters.append(adjust)

    def watch_identity(suite: Suite, case: Case, score: Score) -> Score:
        # Only suites with a drift sentinel compare served identities (calibration/drift/items.py).
        if suite.judge.drift is None or score.identity is None:
            return score
        from pytest_llmjudge.calibration.drift.items import served_check

        return served_check(config, suite, case, score)

    board.score_adjusters.append(watch_identity)

    def jury_choice(suite: Suite, case: Case, metric: str) -> JuryChoice | None:
        # Suites with judge.jury only: the calibration set's jury decides who scores (calibration/jury.py).
        if not suite.judge.jury or suite.judge.calibration is None:
            return None
        from pytest_llmjudge.calibration.items import get_store

        return get_store(config).jury_choice(suite, case, metric)

    board.juries.append(jury_choice)
    config.stash.setdefault(planners_key, []).append(lambda items: _calibrated_gate_needs(config, items))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A suite file whose judge has ``judge.drift`` gets its drift sentinel items after its own."""
    report = yield
    suite = getattr(collector, "suite", None)
    judge = getattr(suite, "judge", None)
    if getattr(judge, "drift", None) is not None and report.passed and is_enabled(collector.config):
        from pytest_llmjudge.calibration.drift.items import drift_items

        assert suite is not None
        report.result.extend(drift_items(collector, suite))
    return report


def _calibrated_suite(item: pytest.Item) -> Suite | None:
    """The suite of a suite item whose judge names a calibration set, else None."""
    suite = getattr(item, "suite", None)
    judge = getattr(suite, "judge", None)
    return suite if getattr(judge, "calibration", None) is not None else None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CalibrationFile | None:
    if not has_top_level_key(file_path, parent.config, "calibration"):
        return None
    from pytest_llmjudge.calibration.items import CalibrationFile
    from pytest_llmjudge.session.items import file_node

    node: CalibrationFile = file_node(CalibrationFile, parent, file_path)
    return node


def _calibrated_gate_needs(config: pytest.Config, items: Sequence[pytest.Item]) -> Iterator[tuple[Suite, Case, str]]:
    """The live judge calls of the gates that selected suite items' calibrated judges must pass
    (no calibration item asks for them): part of the one plan, so batch mode sends them too."""
    from pytest_llmjudge.suite_items import AggregateItem, CaseItem

    suites: dict[str, tuple[Suite, set[tuple[str, str]]]] = {}
    for item in items:
        if isinstance(item, (CaseItem, AggregateItem)) and item.judge_problem is None:
            if item.suite.judge.calibration is not None and item.suite.needs_live_judge:
                from pytest_llmjudge.calibration.gates import judge_scored_languages  # numpy: only when calibrated

                # Only the gates of the languages and metric the item scores (guard_suite_item checks no other).
                if isinstance(item, CaseItem):
                    metric, cases = item.threshold.metric, [item.case]
                else:
                    metric, cases = item.check.spec.metric, item.cases
                wanted = suites.setdefault(str(item.suite.path), (item.suite, set()))[1]
                wanted.update((language, metric) for language in judge_scored_languages(item.suite, metric, cases))
    if not suites:
        return  # no selected suite with a live judge names a calibration: nothing to plan
    from pytest_llmjudge.calibration.items import get_store

    store = get_store(config)
    for suite, languages in suites.values():
        yield from store.suite_gate_needs(suite, languages)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    if not is_enabled(item.config) or _calibrated_suite(item) is None:
        return
    from pytest_llmjudge.calibration.items import guard_suite_item

    guard_suite_item(item)


def _calibration_path(config: pytest.Config) -> Path | None:
    cli = config.getoption("llmjudge_calibration", default=None)
    if cli:
        path = Path(cli).expanduser()
        return path if path.is_absolute() else Path(config.invocation_params.dir) / path
    ini = config.getini("llmjudge_calibration")
    if ini:
        path = Path(str(ini)).expanduser()
        return path if path.is_absolute() else Path(config.rootpath) / path
    return None


@pytest.fixture(scope="session")
def llmjudge_calibrated_judge(pytestconfig: pytest.Config, llmjudge_judge: Judge) -> Iterator[CalibratedJudge]:
    """The configured judge, bound to the calibration set of ``--llmjudge-calibration``.

    ``score(text, rubric=..., language=...)`` fails the test with "judge <model> is not
    calibrated for <language>: F1 ... < ..." when the judge failed that language's gate.
    """
    from pytest_llmjudge.calibration.calibrated_judge import CalibratedJudge
    from pytest_llmjudge.calibration.gates import GateComputer
    from pytest_llmjudge.calibration.items import get_store
    from pytest_llmjudge.execution.scoreboard import ScoreBoard

    path = _calibration_path(pytestconfig)
    if path is None:
        pytest.fail(
            "llmjudge_calibrated_judge needs a calibration set: pass --llmjudge-calibration=PATH "
            "or set llmjudge_calibration in the ini file",
            pytrace=False,
        )
    if not path.is_file():
        pytest.fail(f"calibration set not found: {path}", pytrace=False)

    def fail(message: str) -> Any:
        pytest.fail(message, pytrace=False)

    board = pytestconfig.stash[scoreboard_key]
    store = get_store(pytestconfig)
    private: ScoreBoard | None = None
    if board.share is not None:
        # Under xdist, calibration calls are shared between workers only when every worker
        # planned them after collection. Nobody plans a fixture's calls, so this worker makes
        # them itself (through the same on-disk cache) instead of waiting for a peer.
        private = ScoreBoard(board.registry, board.settings)
        store = GateComputer(private)
    yield CalibratedJudge(board, store, path, on_uncalibrated=fail)
    if private is not None:
        private.close()
