"""Ranking files' part in a run: the live pairwise judging plan (called by the Run, ``session/run.py``).

A YAML file with a top-level ``ranking:`` key is collected by the Run as a
:class:`~pytest_llmjudge.pairwise.items.RankingFile` (``pairwise/items.py`` has its items).

Live judging: after collection, every battle of the selected items' languages is submitted
to the judge runner at once (cached, retried, concurrent; under pytest-xdist each call is
made by one worker, see ``execution.xdist_sharing``); items then block on their language's
battles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmjudge.pairwise.items import PairwiseState, RankingItem, RankingRun, state_key


def configure(config: pytest.Config) -> None:
    """The rankings' shared state, stashed for the ranking items."""
    config.stash[state_key] = PairwiseState()


def plan_rankings(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Submit the battles of the selected ranking items' languages; say how many."""
    wanted: dict[Path, tuple[RankingRun, set[str]]] = {}
    for item in items:
        if isinstance(item, RankingItem) and item.ranking.live:
            wanted.setdefault(item.ranking.path, (item.run, set()))[1].add(item.language)
    planned = sum(run.plan(languages) for run, languages in wanted.values())
    if planned and config.get_verbosity() >= 0:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"llmjudge: {planned} pairwise judge call(s) planned")
