"""The run's state in ``config.stash``: its keys, whether the plugin is on, which YAML files are ours.

Every pytest-facing module reads the run's settings and scoreboard through these keys; they
are set by the core plugin's ``pytest_configure`` only under ``--llmjudge`` (without it,
nothing is stashed and every hook returns at once, which ``is_enabled`` tells them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.settings import Settings

if TYPE_CHECKING:
    from pytest_llmjudge.execution.scoreboard import ScoreBoard

scoreboard_key: pytest.StashKey[ScoreBoard] = pytest.StashKey()
settings_key = pytest.StashKey[Settings]()
recorder_key = pytest.StashKey[Callable[[pytest.Item, Iterable[tuple[str, Any]]], None]]()
"""How items record their results for JUnit; installed by the report plugin (``report.plugin.record_properties``)."""


def is_enabled(config: pytest.Config) -> bool:
    """True when ``--llmjudge`` was given; every hook checks it before doing anything."""
    return bool(config.getoption("llmjudge", default=False))


def has_top_level_key(file_path: Path, config: pytest.Config, key: str) -> bool:
    """Whether ``file_path`` is a YAML file (under ``--llmjudge``) with a top-level ``key:``.

    That key is how each kind of file (``suite:``, ``calibration:``, ``ranking:``) is told
    apart from other YAML in a repository, in any Unicode encoding and anywhere in the file
    (``suite/sniff.py``); a file meant as a suite without the key counts as a suite.
    """
    if not is_enabled(config) or file_path.suffix not in (".yaml", ".yml"):
        return False
    from pytest_llmjudge.suite.sniff import is_kind

    return is_kind(file_path, key)
