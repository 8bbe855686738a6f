"""The pytest plugin: options, suite collection, planning, fixtures, terminal summary.

Inert unless ``--llmjudge`` is given: without it no suite is collected, no state is
created, no network is touched and the terminal output is unchanged. With it:

1. ``pytest_collect_file`` turns YAML files with a top-level ``suite:`` key into
   :class:`~pytest_llmjudge.suite_items.SuiteFile` nodes;
2. ``pytest_collection_finish`` plans the judge calls of every *selected* item (after
   ``-k``/``-m`` deselection) and starts them concurrently;
3. items block only on their own calls; the terminal summary shows a table per suite,
   language and metric, and the judge-call accounting (calls, cache hits, retries, tokens).

State lives in ``config.stash``. Under pytest-xdist each worker has its own scoreboard
sharing the on-disk cache; the summary is built from the typed records items keep
(``records.py``): each call report carries its item's record (``report.llmjudge``), as the
record itself in the process that ran the item and in wire form when the report is
serialized (to the xdist controller), where the results collector parses it back; the
workers' call accounting travels through ``workeroutput``.
"""

from __future__ import annotations

import importlib
import os
import stat
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge import builtin_plugins, hookspecs
from pytest_llmjudge.errors import ConfigError, MissingDependencyError
from pytest_llmjudge.session.collector import ResultsCollector, results_key
from pytest_llmjudge.session.items import planners_key, selected_calls
from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge
from pytest_llmjudge.session.state import (
    WRITES_REFUSED,
    has_top_level_key,
    is_enabled,
    refuse_writes,
    scoreboard_key,
    settings_key,
    write_targets_key,
    writes_refused_key,
)
from pytest_llmjudge.settings import OPTIONS, Settings, resolve_settings

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scoreboard import ScoreBoard
    from pytest_llmjudge.execution.sharing import WorkerShare
    from pytest_llmjudge.fixture_judge import Judge
    from pytest_llmjudge.records import ItemRecord
    from pytest_llmjudge.suite.model import Case, Suite
    from pytest_llmjudge.suite_items import SuiteFile

# Heavy modules (numpy, scipy, the SDKs) are imported only once --llmjudge is given, so an
# installed-but-unused plugin costs pytest start-up almost nothing.

_ENTRY_POINT_GROUP = "pytest_llmjudge"


# Feature plugins: each is a light module with its own pytest hooks (options, collection,
# reporting), registered together with this plugin. Each must stay inert without --llmjudge.
FEATURE_PLUGINS: tuple[str, ...] = (
    "pytest_llmjudge.report.plugin",
    "pytest_llmjudge.calibration.plugin",
    "pytest_llmjudge.regression.plugin",
    "pytest_llmjudge.execution.batch_plugin",
    "pytest_llmjudge.pairwise.plugin",
    "pytest_llmjudge.selection_plugin",
    "pytest_llmjudge.progress_plugin",
    "pytest_llmjudge.sharding_plugin",
    "pytest_llmjudge.canaries.plugin",
    "pytest_llmjudge.label_queue_plugin",
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    if not pluginmanager.is_registered(builtin_plugins):
        pluginmanager.register(builtin_plugins, "llmjudge-builtins")
    for name in FEATURE_PLUGINS:
        if pluginmanager.get_plugin(name) is None:
            pluginmanager.register(importlib.import_module(name), name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Attach an item's record to its call report: the record itself, shared with the item and the
    results collector (pytest's terminal statistics keep every report to the end of the run, so a
    copy per report was a third form of every record); its wire form is made only when the report
    is serialized (``pytest_report_to_serializable``)."""
    report = yield
    result: ItemRecord | None = getattr(item, "llmjudge_result", None)
    if result is not None and call.when == "call":
        report.llmjudge = result  # type: ignore[attr-defined]
    no_judge = getattr(call.excinfo.value, "llmjudge_no_judge", None) if call.excinfo is not None else None
    if no_judge is not None:  # counted in the summary (a plain dict: it travels under xdist)
        report.llmjudge_no_judge = no_judge  # type: ignore[attr-defined]
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: object) -> Generator[None, object, object]:
    """A report leaving the process (to the xdist controller, pytest-reportlog) carries its record
    in wire form (plain JSON types); the results collector parses it back on the other side."""
    data = yield
    if isinstance(data, dict):
        from pytest_llmjudge.records import ItemRecord

        record = data.get("llmjudge")
        if isinstance(record, ItemRecord):  # data is a copy of the report's attributes: the report keeps the record
            data["llmjudge"] = record.to_wire()
    return data


def pytest_addoption(parser: pytest.Parser) -> None:
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


def settings_from_config(config: pytest.Config) -> Settings:
    """Command line, environment and ini resolved into :class:`Settings` (a usage error if bad)."""
    cli = {option.name: config.getoption(f"llmjudge_{option.name}") for option in OPTIONS}
    cli["no_cache"] = config.getoption("llmjudge_no_cache")
    cli["allow_no_judge"] = config.getoption("llmjudge_allow_no_judge")
    ini = {option.name: config.getini(option.ini) for option in OPTIONS}
    try:
        return resolve_settings(cli, ini, os.environ, Path(config.rootpath))
    except ConfigError as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None


def _skip_final_collection() -> None:
    """At interpreter exit, exclude the heap from the collector's last full passes.

    A judged run holds a large, long-lived heap (the SDKs' pydantic models, every item);
    the passes Python makes over it while shutting down cost time at every exit (measured in
    docs/scale.md, "Numbers quoted by the code") and free nothing the operating
    system doesn't reclaim anyway. Registered at exit only, so in-process runs
    (``pytest.main``, pytester) keep a normal collector.
    """
    import gc

    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collect and plan with the cyclic collector paused, then freeze what they built.

    Collection and planning build what lives until the session ends (items, suites, cases,
    planned calls); the collector's full passes over that growing heap, and then over the
    finished one during the run, were most of the collector's cost, for recorded cases and
    for loading a large calibration set alike (``benchmarks/scale.py``'s workloads; the numbers
    are in docs/scale.md, "Profiled, and what changed"). Frozen, the
    heap is still freed by reference counting; cycles in it wait for the unfreeze, the last
    clean-up of the session (``pytest_configure``), so in-process runs collect them then.
    """
    import gc

    if not is_enabled(session.config):
        return (yield)
    _refuse_special_arguments(session.config)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _unfreeze_heap() -> None:
    """Give the heap frozen after collection back to the collector (see ``pytest_collection``)."""
    import gc

    gc.unfreeze()


def pytest_configure(config: pytest.Config) -> None:
    if not is_enabled(config):
        return
    import atexit

    # Once per process however many sessions configure (pytester runs several).
    atexit.unregister(_skip_final_collection)
    atexit.register(_skip_final_collection)
    # The heap frozen after collection (pytest_collection) is handed back to the collector last:
    # registered before pytest's own clean-ups, so it runs after them (LIFO), and their
    # gc.collect() passes (the unraisable-exception check) skip the collected items.
    config.add_cleanup(_unfreeze_heap)
    settings = settings_from_config(config)
    from pytest_llmjudge.execution.scoreboard import ScoreBoard
    from pytest_llmjudge.registry import Registry

    config.pluginmanager.load_setuptools_entrypoints(_ENTRY_POINT_GROUP)
    config.stash[settings_key] = settings
    collector = ResultsCollector(config)
    config.stash[results_key] = collector
    config.pluginmanager.register(collector, "llmjudge-results")
    try:  # opens the cache store: a bad --llmjudge-cache-url or a missing client library is a usage error
        config.stash[scoreboard_key] = board = ScoreBoard(
            Registry.from_hook(config.hook),
            settings,
            share=_worker_share(config, settings),
            identity=_run_identity(config),
        )
        board.notify = lambda line: _say(config, line)
    except (ConfigError, MissingDependencyError) as exc:
        from pytest_llmjudge.redaction import redact

        raise pytest.UsageError(f"pytest-llmjudge: {redact(str(exc))}") from None
    spend = config.stash[scoreboard_key].spend
    if spend is not None and settings.max_cost is not None:
        spend.price = _pricer(config)


def _pricer(config: pytest.Config) -> Callable[[str], tuple[float, float] | None]:
    """``model -> (input, output)`` USD per 1M tokens, from the table the cost report uses."""
    from pytest_llmjudge.errors import PriceError
    from pytest_llmjudge.report.assemble import parse_prices, price_for
    from pytest_llmjudge.report.plugin import price_lines

    try:
        prices = parse_prices(price_lines(config))
    except (ValueError, PriceError) as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None

    def price(model: str) -> tuple[float, float] | None:
        found = price_for(model, prices)
        return None if found is None else found[1]

    return price


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail an item that was handed a score the spend cap kept from being judged, whatever it
    made of it (an aggregate that tolerates unscored cases, a regression, a gate): an item
    whose judge call was not made never passes."""
    board = item.config.stash.get(scoreboard_key, None)
    if board is None or board.spend is None or getattr(item, "checks_not_judged", False):
        return (yield)  # an aggregate row checks its own cases (it scores other rows' cases for them)
    seen = len(board.not_judged)
    result = yield
    if len(board.not_judged) > seen:
        from pytest_llmjudge.errors import ItemFailure

        missing = len(board.not_judged) - seen
        raise ItemFailure(f"NOT JUDGED: {missing} score(s) this item needs were not judged: {board.not_judged[seen]}")
    return result


def _run_identity(config: pytest.Config) -> str:
    """This run's lease identity across its own restarts: the run (CI ids), shard and xdist worker."""
    import os

    from pytest_llmjudge.execution.leasing import run_identity

    workerinput = getattr(config, "workerinput", None) or {}
    return run_identity(
        os.environ,
        shard=config.getoption("llmjudge_shard", None),
        worker=str(workerinput["workerid"]) if "workerid" in workerinput else None,
        where=str(config.rootpath),
    )


def _say(config: pytest.Config, line: str) -> None:
    """A line about the shared cache store (a wait on a lease, a take-over), shown even with ``-q``.

    Written from the runner's thread while items run, so as the progress line is
    (``progress_plugin.py``): with pytest's capture suspended (else it would land in the
    running item's captured output and vanish), under the progress display's lock, as a
    line of its own with pytest's unfinished line put back after it.
    """
    from contextlib import nullcontext

    from pytest_llmjudge.progress_plugin import _display_key

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        import sys

        print(line, file=sys.stderr)
        return
    capman = config.pluginmanager.get_plugin("capturemanager")
    display = config.stash.get(_display_key, None)
    with display.lock if display is not None else nullcontext():
        if display is not None:
            display.restore()
        with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
            tw = reporter._tw
            tw._file.write(("\n" if tw._current_line else "") + line + "\n" + tw._current_line)
            tw._file.flush()


def _worker_share(config: pytest.Config, settings: Settings) -> WorkerShare | None:
    """Under pytest-xdist, how this worker shares judge calls with the others."""
    from pytest_llmjudge.execution.sharing import WorkerShare

    workerinput = getattr(config, "workerinput", None)
    if not workerinput:
        return None
    worker_id = str(workerinput.get("workerid", "gw0"))
    count = int(workerinput.get("workercount", 1))
    if count < 2 or not worker_id.startswith("gw"):
        return None
    # How long a worker waits for a judge reply or an output another worker owns: the owner's
    # longest judge call (all its retries) or output-target call, plus a margin.
    wait = max(settings.timeout * (settings.max_retries + 1), settings.target_timeout) + 60
    started = workerinput.get(_RUN_STARTED)
    return WorkerShare(
        int(worker_id[2:]),
        count,
        str(workerinput.get("testrunuid", "run")),
        wait,
        run_started=float(started) if isinstance(started, (int, float)) else None,
    )


_RUN_STARTED = "llmjudge_run_started"
"""workerinput key: the controller's clock (Unix time) before it started any worker."""


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without xdist
def pytest_configure_node(node: Any) -> None:
    """On the xdist controller: one start time for the run, handed to every worker. A cache entry
    written after it is this run's (another worker's), before it an earlier run's; each worker's
    own start would misjudge entries of a run that ended moments before this one started."""
    config = node.config
    if not is_enabled(config):
        return
    started = config.stash.setdefault(_run_started_key, time.time())
    node.workerinput[_RUN_STARTED] = started


_run_started_key = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After Ctrl-C, stop every judge call and output target at once, before the summary is written.

    Replies already received are in the cache (the runner stores them before use); letting
    the calls still in flight run on would only pay for replies no item will read.
    """
    board = session.config.stash.get(scoreboard_key, None)
    if board is not None and exitstatus == pytest.ExitCode.INTERRUPTED:
        board.abandon()
    if board is not None and board.spend is not None and board.spend.refused and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a capped run judged less than it planned: never green
    refused = session.config.stash.get(writes_refused_key, None)
    if refused and session.config.stash.get(_relayed_key, False):  # xdist controller: say why, exit as a usage error
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for problem in refused:
                reporter.write_line(f"ERROR: pytest-llmjudge: {problem}", red=True)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without xdist
def pytest_testnodedown(node: Any, error: object) -> None:
    """On the xdist controller: a worker that refused a report or baseline target stops the writes here too."""
    refused = getattr(node, "workeroutput", {}).get(WRITES_REFUSED)
    if refused and is_enabled(node.config):
        node.config.stash[writes_refused_key] = list(refused)
        node.config.stash[_relayed_key] = True


_relayed_key = pytest.StashKey[bool]()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say that the spend cap stopped judge calls (in the process that sent them; under xdist each
    refused call's items say it in their failures)."""
    board = terminalreporter.config.stash.get(scoreboard_key, None)
    spend = None if board is None else board.spend
    if spend is not None and spend.refused:
        terminalreporter.write_line(
            f"llmjudge: spend cap: {spend.refused} judge request(s) not sent, their items fail; "
            f"first: {spend.first_refusal}",
            red=True,
            bold=True,
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    board = config.stash.get(scoreboard_key, None)
    if board is not None:
        board.close()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Don't follow a directory symlink that leads back to a directory it sits in (a loop).

    pytest follows directory symlinks; one pointing at an ancestor collected every suite under
    it once per level until the OS refused the path (41 times), and two such links visit 2^40
    paths. Other symlinked directories are followed, and each file is still collected once
    (``session.state.first_path_to``).
    """
    if not is_enabled(config) or not collection_path.is_symlink():
        return None
    try:
        target = collection_path.resolve(strict=True)
        parent = collection_path.parent.resolve(strict=True)
    except (OSError, RuntimeError):
        return None  # a broken or self-referencing link: pytest collects nothing from it anyway
    if target.is_dir() and (target == parent or target in parent.parents):
        return True
    return None


def _refuse_special_arguments(config: pytest.Config) -> None:
    """A usage error for a command-line path that is neither a regular file nor a directory.

    pytest collects neither a FIFO nor a device and then says the path was "not found"; a FIFO
    given as a suite would also block the reader. Say what it is instead.
    """
    from pytest_llmjudge.write_targets import file_kind

    for argument in config.args:
        path = Path(config.invocation_params.dir, argument.split("::", 1)[0])
        try:
            mode = path.stat().st_mode
        except (OSError, ValueError):
            continue  # pytest reports a missing path itself
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise pytest.UsageError(
                f"pytest-llmjudge: {argument}: it is {file_kind(mode)}, not a regular file or a directory; "
                "a suite, calibration set or ranking must be a regular YAML file"
            )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    if not has_top_level_key(file_path, parent.config, "suite"):
        return None
    from pytest_llmjudge.session.items import file_node
    from pytest_llmjudge.suite_items import SuiteFile  # heavy (numpy): only with --llmjudge

    suite_file: SuiteFile = file_node(SuiteFile, parent, file_path)
    return suite_file


_deselected_key = pytest.StashKey[list[pytest.Item]]()


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    """Keep the deselected items (-k, -m, --llmjudge-language, shards), so the plan's line can say
    how many judge calls the selection saved."""
    if items and is_enabled(items[0].config):
        items[0].config.stash.setdefault(_deselected_key, []).extend(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    if not is_enabled(session.config):
        return
    if session.config.option.collectonly:
        return  # --collect-only runs no item: send no (paid) judge call
    board = session.config.stash[scoreboard_key]
    needs = list(selected_calls(session.items))
    dependencies = [call for planner in session.config.stash.get(planners_key, []) for call in planner(session.items)]
    if board.spend is not None:  # counted before any is sent: a refusal's message says of how many
        board.spend.planned = board.unplanned([*needs, *dependencies])
    # The selected items' own calls, then what they depend on (a calibrated judge's gates): the
    # first line says when a selection pays for more than its items.
    own = board.plan(needs)
    needed = board.plan(dependencies)
    planned = own + needed
    # A jury suite's cases: their judges' calls, all at once as soon as the gates have chosen (a thread).
    juried = board.plan_juries(needs)
    _judge_sequentially(session, board, needs)
    # With a remote store the line is printed even when all is cached: a log should say which store served it.
    # With -q too for a remote store: a CI log must say which store a shard shared its replies through.
    if (planned and session.config.get_verbosity() >= 0) or (
        board.settings.cache_url and board.settings.cache_mode != "off"
    ):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            skipped = _saved_calls(board, session.config.stash.get(_deselected_key, []))
            reporter.write_line(
                f"llmjudge: {planned} judge call(s) planned"
                + (f", {own} for the selected items, {needed} for the calibration gates they need" if needed else "")
                + (f" ({skipped} of deselected items not planned)" if skipped else "")
                + (f", {juried} jury-scored case metric(s) planned once their jury has chosen" if juried else "")
                + f", concurrency {board.settings.concurrency}"
                + (f", {board.settings.requests_per_minute:g} rpm" if board.settings.requests_per_minute else "")
                + f", cache {board.cache_description}"
            )
    if planned and not hasattr(session.config, "workerinput"):
        _import_summary_modules()


def _judge_sequentially(session: pytest.Session, board: ScoreBoard, needs: list[tuple[Suite, Case, str]]) -> None:
    """``--llmjudge-sequential``: judge the aggregate rows in rounds now, before the items run
    (``suite_items.judge_sequentially``), and say what it saved."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    verbose = reporter is not None and session.config.get_verbosity() >= 0
    if board.settings.batch:
        if verbose and reporter is not None and board.settings.sequential:
            reporter.write_line(
                "llmjudge: --llmjudge-sequential is off in batch mode (a batch is sent at once, not in rounds): "
                "every case is judged"
            )
        return
    from pytest_llmjudge.suite_items import judge_sequentially

    outcome = judge_sequentially(session.items, session.config, needs)
    if outcome is None:
        return
    rows, settled, rounds, saved = outcome
    if board.share is None or board.share.index == 0:  # the workers' stats are summed: count it once
        board.runner.stats.not_needed += saved
    if verbose and reporter is not None:
        reporter.write_line(
            f"llmjudge: sequential: {settled} of {rows} aggregate row(s) settled in {rounds} round(s); "
            f"{saved} judge call(s) not needed"
        )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # Here, not at collection_finish: an xdist worker sends its collected ids to the controller
    # in its own collection_finish, which runs before the plugin's; a worker that refused after
    # that left the controller sending tests to a closed channel (an INTERNALERROR, 1 run in 8
    # under load). A worker that refuses now runs nothing and says why when it finishes.
    if is_enabled(config):
        _refuse_writes_over_inputs(session, items)


def _refuse_writes_over_inputs(session: pytest.Session, items: list[pytest.Item]) -> None:
    """A usage error, before any judge call, when a report or baseline would replace one of the
    run's inputs: a collected file, or a suite file (selected or not) or one of its side files."""
    from pytest_llmjudge.session.suites import suites_key
    from pytest_llmjudge.suite.model import Suite
    from pytest_llmjudge.write_targets import check_targets

    targets = session.config.stash.get(write_targets_key, [])
    if not targets:
        return
    inputs = {Path(item.path) for item in items}
    for suite in session.config.stash.get(suites_key, {}).values():
        if isinstance(suite, Suite):
            inputs.update((suite.path, *suite.sources))
    problems = check_targets(targets, sorted(inputs))
    if problems:
        if hasattr(session.config, "workeroutput"):
            items[:] = []  # the controller is told nothing to run; the refusal travels in workeroutput
        refuse_writes(session.config, problems, session)


def _saved_calls(board: ScoreBoard, deselected: list[pytest.Item]) -> int:
    """The judge calls of deselected suite items that were not planned (what the selection saved).

    Suite items only: their calls are cheap to list, where a deselected calibration gate would
    build its whole calibration set's scoring suite to say it.
    """
    if not deselected:
        return 0
    from pytest_llmjudge.suite_items import AggregateItem, CaseItem

    return board.unplanned(selected_calls([item for item in deselected if isinstance(item, (CaseItem, AggregateItem))]))


def _import_summary_modules() -> None:
    """Import what the end-of-run summary needs (numpy for its intervals, the report's assembly).

    Called once judge calls are in flight, so the imports run while the process waits on the
    judge instead of after its last reply, which shortens the time from the last reply to
    exit (measured in docs/scale.md). Not in an xdist worker: the
    summary is the controller's.
    """
    import numpy  # noqa: F401

    import pytest_llmjudge.report.assemble  # noqa: F401


@pytest.fixture(scope="session")
def llmjudge_judge(pytestconfig: pytest.Config) -> Judge:
    """The configured LLM judge, for Python tests: ``llmjudge_judge.score(text, rubric=..., language=...)``.

    Uses the command-line/ini judge settings (``--llmjudge-provider``, ``--llmjudge-model``,
    ``--llmjudge-base-url``) over the defaults, with the run's cache and concurrency. Skips
    the test when the judge has no credentials, or fails it in CI (judge_policy.py).
    """
    from pytest_llmjudge.execution.scoreboard import ScoreBoard
    from pytest_llmjudge.fixture_judge import Judge
    from pytest_llmjudge.registry import Registry

    board = pytestconfig.stash.get(scoreboard_key, None)
    if board is None:
        board = ScoreBoard(Registry.from_hook(pytestconfig.hook), settings_from_config(pytestconfig))
        pytestconfig.stash[scoreboard_key] = board
    judge = Judge(board)
    problem = judge.unavailable_reason()
    if problem is not None:
        skip_or_fail_without_judge(board.settings, f"judge {judge.model} {problem}")
    return judge
