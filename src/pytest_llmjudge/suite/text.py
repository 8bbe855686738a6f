"""Reading the text of a suite, calibration, ranking or baseline file in whatever Unicode encoding it is in.

A byte-order mark picks the encoding (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE, what Windows
PowerShell 5 ``>`` writes); without one, a NUL pattern in the first four bytes picks
UTF-16/32 the way RFC 4627 did for JSON, and anything else is UTF-8.

Degenerate cases: undecodable bytes or a NUL character are a :class:`SuiteError` with the
line they are on; a directory, a FIFO, a socket, a device or an unreadable file is a
:class:`SuiteError` saying so (a FIFO is never opened: the read would wait for a writer).
"""

from __future__ import annotations

import codecs
import stat
from pathlib import Path

from pytest_llmjudge.errors import SuiteError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


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


def require_regular(path: Path) -> None:
    """A :class:`SuiteError` for an existing ``path`` that is a FIFO, socket or device: reading a
    FIFO would wait for a writer forever. Missing files and directories are left to the reader."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        what = "a FIFO" if stat.S_ISFIFO(mode) else "a socket or device"
        raise SuiteError(f"is {what}, not a regular file", path=path)


def read_text(path: Path) -> str:
    """A YAML file's text, decoded as :func:`decode` says."""
    require_regular(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SuiteError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise SuiteError(f"can't read the file ({exc.strerror or exc})", path=path) from None
    return decode(data, path)
