"""Import a directory cache (``<root>/v1/<xx>/<key>.json``) into another store.

Each entry file's bytes are stored unchanged under its file name's stem (the cache key),
so whatever the cache layer verifies on read (request hash, checksum, signature) still
holds. Puts run from a small thread pool, so a group-committing store (SQLite) writes
them in few transactions.

Degenerate cases: ``src`` may be the cache root or its ``v1`` directory; temp files left
by an interrupted write (``.tmp-*``) and anything not ``*.json`` are skipped; a missing or
empty directory imports nothing. Entries already in the store are overwritten with the
directory's bytes.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_llmjudge.execution.stores.base import CacheStore

DIRECTORY_LAYOUT = "v1"
"""The directory cache's layout version: its entries live under ``<cache root>/v1``."""


def migrate_directory(src_dir: Path | str, store: CacheStore, *, threads: int = 8) -> int:
    """Copy every entry of the directory cache at ``src_dir`` into ``store``; the count copied."""
    root = Path(src_dir)
    if (root / DIRECTORY_LAYOUT).is_dir():
        root = root / DIRECTORY_LAYOUT
    files = [path for path in sorted(root.glob("*/*.json")) if not path.name.startswith(".")]

    def copy(path: Path) -> None:
        store.put(path.stem, path.read_bytes())

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in pool.map(copy, files):  # iterating re-raises the first failed put
            pass
    return len(files)
