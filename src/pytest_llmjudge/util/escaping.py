r"""Control characters made visible in text the plugin writes to a terminal, HTML or XML.

Suite names, case ids, model outputs and judge justifications are data: an ``ESC [31m``
in one must not recolour the terminal, a ``\x9b`` (the one-byte C1 form of ``ESC [``)
must not start an escape sequence, a NUL or BEL must not reach a CI log raw. Every C0
control character (U+0000-U+001F), DEL (U+007F) and every C1 control character
(U+0080-U+009F) is written as visible text: ``\x1b``, ``\x07``, ``\x9b``, ``\x00``.
A lone surrogate (U+D800-U+DFFF: what ``json.loads`` makes of ``"\ud800"``, or a file name
decoded with ``surrogateescape``) can't be encoded as UTF-8 at all, so it stopped every
report from being written; it is written as visible text too: ``\ud800``.

``keep`` names the controls left alone where they are layout: newline (and tab) in a
multi-line failure message; nothing in a one-line table cell. Everything else (letters
of any script, combining marks, right-to-left text) passes through unchanged. Text
without control characters is returned as is (the common case costs one regex search).
"""

from __future__ import annotations

import re
from functools import lru_cache

MULTILINE = "\n\t"
"""Keep newlines and tabs: for multi-line text (failure messages, ``<system-out>``, HTML)."""
ONE_LINE = ""
"""Keep nothing: for text that must stay on one line (a table cell, a property value)."""


@lru_cache(maxsize=8)
def _pattern(keep: str) -> re.Pattern[str]:
    controls = "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in keep)
    return re.compile(f"[{re.escape(controls)}\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = MULTILINE) -> str:
    """``text`` with every C0/C1 control character except those in ``keep`` written as ``\\xNN``,
    and every lone surrogate as ``\\uDXXX``."""
    pattern = _pattern(keep)
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)
