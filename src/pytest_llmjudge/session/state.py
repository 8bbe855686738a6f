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
write_targets_key = pytest.StashKey[list[tuple[str, Path]]]()
"""``(what, path)`` of every file the run will write at its end (reports, a baseline): checked
against the run's inputs once collection is done (``plugin.pytest_collection_finish``)."""
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

    return is_kind(file_path, key) and first_path_to(config, file_path, key)


_real_paths_key = pytest.StashKey[dict[tuple[str, str], Path]]()


def first_path_to(config: pytest.Config, file_path: Path, kind: str) -> bool:
    """Whether ``file_path`` is the first path this run collects as a ``kind`` to its real file.

    A directory reached through a symlink (``latest -> v2``) holds the same files as the real
    one: each file is collected once, under the first path that reaches it (symlinks that loop
    back to an ancestor are not followed at all: ``plugin.pytest_ignore_collect``).
    """
    try:
        real = str(file_path.resolve(strict=True))
    except (OSError, RuntimeError):
        return True  # can't resolve: the loader reports what is wrong with it
    first = config.stash.setdefault(_real_paths_key, {}).setdefault((kind, real), file_path)
    return first == file_path


writes_refused_key = pytest.StashKey[list[str]]()
WRITES_REFUSED = "llmjudge_writes_refused"
"""``workeroutput`` key: an xdist worker's refused write targets, for the controller that writes."""


def refuse_writes(config: pytest.Config, problems: list[str], session: pytest.Session | None = None) -> None:
    """Stop the run with a usage error naming ``problems``; no report or baseline is written after it
    (pytest still finishes the session, whose hooks write them: they ask :func:`writes_allowed`).

    In a pytest-xdist worker the controller writes the reports: the worker hands it the problems
    (``workeroutput``) and asks the run to stop (``session.shouldstop``, which xdist relays); it
    does not raise, and its caller leaves it nothing to run.
    """
    config.stash[writes_refused_key] = problems
    message = "pytest-llmjudge: " + "\n".join(problems)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None and session is not None:
        # A worker ends normally, with nothing to run: raising here could close its channel
        # before the controller has read the refusal (``plugin.py`` relays it, exit 4).
        workeroutput[WRITES_REFUSED] = problems
        session.shouldstop = message
        return
    raise pytest.UsageError(message)


def writes_allowed(config: pytest.Config) -> bool:
    """False once a write target was refused (:func:`refuse_writes`)."""
    return not config.stash.get(writes_refused_key, None)


def claim_write_targets(config: pytest.Config, targets: list[tuple[str, Path]]) -> None:
    """Refuse targets that must not be replaced (``write_targets.py``) with a usage error, now,
    and keep them for the check against the run's inputs after collection."""
    from pytest_llmjudge.write_targets import check_targets

    problems = check_targets(targets)
    if problems:
        refuse_writes(config, problems)
    config.stash.setdefault(write_targets_key, []).extend(targets)
