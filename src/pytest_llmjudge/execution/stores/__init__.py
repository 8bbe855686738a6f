"""Cache stores behind the judge reply cache, and ``open_store`` to pick one by URL.

URLs (docs/remote-cache.md):

- ``sqlite:///path/cache.db`` (relative path; ``sqlite:////abs/cache.db`` for absolute):
  :class:`SQLiteStore`, built in;
- ``redis://host:port/db?prefix=...`` (``rediss://`` for TLS): :class:`RedisStore`, the
  ``redis`` extra;
- ``s3://bucket/prefix?endpoint_url=...&region=...``: :class:`S3Store`, the ``s3`` extra;
- a plain path or ``file:///path``: the cache layer's directory store
  (``execution/cache_directory.py``) on ``<path>/v1``, the layout ``--llmjudge-cache-dir``
  uses, so the same path names the same entries either way.

With ``fallback_dir``, a remote store (Redis, S3) is wrapped in a :class:`FallbackStore`
that hands over to the directory store under ``fallback_dir`` when the remote one fails
mid-run (``stores/fallback.py``), so replies paid for are kept.

With ``unusable`` set, a remote store is probed first (``stores/probe.py``: write, read,
lease). ``"error"``: a failed probe raises :class:`StoreUnavailableError` naming the URL
(credentials masked), the operation and the cause (the plugin's exit 4, before any judge
call). ``"local"`` (``--llmjudge-cache-fallback=local``): the run starts on the directory
store under ``fallback_dir``, degraded from the start. After a probe that passed, entries
paid locally during an earlier outage are written back (``FallbackStore.write_back``).

Degenerate cases: an unknown scheme or an empty SQLite path is a ``ConfigError``; a
missing client library is a ``MissingDependencyError`` naming the extra to install.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pytest_llmjudge.errors import ConfigError, StoreUnavailableError
from pytest_llmjudge.execution.stores.base import CacheStore
from pytest_llmjudge.execution.stores.fallback import FallbackStore
from pytest_llmjudge.execution.stores.migrate import DIRECTORY_LAYOUT, migrate_directory
from pytest_llmjudge.execution.stores.sqlite_store import SQLiteStore

__all__ = ["CacheStore", "FallbackStore", "SQLiteStore", "migrate_directory", "open_store"]


Unusable = Literal["error", "local"]
"""What a remote store that fails its start-up probe does: stop the run, or run on the local cache."""


def open_store(url: str, *, fallback_dir: Path | None = None, unusable: Unusable | None = None) -> CacheStore:
    """The store a cache URL names; a remote one falls back to ``fallback_dir`` when it fails.

    ``unusable``: probe a remote store first, and what to do when the probe fails (module docstring).
    """
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path:
            raise ConfigError(f"SQLite cache URL {url!r} has no path (sqlite:///relative.db or sqlite:////abs.db)")
        return SQLiteStore(path)
    if scheme in ("redis", "rediss", "unix"):
        from pytest_llmjudge.execution.stores.redis_store import RedisStore

        return _checked(_with_fallback(RedisStore.from_url(url), url, fallback_dir), url, unusable)
    if scheme == "s3":
        from pytest_llmjudge.execution.stores.s3_store import S3Store

        return _checked(_with_fallback(S3Store.from_url(url), url, fallback_dir), url, unusable)
    if scheme in ("", "file") or len(scheme) == 1:  # a one-letter scheme is a Windows drive (C:\...)
        from pytest_llmjudge.execution.cache_directory import DirectoryStore

        root = Path(url[len("file://") :] if scheme == "file" else url)
        return DirectoryStore(root / DIRECTORY_LAYOUT)
    raise ConfigError(f"unknown cache URL scheme {scheme!r} in {url!r}: use sqlite://, redis://, s3:// or a path")


def _with_fallback(store: CacheStore, url: str, fallback_dir: Path | None) -> CacheStore:
    if fallback_dir is None:
        return store
    from pytest_llmjudge.execution.cache_directory import DirectoryStore
    from pytest_llmjudge.util.redaction import redact

    # The URL's credentials may be quoted in a client's error message.
    parts = urlsplit(url)
    secrets = [part for part in (parts.password, parts.username) if part]
    root = Path(fallback_dir) / DIRECTORY_LAYOUT
    # One write-back journal per store, named by the URL without its credentials.
    host = parts.hostname or ""
    public = parts._replace(netloc=host if parts.port is None else f"{host}:{parts.port}")
    journal = root / "writeback" / f"{hashlib.sha256(public.geturl().encode()).hexdigest()[:16]}.keys"
    return FallbackStore(store, DirectoryStore(root), describe=lambda text: redact(text, secrets), journal=journal)


def _checked(store: CacheStore, url: str, unusable: Unusable | None) -> CacheStore:
    """``store`` once its probe passed (and its write-back is done); see the module docstring."""
    if unusable is None:
        return store
    from pytest_llmjudge.errors import ProbeFailed
    from pytest_llmjudge.execution.stores.probe import probe_store
    from pytest_llmjudge.util.redaction import redact

    parts = urlsplit(url)
    secrets = [part for part in (parts.password, parts.username) if part]
    remote = store.primary if isinstance(store, FallbackStore) else store
    try:
        probe_store(remote)
        if isinstance(store, FallbackStore):
            store.write_back()
    except ProbeFailed as failed:
        cause = redact(str(failed), secrets).rstrip(".")
        if unusable == "local" and isinstance(store, FallbackStore):
            store.failure = f"at start: {cause}"
            return store
        try:
            store.close()
        except Exception:  # closing a store that never worked: nothing to release
            pass
        raise StoreUnavailableError(
            f"cache store {redact(url, secrets)} is unusable: {cause}. Check the URL, the credentials and that the "
            "bucket or server exists; or pass --llmjudge-cache-fallback=local to run on the local cache directory "
            "(replies are then not shared)"
        ) from None
    except Exception as exc:  # the write-back's put failed: the probe's put just worked, so report it the same way
        cause = redact(f"write-back failed: {exc.__class__.__name__}: {exc}", secrets)
        if unusable == "local" and isinstance(store, FallbackStore):
            store.failure = f"at start: {cause}"
            return store
        store.close()
        raise StoreUnavailableError(f"cache store {redact(url, secrets)} is unusable: {cause}") from None
    return store
