"""``--llmjudge-report=json:PATH``: the report document as one JSON file, stable to diff.

The document is built by :func:`pytest_llmjudge.report.assemble.build_document` and written
in its wire form (:meth:`~pytest_llmjudge.report.document.ReportDocument.to_wire`); its
format (``"format": "pytest-llmjudge-report"``, ``"format_version"``) is described field by
field in ``docs/report.schema.json`` (generated from ``report/document.py``) and ``docs/reports.md``. Written with sorted keys, two-space
indentation, UTF-8 (non-ASCII text as is, not ``\\u`` escapes) and a final newline, so
two runs' files diff line by line. Control characters are always ``\\u`` escapes: JSON
escapes C0 itself, and DEL and C1 (``\\u009b``, a one-byte terminal escape) are escaped
here, so ``cat report.json`` can't drive a terminal. Non-finite floats can't occur (the model turns them into
``null``); ``allow_nan=False`` makes sure. The file is written to a temporary name next to
PATH and renamed, so a reader never sees half a report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_llmjudge.report.assemble import collector_paused
from pytest_llmjudge.report.document import ReportDocument
from pytest_llmjudge.util.atomic import write_atomic

_RAW_CONTROL = re.compile("[\x7f-\x9f\ud800-\udfff]")
"""DEL, C1, and lone surrogates (not encodable as UTF-8): written as ``\\u`` escapes, which read back the same."""


def dumps(document: ReportDocument) -> str:
    """The document as the JSON report's text."""
    with collector_paused():
        text = json.dumps(document.to_wire(), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json(document: ReportDocument, path: Path) -> None:
    write_atomic(path, dumps(document), fsync=False, private=False)  # rewritten by the next run; shared
