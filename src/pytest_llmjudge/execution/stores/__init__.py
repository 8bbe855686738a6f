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

Degenerate cases: an unknown scheme or an empty SQLite path is a ``ConfigError``; a
missing client library is a ``MissingDependencyError`` naming the extra to install.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pytest_llmjudge.errors import ConfigError
from pytest_llmjudge.execution.stores.base import CacheStore
from pytest_llmjudge.execution.stores.fallback import FallbackStore
from pytest_llmjudge.execution.stores.migrate import DIRECTORY_LAYOUT, migrate_directory
from pytest_llmjudge.execution.stores.sqlite_store import SQLiteStore

__all__ = ["CacheStore", "FallbackStore", "SQLiteStore", "migrate_directory", "open_store"]


def open_store(url: str, *, fallback_dir: Path | None = None) -> CacheStore:
    """The store a cache URL names; a remote one falls back to ``fallback_dir`` when it fails."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path:
            raise ConfigError(f"SQLite cache URL {url!r} has no path (sqlite:///relative.db or sqlite:////abs.db)")
        return SQLiteStore(path)
    if scheme in ("redis", "rediss", "unix"):
        from pytest_llmjudge.execution.stores.redis_store import RedisStore

        return _with_fallback(RedisStore.from_url(url), url, fallback_dir)
    if scheme == "s3":
        from pytest_llmjudge.execution.stores.s3_store import S3Store

        return _with_fallback(S3Store.from_url(url), url, fallback_dir)
    if scheme in ("", "file") or len(scheme) == 1:  # a one-letter scheme is a Windows drive (C:\...)
        from pytest_llmjudge.execution.cache_directory import DirectoryStore

        root = Path(url[len("file://") :] if scheme == "file" else url)
        return DirectoryStore(root / DIRECTORY_LAYOUT)
    raise ConfigError(f"unknown cache URL scheme {scheme!r} in {url!r}: use sqlite://, redis://, s3:// or a path")


def _with_fallback(store: CacheStore, url: str, fallback_dir: Path | None) -> CacheStore:
    if fallback_dir is None:
        return store
    from pytest_llmjudge.execution.cache_directory import DirectoryStore
    from pytest_llmjudge.redaction import redact

    # The URL's credentials may be quoted in a client's error message.
    parts = urlsplit(url)
    secrets = [part for part in (parts.password, parts.username) if part]
    return FallbackStore(
        store, DirectoryStore(Path(fallback_dir) / DIRECTORY_LAYOUT), describe=lambda text: redact(text, secrets)
    )
