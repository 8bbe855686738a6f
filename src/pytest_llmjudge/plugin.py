"""The pytest plugin's entry point: options, hook specifications, fixtures, and the Run.

Inert unless ``--llmjudge`` is given: without it no suite is collected, no state is
created, no network is touched and the terminal output is unchanged. With it,
``pytest_configure`` creates and registers the one :class:`~pytest_llmjudge.session.run.Run`
of the session, which owns the run's state and whose hooks are its phases, in order
(collect, select, plan, judge, assert, aggregate, report: ``session/run.py``).

This module keeps what pytest needs from the plugin before (or without) a run: the
options (``pytest_addoption``, the features' own first), the hook specifications and the
built-in providers (``pytest_addhooks``), and the fixtures ``llmjudge_judge`` and
``llmjudge_calibrated_judge``, which work without ``--llmjudge`` too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge import builtin_plugins, hookspecs
from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
from pytest_llmjudge.session.state import is_enabled, scorer_key
from pytest_llmjudge.settings import OPTIONS

if TYPE_CHECKING:
    from pytest_llmjudge.calibration.calibrated_judge import CalibratedJudge
    from pytest_llmjudge.execution.judge import Judge

# Heavy modules (numpy, scipy, the SDKs) are imported only once --llmjudge is given, so an
# installed-but-unused plugin costs pytest start-up almost nothing.


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    if not pluginmanager.is_registered(builtin_plugins):
        pluginmanager.register(builtin_plugins, "llmjudge-builtins")


def pytest_addoption(parser: pytest.Parser) -> None:
    # The features' options first: their order in --help (docs/configuration.md) is the one they
    # had when each feature registered its own options as a plugin.
    # ``import a.b.c as x``: see session/run.py (a package attribute can outlive sys.modules under pytester).
    import pytest_llmjudge.calibration.run_phase as calibration
    import pytest_llmjudge.label_queue.run_phase as label_queue
    import pytest_llmjudge.regression.run_phase as regression
    import pytest_llmjudge.report.run_phase as reports
    import pytest_llmjudge.selection.shard_phase as shards

    for add_options in (
        reports.add_options,
        calibration.add_options,
        regression.add_options,
        shards.add_options,
        label_queue.add_options,
    ):
        add_options(parser)
    group = parser.getgroup("llmjudge", "LLM-judge evaluation suites (pytest-llmjudge)")
    group.addoption(
        "--llmjudge",
        action="store_true",
        default=False,
        help="Collect YAML evaluation suites (files with a top-level 'suite:' key) and run them.",
    )
    for option in OPTIONS:
        if option.is_switch:
            group.addoption(
                option.flag,
                action="store_true",
                default=None,
                dest=f"llmjudge_{option.name}",
                help=option.help + f" [env {option.env}]",
            )
        else:
            group.addoption(
                option.flag, default=None, dest=f"llmjudge_{option.name}", help=option.help + f" [env {option.env}]"
            )
        parser.addini(option.ini, option.help, default=None)
    group.addoption(
        "--llmjudge-no-cache",
        action="store_true",
        default=False,
        dest="llmjudge_no_cache",
        help="Don't read or write the judge cache (same as --llmjudge-cache=off).",
    )
    group.addoption(
        "--llmjudge-allow-no-judge",
        action="store_true",
        default=False,
        dest="llmjudge_allow_no_judge",
        help="Skip, never fail, judge items whose judge can't be called, also in CI (require_judge false).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Under ``--llmjudge``: the session's Run, registered so its phases run (``session/run.py``)."""
    if not is_enabled(config):
        return
    from pytest_llmjudge.session.run import NAME, Run

    config.pluginmanager.register(Run(config), NAME)


@pytest.fixture(scope="session")
def llmjudge_judge(pytestconfig: pytest.Config) -> Judge:
    """The configured LLM judge, for Python tests: ``llmjudge_judge.score(text, rubric=..., language=...)``.

    Uses the command-line/ini judge settings (``--llmjudge-provider``, ``--llmjudge-model``,
    ``--llmjudge-base-url``) over the defaults, with the run's cache and concurrency. Skips
    the test when the judge has no credentials, or fails it in CI (judges/no_judge_policy.py).
    """
    from pytest_llmjudge.execution.judge import Judge
    from pytest_llmjudge.execution.scorer import Scorer
    from pytest_llmjudge.registry import Registry
    from pytest_llmjudge.session.run import settings_from_config

    board = pytestconfig.stash.get(scorer_key, None)
    if board is None:
        board = Scorer(Registry.from_hook(pytestconfig.hook), settings_from_config(pytestconfig))
        pytestconfig.stash[scorer_key] = board
    judge = Judge(board)
    problem = judge.unavailable_reason()
    if problem is not None:
        skip_or_fail_without_judge(board.settings, f"judge {judge.model} {problem}")
    return judge


@pytest.fixture(scope="session")
def llmjudge_calibrated_judge(pytestconfig: pytest.Config, llmjudge_judge: Judge) -> Iterator[CalibratedJudge]:
    """The configured judge, bound to the calibration set of ``--llmjudge-calibration``.

    ``score(text, rubric=..., language=...)`` fails the test with "judge <model> is not
    calibrated for <language>: F1 ... < ..." when the judge failed that language's gate.
    """
    from pytest_llmjudge.calibration.calibrated_judge import CalibratedJudge
    from pytest_llmjudge.calibration.gate_computer import GateComputer
    from pytest_llmjudge.calibration.items import get_store
    from pytest_llmjudge.calibration.run_phase import calibration_path
    from pytest_llmjudge.execution.scorer import Scorer

    path = calibration_path(pytestconfig)
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

    board = pytestconfig.stash[scorer_key]
    store = get_store(pytestconfig)
    private: Scorer | None = None
    if board.share is not None:
        # Under xdist, calibration calls are shared between workers only when every worker
        # planned them after collection. Nobody plans a fixture's calls, so this worker makes
        # them itself (through the same on-disk cache) instead of waiting for a peer.
        private = Scorer(board.registry, board.settings)
        store = GateComputer(private)
    yield CalibratedJudge(board, store, path, on_uncalibrated=fail)
    if private is not None:
        private.close()
