"""The judge reply cache: content-addressed, written atomically, safe across processes.

Key: ``sha256`` of the canonical JSON (sorted keys, no whitespace) of everything that
shapes a reply: provider, endpoint, model, full system and user prompt (which contains the
rubric text), temperature, seed, max tokens and response format (``ProviderRequest.
cache_payload``). Credentials are never part of a request payload, so never in the cache.
Retry counts and timeouts are left out: they don't change a reply.

Layout: ``<root>/v1/<key[:2]>/<key>.json``. A reply is written (temp file in the same
directory, fsync, ``os.replace``) before anything uses it, so an interrupted run keeps
every reply it paid for, and concurrent writers (pytest-xdist workers) can only ever
replace one complete file with another complete, identical one.

Degenerate cases: an unreadable or corrupt entry counts as a miss and is overwritten by the
next write; ``mode="off"`` neither reads nor writes; ``mode="refresh"`` writes without reading.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_llmjudge.judges.base import ProviderReply, Usage

CacheMode = Literal["use", "refresh", "off"]
_LAYOUT_VERSION = "v1"


def cache_key(payload: Mapping[str, Any]) -> str:
    """Hex sha256 of the canonical JSON of ``payload``."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    key: str
    reply: ProviderReply
    created: float | None = None
    """When the reply was stored (Unix time), if the entry says."""


class JudgeCache:
    """Reads and writes judge replies under ``root``."""

    def __init__(self, root: Path | None, mode: CacheMode = "use") -> None:
        self.mode: CacheMode = mode if root is not None else "off"
        self.root = root / _LAYOUT_VERSION if root is not None else None

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedReply | None:
        if self.mode != "use" or self.root is None:
            return None
        try:
            record = json.loads(self._path(key).read_text(encoding="utf-8"))
            reply = record["reply"]
            usage = reply.get("usage") or {}
            created = record.get("created_unix")
            return CachedReply(
                key=key,
                reply=ProviderReply(
                    text=str(reply["text"]),
                    model=str(reply.get("model", "")),
                    usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
                ),
                created=float(created) if isinstance(created, (int, float)) else None,
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, payload: Mapping[str, Any], reply: ProviderReply) -> None:
        if self.mode == "off" or self.root is None:
            return
        record = {
            "key": key,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "created_unix": time.time(),
            "request": dict(payload),
            "reply": {
                "text": reply.text,
                "model": reply.model,
                "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
            },
        }
        target = self._path(key)
        try:
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        except FileNotFoundError:  # the shard directory's first entry (no mkdir syscall per write)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                # dumps, not dump: one call to the C encoder (dump streams through the pure-Python one).
                handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
            raise
