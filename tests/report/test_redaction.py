"""The pure helpers behind every output: redaction of credentials, escaping of control characters."""

from __future__ import annotations

from pytest_llmjudge.escaping import MULTILINE, ONE_LINE, escape_controls
from pytest_llmjudge.redaction import MASK, redact, redact_value, url_secrets


def test_known_secrets_longest_first_and_short_values_never() -> None:
    text = "key sk-abc-123456-long and its prefix sk-abc-123456 and abc"
    assert redact(text, ["sk-abc-123456", "sk-abc-123456-long", "abc"]) == "key *** and its prefix *** and abc"


def test_url_user_info_and_credential_parameters_are_hidden_without_being_known() -> None:
    text = "POST http://user:s3cr3t@127.0.0.1:8000/v1/chat?api-version=1&api_key=xyz&sig=abc#f and wss://tok@h/x"
    assert redact(text) == f"POST http://{MASK}@127.0.0.1:8000/v1/chat?api-version=1&api_key={MASK}&sig={MASK}#f" + (
        f" and wss://{MASK}@h/x"
    )
    assert redact("mail me at bob@example.com; x=1 and a == b") == "mail me at bob@example.com; x=1 and a == b"


def test_url_secrets_are_the_user_name_and_password_when_long_enough() -> None:
    assert url_secrets("http://alice-user:pa55word@h/v1") == ["alice-user", "pa55word"]
    assert url_secrets("http://u:p@h/v1") == [] and url_secrets(None) == [] and url_secrets("http://h/v1") == []


def test_redact_value_walks_keys_lists_and_leaves_other_types() -> None:
    value = {"a": ["x sk-secret-123456 y", 3, None], "sk-secret-123456": True}
    assert redact_value(value, ["sk-secret-123456"]) == {"a": ["x *** y", 3, None], "***": True}


def test_control_characters_become_visible_text() -> None:
    raw = "a\x1b[31mred\x07\x9b2J\x00\x7f\r\nnext\tcol"
    assert escape_controls(raw) == "a\\x1b[31mred\\x07\\x9b2J\\x00\\x7f\\x0d\nnext\tcol"
    assert escape_controls(raw, ONE_LINE) == "a\\x1b[31mred\\x07\\x9b2J\\x00\\x7f\\x0d\\x0anext\\x09col"
    assert escape_controls("नमस्ते مرحبا こんにちは", MULTILINE) == "नमस्ते مرحبا こんにちは"
