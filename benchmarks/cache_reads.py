"""What verifying a judge-cache entry costs: 1,000 reads of real-sized entries, three ways.

1. ``unverified``: read the file and ``json.loads`` it, which is all a read did before
   entries were verified (the reply fields were taken as they were);
2. ``verified``: ``JudgeCache.get`` (request hash against the key, reply checksum, shape);
3. ``signed``: ``JudgeCache.get`` with a secret (the HMAC on top).

Entries are built from the real prompt of the built-in linguistic-acceptability rubric
(about 3.8 KB each). Best of 15 interleaved passes over the same 1,000 entries, in one
run. The last
line is ``verified_over_unverified=<x> signed_over_unverified=<y>``.

    python benchmarks/cache_reads.py
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_llmjudge.execution.cache import JudgeCache, cache_key
from pytest_llmjudge.judges.base import ProviderReply, Usage
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS

ENTRIES = 1000
SECRET = "benchmark-cache-secret"


def best_of(passes: int, runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    """Each run's best time over ``passes``, the runs interleaved so load drifts hit all alike."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(passes):
        for name, read_all in runs.items():
            start = time.perf_counter()
            read_all()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    rubric = BUILTIN_RUBRICS["linguistic_acceptability"]
    reply = ProviderReply(
        text='{"linguistic_acceptability": {"justification": "natural and fluent", "score": 2}}',
        model="gpt-4o-mini-2024-07-18",
        usage=Usage(420, 31),
    )
    with tempfile.TemporaryDirectory() as plain_dir, tempfile.TemporaryDirectory() as signed_dir:
        plain, signed = JudgeCache(Path(plain_dir)), JudgeCache(Path(signed_dir), secret=SECRET)
        keys = []
        for index in range(ENTRIES):
            request = build_request(
                [rubric],
                JudgedText(language="hi", output=f"उत्तर संख्या {index}", input="प्रश्न"),
                JudgeSettings(provider="openai", model="gpt-4o-mini"),
            )
            payload = request.cache_payload()
            key = cache_key(payload)
            plain.put(key, payload, reply)
            signed.put(key, payload, reply)
            keys.append(key)
        paths = [Path(plain_dir) / "v1" / key[:2] / f"{key}.json" for key in keys]

        def unverified() -> None:
            for path in paths:
                json.loads(path.read_bytes())["reply"]

        def verified() -> None:
            for key in keys:
                assert plain.get(key) is not None

        reader = JudgeCache(Path(signed_dir), secret=SECRET)

        def with_secret() -> None:
            for key in keys:
                assert reader.get(key) is not None

        size = paths[0].stat().st_size
        times = best_of(15, {"unverified": unverified, "verified": verified, "signed": with_secret})
    print(f"{ENTRIES} reads of {size}-byte entries, best of 15:")
    for name, seconds in times.items():
        print(f"  {name:<10} {seconds * 1000:7.1f} ms  ({seconds / ENTRIES * 1e6:.0f} us per read)")
    print(
        f"verified_over_unverified={times['verified'] / times['unverified']:.3f} "
        f"signed_over_unverified={times['signed'] / times['unverified']:.3f}"
    )


if __name__ == "__main__":
    main()
