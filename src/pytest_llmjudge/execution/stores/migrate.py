"""Import a directory cache (``<root>/v1``: pack files, and the old one file per entry) into another store.

Each entry's bytes are stored unchanged under its key, read through the directory store
(``execution/cache_directory.py``: the latest record of a key in the packs, else the old
layout's ``<xx>/<key>.json``), so whatever the cache layer verifies on read (request hash,
checksum, signature) still holds. Puts run from a small thread pool, so a group-committing
store (SQLite, the directory store itself) writes them in few transactions. Migrating into
a fresh directory store compacts one: one pack, one record per key.

Degenerate cases: ``src`` may be the cache root or its ``v1`` directory; temp files left by
an interrupted write (``.tmp-*``), records torn by a killed writer and anything not an
entry are skipped; a missing or empty directory imports nothing. Entries already in the
store are overwritten with the directory's bytes.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_llmjudge.execution.stores.base import CacheStore

DIRECTORY_LAYOUT = "v1"
"""The directory cache's layout version: its entries live under ``<cache root>/v1``."""


def migrate_directory(src_dir: Path | str, store: CacheStore, *, threads: int = 8) -> int:
    """Copy every entry of the directory cache at ``src_dir`` into ``store``; the count copied."""
    from pytest_llmjudge.execution.cache_directory import DirectoryStore

    root = Path(src_dir)
    if (root / DIRECTORY_LAYOUT).is_dir():
        root = root / DIRECTORY_LAYOUT
    source = DirectoryStore(root)
    copied = 0

    def copy(key: str) -> None:
        nonlocal copied
        data = source.get(key)
        if data is not None:
            store.put(key, data)
            copied += 1

    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for _ in pool.map(copy, source.keys()):  # iterating re-raises the first failed put
                pass
    finally:
        source.close()
    return copied
