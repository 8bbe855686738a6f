"""Selecting items by language (``--llmjudge-language hi,ta``) and by suite tags (``pytest -m smoke``).

Language filter: an item is kept when every case it covers is in one of the selected
languages, and deselected otherwise (reported by pytest as "N deselected", through
``pytest_deselected``, as ``-k`` does). What "the cases it covers" are:

* a case item: its case's language;
* an aggregate or regression row: the languages of its group's cases, so ``hi-task=qa``
  belongs to ``hi``, and the ``all`` row, which covers every language of the suite, is kept
  only when the filter names all of them (its value would otherwise include languages the
  user asked not to run, and would pay for their judge calls);
* a calibration gate or sanity check, a ranking item: its ``language`` (a calibration group
  ``hi-domain=news`` through the set's ``group_language``);
* an item with no language (an invalid file, a missing baseline): kept, so its error is
  never hidden by a filter.

Matching is exact (``hi`` does not select ``hi-Latn``): a code is a name, not a prefix,
which is what ``-k hi`` gets wrong (it matches ``ship``).

Tags: a suite's ``tags:`` and each case's ``tags:`` become pytest markers of the item
(``item.add_marker``), registered as they are met so ``--strict-markers`` accepts them;
``-m smoke`` and ``-m "smoke and not slow"`` then select as for Python tests. Case items get
the suite's tags and their case's; every other item of a suite gets the suite's tags.
Tags are validated when the suite loads (``suite/schema.py``: identifier-like, not one of
pytest's own markers).

Plain functions the Run calls (``session/run.py``): :func:`add_tags` as each item is
collected, :func:`select_languages` in the selection phase.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def item_languages(item: pytest.Item) -> frozenset[str] | None:
    """The languages of the cases ``item`` covers, or None when it has none (see the module docstring)."""
    case_language = getattr(getattr(item, "case", None), "language", None)
    if isinstance(case_language, str):
        return frozenset({case_language})
    cases: Any = getattr(item, "cases", None)
    if isinstance(cases, Iterable) and not isinstance(cases, (str, bytes)):
        languages = frozenset(getattr(c, "language", None) for c in cases)
        if languages and None not in languages:
            return frozenset(str(language) for language in languages)
    language = getattr(item, "language", None)
    if not isinstance(language, str):
        return None
    calibration = getattr(item, "calibration", None)
    group_language = getattr(calibration, "group_language", None)
    if callable(group_language):
        return frozenset({str(group_language(language))})
    return frozenset({language})


def item_tags(item: pytest.Item) -> tuple[str, ...]:
    """The suite tags (and, for a case item, the case's) of ``item``."""
    case = getattr(item, "case", None)
    tags = getattr(case, "tags", None)
    if isinstance(tags, tuple):
        return tags
    suite = getattr(item, "suite", None)
    tags = getattr(suite, "tags", None)
    return tags if isinstance(tags, tuple) else ()


def add_tags(config: pytest.Config, registered: set[str], item: pytest.Item) -> None:
    """Mark ``item`` with its tags, registering each new one (``registered``) so --strict-markers accepts it."""
    for tag in item_tags(item):
        if tag not in registered:
            # Registered before the mark is made: --strict-markers rejects unknown names.
            config.addinivalue_line("markers", f"{tag}: a pytest-llmjudge suite tag")
            registered.add(tag)
        item.add_marker(tag)


def select_languages(wanted: set[str], items: list[pytest.Item]) -> list[pytest.Item]:
    """Keep in ``items`` (in place) the items whose cases are all in ``wanted``; returns the others."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        languages = item_languages(item)
        (kept if languages is None or languages <= wanted else dropped).append(item)
    if dropped:
        items[:] = kept
    return dropped
