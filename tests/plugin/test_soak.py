"""Fault-injection soak: 400 cases, 40% faulty answers, a SIGINT and a SIGKILL midway, then a re-run.

The loopback server answers four requests in ten with a fault -- 429 (with Retry-After),
500, 503, a hang that ends in a closed connection, a truncated body, a body that isn't
JSON, a TCP reset -- and the judge itself answers some prompts with unusable text: every
first ask of one case in ten (the re-ask gets a valid verdict) and every ask of one case in
fifty (which must end unscored). Each case's true score is known (0 for one case in twenty).

Three runs share one cache: the first is interrupted with SIGINT a third of the way, the
second killed with SIGKILL two thirds of the way, the third runs to the end. The signals
are sent on observed progress, never after a fixed sleep: once a run has had its share of
answers (a third of the cases), the server holds every further answer until the signal is
sent, so the run is certainly midway, with its requests in flight, whatever the machine's
load. Afterwards:

* every case item is either passed with the right score, failed with the right score, or
  failed as unscored with a reason -- never passed without a score;
* every cache entry parses, is stored under its key, and holds exactly what the judge
  answered to that prompt; no temporary file is left;
* no prompt whose reply was already cached is sent again (per run: none sent for the
  entries cached when it started), unless that reply does not parse (an earlier run's
  unparseable reply is asked again, not replayed: execution/runner.py), and no run is
  paid twice for one prompt;
* every fault kind was injected at least 20 times.

Size: 400 cases at a fault rate of 40% give about 850 requests over the three runs, so each
of the seven fault kinds is injected 37-60 times (two runs, seed 7), and each interrupted run
stops with hundreds of cases left to do. The property does not grow with size: 600 cases at
30% (the previous version: 1,100 requests, about 45 faults of each kind) cost 7.3 s of CPU
against 6.4 s for this one (measured one after the other, load average 3-5); 1,200 cases at
20% cost 10.4 s and 5,000 cases four times as much again, and checked nothing more. The
subprocess timeouts only stop a hung run; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from builders import judged, rows, suite_text

from pytest_llmjudge.execution.cache_directory import DirectoryStore
from pytest_llmjudge.testing import Fault, LoopbackServer, ReceivedRequest
from pytest_llmjudge.testing.scripted import read_prompt

CASES = 400
CONCURRENCY = 32
FAULTS = [
    Fault.RATE_LIMIT,
    Fault.SERVER_ERROR,
    Fault.OVERLOADED,
    Fault.TIMEOUT,
    Fault.TRUNCATED,
    Fault.MALFORMED_JSON,
    Fault.CONNECTION_RESET,
]
_INDEX = re.compile(r"answer (\d+)")

pytestmark = pytest.mark.soak


def expected_score(index: int) -> int | None:
    """The true score of case ``index``; None when the judge never gives a usable one."""
    if index % 50 == 7:
        return None
    return 0 if index % 20 == 1 else 1 + index % 2


def judge_reply(request: ReceivedRequest) -> str:
    """A deterministic judge: the reply depends on the prompt only."""
    text = request.last_user_text
    match = _INDEX.fullmatch(read_prompt(request.system, text).texts.get("Output to evaluate", ""))
    if match is None:
        return "no case in this prompt"
    index = int(match.group(1))
    score = expected_score(index)
    if score is None:
        return f"Case {index} reads well enough, I suppose."
    if index % 10 == 3 and "could not be used" not in text:
        return '{"linguistic_acceptability": {"justification": "cut off'
    return json.dumps({"linguistic_acceptability": {"justification": f"case {index}", "score": score}})


def soak_suite(base_url: str) -> str:
    languages = ("hi", "bn", "ta", "sw", "yo", "ja", "fr", "ar")
    cases = rows(CASES, languages=languages, case_id="c{i:04d}", input="q{i}")
    return suite_text("soak", cases, judge=judged(base_url, max_reasks=2))


class Hold:
    """A responder that answers like :func:`judge_reply` but holds every answer from the ``at``-th on.

    Faults are answered before the responder, so ``at`` counts usable answers: replies the
    run pays for and caches. Runs on the server's event loop; the test thread waits on
    :attr:`reached` and sets :attr:`released`.
    """

    def __init__(self) -> None:
        self.at: int | None = None
        self.answered = 0
        self.reached = threading.Event()
        self.released = threading.Event()

    def arm(self, at: int | None) -> None:
        self.at, self.answered = at, 0
        self.reached.clear()
        self.released.clear()

    async def __call__(self, request: ReceivedRequest) -> str:
        self.answered += 1
        if self.at is not None and self.answered >= self.at:
            self.reached.set()
            while not self.released.is_set():
                await asyncio.sleep(0.005)
        return judge_reply(request)


def cache_entries(root: Path) -> dict[str, bytes]:
    """Cache entries by key, read through the default store (a record a SIGKILL cut short is no entry)."""
    store = DirectoryStore(root / ".llmjudge_cache" / "v1")
    try:
        return {key: store.get(key) or b"" for key in store.keys()}
    finally:
        store.close()


def prompt_of(entry: bytes) -> tuple[str, str, str]:
    record = json.loads(entry)
    request = record["request"]
    return request["system"], request["user"], record["reply"]["text"]


def test_soak_faults_interrupts_and_resume(tmp_path: Path) -> None:
    hold = Hold()
    server = LoopbackServer(
        responder=hold,
        fault_rate=0.4,
        faults=FAULTS,
        seed=7,
        retry_after=0.02,
        hang_seconds=0.2,
    )
    with server:
        (tmp_path / "suite.yaml").write_text(soak_suite(server.openai_base_url), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--llmjudge",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--llmjudge-concurrency={CONCURRENCY}",
            "--llmjudge-max-retries=6",
            "--llmjudge-timeout=5",
            "--llmjudge-retry-backoff=0.05",  # a loopback server: no need to wait as for a real provider
            "--junitxml=final.xml",
            "--llmjudge-junit-properties",  # each case's score and unscored reason, as properties
            "--tb=no",  # pytest's failure section is quadratic in the number of reports
        ]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("LLMJUDGE_")}
        runs: list[tuple[set[str], list[ReceivedRequest], dict[int, Fault]]] = []

        def run(sig: signal.Signals | None) -> subprocess.CompletedProcess[str] | None:
            server.reset()
            hold.arm(None if sig is None else CASES // 3)
            cached_before = set(cache_entries(tmp_path))
            # The timeouts below only stop a hung run; nothing here bounds how long a run takes.
            if sig is None:
                done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
                result: subprocess.CompletedProcess[str] | None = done
            else:
                output = tmp_path / f"run{len(runs) + 1}.txt"
                with output.open("w") as sink:
                    process = subprocess.Popen(command, cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT, env=env)
                try:
                    while not hold.reached.wait(0.1):
                        assert process.poll() is None, f"the run ended before it could be interrupted: {output}"
                    print(f"signal {sig.name} after {hold.answered} answers, {len(cache_entries(tmp_path))} cached")
                    process.send_signal(sig)
                finally:
                    hold.released.set()  # answers in flight may still arrive, as from a real provider
                process.wait(timeout=600)
                result = None
            runs.append((cached_before, server.requests, dict(server.fault_log())))
            print(f"soak run {len(runs)}: {len(runs[-1][1])} requests, {len(cache_entries(tmp_path))} cached")
            return result

        run(signal.SIGINT)
        run(signal.SIGKILL)
        final = run(None)

    assert final is not None
    assert final.returncode == 1, final.stdout[-3000:]  # some cases fail by design
    # ---- the cache: every entry sound, and exactly the judge's answer to its prompt
    entries = cache_entries(tmp_path)
    # Only the SIGKILL can leave temporary files (writes it cut short); they are never read.
    assert len(list((tmp_path / ".llmjudge_cache").rglob(".tmp-*"))) <= CONCURRENCY
    prompts: dict[tuple[str, str], str] = {}
    unparseable: set[str] = set()  # keys whose reply the runner may ask again in a later run
    for key, entry in entries.items():
        record = json.loads(entry)
        assert record["key"] == key
        system, user, reply = prompt_of(entry)
        fake = ReceivedRequest("openai", "", "", system, [("user", user)], None, None, None, None, {}, {}, False)
        assert reply == judge_reply(fake), f"cache entry {key} holds a reply the judge never gave"
        prompts[(system, user)] = key
        try:
            json.loads(reply)
        except ValueError:
            unparseable.add(key)

    # ---- no repeated paid call
    paid_total = 0
    for number, (cached_before, requests, faults) in enumerate(runs):
        paid = Counter(
            (r.system, r.last_user_text)
            for r in requests
            if faults.get(r.index) is None or faults.get(r.index) is Fault.EMPTY_CONTENT
        )
        paid_total += sum(paid.values())
        repeated = [p for p, n in paid.items() if n > 1]
        assert not repeated, f"run {number}: {len(repeated)} prompts paid more than once"
        asked_again = [r for r in requests if prompts.get((r.system, r.last_user_text)) in cached_before - unparseable]
        assert not asked_again, f"run {number}: {len(asked_again)} requests for replies already cached"
        if number < 2:  # an interrupted run loses at most the replies in flight when it stopped
            cached_after = runs[number + 1][0]
            lost = [p for p in paid if prompts.get(p) not in cached_after]
            assert len(lost) <= CONCURRENCY, f"run {number}: {len(lost)} paid replies not cached"
    reasks = sum(1 for i in range(CASES) if i % 10 == 3 and expected_score(i) is not None)
    never = sum(1 for i in range(CASES) if expected_score(i) is None)
    # Each later run may ask an unparseable prompt again once: the first ask of a re-ask
    # case, and the prompt and both re-asks of a never-scored case.
    assert paid_total <= CASES + reasks + 2 * never + 2 * CONCURRENCY + 2 * (reasks + 3 * never)

    # ---- every case scored correctly or reported as an error; nothing passes unscored
    outcomes: Counter[str] = Counter()
    for case in ET.parse(tmp_path / "final.xml").iter("testcase"):
        index = int(case.get("name", "")[1:5])
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        failed = case.find("failure") is not None or case.find("error") is not None
        truth = expected_score(index)
        if "unscored_reason" in properties:
            assert failed and "score" not in properties, index
            reason = properties["unscored_reason"] or ""
            assert truth is None or "provider failed" in reason, (index, reason)
            outcomes["unscored"] += 1
            continue
        assert truth is not None, f"case {index} got a score the judge never gave"
        assert float(properties["score"]) == truth, index
        assert failed == (truth < 1), index
        outcomes["failed" if failed else "passed"] += 1
    assert sum(outcomes.values()) == CASES
    assert outcomes["unscored"] >= never
    assert f"{outcomes['passed']} passed" in final.stdout

    # ---- the size is enough to exercise every fault kind many times
    injected = Counter(fault for _, _, faults in runs for fault in faults.values())
    print(f"faults injected: {dict(sorted((fault.name, n) for fault, n in injected.items()))}")
    assert all(injected[fault] >= 20 for fault in FAULTS), injected
