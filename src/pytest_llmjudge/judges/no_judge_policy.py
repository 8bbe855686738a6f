"""What an item does when its judge can't be called: skip, or fail. One decision for every item kind.

Case and aggregate items, calibration items, ranking items, regression items and the
``llmjudge_judge`` fixture all ask :func:`no_judge_outcome` once they know their judge can't
be called (no API key, an unknown provider name, ...). The answer, in this order:

1. the run's ``require_judge`` setting when it was set (``--llmjudge-require-judge``,
   ``--llmjudge-allow-no-judge``, ``LLMJUDGE_REQUIRE_JUDGE``, ini ``llmjudge_require_judge``);
2. the suite's own ``judge.required`` when it says (an offline demo suite can declare its
   live judge optional, visibly, in the file);
3. otherwise whether the run is in CI (the ``CI`` environment variable): a release gate that
   judged nothing must not look green, while a developer's machine without keys still runs
   the offline suites and skips the live ones.

Degenerate cases: there is no "no judge" outcome for an item whose judge is fine; the
messages name the judge and the problem, and a failing one says how to opt out.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_llmjudge.settings import Settings

OPT_OUT = "set llmjudge_require_judge=false (or --llmjudge-allow-no-judge) to skip them instead"


@dataclass(frozen=True)
class NoJudge:
    """What an item whose judge can't be called does, and why."""

    fail: bool
    reason: str
    """Which judge can't be called and why (``judge openai:gpt-4o-mini needs a live judge: ...``)."""
    rule: str
    """The sentence saying which rule made the item fail, or be skipped."""

    @property
    def message(self) -> str:
        """What the item reports: the skip reason, or the failure with its rule and the way out."""
        return f"{self.reason}. {self.rule}." if self.fail else self.reason


def judge_required(settings: Settings, suite_required: bool | None = None) -> bool:
    """Whether judge items that can't be judged fail (True) or are skipped (False)."""
    if settings.require_judge is not None:
        return settings.require_judge
    if suite_required is not None:
        return suite_required
    return settings.ci


def _rule(settings: Settings, suite_required: bool | None, required: bool) -> str:
    """Which rule decided, as a sentence saying what that does to the run."""
    effect = "this fails the run" if required else "they are skipped"
    if settings.require_judge is not None:
        return f"The setting llmjudge_require_judge is {str(required).lower()}, so {effect}"
    if suite_required is not None:
        return f"The suite sets judge.required: {str(required).lower()}, so {effect}"
    if required:
        return "In CI this fails the run; " + OPT_OUT
    return "In CI (CI=true) they would fail the run"


def no_judge_outcome(reason: str, settings: Settings, suite_required: bool | None = None) -> NoJudge:
    """The outcome of an item whose judge can't be called; ``reason`` says which judge and why."""
    required = judge_required(settings, suite_required)
    return NoJudge(required, reason, _rule(settings, suite_required, required))


def summary_lines(outcomes: list[NoJudge]) -> list[tuple[str, bool]]:
    """The summary lines about judge items that did not run, each with whether they failed.

    Per outcome (failed, skipped): a headline with the count, then one indented line per
    distinct reason (three at most, then how many more) and one for the rule that decided.
    None when every judge ran.
    """
    lines: list[tuple[str, bool]] = []
    for failed in (True, False):
        chosen = [outcome for outcome in outcomes if outcome.fail is failed]
        if not chosen:
            continue
        reasons = list(dict.fromkeys(outcome.reason for outcome in chosen))
        rules = "; ".join(dict.fromkeys(outcome.rule for outcome in chosen))
        items = f"{len(chosen)} judge item{'s' if len(chosen) != 1 else ''}"
        what = "could not run" if failed else "skipped, not judged"
        lines.append((f"llmjudge: {items} {what}:", failed))
        lines.extend((f"  {reason}", failed) for reason in reasons[:3])
        if len(reasons) > 3:
            lines.append((f"  and {len(reasons) - 3} more", failed))
        lines.append((f"  {rules}.", failed))
    return lines
