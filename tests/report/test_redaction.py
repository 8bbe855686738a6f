"""The pure helpers behind every output: redaction of credentials, escaping of control characters."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

from pytest_llmjudge.util.escaping import MULTILINE, ONE_LINE, escape_controls
from pytest_llmjudge.util.redaction import MASK, redact, redact_value, url_secrets


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
    assert url_secrets("http://alice-user:pa55word@h/v1") == [
        "alice-user",
        "pa55word",
        base64.b64encode(b"alice-user:pa55word").decode(),  # HTTP basic auth's token
    ]
    assert url_secrets("http://u:p@h/v1") == [] and url_secrets(None) == [] and url_secrets("http://h/v1") == []


def test_redact_value_walks_keys_lists_and_leaves_other_types() -> None:
    value = {"a": ["x sk-secret-123456 y", 3, None], "sk-secret-123456": True}
    assert redact_value(value, ["sk-secret-123456"]) == {"a": ["x *** y", 3, None], "***": True}


def test_control_characters_become_visible_text() -> None:
    raw = "a\x1b[31mred\x07\x9b2J\x00\x7f\r\nnext\tcol"
    assert escape_controls(raw) == "a\\x1b[31mred\\x07\\x9b2J\\x00\\x7f\\x0d\nnext\tcol"
    assert escape_controls(raw, ONE_LINE) == "a\\x1b[31mred\\x07\\x9b2J\\x00\\x7f\\x0d\\x0anext\\x09col"
    assert escape_controls("नमस्ते مرحبا こんにちは", MULTILINE) == "नमस्ते مرحبا こんにちは"


KEY = "sk-forms-3f9a1c7e5b"


def test_every_spelling_of_a_key_with_its_file_newline_is_hidden() -> None:
    """A key read with a trailing newline (or CRLF) from a key file: hidden raw, stripped,
    escaped once and twice, as bytes repr, JSON, and URL-encoded, wherever a message quotes it."""
    for raw in (KEY + "\n", KEY + "\r\n", " " + KEY + "\t"):
        spellings = [
            raw,
            KEY,
            repr(raw),
            repr(repr(raw)),
            repr(("Bearer " + raw).encode()),  # httpx: Illegal header value b'Bearer sk-...\n'
            json.dumps({"k": raw}),
            json.dumps(json.dumps(raw)),
            quote(raw, safe=""),
            quote_plus(raw),
        ]
        for text in spellings:
            cleaned = redact(f"before {text} after", [raw])
            assert "forms-3f9a" not in cleaned, (raw, text, cleaned)
            assert cleaned.startswith("before ") and cleaned.endswith(" after")
    # A key with characters that escaping and URL-encoding change.
    odd = 'pa55/wörd+"q\\x=1&y'
    for text in (repr(odd), quote(odd, safe=""), quote_plus(odd), json.dumps(odd), repr(odd.encode())):
        assert "55" not in redact(text, [odd]), text


def test_basic_auth_of_url_credentials_is_hidden_as_written_and_decoded() -> None:
    url = "http://judge-user:p%40ss-w0rd@127.0.0.1:8000/v1"
    secrets = url_secrets(url)
    token = base64.b64encode(b"judge-user:p@ss-w0rd").decode()  # what httpx sends (percent-decoded)
    assert token in secrets and "p@ss-w0rd" in secrets and "p%40ss-w0rd" in secrets
    echoed = f"headers received: {{'authorization': 'Basic {token}'}} for {url}"
    cleaned = redact(echoed, secrets)
    assert token not in cleaned and "ss-w0rd" not in cleaned and "judge-user" not in cleaned
    assert "Basic ***" in cleaned
    # Short parts: the base64 of the pair is still long enough to hide, the parts alone are not secrets.
    assert url_secrets("http://u:p@h/v1") == [] and url_secrets("http://ab:cdefgh@h/") == [
        "cdefgh",
        base64.b64encode(b"ab:cdefgh").decode(),
    ]


def test_redact_value_hides_every_spelling_in_keys_and_values() -> None:
    raw = KEY + "\n"
    value = {"m": [repr(raw.encode()), quote(raw)], repr(raw): 1}
    assert "forms-3f9a" not in json.dumps(redact_value(value, [raw]))


def test_lone_surrogates_become_visible_text_and_pairs_stay() -> None:
    text = "a\ud800b\udcffc 😀 d"
    assert escape_controls(text) == "a\\ud800b\\udcffc 😀 d"
    assert escape_controls(text, ONE_LINE).encode("utf-8")  # encodable now
