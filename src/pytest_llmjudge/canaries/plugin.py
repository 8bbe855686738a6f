"""Adds the injection canary items (``judge.canaries: true``) after a suite file's own items."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_llmjudge.session.state import is_enabled


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    suite = getattr(collector, "suite", None)
    judge = getattr(suite, "judge", None)
    if getattr(judge, "canaries", False) is True and report.passed and is_enabled(collector.config):
        from pytest_llmjudge.canaries.items import canary_items
        from pytest_llmjudge.session.state import scoreboard_key

        assert suite is not None
        problem = collector.config.stash[scoreboard_key].judge_problem(suite.judge)
        report.result.extend(canary_items(collector, suite, problem))
    return report
