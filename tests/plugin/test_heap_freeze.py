"""The cyclic collector around a run: paused while collecting, the collected heap frozen for the
run, and everything handed back afterwards (plugin.py ``pytest_collection``), through pytester."""

from __future__ import annotations

import gc

import pytest

SUITE = """\
suite: recorded
cases:
  - id: hi-1
    language: hi
    output: "नमस्ते"
    recorded: {linguistic_acceptability: 2}
assert:
  - linguistic_acceptability >= 1
"""

PROBE = """\
import gc


def test_the_collected_heap_is_frozen_and_the_collector_runs():
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()
"""


def test_in_process_run_freezes_while_running_and_gives_the_heap_back(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    pytester.makepyfile(test_probe=PROBE)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    result = pytester.runpytest_inprocess("--llmjudge", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    # The process goes on (pytester, pytest.main): its heap is collectable again, the collector on.
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_a_collector_disabled_before_the_run_stays_disabled(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    gc.disable()
    try:
        result = pytester.runpytest_inprocess("--llmjudge", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_without_the_flag_nothing_is_frozen(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probe="import gc\n\ndef test_not_frozen():\n    assert gc.get_freeze_count() == 0\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
