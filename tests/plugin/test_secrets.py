"""API keys never leave the process: not in the cache, reports, JUnit, logs or error messages.

Runs pytest with sentinel keys in ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` against the
loopback server, whose answers echo the key the way real providers do (``401 Incorrect API
key provided: sk-...``, and in 400/500 bodies and batch-line errors), with the SDKs' own
debug logging on and pytest capturing logs at DEBUG into JUnit. Then every byte the runs
wrote -- stdout, stderr, JUnit XML, JSON and HTML reports, the cache directory (replies,
batch records) and anything else under the run directory -- is scanned for the keys.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from builders import judged, suite_text

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.testing import Fault, LoopbackServer, ReceivedRequest, Reply, ScriptedJudge

OPENAI_KEY = "sk-sentinel-openai-4c2f9e1b7d"
ANTHROPIC_KEY = "sk-ant-sentinel-8e3a6d0c51"
SENTINELS = (OPENAI_KEY, ANTHROPIC_KEY, "sentinel-openai-4c2f9e1b7d", "sentinel-8e3a6d0c51")


def echoing_judge(judge: ScriptedJudge) -> object:
    """The scripted judge, except that some cases get provider errors quoting the key."""

    def respond(request: ReceivedRequest) -> Reply | str:
        key = OPENAI_KEY if request.provider == "openai" else ANTHROPIC_KEY
        text = request.last_user_text
        if "answer-401" in text:
            return Reply(text=f"Incorrect API key provided: {key}. You can find your API key at ...", status=401)
        if "answer-400" in text:
            return Reply(text=f"Invalid request for key {key}: bad things", status=400)
        if "answer-500" in text:
            return Reply(text=f"upstream failed while authenticating {key}", status=500)
        return judge(request)

    return respond


def secrets_suite(name: str, provider: str, base_url: str) -> str:
    cases = [
        {"id": f"case-{kind}", "language": "de", "input": "frage", "output": f"answer-{kind}"}
        for kind in ("ok", "401", "400", "500")
    ]
    return suite_text(
        name, cases, judge=judged(base_url, provider=provider), aggregate=["mean(linguistic_acceptability) >= 1"]
    )


def scan(root: Path, texts: dict[str, str]) -> list[str]:
    leaks = [f"{name}: {secret}" for name, text in texts.items() for secret in SENTINELS if secret in text]
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            leaks += [f"{path.relative_to(root)}: {s}" for s in SENTINELS if s.encode() in data]
    return leaks


@pytest.mark.parametrize("mode", ["online", "xdist", "batch"])
def test_sentinel_keys_appear_in_no_output(tmp_path: Path, mode: str) -> None:
    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(responder=echoing_judge(judge)) as server:  # type: ignore[arg-type]
        (tmp_path / "openai_suite.yaml").write_text(
            secrets_suite("keys-openai", "openai", server.openai_base_url), encoding="utf-8"
        )
        (tmp_path / "anthropic_suite.yaml").write_text(
            secrets_suite("keys-anthropic", "anthropic", server.anthropic_base_url), encoding="utf-8"
        )
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("LLMJUDGE_")}
        env.update(
            OPENAI_API_KEY=OPENAI_KEY,
            ANTHROPIC_API_KEY=ANTHROPIC_KEY,
            OPENAI_LOG="debug",
            ANTHROPIC_LOG="debug",
        )
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "-rA",
            "-v",
            "--llmjudge-max-retries=1",
            "--log-level=DEBUG",
            "-o",
            "junit_logging=all",
            "--junitxml=junit.xml",
            "--llmjudge-report=json:report.json",
            "--llmjudge-report=html:report.html",
        ]
        if mode == "xdist":
            command += ["-n", "2"]
        if mode == "batch":
            command += ["--llmjudge-batch", "--llmjudge-batch-poll=0.05"]
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        received = server.requests + server.batch_requests

    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert received and all(r.api_key_present for r in server.requests), "the keys were really sent"
    # The provider errors reached the report, with the key hidden.
    assert "Incorrect API key provided: ***" in run.stdout
    assert "HTTP 400: Invalid request for key ***" in run.stdout
    assert (tmp_path / "junit.xml").exists() and (tmp_path / "report.json").exists()
    assert DirectoryStore(tmp_path / ".llmjudge_cache" / "v1").keys(), "replies were cached"
    leaks = scan(tmp_path, {"stdout": run.stdout, "stderr": run.stderr})
    assert leaks == []


def test_key_echoed_in_a_justification_and_base_url_credentials_appear_in_no_output(
    pytester: pytest.Pytester, loopback: LoopbackServer, scripted_judge: ScriptedJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge that quotes the key back (a justification, an unparseable raw reply) and a base
    URL with ``user:password@``: neither reaches the terminal, JUnit, or the JSON/HTML reports."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    password = "pa55word-7f3e1c"
    scripted_judge.justification = f"my key is {OPENAI_KEY}, see http://bob:{password}@proxy.example/v1"
    scripted_judge.scores = lambda query: f"no JSON, only the key {OPENAI_KEY}" if "echo" in query.output else 0
    pytester.makefile(
        ".yaml",
        suite="""\
suite: echo
judge: {provider: openai, model: loopback-judge}
cases:
  - {id: low, language: de, input: frage, output: antwort}
  - {id: raw, language: de, input: frage, output: echo}
assert: [linguistic_acceptability >= 1]
""",
    )
    base_url = loopback.openai_base_url.replace("http://", f"http://judge-user:{password}@")
    result = pytester.runpytest(
        "--llmjudge",
        "-v",
        "-rA",
        f"--llmjudge-base-url={base_url}",
        "--junitxml=junit.xml",
        "--llmjudge-junit-properties",
        "--llmjudge-report=json:report.json",
        "--llmjudge-report=html:report.html",
    )
    result.assert_outcomes(failed=2)
    assert loopback.requests, "the judge was really called through the URL with credentials"
    assert "justification: my key is ***, see http://***@proxy.example/v1" in result.stdout.str()
    secrets = (*SENTINELS, password, "judge-user")
    outputs = {"stdout": result.stdout.str() + result.stderr.str()}
    for name in ("junit.xml", "report.json", "report.html"):
        outputs[name] = (pytester.path / name).read_text(encoding="utf-8")
    assert [f"{name}: {s}" for name, text in outputs.items() for s in secrets if s in text] == []
    assert "http://***@127.0.0.1" in outputs["report.json"], "the URL is kept, its credentials are not"


NL_KEY_CORE = "nl-sentinel-5d1e8a93c2"
"""Unique to the key below: no output may hold it, however the key is spelled there."""
NL_PASSWORD = "pw-sentinel-0b7c4e"


def _spellings(raw: str, user: str, password: str) -> list[str]:
    """Every form a message can give the key and the base URL's credentials (util/redaction.py's list)."""
    stripped = raw.strip()
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    return [
        stripped,
        repr(raw),
        repr(repr(raw)),
        repr(f"Bearer {raw}".encode()),
        json.dumps({"key": raw}),
        quote(raw, safe=""),
        quote_plus(raw),
        f"Authorization: Basic {basic}",
    ]


@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_key_with_its_file_newline_is_stripped_and_no_spelling_of_a_secret_reaches_an_output(
    pytester: pytest.Pytester,
    loopback: LoopbackServer,
    scripted_judge: ScriptedJudge,
    monkeypatch: pytest.MonkeyPatch,
    ending: str,
) -> None:
    """``OPENAI_API_KEY`` as a key file gives it (a trailing newline or CRLF): the request goes out
    with the stripped key (no ``Illegal header value``). A judge quoting the key in every
    spelling, and a gateway echoing the request's headers (``Bearer <key>``, and the
    ``Authorization: Basic`` httpx derives from a base URL's ``user:password``), reach none of
    the terminal, JUnit, JSON and HTML outputs."""
    raw = f"sk-{NL_KEY_CORE}{ending}"
    user = "judge-user-9c1d"
    monkeypatch.setenv("OPENAI_API_KEY", raw)
    scripted_judge.justification = " | ".join(_spellings(raw, user, NL_PASSWORD))
    scripted_judge.scores = {"linguistic_acceptability": 0}

    def respond(request: ReceivedRequest) -> Reply | str:
        if "echo-me" in request.last_user_text:
            return Reply(fault=Fault.ECHO_HEADERS)
        return scripted_judge(request)

    loopback.responder = respond
    credentialed = loopback.openai_base_url.replace("http://", f"http://{user}:{NL_PASSWORD}@")
    for name, url in (("bearer", loopback.openai_base_url), ("basic", credentialed)):
        pytester.makefile(
            ".yaml",
            **{
                f"suite_{name}": f"""\
suite: spellings-{name}
judge: {{provider: openai, model: loopback-judge, base_url: "{url}"}}
cases:
  - {{id: echo, language: de, input: frage, output: echo-me-{name}}}
  - {{id: quoted, language: de, input: frage, output: antwort-{name}}}
assert: [linguistic_acceptability >= 1]
"""
            },
        )
    result = pytester.runpytest(
        "--llmjudge",
        "-v",
        "-rA",
        "--llmjudge-max-retries=0",
        "--junitxml=junit.xml",
        "--llmjudge-junit-properties",
        "--llmjudge-report=json:report.json",
        "--llmjudge-report=html:report.html",
    )
    result.assert_outcomes(failed=4)
    assert len(loopback.requests) == 4 and all(r.api_key_present for r in loopback.requests)
    outputs = {"terminal": result.stdout.str() + result.stderr.str()}
    for name in ("junit.xml", "report.json", "report.html"):
        outputs[name] = (pytester.path / name).read_text(encoding="utf-8")
    # The key went out stripped (a Bearer header, not an illegal one); the gateway echoed both headers.
    terminal = outputs["terminal"]
    assert "Illegal header value" not in terminal
    assert "'authorization': 'Bearer ***'" in terminal and "'authorization': 'Basic ***'" in terminal
    assert "linguistic_acceptability = 0" in terminal, "the quoting judge was heard"
    basic = base64.b64encode(f"{user}:{NL_PASSWORD}".encode()).decode()
    leaks = [
        f"{name}: {secret}"
        for name, text in outputs.items()
        for secret in (NL_KEY_CORE, NL_PASSWORD, user, basic, basic[:-2])
        if secret in text
    ]
    assert leaks == []
