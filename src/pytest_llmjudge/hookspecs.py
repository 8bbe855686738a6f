"""Hooks that let conftest files and plugins extend pytest-llmjudge.

Registered with ``pytest_addhooks``; implement them in a ``conftest.py``, a plugin, or a
package exposing a module under the ``pytest_llmjudge`` entry-point group. Each returns a
mapping from name to thing; later registrations of a name replace earlier ones, and the
built-ins (``pytest_llmjudge.builtin_plugins``) come first, so a conftest can override them::

    def pytest_llmjudge_rubrics():
        from pytest_llmjudge import Rubric
        return {"politeness": Rubric(name="politeness", description="...", scale=(1, 2, 3),
                                     scoring="1: rude; 2: neutral; 3: polite")}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pytest_llmjudge.judges.rubrics import Rubric
    from pytest_llmjudge.registry import ProviderFactory

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_llmjudge_providers() -> Mapping[str, ProviderFactory]:  # type: ignore[empty-body]
    """Judge providers by name (``judge.provider`` in suites)."""


@hookspec
def pytest_llmjudge_rubrics() -> Mapping[str, Rubric]:  # type: ignore[empty-body]
    """Rubrics by name, usable in thresholds of any suite."""


@hookspec
def pytest_llmjudge_metrics() -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
    """Reference metric factories by name; called with the assertion's parameters."""


@hookspec
def pytest_llmjudge_targets() -> Mapping[str, Callable[..., Any]]:  # type: ignore[empty-body]
    """Output targets by name (``outputs.target``); each is called with a case."""
