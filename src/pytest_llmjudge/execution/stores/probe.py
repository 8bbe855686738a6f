"""The start-up probe of a remote cache store: read, write and lease once, before any judge call.

A store that never works (a wrong host, port or bucket, missing S3 credentials, a wrong Redis
password) used to be found out by the first ``get`` of the run, which handed over to the
local directory: three CI shards and a merge on a mistyped bucket each paid every prompt
and exited 0. The probe makes that a usage error at start (``StoreUnavailableError``, exit 4)
naming the URL (credentials masked) and the cause, unless the user opted into running on
the local cache (``--llmjudge-cache-fallback=local``).

What it does, in the order a run needs it:

1. ``put`` of a fixed key ``PROBE_KEY`` (not a sha256 digest, so never a cache key): one
   small entry per store, overwritten by every probe;
2. ``get`` of it, which must return the bytes just written (another probe may overwrite it
   in between: any other probe's token is accepted, anything else is a failure);
3. ``try_lease`` and ``release`` on a key of its own (``probe-<random>``), so probes of
   concurrent shards never contend and nothing is left behind.

Degenerate cases: a lease refused on a fresh random key is a failure (the store can't lease);
a ``ValueError`` from a store is a bug and propagates.
"""

from __future__ import annotations

import uuid

from pytest_llmjudge.errors import ProbeFailed
from pytest_llmjudge.execution.stores.base import CacheStore

PROBE_KEY = "llmjudge-probe"
_TOKEN_PREFIX = b"llmjudge-probe:"


def probe_store(store: CacheStore, owner: str = "llmjudge-probe") -> None:
    """Write, read back and lease once; raise :class:`ProbeFailed` on the first step that fails."""
    token = _TOKEN_PREFIX + uuid.uuid4().hex.encode()
    step = "put"
    try:
        store.put(PROBE_KEY, token)
        step = "get"
        seen = store.get(PROBE_KEY)
        if seen is None or not seen.startswith(_TOKEN_PREFIX):
            raise ProbeFailed("get", f"read back {seen!r} after writing a probe entry")
        step = "lease"
        key = f"probe-{uuid.uuid4().hex}"
        lease_owner = f"{owner}:{uuid.uuid4().hex[:8]}"
        if not store.try_lease(key, lease_owner, 30.0):
            raise ProbeFailed("lease", "a lease on a fresh key was refused")
        store.release(key, lease_owner)
    except ProbeFailed:
        raise
    except ValueError:
        raise
    except Exception as exc:  # any failure of the remote client: see the module docstring
        raise ProbeFailed(step, f"{exc.__class__.__name__}: {exc}") from exc
