"""The judge provider seam: one request in, one reply text out.

A provider (OpenAI, Anthropic, a plugin's) implements :class:`JudgeProvider`; everything
above it (prompting, caching, retries, concurrency, parsing) is provider-independent. The
seam is deliberately narrow so the shipped loopback server can stand in for every provider
in tests while the real SDKs do the talking.

A provider raises :class:`ProviderCallError` for a failed call, saying whether a retry can
help (429, 5xx, timeouts, dropped connections) and how long the server asked us to wait
(``Retry-After``). Anything else it raises is a bug in the provider and is reported as such.

**Deadline.** The built-in providers' requests go through :func:`post_through_sdk`, which
bounds each attempt as a whole, from connecting to the last byte of the reply, by the
client's timeout (``--llmjudge-timeout``): the SDKs' own timeouts are per phase and per
read, so a server that sends a byte a second would otherwise keep one attempt alive for as
long as its reply lasts. Running past the deadline is a retryable ``request timed out``.

**Size.** A reply body over :data:`MAX_REPLY_BYTES` (1 MiB) is refused before it is parsed:
a judge's verdict is a few hundred bytes (``max_tokens`` 1024 is about 4 KB of text), and
a 50 MB reply was otherwise parsed, cached and copied into both reports. It is a failed call
(``reply too large``), not retried (a retry would pay for the same again) and never cached;
the runner checks the reply text of any provider against the same cap.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Re-exported: provider plugins import it from here (docs/extending.md); it is defined in errors.py.
from pytest_llmjudge.errors import ProviderCallError as ProviderCallError

_SECRET_QUERY = re.compile(r"(key|token|secret|password|signature|sig|auth)", re.IGNORECASE)


def connection_cause(exc: BaseException) -> str:
    """The operating system's reason behind a connection error, e.g. ``connection refused``.

    Follows ``__cause__``/``__context__`` to the first exception with an ``errno``; without
    one, the innermost exception's text (``All connection attempts failed``) or its class.
    A TLS error is said in plain words (:func:`tls_cause`): its ``errno`` is OpenSSL's error
    code, not the system's (``strerror`` made "exec format error" of a plain-HTTP port).
    """
    import ssl

    seen: set[int] = set()
    current: BaseException | None = exc
    innermost = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            return tls_cause(current)
        errno = getattr(current, "errno", None)
        if isinstance(errno, int):
            return os.strerror(errno).lower()
        innermost = current
        current = current.__cause__ or current.__context__
    return str(innermost) or innermost.__class__.__name__


_NOT_TLS = (
    "WRONG_VERSION_NUMBER",
    "RECORD_LAYER_FAILURE",
    "PACKET_LENGTH_TOO_LONG",
    "HTTP_REQUEST",
    "UNKNOWN_PROTOCOL",
)
"""OpenSSL's reasons when the other end answered in something other than TLS (a plain HTTP port)."""


def tls_cause(exc: BaseException) -> str:
    """A TLS failure in plain words: a port that doesn't speak TLS, a certificate that doesn't verify, or OpenSSL's reason."""
    import ssl

    reason = str(getattr(exc, "reason", None) or "")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {exc.verify_message or reason or exc}"
    if reason in _NOT_TLS:
        # No parentheses: the run's headline takes the cause up to the first ")" (judges/diagnosis.py).
        return (
            f"TLS handshake failed: the server does not speak TLS on this port [{reason}], is it http:// not https://?"
        )
    if isinstance(exc, ssl.SSLEOFError) or "EOF" in reason:
        return "TLS handshake failed: the server closed the connection during the handshake"
    return f"TLS handshake failed: {reason or exc.__class__.__name__}"


def public_url(url: str | None) -> str | None:
    """``url`` without user info and without query parameters whose name looks like a credential.

    ``http://user:pass@host/v1?api-key=k&api-version=2024`` -> ``http://host/v1?api-version=2024``:
    the parameters that select behaviour (an API version) stay, since they can change a reply.
    """
    if not url:
        return url
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(name, value) for name, value in pairs if not _SECRET_QUERY.search(name)]
    if "@" not in parts.netloc and len(kept) == len(pairs):
        return url  # nothing to remove: the URL (and so every existing cache key) stays as written
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, urlencode(kept), parts.fragment))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON (sorted keys, no whitespace, UTF-8): the bytes a cache key hashes.

    A lone surrogate (an output read from ``"\\ud800"`` in a JSONL file) has no UTF-8 form: it is
    written as its ``\\u`` escape, as ``json.dumps`` writes it with ``ensure_ascii``, and reads back
    the same. Text without one is unchanged, and so is every existing cache key.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # only a lone surrogate has no UTF-8 form
        return _LONE_SURROGATE.sub(_surrogate_escape, text).encode("utf-8")


def _surrogate_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


@dataclass(frozen=True)
class ProviderRequest:
    """Everything that determines a judge reply (and so the cache key), and nothing else."""

    provider: str
    model: str
    system: str
    user: str
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    json_schema: Mapping[str, Any] | None = None
    structured_output: str = "none"
    base_url: str | None = None
    top_logprobs: int | None = None
    """Ask for token log-probabilities with this many alternatives (``scoring: expected``; OpenAI only)."""

    def __post_init__(self) -> None:
        # A lone surrogate can't be sent (no UTF-8 form: the SDK failed to encode the body, five
        # times, as a "malformed response"): the judge sees it as the visible text ``\ud800``.
        for name in ("system", "user"):
            text = getattr(self, name)
            if not text.isascii():  # an encode is cheaper than a regex search, and fails only on a surrogate
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    object.__setattr__(self, name, _LONE_SURROGATE.sub(_surrogate_escape, text))

    def cache_payload(self) -> dict[str, Any]:
        """The canonical description hashed into the cache key (never credentials).

        The endpoint enters without the credentials a URL can carry (:func:`public_url`);
        they still reach the SDK through ``base_url``.
        """
        payload = {
            "provider": self.provider,
            "base_url": public_url(self.base_url),
            "model": self.model,
            "system": self.system,
            "user": self.user,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "json_schema": self.json_schema,
            "structured_output": self.structured_output,
        }
        if self.top_logprobs is not None:  # only when asked: every other key stays as it was
            payload["top_logprobs"] = self.top_logprobs
        return payload

    @cached_property
    def canonical_payload(self) -> bytes:
        """:meth:`cache_payload` as canonical JSON, built once per request (planning, the ask and
        the cache write all need it; the fields are frozen, so it can't go stale)."""
        return canonical_json(self.cache_payload())

    @cached_property
    def cache_key(self) -> str:
        """The judge cache's key of this request: hex sha256 of :attr:`canonical_payload`."""
        return hashlib.sha256(self.canonical_payload).hexdigest()


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ProviderReply:
    text: str
    model: str
    """The served model the reply names (which may differ from the requested one)."""
    usage: Usage = field(default_factory=Usage)
    fingerprint: str | None = None
    """The backend configuration the provider says served the reply (OpenAI's ``system_fingerprint``)."""
    digit_tokens: tuple[tuple[int, str, tuple[tuple[str, float], ...]], ...] | None = None
    """The reply's integer tokens with their top log-probabilities, when asked for and given
    (``judges.logprobs.digit_tokens``); None when the provider gave none."""


@runtime_checkable
class JudgeProvider(Protocol):
    """A judge model behind some API."""

    name: str

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        """Send one request; raise :class:`ProviderCallError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class LazyProvider:
    """A provider built on its first request, so a fully cached run never imports an SDK."""

    def __init__(self, name: str, create: Callable[[], JudgeProvider]) -> None:
        self.name = name
        self._create = create
        self._provider: JudgeProvider | None = None
        self._lock = threading.Lock()

    def _get(self) -> JudgeProvider:
        with self._lock:
            if self._provider is None:
                self._provider = self._create()
            return self._provider

    def resolve(self) -> JudgeProvider:
        """The real provider, built now if it wasn't yet (batch mode needs its SDK client)."""
        return self._get()

    async def complete(self, request: ProviderRequest) -> ProviderReply:
        return await self._get().complete(request)

    async def aclose(self) -> None:
        if self._provider is not None:
            await self._provider.aclose()


RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

MAX_REPLY_BYTES = 1024 * 1024
"""Largest judge reply accepted (1 MiB): the HTTP body of the built-in providers, the UTF-8 text of any."""


def reply_too_large(size: int) -> ProviderCallError:
    """The failure of a reply of ``size`` bytes, over :data:`MAX_REPLY_BYTES`: not retried, never cached."""
    return ProviderCallError(
        f"reply too large: {size:,} bytes, over the {MAX_REPLY_BYTES:,}-byte cap for a judge reply", retryable=False
    )


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


def provider_error_text(exc: Any) -> str:
    """The provider's own error message from an SDK status error, without the envelope."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(getattr(exc, "message", exc))


def import_sdk(module_name: str, purpose: str) -> Any:
    """Import a provider SDK (``openai``, ``anthropic``) with the cyclic garbage collector paused.

    An SDK import builds hundreds of pydantic model classes; with the collector running, the
    young heap fills again and again and each pass rescans it, a good part of the import's
    cost (measured in docs/scale.md, "Numbers quoted by the code"). Pausing is
    safe: the import makes no garbage worth collecting, and the collector's state is restored.
    A missing SDK is a :class:`~pytest_llmjudge.errors.MissingDependencyError` naming the extra.
    """
    import gc
    import importlib

    from pytest_llmjudge.errors import MissingDependencyError

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise MissingDependencyError(module_name, module_name, purpose) from exc
    finally:
        if was_enabled:
            gc.enable()


async def post_through_sdk(sdk: Any, client: Any, path: str, body: Mapping[str, Any], response_class: type[Any]) -> Any:
    """POST ``body`` with an SDK client's own ``post`` and return the reply's JSON body.

    The client brings auth, base URL, timeouts and status errors; the typed wrapper is left
    out (its parameter transform and response models were the largest client cost per call
    with hundreds of calls in flight; docs/scale.md). ``sdk`` is the ``openai`` or
    ``anthropic`` module: both SDKs are generated from one template and raise the same error
    classes, translated here into :class:`ProviderCallError` saying whether a retry can help.
    The whole attempt, reading the body included, ends within :func:`request_deadline` seconds.
    """
    deadline = request_deadline(client)
    # One message whichever fires first: the SDK's per-phase timeout or the overall deadline.
    timed_out = "request timed out" + (
        "" if deadline is None else f" (no complete reply within {deadline:g} s: --llmjudge-timeout)"
    )
    try:
        return await asyncio.wait_for(_post(client, path, body, response_class), deadline)
    except asyncio.TimeoutError:
        raise ProviderCallError(timed_out, retryable=True) from None
    except sdk.APIStatusError as exc:
        raise ProviderCallError(
            f"HTTP {exc.status_code}: {provider_error_text(exc)}",
            retryable=exc.status_code in RETRYABLE_STATUS,
            status=exc.status_code,
            retry_after=parse_retry_after(dict(exc.response.headers)),
        ) from None
    except sdk.APITimeoutError:
        raise ProviderCallError(timed_out, retryable=True) from None
    except sdk.APIConnectionError as exc:
        # The operating system's reason (connection refused, name not known), not just the class.
        raise ProviderCallError(f"connection failed ({connection_cause(exc)})", retryable=True) from None
    except sdk.APIResponseValidationError as exc:
        raise ProviderCallError(f"malformed response: {exc.message}", retryable=True) from None
    except ValueError as exc:
        # The SDKs let a 200 whose body isn't JSON escape as a bare JSONDecodeError.
        raise ProviderCallError(f"malformed response body: {exc.__class__.__name__}", retryable=True) from None
    except sdk.APIError as exc:
        # A 200 whose body isn't valid JSON lands here in some SDK versions.
        raise ProviderCallError(f"provider error: {exc.message}", retryable=True) from None


async def _post(client: Any, path: str, body: Mapping[str, Any], response_class: type[Any]) -> Any:
    raw = await client.post(path, body=body, cast_to=response_class)
    size = len(raw.content)  # read within ``post`` (a non-streaming response)
    if size > MAX_REPLY_BYTES:
        raise reply_too_large(size)
    return raw.json()


def request_deadline(client: Any) -> float | None:
    """Seconds one request through an SDK ``client`` may take from start to last byte: its timeout.

    The providers give their clients the run's ``--llmjudge-timeout`` as a number. A client
    whose timeout is an ``httpx.Timeout`` (a plugin's) is bounded by the largest phase it
    names; none at all (``None``): no overall bound.
    """
    timeout = getattr(client, "timeout", None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout) if timeout > 0 else None
    phases = [getattr(timeout, name, None) for name in ("connect", "read", "write", "pool")]
    numbers = [float(value) for value in phases if isinstance(value, (int, float)) and value > 0]
    return max(numbers) if numbers else None


def sdk_response_class() -> type[Any]:
    """The HTTP response class the installed SDKs use (``httpx2`` in SDK 3.x/2.x, else ``httpx``).

    Passed as ``cast_to`` to the SDK client's ``post`` so it returns the raw response.
    """
    import importlib
    import sys

    for name in ("httpx2", "httpx"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "Response"):
            response: type[Any] = module.Response
            return response
    response = importlib.import_module("httpx").Response
    return response
