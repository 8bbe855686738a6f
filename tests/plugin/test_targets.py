"""Output targets that hang: the case is unscored with the target and the timeout named, the run goes on.

The targets here never return (``threading.Event().wait()``, ``await asyncio.Event().wait()``);
the timeouts are tiny so the tests stay fast. Outcomes are asserted, never durations. That a
hung sync target doesn't keep the process alive at exit is tests/plugin/test_interrupt.py's job
(it needs a process of its own).
"""

from __future__ import annotations

import builders
import pytest

HANGING_MODEL = """
import asyncio
import threading

def answer(case):
    if case.id.startswith("stuck"):
        threading.Event().wait()  # never returns
    return "Bonjour !"

async def answer_async(case):
    if case.id.startswith("stuck"):
        await asyncio.Event().wait()  # never returns
    return "Bonjour !"
"""


def _suite(target: str, *, outputs_extra: str = "", cases: tuple[str, ...] = ("ok", "stuck")) -> str:
    listed = [{"id": case, "language": "fr", "reference": "Bonjour !"} for case in cases]
    head = f'outputs: {{target: "{target}"{outputs_extra}}}'
    return builders.suite_text("hanging", listed, head=head, asserts=["chrf >= 50"])


def test_a_sync_target_that_hangs_times_out_and_the_other_cases_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(hanging_model=HANGING_MODEL)
    pytester.makefile(".yaml", suite=_suite("hanging_model:answer"))
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "--llmjudge-target-timeout=0.2", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UNSCORED: stuck [[]fr[]] chrf = -*",
            "*output target failed: TargetTimeoutError: hanging_model:answer did not return within 0.2 s"
            " (llmjudge_target_timeout)*",
        ]
    )


def test_an_async_target_that_hangs_times_out_at_the_suites_timeout(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(hanging_model=HANGING_MODEL)
    pytester.makefile(".yaml", suite=_suite("hanging_model:answer_async", outputs_extra=", timeout: 0.2"))
    # The suite's outputs.timeout wins over the run's setting (here an hour).
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider", "--llmjudge-target-timeout=3600")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*output target failed: TargetTimeoutError: hanging_model:answer_async did not return within 0.2 s"
            " (the suite's outputs.timeout)*"
        ]
    )


def test_hung_calls_use_up_the_concurrency_then_no_new_call_starts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(hanging_model=HANGING_MODEL)
    pytester.makefile(".yaml", suite=_suite("hanging_model:answer", cases=("stuck-1", "stuck-2")))
    result = pytester.runpytest(
        "--llmjudge", "-p", "no:cacheprovider", "--llmjudge-target-timeout=0.2", "--llmjudge-concurrency=1"
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*did not return within 0.2 s*",
            "*hanging_model:answer not started: 1 earlier calls ran past the 0.2 s timeout"
            " (llmjudge_target_timeout) and still hang*",
        ]
    )


def test_a_timeout_without_a_target_is_a_suite_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", outputs='{"id": "ok", "output": "Bonjour !"}\n')
    pytester.makefile(
        ".yaml",
        suite="""\
suite: no-target
outputs: {file: outputs.jsonl, timeout: 5}
cases:
  - {id: ok, language: fr, reference: "Bonjour !"}
assert: [chrf >= 50]
""",
    )
    result = pytester.runpytest("--llmjudge", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*outputs.timeout bounds a target call: it needs 'target'*"])
