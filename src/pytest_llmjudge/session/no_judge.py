"""The pytest side of the one "no judge" policy (``judges/no_judge_policy.py``): end the item by skipping or failing.

Every item kind and the ``llmjudge_judge`` fixture call :func:`skip_or_fail_without_judge`
once they know their judge can't be called; ``no_judge_policy.no_judge_outcome`` decides
which. The exception carries the outcome as a plain dict (it travels under xdist) so the
summary can count these items, also when a session fixture's exception is raised again
for every test that uses it.
"""

from __future__ import annotations

from typing import NoReturn

import pytest

from pytest_llmjudge.judges.no_judge_policy import no_judge_outcome
from pytest_llmjudge.settings import Settings


def skip_or_fail_without_judge(settings: Settings, reason: str, suite_required: bool | None = None) -> NoReturn:
    """End the item (or fixture) whose judge can't be called: skip or fail, as no_judge_policy decides.

    ``reason`` names the judge and the problem.
    """
    outcome = no_judge_outcome(reason, settings, suite_required)
    exc: BaseException
    if outcome.fail:
        exc = pytest.fail.Exception(outcome.message, pytrace=False)
    else:
        # Report the skip at the item's own location (the suite's line), not at this module.
        exc = pytest.skip.Exception(outcome.message, _use_item_location=True)
    record = {"fail": outcome.fail, "reason": outcome.reason, "rule": outcome.rule}
    exc.llmjudge_no_judge = record  # type: ignore[union-attr]
    raise exc
