"""The hard spend cap (``--llmjudge-max-calls``, ``--llmjudge-max-cost``, ``--llmjudge-max-tokens``),
counted at the loopback judge server: no request past the cap is sent, the items that needed one
fail naming the cap (never pass or skip), the run exits non-zero, and cache hits are free."""

from __future__ import annotations

import re

import pytest
from builders import judged, suite_text

from pytest_llmjudge.testing import Fault, LoopbackServer

LANGUAGES = ("de", "fr", "hi", "sw", "ta")


def suite(base_url: str, per_language: int = 4, repeats: int | None = None) -> str:
    cases = [
        {"id": f"{language}-{i}", "language": language, "input": f"say {i}", "output": f"text {language} {i}"}
        for language in LANGUAGES
        for i in range(per_language)
    ]
    judge = judged(base_url, provider="openai") | ({} if repeats is None else {"repeats": repeats})
    return suite_text(
        "capped", cases, judge=judge, asserts=["task_quality >= 1"], aggregate=["mean(task_quality) >= 1.5"]
    )


def judged_cases(loopback: LoopbackServer) -> set[str]:
    """The case outputs the server was asked to judge (``text de 0`` -> ``de-0``)."""
    found = set()
    for request in loopback.requests:
        match = re.search(r"text (\w+) (\d+)", request.last_user_text)
        assert match, request.last_user_text
        found.add(f"{match[1]}-{match[2]}")
    return found


def test_max_calls_sends_no_request_past_the_cap_and_passes_no_unjudged_item(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url))
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-max-calls", "7", "--llmjudge-concurrency", "3", "-p", "no:randomly", "-v"
    )
    assert loopback.stats()["requests"] == 7
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    judged = judged_cases(loopback)
    assert len(judged) == 7
    passed = [line.split("::")[1].split(" ")[0] for line in result.stdout.lines if re.search(r"::\S+ PASSED", line)]
    cases = {name.split("[")[0] for name in passed if not name.startswith("mean")}
    rows = {name.split("[")[1].rstrip("]") for name in passed if name.startswith("mean")}
    assert cases == judged, "a case item passes exactly when its call was made"
    assert all({f"{language}-{i}" for i in range(4)} <= judged for language in rows), "a row passes only fully judged"
    assert "all" not in rows
    result.assert_outcomes(passed=7 + len(rows), failed=13 + 6 - len(rows))
    result.stdout.fnmatch_lines(
        [
            "*NOT JUDGED: *task_quality, expected >= 1: not judged: --llmjudge-max-calls 7 reached "
            "(7 requests sent; 20 judge calls planned)*",
            "*NOT JUDGED: mean(task_quality) for all: 13 of 20 case(s) not judged: not judged: --llmjudge-max-calls 7*",
            "llmjudge: spend cap: 13 judge request(s) not sent, their items fail; first: not judged: "
            "--llmjudge-max-calls 7 reached*",
        ],
        consecutive=False,
    )
    # A re-run pays only for what the capped run did not judge: cache hits are free, not counted.
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-calls", "13")
    assert loopback.stats()["requests"] == 20
    result.assert_outcomes(passed=26)
    assert result.ret == pytest.ExitCode.OK


def test_retries_and_repeats_count_against_the_cap(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    """Every attempt is a request: 2 faults then success is 3 requests of one call; repeats: 2 is 2 calls a case."""
    loopback.inject(Fault.SERVER_ERROR, times=2)
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, per_language=1, repeats=2))
    result = pytester.runpytest(
        "--llmjudge",
        "--llmjudge-max-calls",
        "6",
        "--llmjudge-concurrency",
        "1",
        "--llmjudge-retry-backoff",
        "0.001",
        "--llmjudge-no-cache",
    )
    assert loopback.stats()["requests"] == 6, "2 failed attempts + 4 answered samples"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["judge calls: 6 provider requests, 0 cache hits, 2 retries, *"])
    # 4 answered samples judge at most 2 of the 5 cases (both samples each); which ones depends on the
    # order the retries let the calls through. A case and its row pass together, or fail together.
    counts = result.parseoutcomes()
    assert counts["passed"] <= 4 and counts["passed"] % 2 == 0
    assert counts["passed"] + counts["failed"] == 11


def test_max_tokens_and_max_cost_reserve_before_send(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, per_language=2))
    # A generous token cap: the reservations (prompt bytes + max_tokens) fit a few requests only.
    first = loopback.stats()["requests"]
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-tokens", "4000", "--llmjudge-no-cache")
    sent = loopback.stats()["requests"] - first
    assert 0 < sent < 10
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*not judged: --llmjudge-max-tokens 4000 reached (*tokens spent or reserved*"])
    # No price for the loopback model: --llmjudge-max-cost refuses to send what it can't price.
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-cost", "0.01", "--llmjudge-no-cache")
    assert loopback.stats()["requests"] - first == sent
    result.stdout.fnmatch_lines(["*model 'loopback-judge' has no price (set llmjudge_prices or --llmjudge-price)*"])
    # Priced at $1/$2 per 1M tokens, each request reserves about $0.0045 (its prompt and max_tokens)
    # and costs about $0.0007: five cents pay for the whole suite, sent at once.
    price = ("--llmjudge-price", "loopback-judge = 1 2", "--llmjudge-no-cache")
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-cost", "0.05", *price)
    assert loopback.stats()["requests"] - first == sent + 10
    assert result.ret == pytest.ExitCode.OK
    # Six tenths of a cent admit one reservation at a time: requests refused while others are in flight.
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-cost", "0.006", *price)
    assert 0 < loopback.stats()["requests"] - first - sent - 10 < 10
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*not judged: --llmjudge-max-cost 0.006 reached (est. $*spent or reserved*"])


def test_bad_cap_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=suite("http://127.0.0.1:9/v1"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-max-calls", "-3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--llmjudge-max-calls can't be negative, got -3*"])


def test_an_item_that_tolerates_an_unjudged_score_still_fails(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    """The fixture's verdict past the cap is unscored; a test that accepts that fails anyway, naming the cap."""
    pytester.makepyfile(
        """
def test_tolerant(llmjudge_judge):
    first = llmjudge_judge.verdict("Bonjour", language="fr")
    second = llmjudge_judge.verdict("Salut", language="fr")
    assert first.scored and (second.value is None or second.value >= 0)
"""
    )
    result = pytester.runpytest(
        "--llmjudge",
        f"--llmjudge-base-url={loopback.openai_base_url}",
        "--llmjudge-model=loopback-judge",
        "--llmjudge-max-calls=1",
        "--llmjudge-no-cache",
    )
    assert loopback.stats()["requests"] == 1
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*NOT JUDGED: 1 score(s) this item needs were not judged: not judged: --llmjudge-max-calls 1 reached*"]
    )


def test_batch_mode_batches_only_what_fits_the_cap(pytester: pytest.Pytester, loopback: LoopbackServer) -> None:
    pytester.makefile(".yaml", suite=suite(loopback.openai_base_url, per_language=2))
    result = pytester.runpytest(
        "--llmjudge", "--llmjudge-batch", "--llmjudge-batch-poll=0.05", "--llmjudge-max-calls=3"
    )
    assert loopback.stats()["batch"]["batch_requests"] == 3
    assert loopback.requests == [], "the 7 calls past the cap are refused online too"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes()["passed"] <= 3 + 1
    result.stdout.fnmatch_lines(["*not judged: --llmjudge-max-calls 3 reached*"])
