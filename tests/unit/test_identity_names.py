"""Names compared as people read them (``suite/identity.py``) and kinds decided after merge keys (``suite/sniff.py``)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from pytest_llmjudge.suite.identity import invisible_characters, invisible_problem, normalized
from pytest_llmjudge.suite.sniff import has_top_level_key, key_line, sniff_kind


@pytest.mark.parametrize(
    "char",
    ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069", "\ufeff", "\u00ad"]
    + ["\u2028", "\u2029", "\u061c", "\U000e0001"],
)
def test_invisible_and_bidi_characters_are_found(char: str) -> None:
    assert invisible_characters(f"a{char}b") == [f"U+{ord(char):04X} {unicodedata.name(char)}"]
    assert "contains invisible or bidi control" in str(invisible_problem(f"a{char}b", "case id"))


def test_every_format_character_is_found_and_visible_text_is_not() -> None:
    every_cf = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert all(invisible_characters(char) for char in every_cf)
    for text in ("नमस्ते", "こんにちは", "مرحبا", "שלום", "café", "a b", "x\x1by", "emoji 🙂"):
        assert invisible_problem(text, "id") is None, text


def test_names_are_compared_in_nfc() -> None:
    assert normalized("cafe\u0301") == normalized("caf\u00e9") == "caf\u00e9"
    assert normalized("\u212b") == "\u00c5"  # ANGSTROM SIGN is canonically A WITH RING
    text = "already nfc"
    assert normalized(text) is text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("<<: {suite: merged}\ncases: []\n", "suite"),
        ('"<<": {calibration: c}\n', None),  # a quoted "<<" is a plain key, not a merge
        ("? suite\n: explicit\ncases: []\n", "suite"),
        ('"\\x73uite": escaped\ncases: []\n', "suite"),
        ("<<: {ranking: r}\n", "ranking"),
        ("<<: {other: 1}\nkey: 2\n", None),
        ("<<: [unclosed\n", None),  # invalid YAML with a merge key: not taken for anything
        ("suite: plain\n", "suite"),
    ],
)
def test_merge_and_other_unreadable_keys_are_resolved_by_parsing(tmp_path: Path, text: str, kind: str | None) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text, encoding="utf-8")
    assert sniff_kind(path) == kind


def test_top_level_keys_and_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("# c\n<<: {regression: {baseline: prod}}\nsuite: s\n", encoding="utf-8")
    assert has_top_level_key(path, "regression") and has_top_level_key(path, "suite")
    assert not has_top_level_key(path, "cases")
    assert key_line(path, "suite") == 3 and key_line(path, "regression") is None
