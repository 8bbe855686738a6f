"""Selection pays only for what is selected: ``--llmjudge-language``, ``-k`` and ``-m`` plan and
send only the judge calls of the selected items, counted at the loopback judge server."""

from __future__ import annotations

import pytest

from pytest_llmjudge.testing import LoopbackServer

LANGUAGES = ("de", "fr", "hi", "sw", "ta")


def five_language_suite(base_url: str, per_language: int = 4) -> str:
    """Per-case thresholds and a per-language mean, like the issue's 5 x 16 suite (smaller)."""
    cases = "\n".join(
        f"  - {{id: {language}-{i}, language: {language}, input: 'say {i}', output: 'text {language} {i}'}}"
        for language in LANGUAGES
        for i in range(per_language)
    )
    return f"""\
suite: five
tags: [nightly]
judge:
  provider: openai
  model: loopback-judge
  base_url: "{base_url}"
assert: [task_quality >= 1]
aggregate: [mean(task_quality) >= 1.5]
cases:
{cases}
"""


@pytest.mark.parametrize(
    ("args", "passed", "requests"),
    [
        (("--llmjudge-language", "sw"), 5, 4),  # 4 cases + mean[sw]; the other 16 cases are never sent
        (("-k", "sw and mean"), 1, 4),  # the sw row alone: its 4 cases
        (("-k", "sw or hi"), 10, 8),
        (("-m", "nightly", "-k", "mean and all"), 1, 20),  # the all row needs every case
    ],
)
def test_selection_sends_only_the_selected_items_calls(
    pytester: pytest.Pytester, loopback: LoopbackServer, args: tuple[str, ...], passed: int, requests: int
) -> None:
    pytester.makefile(".yaml", suite=five_language_suite(loopback.openai_base_url))
    result = pytester.runpytest("--llmjudge", "--llmjudge-no-cache", "-p", "no:randomly", *args)
    result.assert_outcomes(passed=passed, deselected=26 - passed)
    assert loopback.stats()["requests"] == requests
    saved = f" ({20 - requests} of deselected items not planned)" if requests < 20 else ""
    result.stdout.fnmatch_lines([f"llmjudge: {requests} judge call(s) planned{saved}, concurrency*"])


def test_selected_row_reports_its_own_table_without_an_all_row(
    pytester: pytest.Pytester, loopback: LoopbackServer
) -> None:
    suite = five_language_suite(loopback.openai_base_url).replace(
        "mean(task_quality) >= 1.5", "mean(task_quality) >= 3"
    )
    pytester.makefile(".yaml", suite=suite)
    result = pytester.runpytest("--llmjudge", "--llmjudge-no-cache", "-k", "mean and (sw or hi)", "-p", "no:randomly")
    result.assert_outcomes(failed=2, deselected=24)
    assert loopback.stats()["requests"] == 8
    # The table shows the selected rows only: an all row over two of five languages would be no row of the suite.
    result.stdout.fnmatch_lines(["*> sw *4*FAIL*"])
    result.stdout.fnmatch_lines(["*  hi *4*FAIL*"])
    result.stdout.no_fnmatch_line("*  all *")
    result.stdout.no_fnmatch_line("* de *FAIL*")
