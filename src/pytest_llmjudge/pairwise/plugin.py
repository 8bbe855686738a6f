"""pytest hooks of ranking files: collection and the live pairwise judging plan.

Registered as a feature plugin (``plugin.FEATURE_PLUGINS``); inert without ``--llmjudge``.
A YAML file with a top-level ``ranking:`` key is collected as a
:class:`~pytest_llmjudge.pairwise.items.RankingFile` (``pairwise/items.py`` has its items).

Live judging: after collection, every battle of the selected items' languages is submitted
to the judge runner at once (cached, retried, concurrent; under pytest-xdist each call is
made by one worker, see ``execution.sharing``); items then block on their language's
battles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_llmjudge.pairwise.items import PairwiseState, RankingFile, RankingItem, RankingRun, state_key
from pytest_llmjudge.session.state import has_top_level_key, is_enabled


def pytest_configure(config: pytest.Config) -> None:
    if is_enabled(config):
        config.stash[state_key] = PairwiseState()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> RankingFile | None:
    if not has_top_level_key(file_path, parent.config, "ranking"):
        return None
    from pytest_llmjudge.session.items import file_node

    collector: RankingFile = file_node(RankingFile, parent, file_path)
    return collector


def pytest_collection_finish(session: pytest.Session) -> None:
    if not is_enabled(session.config) or state_key not in session.config.stash:
        return
    wanted: dict[Path, tuple[RankingRun, set[str]]] = {}
    for item in session.items:
        if isinstance(item, RankingItem) and item.ranking.live:
            wanted.setdefault(item.ranking.path, (item.run, set()))[1].add(item.language)
    planned = sum(run.plan(languages) for run, languages in wanted.values())
    if planned and session.config.get_verbosity() >= 0:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"llmjudge: {planned} pairwise judge call(s) planned")
