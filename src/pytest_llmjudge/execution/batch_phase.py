"""Batch mode (``--llmjudge-batch``): the Run's steps for it (``session/run.py``; no hook here).

Used only when ``--llmjudge-batch`` is given. Then:

* :func:`check` (at configure) refuses a cache mode other than ``use``, and a cache directory
  that can't be written (a file, a read-only or full file system), with a usage error before
  anything runs: batch replies reach the items through the cache;
* :func:`send_batches` (not with ``--collect-only``, which sends nothing) runs first in the
  plan phase, before the Run plans the judge calls:
  :class:`~pytest_llmjudge.execution.batch.BatchPhase` sends the uncached requests of the
  selected items as provider batches, prints progress, and fills the cache, so the
  planning that follows finds them cached. Batches still pending after
  ``--llmjudge-batch-wait`` stop the run (``pytest.exit``, exit code 2) with nothing run,
  so nothing passes; a re-run picks them up. A jury suite's case calls (``judge.jury``)
  need the gates' verdicts to know which judges to ask: once the first batches (with the
  gates' calls) have ended, the chosen judges' calls are sent as a second round of batches.

Light to import (the batch machinery loads only when used).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scorer import Scorer
    from pytest_llmjudge.session.item_base import Planner


def check(board: Scorer) -> None:
    """A usage error when batch mode can't work: its replies reach the items through the cache."""
    settings = board.settings
    if settings.cache_mode != "use":
        raise pytest.UsageError(
            f"pytest-llmjudge: --llmjudge-batch needs --llmjudge-cache=use (got {settings.cache_mode}): "
            "batch replies reach the items through the cache; to re-judge, point --llmjudge-cache-dir "
            "at an empty directory"
        )
    problem = board.cache_location_problem()
    if problem is not None:  # batch mode needs the cache: its records resume a batch, its entries feed the items
        raise pytest.UsageError(
            f"pytest-llmjudge: --llmjudge-batch needs a cache it can write: {settings.cache_dir} can't be used "
            f"({problem}); point --llmjudge-cache-dir at a writable directory"
        )


def send_batches(session: pytest.Session, board: Scorer, planners: Sequence[Planner]) -> None:
    """Send the selected items' uncached requests as provider batches, so the plan finds them cached."""
    config = session.config
    from pytest_llmjudge.errors import BatchPending, LLMJudgeError
    from pytest_llmjudge.execution.batch import BatchPhase
    from pytest_llmjudge.session.item_base import selected_calls, selected_requests

    settings = board.settings
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    quiet = config.get_verbosity() < 0

    def report(line: str) -> None:
        if reporter is not None and not quiet:
            reporter.write_line(line)

    phase = BatchPhase(
        board,
        poll_seconds=settings.batch_poll,
        wait_seconds=settings.batch_wait,
        report=report,
    )
    try:
        summary = phase.run(selected_calls(session.items, planners), selected_requests(session.items))
        jury = [need for need in selected_calls(session.items) if need[0].judge.jury]
        if jury:
            # A jury suite's case calls: the gates answered by the batch above choose the judges
            # (read from the cache), and the chosen judges' calls go out as a second batch.
            summary = phase.run(board.jury_needs(jury))
    except BatchPending as exc:
        pytest.exit(f"pytest-llmjudge: {exc}", returncode=pytest.ExitCode.INTERRUPTED)
    except LLMJudgeError as exc:
        pytest.exit(f"pytest-llmjudge: {exc}", returncode=pytest.ExitCode.INTERNAL_ERROR)
    stats = board.runner.stats  # no judge call is running yet
    stats.batched += summary.answered
    stats.input_tokens += summary.input_tokens
    stats.output_tokens += summary.output_tokens
    if summary.requests or summary.cached:
        report(
            f"llmjudge: batch mode: {summary.requests} uncached request(s), {summary.cached} cached; "
            f"{summary.submitted} submitted, {summary.resumed} batch(es) resumed, "
            f"{summary.answered} answered, {summary.errors} failed, {summary.online} left for the online path"
        )
