"""What items read of the run from ``config.stash``: the scorer (and its settings), the JUnit recorder.

The Run (``session/run.py``) owns the run's state as attributes; these keys are the few
things the items (and the ``llmjudge_judge`` fixture, which works without ``--llmjudge``
too) read of it without importing the Run, which sits above them. They are set by the
Run under ``--llmjudge`` (the fixture sets the scorer itself otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scorer import Scorer

scorer_key: pytest.StashKey[Scorer] = pytest.StashKey()
recorder_key = pytest.StashKey[Callable[[pytest.Item, Iterable[tuple[str, Any]]], None]]()
"""How items record their results for JUnit; installed by the Run (``report.run_phase.record_properties``)."""


def is_enabled(config: pytest.Config) -> bool:
    """True when ``--llmjudge`` was given (then, and only then, the Run is registered)."""
    return bool(config.getoption("llmjudge", default=False))
