"""Live judge-call progress on the terminal, through capture and pytest-xdist (the text: ``progress/counters.py``).

A plain class the Run drives (``session/run.py``): started once the judge calls are
planned, told before pytest writes, finished first thing at session end.

From the moment the judge calls are planned until the session ends, a daemon thread
renders the run's :class:`~pytest_llmjudge.progress.counters.Counters`:

* on a terminal (``isatty()``): every 0.5 s the current line is replaced in place
  (``\\r`` + clear-to-end) by the progress line. Before pytest writes a result letter, a
  verbose node id or a percentage, the line pytest was writing is put back, under a lock
  the thread also holds, so the progress never mixes with pytest's own output;
* elsewhere (CI logs): one progress line every ``llmjudge_progress_interval`` seconds
  (default 10), written as a line of its own;
* with ``-q`` (or without the terminal reporter): nothing.

Writes happen with pytest's capture suspended
(``capturemanager.global_and_fixture_disabled()``), so a progress line never lands in an
item's "Captured stdout" (the old in-item progress line did).

Under pytest-xdist each worker writes its counters (and its judge models, for the price)
to a JSON file in a directory the controller creates and hands to the workers through
``workerinput`` (``session/channel.py``); the controller's thread sums the files. The
workers print nothing.

The cost uses the same price table as the final accounting line (``--llmjudge-price`` over
``llmjudge_prices`` over the shipped prices) and only when the run has one judge model with a
known price.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.progress.counters import Counters, Progress
from pytest_llmjudge.session import channel
from pytest_llmjudge.session.state import scorer_key

TTY_INTERVAL = 0.5
"""Seconds between redraws of the in-place line on a terminal."""


class ProgressDisplay:
    """The progress thread of one process, and the lock it shares with pytest's writes."""

    def __init__(self, config: pytest.Config, directory: Path | None, interval: float) -> None:
        self.config = config
        self.log_interval = interval
        """Seconds between progress lines off a terminal (``llmjudge_progress_interval``)."""
        self.directory = directory
        """Under xdist: where the workers' counter files are (None without xdist)."""
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.progress: Progress | None = None
        self.models: set[str] = set()
        self.shown = False
        """On a terminal: whether the progress line currently replaces pytest's line."""
        self.worker_id: str | None = None

    # ---------------------------------------------------------------- counters

    def own_counters(self) -> Counters:
        board = self.config.stash.get(scorer_key, None)
        if board is None or not board.runner_started:
            return Counters()
        stats = board.runner.stats
        return Counters(
            planned=stats.submitted,
            done=stats.finished,
            cache_hits=stats.cache_hits,
            failed=stats.failed_calls,
            provider_calls=stats.provider_calls,
            shared_hits=stats.shared_hits,
            input_tokens=stats.input_tokens,
            output_tokens=stats.output_tokens,
        )

    def workers_counters(self) -> Counters:
        total = Counters()
        if self.directory is None:
            return total
        for path in sorted(self.directory.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # being replaced right now: counted on the next tick
            total += Counters.from_dict(data.get("counters", {}))
            self.models.update(str(model) for model in data.get("models", []))
        return total

    def write_own_file(self) -> None:
        assert self.directory is not None and self.worker_id is not None
        from pytest_llmjudge.util.atomic import write_atomic

        data = {"counters": self.own_counters().to_dict(), "models": sorted(self.models)}
        # Atomic: the controller never reads half a file. Rewritten every tick, so no fsync.
        write_atomic(self.directory / f"{self.worker_id}.json", json.dumps(data), fsync=False, private=False)

    def price(self) -> tuple[float, float] | None:
        from pytest_llmjudge.errors import PriceError
        from pytest_llmjudge.report.assemble import parse_prices, price_for

        if len(self.models) != 1:
            return None
        try:
            # As the reports read them (report/run_phase.py price_lines): the ini, then --llmjudge-price.
            lines = [*self.config.getini("llmjudge_prices"), *self.config.getoption("llmjudge_price", [])]
            prices = parse_prices(str(line) for line in lines)
        except PriceError:
            return None  # the Run turns a bad table into a usage error
        found = price_for(next(iter(self.models)), prices)
        return None if found is None else found[1]

    # ---------------------------------------------------------------- drawing

    def _capture_disabled(self) -> AbstractContextManager[None]:
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        return capman.global_and_fixture_disabled() if capman is not None else nullcontext()

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _isatty(self) -> bool:
        reporter = self._reporter()
        file = getattr(getattr(reporter, "_tw", None), "_file", None)
        return bool(file is not None and hasattr(file, "isatty") and file.isatty())

    def draw(self, text: str) -> None:
        """Show ``text``: in place on a terminal, as a line of its own elsewhere (lock held)."""
        reporter = self._reporter()
        if reporter is None:
            return
        tw = reporter._tw
        with self._capture_disabled():
            if self._isatty():
                tw._file.write("\r\x1b[K" + text[: max(20, tw.fullwidth - 1)])
                self.shown = True
            else:
                # A line of its own, then pytest's unfinished line again: its letters go on after it,
                # and the writer's idea of the current line (for the [ 50%] column) stays true.
                tw._file.write(("\n" if tw._current_line else "") + text + "\n" + tw._current_line)
            tw._file.flush()

    def restore(self) -> None:
        """Put back the line pytest was writing, where the progress line replaced it (lock held)."""
        if not self.shown:
            return
        reporter = self._reporter()
        with self._capture_disabled():
            tw = reporter._tw
            tw._file.write("\r\x1b[K" + tw._current_line)
            tw._file.flush()
        self.shown = False

    # ------------------------------------------------- pytest's writes (the Run's wrappers call this)

    def around_pytest_write(self) -> Iterator[None]:
        """pytest writes a result letter, a node id or a percentage: take the progress line away first."""
        if self.thread is None:
            return (yield)
        with self.lock:
            self.restore()
            return (yield)

    # ---------------------------------------------------------------- the thread

    def tick(self) -> None:
        if self.worker_id is not None:
            self.write_own_file()
            return
        counters = self.own_counters() if self.directory is None else self.workers_counters()
        if self.progress is None:
            return
        self.progress.price = self.price()
        text = self.progress.text(counters)
        if text is not None:
            with self.lock:
                self.draw(text)

    def run(self, interval: float) -> None:
        while not self.stop.wait(interval):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - progress must never break the run it reports on
                pass

    def start(self) -> None:
        interval = TTY_INTERVAL if self.worker_id is not None or self._isatty() else self.interval()
        self.progress = Progress(time.monotonic, None)
        self.thread = threading.Thread(target=self.run, args=(interval,), name="llmjudge-progress", daemon=True)
        self.thread.start()

    def interval(self) -> float:
        return self.log_interval

    def finish(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        if self.worker_id is not None:
            self.write_own_file()  # the last counts
        with self.lock:
            self.restore()


def wanted(config: pytest.Config) -> bool:
    """Whether this process shows (or, in an xdist worker, reports) progress: not with -q or --collect-only."""
    return config.get_verbosity() >= 0 and not config.option.collectonly


def display_for(config: pytest.Config, interval: float) -> ProgressDisplay | None:
    """This process's progress display (None when not wanted, or in a worker the controller gave no directory)."""
    if not wanted(config):
        return None
    workerinput = channel.worker_input(config)
    directory: Path | None = None
    if workerinput is not None:
        if workerinput.get(channel.PROGRESS_DIR) is None:
            return None
        directory = Path(workerinput[channel.PROGRESS_DIR])
    display = ProgressDisplay(config, directory, interval)
    if workerinput is not None:
        display.worker_id = str(workerinput.get("workerid", "gw0"))
    return display


def controller_directory(display: ProgressDisplay) -> Path:
    """On the xdist controller: the directory for the workers' counter files (made, and the thread
    started, when the first worker is configured: the controller collects nothing itself)."""
    if display.directory is None:
        display.directory = Path(tempfile.mkdtemp(prefix="llmjudge-progress-"))
        display.start()
    return display.directory


def start(display: ProgressDisplay, items: list[pytest.Item]) -> None:
    """Once the judge calls are planned: note the live judges' models (for the price), start the thread."""
    if display.thread is not None:
        return
    board = display.config.stash.get(scorer_key, None)
    if board is not None:
        for item in items:
            suite = getattr(item, "suite", None)
            if suite is not None and getattr(suite, "needs_live_judge", False):
                judge = board.judge_settings(suite.judge)
                display.models.add(f"{judge.provider}:{judge.model}")
    display.start()


def finish(display: ProgressDisplay) -> None:
    """At session end, before any summary: the thread stopped, the last counts written, the files removed."""
    display.finish()
    if display.worker_id is None and display.directory is not None:
        shutil.rmtree(display.directory, ignore_errors=True)
