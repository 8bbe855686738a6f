"""Put/get throughput of the judge-cache stores, and files on disk, for 10,000 entries of ~4 KB.

Stores: the directory store (``execution/cache_directory.py``, a pack file per writing
process, appends with group commit), SQLite (``sqlite_store.py``, WAL, group commit), Redis (a throwaway ``redis-server``
without persistence, on 127.0.0.1) and S3 (moto's threaded server in a subprocess on
127.0.0.1). Entries are JSON-shaped bytes of 4,000-4,200 bytes, keyed by sha256 like real
cache entries. Each store is timed for:

- ``put 1t``: one thread putting every entry in turn (each put waits for its own commit);
- ``put 8t``: eight threads putting the same number of fresh entries (what concurrent judge
  calls do; SQLite's group commit shows here);
- ``get 8t``: eight threads reading every entry back (checked against what was put).

Throughput is entries per second of wall time. The files column counts files in the
store's directory after ``close`` (local stores only); MB is their total size. The last
line gives both file counts and SQLite's put throughput over the directory store's.

Run: ``python benchmarks/cache_stores.py [N]`` (default 10,000; needs the ``dev`` extra,
and ``redis-server`` on PATH for the Redis row; a store that can't start is reported and
skipped). Writes under a temporary directory on the same disk as the working directory,
not /tmp, in case /tmp is a RAM disk where fsync costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_llmjudge.execution.stores import SQLiteStore
from pytest_llmjudge.execution.stores.base import CacheStore

THREADS = 8


def entries(count: int, salt: str) -> list[tuple[str, bytes]]:
    made = []
    for n in range(count):
        key = hashlib.sha256(f"{salt}-{n}".encode()).hexdigest()
        text = (f"The answer is fluent; score {n % 3}. " * 120)[: 3900 + n % 200]
        record = {"key": key, "reply": {"text": text, "model": "judge-model"}, "created_unix": 1.7e9 + n}
        made.append((key, json.dumps(record).encode()))
    return made


def timed(work: Callable[[], None]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def measure(store: CacheStore, count: int) -> dict[str, float]:
    sequential, parallel = entries(count, "seq"), entries(count, "par")

    def put_all_sequential() -> None:
        for key, data in sequential:
            store.put(key, data)

    def put_all_parallel() -> None:
        with ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(lambda item: store.put(*item), parallel))

    def get_all_parallel() -> None:
        with ThreadPoolExecutor(THREADS) as pool:
            got = list(pool.map(store.get, [key for key, _ in parallel]))
        if got != [data for _, data in parallel]:
            raise AssertionError("a get did not return what was put")

    return {
        "put 1t": count / timed(put_all_sequential),
        "put 8t": count / timed(put_all_parallel),
        "get 8t": count / timed(get_all_parallel),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(400):
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on port {port}")


@contextmanager
def server(command: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[None]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_for(port, process)
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)


def on_disk(path: Path) -> str:
    files = [Path(root) / name for root, _, names in os.walk(path) for name in names]
    return f"{len(files)} files, {sum(file.stat().st_size for file in files) / 1e6:.1f} MB"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rows: list[tuple[str, dict[str, float], str]] = []
    work = Path(tempfile.mkdtemp(prefix=".cache-stores-", dir=Path.cwd()))
    try:
        from pytest_llmjudge.execution.cache_directory import DirectoryStore

        directory = DirectoryStore(work / "directory" / "v1")
        rows.append(("directory", measure(directory, count), on_disk(work / "directory")))
        directory.close()

        sqlite = SQLiteStore(work / "sqlite" / "cache.db")
        result = measure(sqlite, count)
        commits = sqlite.commits
        sqlite.close()
        rows.append(("sqlite", result, f"{on_disk(work / 'sqlite')}; {commits} commits"))

        redis_binary = shutil.which("redis-server")
        if redis_binary is None:
            rows.append(("redis", {}, "skipped: redis-server not on PATH"))
        else:
            from pytest_llmjudge.execution.stores.redis_store import RedisStore

            port = free_port()
            command = [redis_binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            with server(command, port):
                redis_store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0")
                rows.append(("redis", measure(redis_store, count), "server memory, no persistence"))
                redis_store.close()

        from pytest_llmjudge.execution.stores.s3_store import S3Store

        port = free_port()
        env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
        os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
        with server([sys.executable, "-m", "moto.server", "-p", str(port)], port, env):
            endpoint = f"http://127.0.0.1:{port}"
            s3: Any = S3Store.from_url(f"s3://bench-bucket/bench?endpoint_url={endpoint}&region=us-east-1")
            s3._client.create_bucket(Bucket="bench-bucket")
            rows.append(("s3 (moto)", measure(s3, count), "moto server memory"))
            s3.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"{count} entries of ~4 KB per phase; entries/s; {THREADS} threads where it says 8t")
    print(f"{'store':<10} {'put 1t':>8} {'put 8t':>8} {'get 8t':>8}  on disk")
    for name, result, note in rows:
        cells = " ".join(
            f"{result[phase]:>8.0f}" if phase in result else f"{'-':>8}" for phase in ("put 1t", "put 8t", "get 8t")
        )
        print(f"{name:<10} {cells}  {note}")
    results = {name: result for name, result, _ in rows}
    files = {name: note.split(" files")[0] for name, _, note in rows if " files" in note}
    print(
        f"directory_files={files['directory']} sqlite_files={files['sqlite']}"
        f" sqlite_over_directory_put_1t={results['sqlite']['put 1t'] / results['directory']['put 1t']:.2f}"
        f" sqlite_over_directory_put_8t={results['sqlite']['put 8t'] / results['directory']['put 8t']:.2f}"
    )


if __name__ == "__main__":
    main()
