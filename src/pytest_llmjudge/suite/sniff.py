"""Reading the text of a suite, calibration or ranking file, and telling which kind it is.

Decoding: a byte-order mark picks the encoding (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE, what
Windows PowerShell 5 ``>`` writes); without one, a NUL pattern in the first four bytes picks
UTF-16/32 the way RFC 4627 did for JSON, and anything else is UTF-8. Undecodable bytes or a
NUL character are a :class:`SuiteError` with the line they are on.

Sniffing: a file is a suite (``calibration``, ``ranking``) when one of its lines starts at
column 0 with that key and a colon (``suite:``, quoted ``"suite":``, a flow mapping
``{suite: ...``, or ``- suite:`` for a top-level list the loader will then reject). The
whole file is streamed a chunk at a time, so neither the key's position nor a huge line
changes the answer, and only the first 256 characters of each line are kept.

A file that was plainly meant as a suite but has no such key (a misspelt ``suit:`` next to
top-level ``cases:`` and ``assert:``/``aggregate:``) is reported as :data:`SUITE_LIKE`, so the
collector can turn it into a failing item instead of skipping it.

Degenerate cases: an unreadable file (a directory, a dangling symlink) is not sniffed as
anything; undecodable bytes are replaced while sniffing (the loader reports them with a
line), so a ``suite:`` key is never missed because of a bad byte elsewhere.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from pytest_llmjudge.errors import SuiteError

KINDS = ("suite", "calibration", "ranking")
SUITE_LIKE = "suite-like"
"""What :func:`sniff_kind` returns for a file with suite sections but no ``suite:`` key."""

_CHUNK = 1 << 20
_HEAD = 256  # a top-level key sits at the start of its line; more of a line never matters

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_KEY_RE = re.compile(r"""^(?:- |\{\s*)?["']?(?P<key>[A-Za-z_][\w-]*)["']?\s*:(?:\s|$)""")
_SUITE_SECTIONS = frozenset({"cases", "cases_file"})
_SUITE_CHECKS = frozenset({"assert", "aggregate"})


def detect_encoding(head: bytes) -> tuple[str, int]:
    """``(codec, BOM length)`` for a file starting with ``head`` (at least its first 4 bytes)."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    if len(head) >= 4 and head[0] != 0:
        if head[1:4] == b"\0\0\0":
            return "utf-32-le", 0
        if head[1] == 0 and head[3] == 0:
            return "utf-16-le", 0
    if len(head) >= 4 and head[0] == 0:
        if head[:3] == b"\0\0\0":
            return "utf-32-be", 0
        if head[2] == 0:
            return "utf-16-be", 0
    return "utf-8", 0


def decode(data: bytes, path: Path) -> str:
    """The text of a file's bytes, or a :class:`SuiteError` naming the line of a bad byte."""
    codec, skip = detect_encoding(data[:4])
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as exc:
        line = data[skip : skip + exc.start].decode(codec, errors="replace").count("\n") + 1
        raise SuiteError(f"not valid {codec.upper()} ({exc.reason})", path=path, line=line) from None
    nul = text.find("\0")
    if nul >= 0:
        raise SuiteError(
            "the file contains a NUL character", path=path, line=text.count("\n", 0, nul) + 1, hint="is it binary?"
        )
    return text


def read_text(path: Path) -> str:
    """A YAML file's text, decoded as :func:`decode` says."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SuiteError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise SuiteError(f"can't read the file ({exc.strerror or exc})", path=path) from None
    return decode(data, path)


def is_kind(path: Path, kind: str) -> bool:
    """Whether the collector for ``kind`` should take ``path`` (a suite-like file goes to suites)."""
    found = sniff_kind(path)
    return found == kind or (kind == "suite" and found == SUITE_LIKE)


def has_top_level_key(path: Path, key: str) -> bool:
    """Whether a line of ``path`` starts at column 0 with ``key:`` (streamed like :func:`sniff_kind`)."""
    try:
        return any((match := _KEY_RE.match(head)) and match["key"] == key for head in _line_heads(path))
    except OSError:
        return False


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

    Stops at the first line with one of the three keys; otherwise reads the whole file.
    Each collector asks about every YAML file, so the answer is kept per (path, size, mtime).
    """
    try:
        stat = path.stat()
    except OSError:
        return None
    return _sniff(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _sniff(name: str, size: int, mtime_ns: int) -> str | None:
    path = Path(name)
    seen: set[str] = set()
    try:
        for head in _line_heads(path):
            match = _KEY_RE.match(head)
            if match is None:
                continue
            key = match["key"]
            if key in KINDS:
                return key
            if head[0] not in "-{":
                seen.add(key)
    except OSError:
        return None
    if seen & _SUITE_SECTIONS and seen & _SUITE_CHECKS:
        return SUITE_LIKE
    return None
