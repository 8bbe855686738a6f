"""Names that identify things across a run: suite names and case ids, compared as people read them.

A suite name keys judge calls, the cache, records, reports and baselines; a case id keys a
case within its suite. Two names that print identically must be the same name, so:

* a name is compared in Unicode Normalization Form C (NFC, Unicode Standard Annex #15):
  ``"e\\u0301"`` (e + combining acute, NFD) and ``"\\u00e9"`` (NFC) are one id, and two
  cases that differ only so are duplicates;
* a name may not contain an invisible or bidirectional formatting character, which would
  make two different names print alike or reorder the text around them: every character of
  general category Cf (format: the zero-width space/joiners U+200B-U+200D, the marks
  U+200E/U+200F, the embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069,
  U+FEFF, the soft hyphen U+00AD, ...), and the line/paragraph separators U+2028/U+2029
  (Zl, Zp), which some terminals break lines at.

C0/C1 control characters are not refused here: they are visible once escaped
(``util/escaping.py``), which every output does.

Degenerate cases: an empty name is left to the schema (``min_length``); an NFC name is
returned as is (``unicodedata.is_normalized`` is a quick check).
"""

from __future__ import annotations

import unicodedata

_INVISIBLE_CATEGORIES = frozenset({"Cf", "Zl", "Zp"})


def invisible_characters(text: str) -> list[str]:
    """The invisible or bidi formatting characters of ``text``, as ``U+XXXX NAME``, in order, once each."""
    found: dict[str, None] = {}
    for char in text:
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
            found.setdefault(f"U+{ord(char):04X} {unicodedata.name(char, 'FORMAT CHARACTER')}", None)
    return list(found)


def invisible_problem(text: str, what: str) -> str | None:
    """Why ``text`` can't be a ``what`` (e.g. "case id"), or None when it can."""
    found = invisible_characters(text)
    if not found:
        return None
    return (
        f"{what} {text.encode('ascii', 'backslashreplace').decode()!r} contains invisible or bidi control "
        f"character(s) {', '.join(found)}: two ids that print alike must be the same id"
    )


def normalized(text: str) -> str:
    """``text`` in Unicode NFC, the form names are compared and stored in."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)
