"""The Run: one object per ``pytest --llmjudge`` session that owns its state and orders its phases.

Registered by ``plugin.py``'s ``pytest_configure`` only when ``--llmjudge`` is given (so
nothing here asks whether the plugin is on), like pytest-xdist's ``DSession``. It owns the
settings, the scorer (the call planner and runner), the results collector (the one
listener every report is built from) and each feature's state; the feature modules
(``report/run_phase.py``, ``regression/run_phase.py``, ``calibration/run_phase.py``,
``progress/run_phase.py``, ``selection/shard_phase.py``, ``label_queue/run_phase.py``,
``selection/run_phase.py``, ``execution/batch_phase.py``, ``pairwise/run_phase.py``,
``canaries/run_phase.py``) are plain code it calls. Its hooks are the phases, in this order:

1. **configure** (:meth:`Run.__init__`): settings, scorer, then each feature's options
   (label queue, shard, progress, rankings, regression, reports, batch, calibration), and
   the files the run will write claimed (refused now if they can't be written);
2. **collect** (``pytest_collect_file``): a YAML file's top-level key picks its one File
   class (:data:`FILE_CLASSES`); a suite file's collection then gets its drift sentinel,
   canary and regression items after its own (``pytest_make_collect_report``), and each
   item its tags as markers (``pytest_itemcollected``);
3. **select** (``pytest_collection_modifyitems``, last): ``--llmjudge-language``, then the
   shard, then the report and baseline targets checked against the run's inputs;
4. **plan** (``pytest_collection_finish``): batch mode's batches, then every selected item's
   judge calls (and the calibration gates they need), the juries, ``--llmjudge-sequential``,
   the rankings' battles, the suites' report info; then the progress line starts;
5. **judge** (while items run): the runner's threads make the calls; before a suite item
   runs, the calibration guard; after it, the spend cap (``pytest_runtest_call``);
6. **assert** (``pytest_runtest_makereport``, ``pytest_runtest_logreport``): each item's
   record on its report, text cleaned; the results collector takes every report;
7. **aggregate** (``pytest_sessionfinish``, first): judging stopped (Ctrl-C, the spend cap),
   the progress line gone, a worker's accounting sent to the controller, the label queue;
8. **report** (``pytest_sessionfinish`` then ``pytest_terminal_summary``): the release
   verdict into JUnit, the baseline saved, the report files, history and step summary
   written; then the summary section and the lines saying what was written.

Under pytest-xdist the controller and each worker have their own Run; what crosses between
them is listed in ``session/channel.py`` (``pytest_configure_node``, ``pytest_testnodedown``).

The few ordering markers left are each needed against pytest's own plugins and say why
where they stand.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# ``import a.b.c as x``, not ``from a.b import c``: the latter takes ``c`` from the package's
# attribute, which can outlive ``a.b.c`` in ``sys.modules`` (pytester's in-process runs drop the
# modules a run imported but not the attributes they left on a package imported before), and a
# stale feature module keeps StashKeys that the items, imported afresh, no longer use.
import pytest_llmjudge.calibration.run_phase as calibration
import pytest_llmjudge.canaries.run_phase as canaries
import pytest_llmjudge.execution.batch_phase as batch_phase
import pytest_llmjudge.label_queue.run_phase as label_queue_phase
import pytest_llmjudge.pairwise.run_phase as rankings
import pytest_llmjudge.progress.run_phase as progress_phase
import pytest_llmjudge.regression.run_phase as regression
import pytest_llmjudge.report.run_phase as reports
import pytest_llmjudge.selection.run_phase as selection_phase
import pytest_llmjudge.selection.shard_phase as shard_phase
import pytest_llmjudge.session.channel as channel
from pytest_llmjudge.errors import ConfigError, MissingDependencyError
from pytest_llmjudge.session.collector import ResultsCollector
from pytest_llmjudge.session.item_base import Planner, file_node, selected_calls
from pytest_llmjudge.session.state import recorder_key, scorer_key
from pytest_llmjudge.settings import OPTIONS, Settings, resolve_settings

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scorer import Scorer
    from pytest_llmjudge.execution.xdist_sharing import WorkerShare
    from pytest_llmjudge.records import ItemRecord
    from pytest_llmjudge.suite.model import Case, Suite

NAME = "llmjudge-run"
"""The Run's name in the plugin manager (``config.pluginmanager.get_plugin(NAME)``)."""

_ENTRY_POINT_GROUP = "pytest_llmjudge"

FILE_CLASSES: dict[str, tuple[str, str]] = {
    "suite": ("pytest_llmjudge.suite.items", "SuiteFile"),
    "calibration": ("pytest_llmjudge.calibration.items", "CalibrationFile"),
    "ranking": ("pytest_llmjudge.pairwise.items", "RankingFile"),
}
"""A YAML file's top-level key -> its File class (module, name), imported on first use (numpy).
A file meant as a suite without the key (``suite/sniff.py``'s ``SUITE_LIKE``) is a suite, so
its error is reported, never silently skipped. A suite's regression items are collected
with it (:meth:`Run.pytest_make_collect_report`)."""


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


class Run:
    """One ``--llmjudge`` session: its state, and its phases as hooks (see the module docstring)."""

    # ------------------------------------------------------------------ 1. configure

    def __init__(self, config: pytest.Config) -> None:
        import atexit

        self.config = config
        # Once per process however many sessions configure (pytester runs several).
        atexit.unregister(_skip_final_collection)
        atexit.register(_skip_final_collection)
        # The heap frozen after collection (pytest_collection) is handed back to the collector last:
        # registered before pytest's own clean-ups, so it runs after them (LIFO), and their
        # gc.collect() passes (the unraisable-exception check) skip the collected items.
        config.add_cleanup(_unfreeze_heap)
        self.settings = settings_from_config(config)
        config.pluginmanager.load_setuptools_entrypoints(_ENTRY_POINT_GROUP)
        self.board = self._scorer()
        config.stash[scorer_key] = self.board
        try:
            self._configure()
        except BaseException:
            self.board.close()  # a usage error below: the Run is never registered, so nothing else would close it
            raise

    def _configure(self) -> None:
        config = self.config
        if self.board.spend is not None and self.settings.max_cost is not None:
            self.board.spend.price = _pricer(config)
        self.results = ResultsCollector(self.board)
        self.write_targets: list[tuple[str, Path]] = []
        """``(what, path)`` of every file the run will write at its end (reports, a baseline)."""
        self.refused: list[str] = []
        """Why the run's write targets were refused (then nothing is written)."""
        self.relayed = False
        """On the xdist controller: a worker refused the write targets (exit as a usage error)."""
        self.real_paths: dict[tuple[str, str], Path] = {}
        self.tags: set[str] = set()
        self.deselected: list[pytest.Item] = []
        self.run_started: float | None = None
        self.shard_emptied = False
        self.label_line: str | None = None
        """The label queue's line for the summary, once written."""
        self.planners: list[Planner] = []
        # The features, in the order their options are checked (the first bad one is the usage error).
        self.label_queue = label_queue_phase.configure(config)
        self.shard, self.shard_reports = shard_phase.configure(config)
        self.progress = progress_phase.display_for(config, self.settings.progress_interval)
        rankings.configure(config)
        history = reports.open_run_history(config)
        self.regression = regression.configure(config, history)
        if self.regression.save_path is not None:
            self.claim_write_targets([("--llmjudge-save-baseline", self.regression.save_path)])
        self.report, claimed = reports.configure(config, history)
        self.claim_write_targets(claimed)
        config.stash[recorder_key] = lambda item, properties: reports.record_properties(self.report, item, properties)
        if self.settings.batch:
            batch_phase.check(self.board)
        calibration.configure(config, self.board)
        self.planners.append(lambda items: calibration.calibrated_gate_needs(config, items))

    def _scorer(self) -> Scorer:
        from pytest_llmjudge.execution.scorer import Scorer
        from pytest_llmjudge.registry import Registry

        config = self.config
        try:  # opens the cache store: a bad --llmjudge-cache-url or a missing client library is a usage error
            board = Scorer(
                Registry.from_hook(config.hook),
                self.settings,
                share=_worker_share(config, self.settings),
                identity=_run_identity(config),
            )
            board.notify = self._say
        except (ConfigError, MissingDependencyError) as exc:
            from pytest_llmjudge.util.redaction import redact

            raise pytest.UsageError(f"pytest-llmjudge: {redact(str(exc))}") from None
        return board

    def claim_write_targets(self, targets: list[tuple[str, Path]]) -> None:
        """Refuse targets that must not be replaced (``write_targets.py``) with a usage error, now,
        and keep them for the check against the run's inputs after collection."""
        from pytest_llmjudge.write_targets import check_targets

        problems = check_targets(targets)
        if problems:
            self.refuse_writes(problems)
        self.write_targets.extend(targets)

    def refuse_writes(self, problems: list[str], session: pytest.Session | None = None) -> None:
        """Stop the run with a usage error naming ``problems``; no report or baseline is written after it.

        In a pytest-xdist worker the controller writes the reports: the worker hands it the problems
        (``workeroutput``) and asks the run to stop (``session.shouldstop``, which xdist relays); it
        does not raise, and its caller leaves it nothing to run.
        """
        self.refused = problems
        message = "pytest-llmjudge: " + "\n".join(problems)
        workeroutput = channel.worker_output(self.config)
        if workeroutput is not None and session is not None:
            # A worker ends normally, with nothing to run: raising here could close its channel
            # before the controller has read the refusal (the controller relays it, exit 4).
            workeroutput[channel.WRITES_REFUSED] = problems
            session.shouldstop = message
            return
        raise pytest.UsageError(message)

    def _say(self, line: str) -> None:
        """A line about the shared cache store (a wait on a lease, a take-over), shown even with ``-q``.

        Written from the runner's thread while items run, so as the progress line is
        (``progress/run_phase.py``): with pytest's capture suspended (else it would land in the
        running item's captured output and vanish), under the progress display's lock, as a
        line of its own with pytest's unfinished line put back after it.
        """
        from contextlib import nullcontext

        config = self.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            import sys

            print(line, file=sys.stderr)
            return
        capman = config.pluginmanager.get_plugin("capturemanager")
        display = self.progress
        with display.lock if display is not None else nullcontext():
            if display is not None:
                display.restore()
            with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
                tw = reporter._tw
                tw._file.write(("\n" if tw._current_line else "") + line + "\n" + tw._current_line)
                tw._file.flush()

    # ------------------------------------------------------------------ xdist: the controller's side

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without xdist
    def pytest_configure_node(self, node: Any) -> None:
        """On the xdist controller: one start time for the run, handed to every worker (a cache entry
        written after it is this run's, another worker's; each worker's own start would misjudge
        entries of a run that ended moments before this one started), and the progress directory."""
        if self.run_started is None:
            self.run_started = time.time()
        directory = progress_phase.controller_directory(self.progress) if self.progress is not None else None
        channel.send_to_worker(node, self.run_started, directory)

    @pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown without xdist
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """On the xdist controller: what a finished worker sent (``session/channel.py``)."""
        sent = channel.WorkerReport.of(node)
        before = len(self.results.worker_suites)
        self.results.add_worker(sent)
        reports.note_worker_suites(self.config, self.report, self.results.worker_suites[before:])
        if sent.writes_refused:  # it refused a report or baseline target: stop the writes here too
            self.refused = sent.writes_refused
            self.relayed = True

    # ------------------------------------------------------------------ 2. collect

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, object, object]:
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

        _refuse_special_arguments(session.config)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return (yield)
        finally:
            gc.freeze()
            if was_enabled:
                gc.enable()

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Don't follow a directory symlink that leads back to a directory it sits in (a loop).

        pytest follows directory symlinks; one pointing at an ancestor collected every suite under
        it once per level until the OS refused the path (41 times), and two such links visit 2^40
        paths. Other symlinked directories are followed, and each file is still collected once
        (:meth:`first_path_to`).
        """
        if not collection_path.is_symlink():
            return None
        try:
            target = collection_path.resolve(strict=True)
            parent = collection_path.parent.resolve(strict=True)
        except (OSError, RuntimeError):
            return None  # a broken or self-referencing link: pytest collects nothing from it anyway
        if target.is_dir() and (target == parent or target in parent.parents):
            return True
        return None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.File | None:
        """A YAML file with a top-level ``suite:``, ``calibration:`` or ``ranking:`` key: its one File node.

        The key is how each kind of file is told apart from other YAML in a repository, in any
        Unicode encoding and anywhere in the file (``suite/sniff.py``); a file meant as a suite
        without the key counts as a suite.
        """
        if file_path.suffix not in (".yaml", ".yml"):
            return None
        import importlib

        from pytest_llmjudge.suite.sniff import SUITE_LIKE, sniff_kind

        kind = sniff_kind(file_path)
        kind = "suite" if kind == SUITE_LIKE else kind
        if kind not in FILE_CLASSES or not self.first_path_to(file_path, kind):
            return None
        module, name = FILE_CLASSES[kind]
        cls: type[pytest.File] = getattr(importlib.import_module(module), name)
        return file_node(cls, parent, file_path)

    def first_path_to(self, file_path: Path, kind: str) -> bool:
        """Whether ``file_path`` is the first path this run collects as a ``kind`` to its real file.

        A directory reached through a symlink (``latest -> v2``) holds the same files as the real
        one: each file is collected once, under the first path that reaches it (symlinks that loop
        back to an ancestor are not followed at all: :meth:`pytest_ignore_collect`).
        """
        try:
            real = str(file_path.resolve(strict=True))
        except (OSError, RuntimeError):
            return True  # can't resolve: the loader reports what is wrong with it
        return self.real_paths.setdefault((kind, real), file_path) == file_path

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        """A suite file's items, then its drift sentinel, canary and regression items (one collection)."""
        collected = yield
        if collected.passed and getattr(collector, "suite", None) is not None:
            collected.result.extend(calibration.drift_items_of(collector))
            collected.result.extend(canaries.canary_items_of(collector))
        if collected.passed and self._has_regression(collector):
            from pytest_llmjudge.regression.items import regression_items

            collected.result.extend(regression_items(collector))
        return collected

    def _has_regression(self, collector: pytest.Collector) -> bool:
        """A suite file (with a ``suite:`` key) compared with a baseline: the command line's or its own."""
        if not isinstance(collector, pytest.File) or collector.path.suffix not in (".yaml", ".yml"):
            return False  # asked of every collector: the suite items' module (numpy) only for YAML files
        from pytest_llmjudge.suite.items import SuiteFile

        if not isinstance(collector, SuiteFile):
            return False
        from pytest_llmjudge.suite.sniff import has_top_level_key, sniff_kind

        if sniff_kind(collector.path) != "suite":
            return False
        return self.regression.cli_baseline is not None or has_top_level_key(collector.path, "regression")

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        selection_phase.add_tags(self.config, self.tags, item)

    # ------------------------------------------------------------------ 3. select

    # trylast: after every other selection (-k, -m and other plugins'), so the shard is taken of
    # the selected items and the write targets are checked against the items that will run. Not
    # in collection_finish: an xdist worker sends its collected ids to the controller in its own
    # collection_finish, which runs before the Run's; a worker that refused after that left the
    # controller sending tests to a closed channel (an INTERNALERROR, 1 run in 8 under load).
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.settings.languages:
            dropped = selection_phase.select_languages(set(self.settings.languages), items)
            if dropped:
                config.hook.pytest_deselected(items=dropped)
        if self.shard is not None:
            dropped = shard_phase.select(self.shard, config, items)
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            self.shard_emptied = bool(dropped) and not items
        self._refuse_writes_over_inputs(session, items)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        """Keep the deselected items (-k, -m, --llmjudge-language, shards), so the plan's line can say
        how many judge calls the selection saved."""
        self.deselected.extend(items)

    def _refuse_writes_over_inputs(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        """A usage error, before any judge call, when a report or baseline would replace one of the
        run's inputs: a collected file, or a suite file (selected or not) or one of its side files."""
        from pytest_llmjudge.session.suites import suites_key
        from pytest_llmjudge.suite.model import Suite
        from pytest_llmjudge.write_targets import check_targets

        if not self.write_targets:
            return
        inputs = {Path(item.path) for item in items}
        for suite in session.config.stash.get(suites_key, {}).values():
            if isinstance(suite, Suite):
                inputs.update((suite.path, *suite.sources))
        problems = check_targets(self.write_targets, sorted(inputs))
        if problems:
            if channel.is_worker(session.config):
                items[:] = []  # the controller is told nothing to run; the refusal travels in workeroutput
            self.refuse_writes(problems, session)

    # ------------------------------------------------------------------ 4. plan

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        config = session.config
        if not config.option.collectonly:  # --collect-only runs no item: send no (paid) judge call
            if self.settings.batch:
                batch_phase.send_batches(session, self.board, self.planners)
            self._plan(session)
            rankings.plan_rankings(config, session.items)
        reports.note_suites(config, self.report, self.board, session.items)
        if self.progress is not None:
            progress_phase.start(self.progress, session.items)

    def _plan(self, session: pytest.Session) -> None:
        """Every selected item's judge calls, planned and started at once (items block only on their own)."""
        board = self.board
        needs = list(selected_calls(session.items))
        dependencies = [call for planner in self.planners for call in planner(session.items)]
        if board.spend is not None:  # counted before any is sent: a refusal's message says of how many
            board.spend.planned = board.unplanned([*needs, *dependencies])
        # The selected items' own calls, then what they depend on (a calibrated judge's gates): the
        # first line says when a selection pays for more than its items.
        own = board.plan(needs)
        needed = board.plan(dependencies)
        planned = own + needed
        # A jury suite's cases: their judges' calls, all at once as soon as the gates have chosen (a thread).
        juried = board.plan_juries(needs)
        self._judge_sequentially(session, needs)
        # With a remote store the line is printed even when all is cached: a log should say which store served it.
        # With -q too for a remote store: a CI log must say which store a shard shared its replies through.
        if (planned and session.config.get_verbosity() >= 0) or (
            board.settings.cache_url and board.settings.cache_mode != "off"
        ):
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                skipped = _saved_calls(board, self.deselected)
                reporter.write_line(
                    f"llmjudge: {planned} judge call(s) planned"
                    + (
                        f", {own} for the selected items, {needed} for the calibration gates they need"
                        if needed
                        else ""
                    )
                    + (f" ({skipped} of deselected items not planned)" if skipped else "")
                    + (f", {juried} jury-scored case metric(s) planned once their jury has chosen" if juried else "")
                    + f", concurrency {board.settings.concurrency}"
                    + (f", {board.settings.requests_per_minute:g} rpm" if board.settings.requests_per_minute else "")
                    + f", cache {board.cache_description}"
                )
        if planned and not channel.is_worker(session.config):
            _import_summary_modules()

    def _judge_sequentially(self, session: pytest.Session, needs: list[tuple[Suite, Case, str]]) -> None:
        """``--llmjudge-sequential``: judge the aggregate rows in rounds now, before the items run
        (``suite.items.judge_sequentially``), and say what it saved."""
        board = self.board
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        verbose = reporter is not None and session.config.get_verbosity() >= 0
        if board.settings.batch:
            if verbose and reporter is not None and board.settings.sequential:
                reporter.write_line(
                    "llmjudge: --llmjudge-sequential is off in batch mode (a batch is sent at once, not in rounds): "
                    "every case is judged"
                )
            return
        from pytest_llmjudge.suite.items import judge_sequentially

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

    # ------------------------------------------------------------------ 5. judge

    # tryfirst: before pytest's own runner calls item.runtest(), inside pytest's wrappers (skipping's
    # xfail(run=False) still applies first), as the calibration plugin's guard always ran.
    @pytest.hookimpl(specname="pytest_runtest_call", tryfirst=True)
    def pytest_runtest_call_guard(self, item: pytest.Item) -> None:
        calibration.guard(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        """Fail an item that was handed a score the spend cap kept from being judged, whatever it
        made of it (an aggregate that tolerates unscored cases, a regression, a gate): an item
        whose judge call was not made never passes."""
        board = self.board
        if board.spend is None or getattr(item, "checks_not_judged", False):
            return (yield)  # an aggregate row checks its own cases (it scores other rows' cases for them)
        seen = len(board.not_judged)
        result = yield
        if len(board.not_judged) > seen:
            from pytest_llmjudge.errors import ItemFailure

            missing = len(board.not_judged) - seen
            raise ItemFailure(
                f"NOT JUDGED: {missing} score(s) this item needs were not judged: {board.not_judged[seen]}"
            )
        return result

    # ------------------------------------------------------------------ 6. assert

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Attach an item's record to its call report: the record itself, shared with the item and the
        results collector (pytest's terminal statistics keep every report to the end of the run, so a
        copy per report was a third form of every record); its wire form is made only when the report
        is serialized (``pytest_report_to_serializable``). The plugin's items' text is cleaned and
        their recorded JUnit values attached (they travel under xdist)."""
        made = yield
        result: ItemRecord | None = getattr(item, "llmjudge_result", None)
        if result is not None and call.when == "call":
            made.llmjudge = result  # type: ignore[attr-defined]
        no_judge = getattr(call.excinfo.value, "llmjudge_no_judge", None) if call.excinfo is not None else None
        if no_judge is not None:  # counted in the summary (a plain dict: it travels under xdist)
            made.llmjudge_no_judge = no_judge  # type: ignore[attr-defined]
        reports.clean_report(self.report, item, call, made)
        return made

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, config: pytest.Config, report: object) -> Generator[None, object, object]:
        """A report leaving the process (to the xdist controller, pytest-reportlog) carries its record
        in wire form (plain JSON types); the results collector parses it back on the other side."""
        data = yield
        if isinstance(data, dict):
            from pytest_llmjudge.records import ItemRecord

            record = data.get("llmjudge")
            if isinstance(record, ItemRecord):  # data is a copy of the report's attributes: the report keeps the record
                data["llmjudge"] = record.to_wire()
        return data

    # trylast: after pytest's own JUnit writer handled the same report, so the item's <system-out>
    # follows what pytest wrote into its testcase, as it always did.
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The one results listener: every report to the collector, and an item's JUnit values."""
        self.results.add(report)
        reports.junit_system_out(self.config, self.results, report)

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
        return regression.report_teststatus(report)

    # The progress line is taken away before pytest writes a result letter, a node id or a
    # percentage: wrappers (tryfirst, outermost) around pytest's own writes, only while it shows.
    @pytest.hookimpl(specname="pytest_runtest_logstart", wrapper=True, tryfirst=True)
    def pytest_runtest_logstart_wrapper(self) -> Iterator[None]:
        return (yield from self._around_pytest_write())

    @pytest.hookimpl(specname="pytest_runtest_logreport", wrapper=True, tryfirst=True)
    def pytest_runtest_logreport_wrapper(self) -> Iterator[None]:
        return (yield from self._around_pytest_write())

    @pytest.hookimpl(specname="pytest_runtest_logfinish", wrapper=True, tryfirst=True)
    def pytest_runtest_logfinish_wrapper(self) -> Iterator[None]:
        return (yield from self._around_pytest_write())

    def _around_pytest_write(self) -> Iterator[None]:
        if self.progress is None:
            return (yield)
        return (yield from self.progress.around_pytest_write())

    # ------------------------------------------------------------------ 7. aggregate, 8. report

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The merge run of shards: their accounting added to this run's (summed like xdist workers')."""
        if self.shard_reports:
            self.results.worker_stats.extend(stats for _, stats in self.shard_reports)
            shard_phase.announce_reports(session.config, self.shard_reports)

    # tryfirst: pytest's JUnit writer writes its file in its own pytest_sessionfinish, and the
    # release verdict must be in it; and after Ctrl-C the judge calls stop before anything else.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._stop_judging(session, exitstatus)
        if self.progress is not None:
            progress_phase.finish(self.progress)
        workeroutput = channel.worker_output(self.config)
        if workeroutput is None:  # the process that owns the terminal: the verdict, the baseline
            self._verdict_and_baseline(session, exitstatus)
        if self.label_queue is not None:
            self.label_line = label_queue_phase.write_queue(self.config, self.label_queue)
        if self.shard_emptied and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            # A shard that the hash gave nothing (more shards than cases) did its share: not pytest's
            # "no tests collected" failure (exit 5), which would fail a CI matrix job for nothing.
            session.exitstatus = pytest.ExitCode.OK
        if workeroutput is not None:  # an xdist worker: the controller aggregates and reports
            self.results.send_to_controller(workeroutput)
            workeroutput[channel.REPORT_SUITES] = [info.to_wire() for info in self.report.suites.values()]
        elif not self.refused:
            reports.write_reports(session, exitstatus, self.report, self.results, self.board)

    def _stop_judging(self, session: pytest.Session, exitstatus: int) -> None:
        """After Ctrl-C, stop every judge call and output target at once, before the summary is written.

        Replies already received are in the cache (the runner stores them before use); letting
        the calls still in flight run on would only pay for replies no item will read.
        """
        board = self.board
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            board.abandon()
        if board.spend is not None and board.spend.refused and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a capped run judged less than it planned: never green
        if self.refused and self.relayed:  # xdist controller: say why, exit as a usage error
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                for problem in self.refused:
                    reporter.write_line(f"ERROR: pytest-llmjudge: {problem}", red=True)

    def _verdict_and_baseline(self, session: pytest.Session, exitstatus: int) -> None:
        regression.junit_verdict(self.config, self.results.records)
        if not self.refused:
            regression.save(session, exitstatus, self.regression, self.results.records)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        config = self.config
        if channel.is_worker(config):
            return
        reports.write_summary(config, terminalreporter, self.report, self.results, self.board)
        spend = self.board.spend
        if spend is not None and spend.refused:
            # Said in the process that sent the calls; under xdist each refused call's items say it in their failures.
            terminalreporter.write_line(
                f"llmjudge: spend cap: {spend.refused} judge request(s) not sent, their items fail; "
                f"first: {spend.first_refusal}",
                red=True,
                bold=True,
            )
        if self.label_line is not None:
            terminalreporter.write_line(self.label_line)
        regression.write_summary(terminalreporter, self.regression, self.results.records)
        reports.write_written(config, terminalreporter, self.report)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.board.close()


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


def _unfreeze_heap() -> None:
    """Give the heap frozen after collection back to the collector (see ``Run.pytest_collection``)."""
    import gc

    gc.unfreeze()


def _pricer(config: pytest.Config) -> Callable[[str], tuple[float, float] | None]:
    """``model -> (input, output)`` USD per 1M tokens, from the table the cost report uses."""
    from pytest_llmjudge.errors import PriceError
    from pytest_llmjudge.report.assemble import parse_prices, price_for

    try:
        prices = parse_prices(reports.price_lines(config))
    except (ValueError, PriceError) as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None

    def price(model: str) -> tuple[float, float] | None:
        found = price_for(model, prices)
        return None if found is None else found[1]

    return price


def _run_identity(config: pytest.Config) -> str:
    """This run's lease identity across its own restarts: the run (CI ids), shard and xdist worker."""
    from pytest_llmjudge.execution.leasing import run_identity

    workerinput = channel.worker_input(config) or {}
    return run_identity(
        os.environ,
        shard=config.getoption("llmjudge_shard", None),
        worker=str(workerinput["workerid"]) if "workerid" in workerinput else None,
        where=str(config.rootpath),
    )


def _worker_share(config: pytest.Config, settings: Settings) -> WorkerShare | None:
    """Under pytest-xdist, how this worker shares judge calls with the others."""
    from pytest_llmjudge.execution.xdist_sharing import WorkerShare

    workerinput = channel.worker_input(config)
    if not workerinput:
        return None
    worker_id = str(workerinput.get("workerid", "gw0"))
    count = int(workerinput.get("workercount", 1))
    if count < 2 or not worker_id.startswith("gw"):
        return None
    # How long a worker waits for a judge reply or an output another worker owns: the owner's
    # longest judge call (all its retries) or output-target call, plus a margin.
    wait = max(settings.timeout * (settings.max_retries + 1), settings.target_timeout) + 60
    started = workerinput.get(channel.RUN_STARTED)
    return WorkerShare(
        int(worker_id[2:]),
        count,
        str(workerinput.get("testrunuid", "run")),
        wait,
        run_started=float(started) if isinstance(started, (int, float)) else None,
    )


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


def _saved_calls(board: Scorer, deselected: list[pytest.Item]) -> int:
    """The judge calls of deselected suite items that were not planned (what the selection saved).

    Suite items only: their calls are cheap to list, where a deselected calibration gate would
    build its whole calibration set's scoring suite to say it.
    """
    if not deselected:
        return 0
    from pytest_llmjudge.suite.items import AggregateItem, CaseItem

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
