"""Judge requests a run pays for: selection and the hard spend cap, counted at the judge server.

Two suites, judged by the shipped loopback server (OpenAI wire format, counting requests),
each pytest run a subprocess with an empty cache (every planned call is a request):

1. the issue's 5-language suite, 16 cases each, per-case thresholds (``task_quality >= 1``)
   and a per-language mean: the full run, ``--llmjudge-language sw``, ``-k "sw and mean"``,
   ``-m nightly -k "mean and all"`` (the ``all`` row, which needs every case);
2. a 300-call suite (5 languages x 60 cases) with ``--llmjudge-max-calls 100``, in one process
   and with ``-n 2`` (pytest-xdist): requests made, the exit code, and how many passed items'
   judge calls were not made (from the JUnit XML: a passed case item whose output the server
   never saw).

The last line is ``sw_over_full=<x> k_over_full=<y> cap_requests=<n> cap_xdist_requests=<m>
cap_exit=<code> passed_unjudged=<k>``.

    python benchmarks/spend.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

LANGUAGES = ("de", "fr", "hi", "sw", "ta")


def suite_text(base_url: str, per_language: int) -> str:
    cases = "\n".join(
        f"  - {{id: {language}-{i}, language: {language}, input: 'say {i}', output: 'text {language} {i}'}}"
        for language in LANGUAGES
        for i in range(per_language)
    )
    return f"""\
suite: spend
tags: [nightly]
judge: {{provider: openai, model: loopback-judge, base_url: "{base_url}"}}
assert: [task_quality >= 1]
aggregate: [mean(task_quality) >= 1.5]
cases:
{cases}
"""


def run(directory: Path, server: LoopbackServer, *args: str) -> tuple[int, int, str]:
    """``(requests, exit code, stdout)`` of one ``pytest --llmjudge`` subprocess, with an empty cache
    (xdist workers share calls through it)."""
    before = server.stats()["requests"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    cache = tempfile.mkdtemp(prefix="cache-", dir=directory)
    command = [sys.executable, "-m", "pytest", "--llmjudge", f"--llmjudge-cache-dir={cache}", "-p", "no:cacheprovider"]
    command.extend(args)
    done = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False, env=env)
    return server.stats()["requests"] - before, done.returncode, done.stdout


def judged_since(server: LoopbackServer, start: int) -> set[str]:
    found = set()
    for request in server.requests[start:]:
        match = re.search(r"text (\w+) (\d+)", request.last_user_text)
        if match:
            found.add(f"{match[1]}-{match[2]}")
    return found


def passed_cases(junit: Path) -> set[str]:
    passed = set()
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("name", "")
        if any(child.tag in ("failure", "error", "skipped") for child in case) or name.startswith("mean"):
            continue
        passed.add(name.split("[")[0])
    return passed


def main() -> None:
    judge = ScriptedJudge({"task_quality": 2})
    with LoopbackServer(responder=judge) as server, tempfile.TemporaryDirectory() as tmp:
        five = Path(tmp) / "five"
        five.mkdir()
        (five / "suite.yaml").write_text(suite_text(server.openai_base_url, 16), encoding="utf-8")
        print("5 languages x 16 cases, per-case thresholds and a per-language mean (80 judge calls):")
        results: dict[str, int] = {}
        for name, args in (
            ("full", ()),
            ("--llmjudge-language sw", ("--llmjudge-language", "sw")),
            ('-k "sw and mean"', ("-k", "sw and mean")),
            ('-m nightly -k "mean and all"', ("-m", "nightly", "-k", "mean and all")),
        ):
            requests, code, stdout = run(five, server, *args)
            plan = next((line for line in stdout.splitlines() if line.startswith("llmjudge: ")), "")
            results[name] = requests
            print(f"  {name:<32} {requests:>4} requests, exit {code}   {plan}")

        big = Path(tmp) / "big"
        big.mkdir()
        (big / "suite.yaml").write_text(suite_text(server.openai_base_url, 60), encoding="utf-8")
        print("5 languages x 60 cases (300 judge calls), --llmjudge-max-calls 100:")
        capped: dict[str, tuple[int, int, int]] = {}
        for name, args in (("one process", ()), ("-n 2", ("-n", "2"))):
            start = len(server.requests)
            junit = big / f"junit-{len(capped)}.xml"
            requests, code, stdout = run(big, server, "--llmjudge-max-calls", "100", f"--junitxml={junit}", *args)
            passed = passed_cases(junit)
            unjudged = passed - judged_since(server, start)
            capped[name] = (requests, code, len(unjudged))
            refused = next((line for line in stdout.splitlines() if "spend cap" in line), "")
            print(
                f"  {name:<12} {requests:>4} requests, exit {code}, {len(passed)} case items passed, "
                f"of them not judged: {len(unjudged)}"
            )
            if refused:
                print(f"    {refused[:160]}")
        full = results["full"]
        by_k = results['-k "sw and mean"']
        print(
            f"sw_over_full={results['--llmjudge-language sw'] / full:.3f} "
            f"k_over_full={by_k / full:.3f} "
            f"cap_requests={capped['one process'][0]} cap_xdist_requests={capped['-n 2'][0]} "
            f"cap_exit={capped['one process'][1]} "
            f"passed_unjudged={capped['one process'][2] + capped['-n 2'][2]}"
        )


if __name__ == "__main__":
    main()
