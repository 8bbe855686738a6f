"""Each suite file is built once per run: the suite's items and its regression items share one ``Suite``.

``SuiteFile`` (``suite_items.py``) and ``RegressionFile`` (``regression/items.py``) collect from the
same YAML file. :func:`built_suite` reads, parses and validates it on the first ask and keeps
the result in the stash by path, so the second collector gets the same object (and the
scoreboard sees one set of cases, keyed alike, for both).

Degenerate cases: an invalid file keeps its error, and every ask raises it again (the suite
collector reports it as an invalid-suite item; the regression collector then yields
nothing). The registry is the one of the file's own hook (its conftest files), the same
for both collectors of a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.errors import LLMJudgeError
from pytest_llmjudge.suite.model import Suite

suites_key = pytest.StashKey[dict[Path, Suite | LLMJudgeError]]()


def built_suite(config: pytest.Config, path: Path, hook: Any) -> Suite:
    """The suite in ``path``, built once per run (raises its ``LLMJudgeError`` on every ask)."""
    from pytest_llmjudge.registry import Registry
    from pytest_llmjudge.suite.build import build_suite

    built = config.stash.setdefault(suites_key, {})
    result = built.get(path)
    if result is None:
        try:
            result = build_suite(path, Registry.from_hook(hook))
        except LLMJudgeError as exc:
            result = exc
        built[path] = result
    if isinstance(result, LLMJudgeError):
        raise result
    return result
