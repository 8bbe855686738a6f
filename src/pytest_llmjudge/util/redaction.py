"""Credentials kept out of everything the plugin writes: reports, JUnit XML, the terminal.

Two kinds of credential are replaced by :data:`MASK` (``***``):

* **known secrets**: the values of variables that hold credentials (names ending in
  ``API_KEY``, ``APIKEY``, ``_TOKEN``, ``_SECRET`` or ``PASSWORD``, and any names a suite
  gives as ``judge.api_key_env``), the keys the judge runner sent, and the user name and
  password of any judge base URL. Wherever they appear: a provider error quoting the key,
  a judge's justification or raw reply echoing it, an argument on the command line.
  The longest secret is replaced first, so a secret that contains another is hidden whole.
  Each is hidden in every spelling a message can give it (:func:`secret_forms`): as it is,
  stripped of surrounding whitespace (a key file's newline), escaped as ``repr``/JSON
  write it (``\\n``, ``\\r\\n``) and escaped twice (``\\\\n``, a repr of a repr), as the
  ``repr`` of its UTF-8 bytes (httpx's ``Illegal header value b'Bearer sk-...\\n'``), and
  URL-encoded (``quote``, ``quote_plus``). For a base URL's ``user:password`` also the
  base64 of ``user:password`` that HTTP basic auth sends (``Authorization: Basic <b64>``),
  with the parts as written and percent-decoded (as httpx decodes them).
* **credentials in URLs**, whether or not they are known: the user info of any
  ``scheme://user:pass@host`` (``http://***@host``) and the value of any query parameter
  whose name says it holds one (``?api_key=``, ``&token=``, ``sig=``, ...).

Degenerate cases: a value shorter than :data:`MIN_SECRET_LENGTH` characters is never
treated as a secret (masking ``abc`` everywhere would garble ordinary text and hide
nothing worth hiding); no secrets leaves only the URL rules; text without either is
returned unchanged. Used by the reports (``report/``), the JUnit output and the failure
text of every item; :func:`redact` is pure, so other code (the cache) can call it too.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

MASK = "***"
MIN_SECRET_LENGTH = 6
_SECRET_NAME = re.compile(r"(API_KEY|APIKEY|_TOKEN|_SECRET|PASSWORD)$", re.IGNORECASE)
# scheme://userinfo@ : userinfo can't hold "/", "?", "#" or whitespace, and ends at the last "@".
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s/?#\"'<>]+)@")
_SECRET_PARAM = re.compile(
    r"(?P<name>[?&;][A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|credential|auth)"
    r"[A-Za-z0-9_.-]*=)(?P<value>[^&#;\s\"'<>]+)",
    re.IGNORECASE,
)


def secrets_from_environment(environ: Mapping[str, str], names: Iterable[str] = ()) -> list[str]:
    """Values of variables that hold credentials: ``*_API_KEY``, ``*_TOKEN``, ... and ``names``."""
    wanted = set(names)
    found = {
        value
        for key, value in environ.items()
        if (key in wanted or _SECRET_NAME.search(key)) and value and len(value) >= MIN_SECRET_LENGTH
    }
    return sorted(found, key=len, reverse=True)


def url_secrets(url: str | None) -> list[str]:
    """The user name and password in ``url`` (``http://user:pass@host``), long enough to be secrets,
    and the base64 of ``user:pass`` that HTTP basic auth derives from them (as written and percent-decoded)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    for value in (user, password):
        if value:
            found += [value, unquote(value)]
    if user is not None or password is not None:
        for pair in {f"{user or ''}:{password or ''}", f"{unquote(user or '')}:{unquote(password or '')}"}:
            found.append(base64.b64encode(pair.encode("utf-8", "surrogatepass")).decode("ascii"))
    return [value for value in dict.fromkeys(found) if len(value) >= MIN_SECRET_LENGTH]


@functools.lru_cache(maxsize=256)
def secret_forms(secret: str) -> frozenset[str]:
    """Every spelling of ``secret`` a message can hold (the module docstring lists them), long enough to hide."""
    forms: set[str] = set()
    for value in {secret, secret.strip()}:
        if len(value) < MIN_SECRET_LENGTH:
            continue
        escaped = repr(value)[1:-1]
        forms.update(
            (
                value,
                escaped,
                repr(escaped)[1:-1],  # escaped twice: "\\n"
                json.dumps(value)[1:-1],
                json.dumps(value, ensure_ascii=False)[1:-1],
                repr(value.encode("utf-8", "surrogatepass"))[2:-1],
                quote(value, safe=""),
                quote(value),
                quote_plus(value),
            )
        )
    return frozenset(form for form in forms if len(form) >= MIN_SECRET_LENGTH)


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every secret, URL user info and credential query value replaced by ``***``."""
    return _redact(text, _ordered(secrets))


def _ordered(secrets: Sequence[str]) -> list[str]:
    forms: set[str] = set()
    for secret in set(secrets):
        forms |= secret_forms(secret)
    return sorted(forms, key=lambda form: (-len(form), form))


def _redact(text: str, ordered: list[str]) -> str:
    for secret in ordered:
        if secret in text:
            text = text.replace(secret, MASK)
    if "://" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    if "=" in text:
        text = _SECRET_PARAM.sub(lambda m: f"{m['name']}{MASK}", text)
    return text


def redact_value(value: Any, secrets: Sequence[str] = ()) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with :func:`redact` applied to every string and key."""
    ordered = _ordered(secrets)
    # Most strings of a report hold neither a URL, nor "=", nor a secret: one search skips them.
    needs_work = re.compile("|".join(["://", "=", *(re.escape(secret) for secret in ordered)]))

    def clean(text: str) -> str:
        return _redact(text, ordered) if needs_work.search(text) else text

    keys: dict[str, str] = {}  # a document repeats the same few keys thousands of times

    def key(name: Any) -> str:
        text = str(name)
        found = keys.get(text)
        if found is None:
            found = keys[text] = clean(text)
        return found

    def walk(item: Any) -> Any:
        # Plain types first: an isinstance check against the Mapping ABC is slow, and a report
        # holds hundreds of thousands of numbers.
        if isinstance(item, str):
            return clean(item)
        if isinstance(item, dict):
            return {key(k): walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        if item is None or isinstance(item, (int, float)):
            return item
        if isinstance(item, Mapping):
            return {key(k): walk(v) for k, v in item.items()}
        if isinstance(item, tuple):
            return [walk(v) for v in item]
        return item

    return walk(value)
