"""Telling which kind of file a YAML file is: a suite, a calibration set, a ranking, or none of ours.

A file is a suite (``calibration``, ``ranking``) when one of its lines starts at column 0
with that key and a colon (``suite:``, quoted ``"suite":``, a flow mapping ``{suite: ...``,
or ``- suite:`` for a top-level list the loader will then reject). The whole file is
streamed a chunk at a time, so neither the key's position nor a huge line changes the
answer, and only the first 256 characters of each line are kept.

A top-level key the line test can't read (a YAML merge key ``<<: *base``, an explicit key
``? suite``, a tag, an anchor, an escaped quoted key) may supply the kind's key: such a file
is parsed with the bounded loader (``loader.py``, which resolves merge keys) and its
top-level keys decide. Merge keys are rare in suites; every other file costs one stream.

A file that was plainly meant as a suite but has no such key (a misspelt ``suit:`` next to
top-level ``cases:`` and ``assert:``/``aggregate:``) is reported as :data:`SUITE_LIKE`, so the
collector can turn it into a failing item instead of skipping it.

Reading and decoding the text is ``text.py`` (re-exported here for older imports).

Degenerate cases: an unreadable file (a directory, a dangling symlink) is not sniffed as
anything; undecodable bytes are replaced while sniffing (the loader reports them with a
line), so a ``suite:`` key is never missed because of a bad byte elsewhere; a file whose
uncertain lines can't be parsed is decided by its plain lines alone (an invalid file with a
merge key and no readable ``suite:`` is not taken for a suite).
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.suite.text import decode, detect_encoding, read_text

__all__ = ["KINDS", "SUITE_LIKE", "decode", "detect_encoding", "has_top_level_key", "is_kind", "key_line", "read_text"]

KINDS = ("suite", "calibration", "ranking")
SUITE_LIKE = "suite-like"
"""What :func:`sniff_kind` returns for a file with suite sections but no ``suite:`` key."""

_CHUNK = 1 << 20
_HEAD = 256  # a top-level key sits at the start of its line; more of a line never matters

_KEY_RE = re.compile(r"""^(?:- |\{\s*)?["']?(?P<key>[A-Za-z_][\w-]*)["']?\s*:(?:\s|$)""")
_UNCERTAIN_RE = re.compile(r"""^(?:\{\s*)?(?:<<|\?(?:\s|$)|[!&"'])""")
"""A column-0 line whose key the line test can't read: merge key, explicit key, tag, anchor, quoted key."""
_SUITE_SECTIONS = frozenset({"cases", "cases_file"})
_SUITE_CHECKS = frozenset({"assert", "aggregate"})


def is_kind(path: Path, kind: str) -> bool:
    """Whether the collector for ``kind`` should take ``path`` (a suite-like file goes to suites)."""
    found = sniff_kind(path)
    return found == kind or (kind == "suite" and found == SUITE_LIKE)


def has_top_level_key(path: Path, key: str) -> bool:
    """Whether ``path`` has the top-level ``key`` (by its lines, or parsed as :func:`sniff_kind` does)."""
    try:
        return key in _keys(*_identity(path))
    except OSError:
        return False


def key_line(path: Path, key: str) -> int | None:
    """The 1-based line of the first column-0 ``key:`` of ``path`` (None if no line has it)."""
    try:
        for number, head in enumerate(_line_heads(path), 1):
            match = _KEY_RE.match(head)
            if match is not None and match["key"] == key:
                return number
    except OSError:
        pass
    return None


def _line_heads(path: Path) -> Iterator[str]:
    """The first :data:`_HEAD` characters of every line, streamed."""
    with path.open("rb") as handle:
        first = handle.read(_CHUNK)
        codec, skip = detect_encoding(first[:4])
        decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        pending = ""
        chunk = first[skip:]
        while True:
            text = pending + decoder.decode(chunk, final=not chunk)
            lines = text.split("\n")
            yield from (line[:_HEAD] for line in lines[:-1])
            pending = lines[-1][:_HEAD]
            if not chunk:
                break
            chunk = handle.read(_CHUNK)
        if pending:
            yield pending


def sniff_kind(path: Path) -> str | None:
    """``"suite"``, ``"calibration"``, ``"ranking"``, :data:`SUITE_LIKE`, or None for other YAML.

    Each collector asks about every YAML file, so the answer is kept per (path, size, mtime).
    """
    try:
        return _sniff(*_identity(path))
    except OSError:
        return None


def _identity(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns


@functools.lru_cache(maxsize=4096)
def _sniff(name: str, size: int, mtime_ns: int) -> str | None:
    """Stops at the first line with one of the three keys; otherwise reads the whole file."""
    path = Path(name)
    seen: set[str] = set()
    uncertain = False
    try:
        for head in _line_heads(path):
            match = _KEY_RE.match(head)
            if match is None:
                uncertain = uncertain or _UNCERTAIN_RE.match(head) is not None
                continue
            key = match["key"]
            if key in KINDS:
                return key
            if head[0] not in "-{":
                seen.add(key)
    except OSError:
        return None
    if uncertain:
        seen |= _parsed_keys(path)
        found = next((key for key in KINDS if key in seen), None)
        if found is not None:
            return found
    if seen & _SUITE_SECTIONS and seen & _SUITE_CHECKS:
        return SUITE_LIKE
    return None


@functools.lru_cache(maxsize=1024)
def _keys(name: str, size: int, mtime_ns: int) -> frozenset[str]:
    """Every top-level key of the file, by its lines and, when a line is uncertain, parsed."""
    path = Path(name)
    seen: set[str] = set()
    uncertain = False
    for head in _line_heads(path):
        match = _KEY_RE.match(head)
        if match is None:
            uncertain = uncertain or _UNCERTAIN_RE.match(head) is not None
        else:
            seen.add(match["key"])
    if uncertain:
        seen |= _parsed_keys(path)
    return frozenset(seen)


def _parsed_keys(path: Path) -> set[str]:
    """The top-level keys of ``path`` parsed by the bounded loader (merge keys resolved); none if invalid."""
    from pytest_llmjudge.suite.loader import load_yaml

    try:
        data = load_yaml(path).data
    except SuiteError:
        return set()
    return {str(key) for key in data} if isinstance(data, dict) else set()
