"""Which shard of ``--llmjudge-shard i/N`` runs a case: a stable hash, the same on every machine.

A case goes to shard ``1 + int(sha256(suite + NUL + case id)[:16], 16) % N``, where
``suite`` is the suite file's path relative to pytest's rootdir with ``/`` separators, so
two CI machines that check the repository out in different directories agree. Cases, not
items, are assigned: every item of a case (its rubrics, its metrics) runs in one shard,
which judges the case once. sha256 rather than ``hash()``: Python salts ``hash`` of a str
per process.

The split is by count, not cost: with N shards each gets about 1/N of the cases (binomial
spread: for 1,000 cases in 4 shards, 250 +- 14 each).

Degenerate cases: ``1/1`` is every case; N larger than the number of cases leaves some
shards empty (they run nothing and pass); a spec that isn't ``i/N`` with ``1 <= i <= N``
is a ``ConfigError``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from pytest_llmjudge.errors import ConfigError

_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    index: int
    """1-based."""
    count: int

    @classmethod
    def parse(cls, spec: str) -> Shard:
        """``"2/3"`` -> ``Shard(2, 3)``."""
        match = _SPEC.fullmatch(spec)
        if match is None:
            raise ConfigError(f"--llmjudge-shard {spec!r}: expected i/N, e.g. 2/3")
        index, count = int(match[1]), int(match[2])
        if count < 1 or not 1 <= index <= count:
            raise ConfigError(f"--llmjudge-shard {spec!r}: need 1 <= i <= N")
        return cls(index, count)

    def owns(self, key: str) -> bool:
        """Whether this shard runs what ``key`` names (see :func:`shard_key`)."""
        return shard_of(key, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_key(suite_path: str, case_id: str) -> str:
    """The string a case is hashed by: its suite's rootdir-relative POSIX path and its id."""
    return f"{suite_path}\0{case_id}"


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of ``key`` among ``count``."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return 1 + int(digest[:16], 16) % count
