"""docs/extending.md's plugin example (a rubric, a provider, a metric, a target) runs as the page says.

The conftest.py and the suite are read from the page; the gateway provider talks plain HTTP
(standard library) to the loopback server, which speaks its JSON. The page says: both items
pass with one provider request, and the judge is shown the target's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def test_the_extending_example_runs_against_the_loopback_server(pytester: pytest.Pytester) -> None:
    text = DOC.read_text(encoding="utf-8")
    suite = re.search(r"^```yaml\n(suite: extensions\n.*?)^```$", text, re.DOTALL | re.MULTILINE)
    conftest = re.search(r'^```python\n("""pytest-llmjudge extensions.*?)^```$', text, re.DOTALL | re.MULTILINE)
    assert suite is not None and conftest is not None
    pytester.makeconftest(conftest[1])
    pytester.makefile(".yaml", extensions=suite[1])

    judge = ScriptedJudge({"politeness": 3})
    with LoopbackServer(responder=judge) as server:
        result = pytester.runpytest("--llmjudge", f"--llmjudge-base-url={server.openai_base_url}")
        requests = len(server.requests)
    result.assert_outcomes(passed=2)
    assert requests == 1
    assert [query.output for query in judge.queries] == ["THANK YOU FOR WAITING"]
