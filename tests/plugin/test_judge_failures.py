"""Judge failures diagnosed end to end: the raw unparseable reply, its re-ask on the next run, dead judges.

pytester runs against the project's loopback server (and against a closed port); the real
openai SDK makes every call.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from builders import judged, suite_text

from pytest_llmjudge.testing import LoopbackServer, Reply, ScriptedJudge

BAD_REPLY = "I would rate it fine.\x1b[31m Score: two\nThanks!"


def suite(base_url: str, ids: tuple[str, ...] = ("fr-1",)) -> str:
    cases = [
        {"id": case_id, "language": "fr", "input": "Dis bonjour.", "output": f"Bonjour {n} !"}
        for n, case_id in enumerate(ids)
    ]
    return suite_text("failures", cases, judge=judged(base_url, provider="openai"))


def case_records(path: Path) -> list[dict[str, object]]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return list(document["cases"])


def test_an_unparseable_reply_is_shown_and_asked_again_on_the_next_run(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    scripted_judge.scores = lambda query: BAD_REPLY
    pytester.makefile(".yaml", failures=suite(loopback.openai_base_url))

    first = pytester.runpytest("--llmjudge", "--llmjudge-report=json:first.json", "--llmjudge-report=html:first.html")
    first.assert_outcomes(failed=1)
    assert loopback.stats()["requests"] == 3  # the prompt and two re-asks with a note
    # In the failure, on one line with its control characters (ESC, newline) made visible:
    first.stdout.fnmatch_lines(
        [
            "*UNSCORED: fr-1 [[]fr[]] linguistic_acceptability = -, expected >= 1",
            "*reason:*no JSON object*",
            r"*raw reply:     I would rate it fine.\x1b[[]31m Score: two\x0aThanks!",
        ]
    )
    (record,) = case_records(pytester.path / "first.json")
    assert record["raw_reply"] == BAD_REPLY
    assert "no JSON object" in str(record["unscored_reason"])
    # The HTML report embeds the reply (control characters made visible) for its case view.
    assert '"raw":"I would rate it fine.\\\\x1b[31m Score: two\\nThanks!"' in (pytester.path / "first.html").read_text(
        encoding="utf-8"
    )

    # The judge now answers well: the next run asks the first prompt again instead of
    # replaying the cached failure, and the case is scored.
    scripted_judge.scores = {"linguistic_acceptability": 2}
    second = pytester.runpytest("--llmjudge", "--llmjudge-report=json:second.json")
    second.assert_outcomes(passed=1)
    assert loopback.stats()["requests"] == 4
    assert loopback.requests[-1].last_user_text == loopback.requests[0].last_user_text
    second.stdout.fnmatch_lines(["*judge calls: 1 provider requests*1 unparseable cache hits re-asked*"])
    (record,) = case_records(pytester.path / "second.json")
    assert (record["score"], record["raw_reply"]) == (2, None)

    third = pytester.runpytest("--llmjudge")
    third.assert_outcomes(passed=1)
    assert loopback.stats()["requests"] == 4, "the good reply replaced the bad one in the cache"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_judge_gets_one_headline_and_one_line_per_case(pytester: pytest.Pytester) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    pytester.makefile(".yaml", failures=suite(base_url, ("fr-1", "fr-2", "fr-3")))

    result = pytester.runpytest("--llmjudge", "--llmjudge-max-retries=1", "--llmjudge-retry-backoff=0.01")
    result.assert_outcomes(failed=3)
    headline = (
        f"llmjudge: judge openai:loopback-judge at {base_url} unreachable: 3 of 3 calls failed (connection refused)"
    )
    result.stdout.fnmatch_lines(["*= llmjudge summary =*", headline])
    assert result.stdout.lines.count(headline) == 1
    failures = [line for line in result.stdout.lines if "judge call failed" in line and "UNSCORED" in line]
    assert len(failures) == 3
    assert all(
        line.endswith(
            f"judge call failed: openai:loopback-judge at {base_url}: connection failed (connection refused)"
            " after 2 attempts"
        )
        for line in failures
    )
    assert not any(line.startswith(("  input:", "  output:", "  reason:")) for line in result.stdout.lines)


def test_a_rejected_key_gets_one_headline_and_credentials_stay_out(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    loopback.responder = lambda request: Reply(text="Incorrect API key provided", status=401)
    base_url = loopback.openai_base_url.replace("http://", "http://ci-user:hunter2-secret@")
    pytester.makefile(".yaml", failures=suite(base_url, ("fr-1", "fr-2")))

    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*= llmjudge summary =*",
            f"llmjudge: judge openai:loopback-judge at {loopback.openai_base_url} rejected the credentials: "
            "2 of 2 calls failed (HTTP 401)",
        ]
    )
    assert loopback.stats()["requests"] == 2, "a 401 is not retried"
    assert "hunter2-secret" not in result.stdout.str()


def test_xdist_workers_ask_an_earlier_runs_unparseable_prompt_once(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge
) -> None:
    # The worker that owns a call asks again; the other waits for its fresh reply rather
    # than asking too, so 4 stale prompts cost 4 requests, not 8. The second run starts well
    # within a second of the first (its controller is in-process): each worker once judged
    # "this run's" by its own start less a second, took the first run's unparseable replies as
    # another worker's and used them (5 of 6 runs failed); the controller's start decides now.
    ids = ("fr-1", "fr-2", "fr-3", "fr-4")
    scripted_judge.scores = lambda query: BAD_REPLY
    pytester.makefile(".yaml", failures=suite(loopback.openai_base_url, ids))
    pytester.runpytest("--llmjudge").assert_outcomes(failed=4)
    assert loopback.stats()["requests"] == 12  # each prompt and its two re-asks

    scripted_judge.scores = {"linguistic_acceptability": 2}
    result = pytester.runpytest_inprocess("--llmjudge", "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=4)
    assert loopback.stats()["requests"] == 16
    result.stdout.fnmatch_lines(["*judge calls: 4 provider requests*4 unparseable cache hits*"])
