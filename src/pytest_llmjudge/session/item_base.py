"""The base of every item the plugin collects: one failure type, one failure rendering, one way to record.

Suite cases and aggregates (``suite/items.py``), calibration gates and sanity checks
(``calibration/items.py``), rankings (``pairwise/items.py``) and regression items
(``regression/items.py``) all derive from :class:`LLMJudgeItem`:

* a check that fails, or can't be decided, raises an
  :class:`~pytest_llmjudge.errors.ItemFailure` (or a subclass) whose message is the whole
  failure report: ``repr_failure`` prints it as is, never a traceback into the plugin;
  any other exception is a bug and keeps pytest's traceback;
* ``llmjudge_result`` is the item's typed record (``records.py``), attached to its call
  report by the Run (in wire form when the report travels to the xdist
  controller); :func:`record` records the record's ``junit_properties()`` for JUnit
  through the recorder the Run installs
  (:data:`~pytest_llmjudge.session.state.recorder_key`): without it (no ``--llmjudge``)
  nothing is recorded, and the item runs the same;
* ``reportinfo`` defaults to the file's first line and the item's name.

A file that fails to load yields one :class:`InvalidFileItem` that fails with
``invalid <what>: file:line: message``, so the other files still run (a collection error
would stop the session).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from pytest_llmjudge.errors import ItemFailure
from pytest_llmjudge.session.state import recorder_key
from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is 3.11+

    from pytest_llmjudge.judges.base import JudgeProvider, ProviderRequest
    from pytest_llmjudge.records import ItemRecord
    from pytest_llmjudge.suite.model import Case, Suite


def record(item: pytest.Item, properties: Iterable[tuple[str, Any]]) -> None:
    """Record ``(name, value)`` results of ``item`` for JUnit (``None`` values are left out)."""
    recorder = item.config.stash.get(recorder_key, None)
    if recorder is not None:
        recorder(item, properties)


FileNode = TypeVar("FileNode", bound=pytest.File)


def file_node(cls: type[FileNode], parent: pytest.Collector, path: Path) -> FileNode:
    """``cls.from_parent(parent, path=path)`` with control characters of the node id made visible.

    A file's node id is its path, which pytest prints and writes to JUnit (``classname``) raw:
    an ESC in a file name would recolour the terminal and make the XML ill-formed. Escaped as
    case ids are (``util/escaping.py``); the items' ids derive from it.
    """
    node = cls.from_parent(parent, path=path)
    escaped = escape_controls(node.nodeid, ONE_LINE)
    return node if escaped == node.nodeid else cls.from_parent(parent, path=path, nodeid=escaped)


Planner = Callable[[Sequence[pytest.Item]], Iterable[tuple["Suite", "Case", str]]]
"""Judge calls that selected items need but no item asks for itself (a calibrated suite's
judge must pass its gate before the suite's items run)."""


def selected_calls(items: Sequence[pytest.Item], planners: Sequence[Planner] = ()) -> Iterator[tuple[Suite, Case, str]]:
    """The planned judge calls (scorer needs) of ``items``, in item order, then those the
    ``planners`` add for them: the one plan the Run submits and batch mode sends."""
    for item in items:
        if isinstance(item, LLMJudgeItem):
            yield from item.planned_calls()
    for planner in planners:
        yield from planner(items)


def selected_requests(items: Iterable[pytest.Item]) -> Iterator[tuple[JudgeProvider, ProviderRequest]]:
    """The judge requests of ``items`` that are not scorer needs (a ranking's pairwise battles)."""
    for item in items:
        if isinstance(item, LLMJudgeItem):
            yield from item.planned_requests()


class LLMJudgeItem(pytest.Item):
    """An item of pytest-llmjudge (see the module docstring)."""

    llmjudge_result: ItemRecord | None = None
    """What the item found, attached to its call report as ``report.llmjudge`` (the same object)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Set now and replaced when the item runs: an attribute first added to an item while it
        # runs made CPython give its shared-key ``__dict__`` a table of its own, 768 bytes per item.
        self.llmjudge_result = None

    def planned_calls(self) -> Iterable[tuple[Suite, Case, str]]:
        """The judge calls this item will wait for, as scorer needs ``(suite, case, metric)``.

        Gathered once after collection from every selected item (:func:`selected_calls`), so
        batch mode, xdist sharing, rate limits and the cache see them together. None by default.
        """
        return ()

    def planned_requests(self) -> Iterable[tuple[JudgeProvider, ProviderRequest]]:
        """Judge requests this item will wait for that are not scorer needs (a ranking's
        pairwise battles), with the provider that sends them: batch mode sends them first, and
        their replies reach the item through the cache. None by default."""
        return ()

    @classmethod
    def from_parent(cls, parent: pytest.Collector, **kwargs: Any) -> Self:
        # An explicit node id string: pytest 9 parses it as it parses the ids stored by --lf/--ff
        # (``b[chrf]`` -> name ``b``, params ``chrf``), where the id it derives from the name keeps
        # ``b[chrf]`` as one name, so the two never compared equal and --lf selected nothing.
        # In pytest 8 the string is the id itself, as before.
        kwargs.setdefault("nodeid", f"{parent.nodeid}::{kwargs['name']}")
        return super().from_parent(parent, **kwargs)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ItemFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.name


class InvalidFileItem(LLMJudgeItem):
    """Stands in for a file that failed to load, so its error is reported with the run."""

    what = "file"
    """What kind of file failed (``suite``, ``calibration set``, ``ranking``)."""

    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise ItemFailure(f"invalid {self.what}: {self.error}")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"invalid {self.what}"
