"""The translation seam of LRM2QAS's English pivot.

LRM2QAS (Kumar et al., sec. 2.2 "Notation" and appendix E step 1) scores every answer in
English: the question and reference come with English translations, and the answer is
translated with IndicTrans2. The plugin ships no translation model (it would be a large
download), so a :class:`Translator` is a seam:

* :class:`IdentityTranslator`, the default, returns the text unchanged. With it the
  components are computed in the case's own language, which is meaningful with a
  multilingual embedder and lexical-only with the hashing fallback.
* A user plugs in a real system (IndicTrans2, an MT API, an LLM) by implementing
  ``to_english(text, language) -> str`` and passing it as ``translator=``.

Suites can also store gold English versions in case metadata (``input_en``,
``reference_en``, ``context_en``), as the paper's data set does; LRM2QAS uses those in
preference to translating. Text in English (base code ``en``) is never translated.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["IdentityTranslator", "Translator", "translator_name"]


@runtime_checkable
class Translator(Protocol):
    """Turns text in ``language`` (ISO 639-1 or BCP-47) into English."""

    def to_english(self, text: str, language: str) -> str: ...


class IdentityTranslator:
    """No translation: components are computed in the case's own language."""

    name = "identity"

    def to_english(self, text: str, language: str) -> str:
        return text


def translator_name(translator: Translator) -> str:
    """A short description of a translator for score details."""
    name = getattr(translator, "name", None)
    return name if isinstance(name, str) else type(translator).__name__
