"""Reduce BCP-47 tags and legacy or three-letter codes to one comparable base code.

Suites write languages as ISO 639-1 codes or BCP-47 tags (``pt-BR``, ``zh-Hans``,
``sr_Latn``), while py3langid answers with bare ISO 639 codes and sacrebleu's tokenizer
table is keyed by them too. :func:`base_language` maps both sides to the same key:
lower-case, the primary subtag only, deprecated ISO 639-1 codes replaced (``iw`` -> ``he``)
and common three-letter codes mapped to their two-letter equivalent (``hin`` -> ``hi``).

Degenerate cases: an empty tag gives ``"und"`` (BCP-47's "undetermined"); an unknown code is
returned lower-cased and otherwise unchanged, so it can still compare equal to itself.
"""

from __future__ import annotations

__all__ = ["base_language", "language_family"]

# Deprecated ISO 639-1 codes still seen in the wild, and ISO 639-2/3 codes of languages
# that have a two-letter code. Macrolanguage members map to the macrolanguage (cmn -> zh),
# because that is what identifiers and tokenizer tables use.
_ALIASES: dict[str, str] = {
    "iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro", "fil": "tl",
    "ara": "ar", "arb": "ar", "asm": "as", "ben": "bn", "chi": "zh", "cmn": "zh", "zho": "zh",
    "deu": "de", "ger": "de", "eng": "en", "fas": "fa", "per": "fa", "fra": "fr", "fre": "fr",
    "guj": "gu", "heb": "he", "hin": "hi", "ind": "id", "ita": "it", "jpn": "ja", "kan": "kn",
    "kor": "ko", "mal": "ml", "mar": "mr", "msa": "ms", "may": "ms", "nep": "ne", "nld": "nl",
    "dut": "nl", "ori": "or", "ory": "or", "pan": "pa", "pol": "pl", "por": "pt", "rus": "ru",
    "spa": "es", "swa": "sw", "swh": "sw", "tam": "ta", "tel": "te", "tha": "th", "tur": "tr",
    "ukr": "uk", "urd": "ur", "vie": "vi", "npi": "ne", "pes": "fa", "zsm": "ms",
}  # fmt: skip


def base_language(tag: str) -> str:
    """The comparable base code of a language tag: ``"pt-BR"`` -> ``"pt"``, ``"hin"`` -> ``"hi"``."""
    primary = tag.strip().replace("_", "-").split("-")[0].lower()
    if not primary:
        return "und"
    return _ALIASES.get(primary, primary)


# Varieties py3langid distinguishes that an assertion on the macrolanguage should accept.
_FAMILY: dict[str, str] = {
    "ary": "ar", "arz": "ar", "wuu": "zh", "yue": "zh", "nb": "no", "nn": "no",
    "uzs": "uz", "gug": "gn", "hbo": "he",
}  # fmt: skip


def language_family(code: str) -> str:
    """The macrolanguage a (base) code is compared as: ``"arz"`` -> ``"ar"``, ``"hi"`` -> ``"hi"``."""
    base = base_language(code)
    return _FAMILY.get(base, base)
