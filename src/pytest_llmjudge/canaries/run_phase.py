"""The injection canary items (``judge.canaries: true``), added by the Run after a suite file's own items."""

from __future__ import annotations

import pytest

from pytest_llmjudge.session.state import scorer_key


def canary_items_of(collector: pytest.Collector) -> list[pytest.Item]:
    """A suite file whose judge sets ``judge.canaries: true``: its canary items."""
    suite = getattr(collector, "suite", None)
    judge = getattr(suite, "judge", None)
    if suite is None or getattr(judge, "canaries", False) is not True:
        return []
    from pytest_llmjudge.canaries.items import canary_items

    problem = collector.config.stash[scorer_key].judge_problem(suite.judge)
    return list(canary_items(collector, suite, problem))
