"""``MockProvider`` under ``pytest --llmjudge``, registered from a conftest: docs/extending.md's example as written.

pytester in-process; no HTTP anywhere. Failures a handler injects reach the cases as a
real provider's do: retried, then the case unscored with the message, never a pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def doc_blocks() -> dict[str, str]:
    """The blocks marked ``<!-- mock-example: NAME -->`` in docs/extending.md, by file name."""
    text = DOC.read_text(encoding="utf-8")
    pattern = re.compile(r"<!-- mock-example: (\S+) -->\n```\w+\n(.*?)^```$", re.DOTALL | re.MULTILINE)
    return dict(pattern.findall(text))


def doc_output() -> list[str]:
    """The output lines the page shows for the example (the ```text block after it), but the elided ones."""
    text = DOC.read_text(encoding="utf-8").split("<!-- mock-example: greetings.yaml -->", 1)[1]
    block = re.search(r"```text\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    assert block is not None
    return [line for line in block[1].splitlines() if line != "..."]


def test_the_documented_example_runs_as_shown(pytester: pytest.Pytester) -> None:
    blocks = doc_blocks()
    assert set(blocks) == {"conftest.py", "greetings.yaml"}
    pytester.makeconftest(blocks["conftest.py"])
    pytester.makefile(".yaml", greetings=blocks["greetings.yaml"])

    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:report.json")
    result.assert_outcomes(passed=1, failed=1)
    *lines, outcome = doc_output()
    result.stdout.re_match_lines([re.escape(line) for line in lines])
    assert outcome == "1 failed, 1 passed"
    cases = {record["case"]: record for record in json.loads((pytester.path / "report.json").read_text())["cases"]}
    assert cases["fr-1"]["score"] == 2 and cases["fr-1"]["passed"] is True
    assert cases["de-1"]["score"] is None and cases["de-1"]["passed"] is False
    assert "HTTP 503: overloaded after 5 attempts" in str(cases["de-1"]["unscored_reason"])


CONFTEST = """
import json
from pytest_llmjudge import ProviderCallError, ProviderReply, Usage
from pytest_llmjudge.testing import MockProvider, ScriptedJudge

scripted = ScriptedJudge({"linguistic_acceptability": 2})
seen = []


def handler(request):
    seen.append(request)
    if len(seen) == 1:  # the first request of the run is refused once, as a 429 would be
        raise ProviderCallError("HTTP 429: slow down", retryable=True, status=429, retry_after=0)
    return ProviderReply(text=scripted(request), model="served-" + request.model, usage=Usage(40, 7))


judge = MockProvider(handler, name="house")


def pytest_llmjudge_providers():
    return {"house": judge.factory()}


def pytest_sessionfinish(session):
    with open("seen.json", "w", encoding="utf-8") as handle:
        json.dump([[r.provider, r.model, r.seed, r.user] for r in seen], handle)
"""

SUITE = """
suite: house
judge: {provider: house, model: judge-1, seed: 11}
cases:
  - {id: fr-1, language: fr, input: Dis bonjour., output: Bonjour !}
  - {id: de-1, language: de, input: Sag hallo., output: Hallo!}
assert:
  - linguistic_acceptability >= 1
"""


def test_the_handler_sees_each_request_and_a_retried_failure_still_scores(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", house=SUITE)

    result = pytester.runpytest("--llmjudge", "--llmjudge-report=json:report.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*judge calls: 3 provider requests, 0 cache hits, 1 retries; tokens in/out 80/14*"])
    requests = json.loads((pytester.path / "seen.json").read_text(encoding="utf-8"))
    assert len(requests) == 3
    assert {(provider, model, seed) for provider, model, seed, _ in requests} == {("house", "judge-1", 11)}
    assert sum("Bonjour !" in user for *_, user in requests) + sum("Hallo!" in user for *_, user in requests) == 3
    cases = json.loads((pytester.path / "report.json").read_text())["cases"]
    assert sorted((record["case"], record["score"]) for record in cases) == [("de-1", 2), ("fr-1", 2)]

    # The replies were cached like a real provider's: the second run asks nothing.
    again = pytester.runpytest("--llmjudge")
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["*judge calls: 0 provider requests, 2 cache hits*"])
