"""The calibration feature's part in a run: options, score adjusters, gate planning, the suite guard.

Plain functions the Run calls (``session/run.py``; no hook here):

* YAML files with a top-level ``calibration:`` key are collected by the Run as
  :class:`~pytest_llmjudge.calibration.items.CalibrationFile` nodes; a suite file whose
  judge has ``judge.drift`` gets its drift sentinel items after its own (:func:`drift_items_of`);
* :func:`configure` hooks the score correction, the drift sentinel and the jury into the
  scorer;
* :func:`calibrated_gate_needs`: the live judge calls of the gates that the selected items
  of suites with ``judge.calibration`` need join the one plan after collection (gate and
  sanity items plan theirs as every item does, ``planned_calls``), so batch mode, xdist
  sharing and the cache see them;
* :func:`guard`: before a suite item runs, the guard that stops judge-scored suite items in
  languages where their judge failed the gate (:func:`guard_suite_item`);
* the ``llmjudge_calibrated_judge`` fixture (in ``pytest_llmjudge/plugin.py``), bound to
  :func:`calibration_path`: ``--llmjudge-calibration`` or the ini key ``llmjudge_calibration``
  (a relative path is taken from the invocation directory on the command line, from the
  rootdir in the ini file).

The score correction is wired in through ``Scorer.score_adjusters``: it changes a live
judge score only for suites that set ``judge.correction: true``. The end-of-run gate table
(per language, the best-score share by annotator agreement, the sanity checks) is printed
once, inside the ``llmjudge summary`` section, from the items' records
(:func:`~pytest_llmjudge.calibration.report.calibration_lines`, called by ``report/terminal.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scorer import JuryChoice, Score, Scorer
    from pytest_llmjudge.suite.model import Case, Suite


def add_options(parser: pytest.Parser) -> None:
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


def configure(config: pytest.Config, board: Scorer) -> None:
    """The score correction, the drift sentinel's identity check and the jury, wired into the scorer."""

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


def drift_items_of(collector: pytest.Collector) -> list[pytest.Item]:
    """A suite file whose judge has ``judge.drift``: its drift sentinel items (after its own)."""
    suite = getattr(collector, "suite", None)
    judge = getattr(suite, "judge", None)
    if suite is None or getattr(judge, "drift", None) is None:
        return []
    from pytest_llmjudge.calibration.drift.items import drift_items

    return list(drift_items(collector, suite))


def _calibrated_suite(item: pytest.Item) -> Suite | None:
    """The suite of a suite item whose judge names a calibration set, else None."""
    suite = getattr(item, "suite", None)
    judge = getattr(suite, "judge", None)
    return suite if getattr(judge, "calibration", None) is not None else None


def calibrated_gate_needs(config: pytest.Config, items: Sequence[pytest.Item]) -> Iterator[tuple[Suite, Case, str]]:
    """The live judge calls of the gates that selected suite items' calibrated judges must pass
    (no calibration item asks for them): part of the one plan, so batch mode sends them too."""
    from pytest_llmjudge.suite.items import AggregateItem, CaseItem

    suites: dict[str, tuple[Suite, set[tuple[str, str]]]] = {}
    for item in items:
        if isinstance(item, (CaseItem, AggregateItem)) and item.judge_problem is None:
            if item.suite.judge.calibration is not None and item.suite.needs_live_judge:
                from pytest_llmjudge.calibration.gate_computer import (
                    judge_scored_languages,  # numpy: only when calibrated
                )

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


def guard(item: pytest.Item) -> None:
    """Before a suite item of a calibrated judge runs: stop it where its judge failed the gate."""
    if _calibrated_suite(item) is None:
        return
    from pytest_llmjudge.calibration.items import guard_suite_item

    guard_suite_item(item)


def calibration_path(config: pytest.Config) -> Path | None:
    cli = config.getoption("llmjudge_calibration", default=None)
    if cli:
        path = Path(cli).expanduser()
        return path if path.is_absolute() else Path(config.invocation_params.dir) / path
    ini = config.getini("llmjudge_calibration")
    if ini:
        path = Path(str(ini)).expanduser()
        return path if path.is_absolute() else Path(config.rootpath) / path
    return None
