"""A cache location that can't be used: the run goes on, nothing paid for is lost, one headline says why.

Tested for real, as the tests run (as root, where permission bits stop nothing): a file where
the cache directory belongs (also a directory that can't be created under it), a disk that
can't take another byte (``RLIMIT_FSIZE`` 0 in a subprocess: every write fails with EFBIG,
as on a full or read-only disk, while reads go on), and foreign entries in the pack folder.
The full and read-only errnos themselves are injected in ``tests/unit/test_cache.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from builders import judged, suite_text

from pytest_llmjudge.testing import LoopbackServer


def _suite(pytester: pytest.Pytester, outputs: list[str]) -> None:
    cases = [{"id": f"c{n}", "language": "de", "input": "frage", "output": o} for n, o in enumerate(outputs)]
    pytester.makefile(".yaml", suite=suite_text("where", cases, judge=judged(provider="openai")))


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_a_file_where_the_cache_directory_belongs_is_one_headline_and_the_run_goes_on(
    pytester: pytest.Pytester, loopback: LoopbackServer, where: str
) -> None:
    (pytester.path / "a-file").write_text("not a directory")
    _suite(pytester, ["eins", "zwei", "eins"])  # two prompts, one asked twice
    result = pytester.runpytest(
        "--llmjudge",
        f"--llmjudge-base-url={loopback.openai_base_url}",
        f"--llmjudge-cache-dir={where}",
        "--llmjudge-report=json:report.json",
    )
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    assert "output target failed" not in text and "INTERNALERROR" not in text
    headline = f"llmjudge: cache {pytester.path / where} can't be used (not a directory: {pytester.path / 'a-file'}"
    assert text.count(headline) == 1, text
    assert "the run went on without it; replies paid for were used from memory and not stored" in text
    assert len(loopback.requests) == 2  # each prompt paid once
    document = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert any(line.startswith(headline) for line in document["run"]["judge_headlines"])
    assert (pytester.path / "a-file").read_text() == "not a directory"


def test_a_directory_named_like_a_pack_and_junk_are_ignored_with_a_warning(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    packs = pytester.path / "cache" / "v1" / "packs"
    (packs / "evil.pack").mkdir(parents=True)
    (packs / "junk.pack").write_bytes(b"\x00" * 64)
    _suite(pytester, ["eins"])
    args = ("--llmjudge", f"--llmjudge-base-url={loopback.openai_base_url}", "--llmjudge-cache-dir=cache")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "INTERNALERROR" not in text
    assert f"llmjudge: cache {pytester.path / 'cache'}: ignored 'evil.pack' in {packs}: not a regular file" in text
    assert "ignored 'junk.pack'" in text and "not a pack file (no record at its start)" in text
    again = pytester.runpytest(*args)  # the reply was cached next to them, and is found
    again.assert_outcomes(passed=1)
    assert len(loopback.requests) == 1


_NO_WRITES = """\
import resource, signal, sys, tempfile
import pytest
tempfile.gettempdir()  # probed (by writing a file) now, while files may still grow
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
sys.exit(pytest.main(sys.argv[1:]))
"""


def test_a_disk_that_takes_no_byte_still_serves_the_cache_and_uses_the_replies_paid_for(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    """A read-only cache still works (docs/cache.md): its entries are served, and a new reply,
    which can't be stored, is paid once and used."""
    _suite(pytester, ["eins"])
    args = ["--llmjudge", f"--llmjudge-base-url={loopback.openai_base_url}", "--llmjudge-cache-dir=cache"]
    pytester.runpytest(*args).assert_outcomes(passed=1)  # an earlier run fills the cache
    _suite(pytester, ["eins", "zwei", "zwei"])
    run = subprocess.run(
        [sys.executable, "-c", _NO_WRITES, *args, "-p", "no:cacheprovider", "-s"],  # -s: no capture files
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
    packs = pytester.path / "cache" / "v1" / "packs"
    assert f"can't be used (file too large (a full disk or a file size limit): {packs}/" in run.stdout
    assert ".pack, found on write): the run went on without it" in run.stdout
    assert "output target failed" not in run.stdout
    assert "judge calls: 1 provider requests, 1 cache hits" in run.stdout, run.stdout[-1500:]
    assert len(loopback.requests) == 2  # "eins" once, in the first run; "zwei" once, though asked twice


def test_batch_mode_which_needs_the_cache_is_a_usage_error_with_an_unwritable_one(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    """Batch replies reach the items through the cache and its records resume a batch: without
    a writable cache nothing is submitted (and paid for) at all."""
    (pytester.path / "a-file").write_text("not a directory")
    _suite(pytester, ["eins"])
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-batch",
        f"--llmjudge-base-url={loopback.openai_base_url}",
        "--llmjudge-cache-dir=a-file",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--llmjudge-batch needs a cache it can write: *a-file can't be used (not a directory: *a-file*, found at start)*"
        ]
    )
    assert loopback.requests == [] and loopback.batch_requests == []
