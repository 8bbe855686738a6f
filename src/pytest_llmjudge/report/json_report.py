"""``--llmjudge-report=json:PATH``: the report document as one JSON file, stable to diff.

The document is built by :func:`pytest_llmjudge.report.model.build_document`; its format
(``"format": "pytest-llmjudge-report"``, ``"format_version"``) is described field by field
in ``docs/report.schema.json`` and ``docs/reports.md``. Written with sorted keys, two-space
indentation, UTF-8 (non-ASCII text as is, not ``\\u`` escapes) and a final newline, so
two runs' files diff line by line. Control characters are always ``\\u`` escapes: JSON
escapes C0 itself, and DEL and C1 (``\\u009b``, a one-byte terminal escape) are escaped
here, so ``cat report.json`` can't drive a terminal. Non-finite floats can't occur (the model turns them into
``null``); ``allow_nan=False`` makes sure. The file is written to a temporary name next to
PATH and renamed, so a reader never sees half a report.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_RAW_CONTROL = re.compile("[\x7f-\x9f]")


def dumps(document: Mapping[str, Any]) -> str:
    text = json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same directory."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        # mkstemp makes the file private (0600); a report gets the usual mode (umask applies).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def write_json(document: Mapping[str, Any], path: Path) -> None:
    write_text_atomic(path, dumps(document))
