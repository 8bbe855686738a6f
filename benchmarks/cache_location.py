"""A cache directory on a real read-only and a real full file system (tmpfs), end to end.

The tests run as root, whom permission bits don't stop, and a read-only or full mount needs
privileges, so ``tests/plugin/test_cache_location.py`` uses ``RLIMIT_FSIZE`` for "no byte can
be written" and injects ``EROFS``/``ENOSPC`` in unit tests. This script checks the real
thing where the machine allows it: it re-runs itself under ``unshare -m`` (a private mount
namespace; root with ``CAP_SYS_ADMIN``), mounts a 64 KiB tmpfs, and runs ``pytest --llmjudge``
against the loopback judge four times:

1. a fresh cache on the tmpfs (one reply stored);
2. the tmpfs remounted read-only, a suite with one more prompt asked twice;
3. the tmpfs filled to 0 bytes free, one more prompt again;
4. the tmpfs with 12 KiB free, twelve new prompts (the pack outgrows it mid-run).

Each run must pass every case, pay each new prompt once, serve what the cache holds, and
print one headline naming the path and the cause. The last line:
``readonly=ok full_at_start=ok full_mid_run=ok`` (or what failed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge


def _pytest(directory: Path, cache: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--llmjudge", "-p", "no:cacheprovider", "-q", f"--llmjudge-cache-dir={cache}"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if "llmjudge:" in line or "judge calls" in line]
    print(f"  exit {done.returncode}: " + "\n  ".join(lines))
    return done.stdout if done.returncode == 0 else ""


def main() -> None:
    if os.environ.get("LLMJUDGE_IN_NAMESPACE") != "1":
        if shutil.which("unshare") is None:
            print("no unshare here: nothing measured")
            return
        env = {**os.environ, "LLMJUDGE_IN_NAMESPACE": "1"}
        sys.exit(subprocess.run(["unshare", "-m", sys.executable, __file__], env=env, check=False).returncode)
    mount = Path(tempfile.mkdtemp(prefix="llmjudge-tmpfs-"))
    work = Path(tempfile.mkdtemp(prefix="llmjudge-work-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    cache = mount / "cache"
    results: dict[str, str] = {}
    with LoopbackServer(responder=ScriptedJudge({"linguistic_acceptability": 2})) as server:

        def suite(outputs: list[str]) -> None:
            cases = "".join(f"  - {{id: c{n}, language: de, input: q, output: {o}}}\n" for n, o in enumerate(outputs))
            (work / "suite.yaml").write_text(
                f'suite: s\njudge: {{provider: openai, model: loopback-judge, base_url: "{server.openai_base_url}"}}\n'
                f"cases:\n{cases}assert: [linguistic_acceptability >= 1]\n"
            )

        def paid() -> int:
            return len(server.requests)

        print("1. fresh cache on a 64 KiB tmpfs")
        suite(["eins"])
        _pytest(work, cache)
        print("2. read-only remount, one new prompt asked twice")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        suite(["eins", "zwei", "zwei"])
        before = paid()
        out = _pytest(work, cache)
        results["readonly"] = (
            "ok" if "read-only file system" in out and "1 cache hits" in out and paid() - before == 1 else "FAILED"
        )
        print("3. full (0 bytes free), one new prompt")
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
        filler = mount / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass  # full
        finally:
            os.close(fd)
        suite(["eins", "drei"])
        before = paid()
        out = _pytest(work, cache)
        results["full_at_start"] = "ok" if "no space left on device" in out and paid() - before == 1 else "FAILED"
        print("4. 12 KiB free, twelve new prompts (the pack outgrows it mid-run)")
        filler.unlink()
        with open(filler, "wb") as handle:
            handle.write(b"\0" * (os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize - 12 * 1024))
        suite([f"neu-{n}" for n in range(12)] + ["neu-0"])
        before = paid()
        out = _pytest(work, cache)
        results["full_mid_run"] = (
            "ok" if "no space left on device" in out and "found on write" in out and paid() - before == 12 else "FAILED"
        )
    subprocess.run(["umount", str(mount)], check=False)
    shutil.rmtree(work, ignore_errors=True)
    mount.rmdir()
    print(" ".join(f"{name}={value}" for name, value in results.items()))


if __name__ == "__main__":
    main()
