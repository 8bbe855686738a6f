"""Find the numbers in a text written in any script and turn them into floats.

Numeric fidelity (LRM2QAS, Kumar et al., sec. 2.2 eq. 4 and appendix E step 4) compares
the *values* mentioned in a reference and an answer, so "१९५२", "1952", "١٩٥٢" and
"１９５２" must all become ``1952.0``. A number is:

* an optional sign, ``-`` or ``−`` (U+2212), only when it is not glued to a preceding
  word character, so "COVID-19" gives 19 and the range "2020-2021" gives 2020 and 2021;
* digits of any decimal-digit script (Unicode category Nd: ASCII, Devanagari, Bengali,
  Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam, Thai, Arabic-Indic,
  Extended Arabic-Indic, full-width, ...), converted with :func:`unicodedata.decimal`;
* optional digit grouping, accepted only when it is well formed: Western groups of three
  (``1,234,567``) or the Indian lakh/crore grouping (``12,34,567``);
* an optional decimal part.

Separators follow one of two conventions, chosen by ``decimal_comma``:

==================  ==========================================  ====================
convention          group separators                            decimal separator
==================  ==========================================  ====================
default             ``,`` ``，`` and Arabic ``٬`` (U+066C)      ``.`` ``．`` and Arabic ``٫`` (U+066B)
``decimal_comma``   ``.`` ``．``, no-break and thin spaces      ``,`` ``，`` and ``٫``
                    (U+00A0, U+202F, U+2009) and ``٬``
==================  ==========================================  ====================

Both sides of a comparison are read with the same convention, so the default gives
consistent sets even for German or French text; ``decimal_comma`` only matters when a
value is written "3,5" on one side and "3.5" on the other.

Ambiguities, decided here: a comma followed by exactly three digits is a group separator
("100,200" is one hundred thousand two hundred), any other comma separates numbers
("1,23" is 1 and 23); digits glued to letters still count ("H2O" gives 2, "1952年" gives
1952); a leading decimal point is not a number start ("Rs.500" is 500, not 0.5). Number
words ("five", "पाँच"), Han numerals (一, 十, 百) and scale words (lakh, crore, million) are
not read. Values beyond 15 significant digits lose precision as floats.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["extract_numbers", "number_set"]

_MINUS = "-\u2212"


@functools.cache
def _pattern(decimal_comma: bool) -> re.Pattern[str]:
    group = "[.\uff0e\u00a0\u202f\u2009\u066c]" if decimal_comma else "[,\uff0c\u066c]"
    point = "[,\uff0c\u066b]" if decimal_comma else "[.\uff0e\u066b]"
    return re.compile(
        rf"(?P<sign>(?<!\w)[{_MINUS}])?"
        rf"(?P<int>\d{{1,3}}(?:{group}\d{{3}})+(?!\d)"  # 1,234,567
        rf"|\d{{1,2}}(?:{group}\d{{2}})+{group}\d{{3}}(?!\d)"  # 12,34,567
        rf"|\d+)"
        rf"(?:{point}(?P<frac>\d+))?"
    )


def _ascii_digits(digits: str) -> str:
    if digits.isascii():
        return "".join(ch for ch in digits if ch.isdigit())
    return "".join(str(unicodedata.decimal(ch)) for ch in digits if unicodedata.decimal(ch, -1) >= 0)


def extract_numbers(text: str, *, decimal_comma: bool = False) -> list[float]:
    """All numbers in ``text`` as floats, in order of appearance (duplicates kept)."""
    values: list[float] = []
    for match in _pattern(decimal_comma).finditer(text):
        literal = _ascii_digits(match.group("int"))
        frac = match.group("frac")
        if frac is not None:
            literal += "." + _ascii_digits(frac)
        value = float(literal)
        values.append(-value if match.group("sign") else value)
    return values


def number_set(text: str, *, decimal_comma: bool = False) -> frozenset[float]:
    """The distinct numeric values in ``text`` (``-0`` and ``0`` are the same value)."""
    return frozenset(extract_numbers(text, decimal_comma=decimal_comma))
