"""Language codes to English names, for judge prompts.

Judge prompts name the case's language explicitly and ask for a native speaker's reading
(Hada et al. 2024 sec. 3.2.1 keep instructions in English and pass the language as a
variable). Unknown codes are passed through unchanged, so a BCP-47 tag the table lacks still
reaches the judge verbatim rather than being dropped.
"""

from __future__ import annotations

LANGUAGE_NAMES: dict[str, str] = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "as": "Assamese", "az": "Azerbaijani",
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "bs": "Bosnian", "ca": "Catalan",
    "cs": "Czech", "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
    "es": "Spanish", "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish",
    "fil": "Filipino", "fr": "French", "ga": "Irish", "gl": "Galician", "gu": "Gujarati",
    "ha": "Hausa", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian",
    "hy": "Armenian", "id": "Indonesian", "ig": "Igbo", "is": "Icelandic", "it": "Italian",
    "ja": "Japanese", "jv": "Javanese", "ka": "Georgian", "kk": "Kazakh", "km": "Khmer",
    "kn": "Kannada", "ko": "Korean", "ky": "Kyrgyz", "lo": "Lao", "lt": "Lithuanian",
    "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi",
    "ms": "Malay", "mt": "Maltese", "my": "Burmese", "ne": "Nepali", "nl": "Dutch",
    "no": "Norwegian", "nb": "Norwegian Bokmål", "or": "Odia", "pa": "Punjabi", "pl": "Polish",
    "ps": "Pashto", "pt": "Portuguese", "pt-br": "Brazilian Portuguese", "ro": "Romanian",
    "ru": "Russian", "rw": "Kinyarwanda", "sd": "Sindhi", "si": "Sinhala", "sk": "Slovak",
    "sl": "Slovenian", "so": "Somali", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish",
    "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "tg": "Tajik", "th": "Thai", "tl": "Tagalog",
    "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese",
    "wo": "Wolof", "xh": "Xhosa", "yo": "Yoruba", "zh": "Chinese", "zh-hans": "Simplified Chinese",
    "zh-hant": "Traditional Chinese", "zu": "Zulu",
}  # fmt: skip


def language_name(code: str) -> str:
    """English name of a language code (``"hi"`` -> ``"Hindi"``); unknown codes unchanged."""
    key = code.strip().lower().replace("_", "-")
    if key in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[key]
    base = key.split("-")[0]
    return LANGUAGE_NAMES.get(base, code)
