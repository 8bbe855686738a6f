"""Each suite file is built once per run: the suite's items and its regression items share one ``Suite``.

``SuiteFile`` (``suite/items.py``) and its regression items (``regression/items.py``) are
collected from the same YAML file. :func:`built_suite` reads, parses and validates it on the first ask and keeps
the result in the stash by path, so the second collector gets the same object (and the
scorer sees one set of cases, keyed alike, for both).

A suite name keys the run's judge calls, cache entries, records, reports and baselines, so
two collected files may not declare the same name (compared in Unicode NFC,
``suite/identity.py``): the first file collected keeps it, the second is an invalid suite
whose error names both files (the other suites still run). Collection order is the same in
every pytest-xdist worker, so each worker picks the same file.

Degenerate cases: an invalid file keeps its error, and every ask raises it again (the suite
collector reports it as an invalid-suite item; the regression collector then yields
nothing). The registry is the one of the file's own hook (its conftest files), the same
for both collectors of a file. One file reached by two paths (a symlink) is one file, not
a duplicate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.errors import LLMJudgeError, SuiteError
from pytest_llmjudge.suite.model import Suite

suites_key = pytest.StashKey[dict[Path, Suite | LLMJudgeError]]()
names_key = pytest.StashKey[dict[str, Path]]()
"""Suite name -> the file that declared it first in this run."""


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
        else:
            result = _claim_name(config, result)
        built[path] = result
    if isinstance(result, LLMJudgeError):
        raise result
    return result


def _claim_name(config: pytest.Config, suite: Suite) -> Suite | LLMJudgeError:
    """``suite``, or the error of a second file declaring a name another file has."""
    clash = name_clash(config, suite.name, suite.path, f"suite name {suite.name!r}")
    return suite if clash is None else clash


def name_clash(config: pytest.Config, key: str, path: Path, what: str, field: str = "suite") -> SuiteError | None:
    """None when ``path`` may have the name ``key``, else the error naming the file that has it.

    Suites and calibration sets share one namespace, the suite name their cases are keyed by
    in the scorer (a calibration set ``x`` is ``calibration:x``); ``what`` is the name as
    the file says it. The error is located at the file's ``field:`` line (``suite``, ``calibration``).
    """
    from pytest_llmjudge.suite.sniff import key_line

    owner = config.stash.setdefault(names_key, {}).setdefault(key, path)
    if owner == path or owner.resolve() == path.resolve():
        return None
    return SuiteError(
        f"{what} is also declared by {owner}: each file needs its own name",
        path=path,
        line=key_line(path, field),
        field=field,
        hint="judge calls, the cache, records, reports and baselines are keyed by the name; rename one",
    )
