"""A judge reply over the size cap (``judges.base.MAX_REPLY_BYTES``, 1 MiB) end to end: the case is
unscored with the reason, and the reply reaches neither the cache nor any report."""

from __future__ import annotations

import json

import pytest

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.judges.base import MAX_REPLY_BYTES
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge


def test_a_huge_judge_reply_is_unscored_and_stored_nowhere(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    marker = "HUGE-REPLY-MARKER"
    scripted_judge.scores = lambda query: (marker + " ") * (MAX_REPLY_BYTES // len(marker) + 1)
    pytester.makefile(
        ".yaml",
        suite="suite: huge\njudge: {provider: openai, model: loopback-judge}\n"
        "cases:\n  - {id: c1, language: de, input: frage, output: antwort}\nassert: [linguistic_acceptability >= 1]\n",
    )
    result = pytester.runpytest(
        "--llmjudge",
        "-rA",
        f"--llmjudge-base-url={loopback.openai_base_url}",
        "--junitxml=junit.xml",
        "--llmjudge-report=json:report.json",
        "--llmjudge-report=html:report.html",
    )
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "UNSCORED" in text and "reply too large" in text and f"over the {MAX_REPLY_BYTES:,}-byte cap" in text
    assert len(loopback.requests) == 1  # not retried
    for name in ("junit.xml", "report.json", "report.html"):
        written = (pytester.path / name).read_text(encoding="utf-8")
        assert marker not in written and len(written) < 200_000, name
    assert marker not in text
    assert DirectoryStore(pytester.path / ".llmjudge_cache" / "v1").keys() == []
    document = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    (case,) = document["cases"]
    assert case["score"] is None and "reply too large" in json.dumps(case)
