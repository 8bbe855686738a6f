"""The ``<system-out>`` text each suite item gets in JUnit XML: its score where CI shows it.

pytest writes a test's ``user_properties`` as ``<properties>`` inside its ``<testcase>``,
which the JUnit schema pytest validates against (``junit-10.xsd``) does not allow, which
GitLab's parser never reads and which Jenkins drops by default. So by default the items'
results go into a ``<system-out>`` element of their testcase instead (allowed by the
schema, shown by Jenkins for every test and by GitLab for failed ones), as text::

    llmjudge passed: linguistic_acceptability = 2.0 (>= 1), language hi, judge openai:gpt-4o-mini
    suite: live-judge-openai
    case: hi-greeting
    ...

The first line is the headline (outcome, metric, score, threshold, language, judge: the
pieces the item recorded; a missing piece is left out, an item without a score shows
``-``, an agreement gate shows its weighted F1 and minimum as ``metric F1 = 0.9 (>= 0.7)``);
then every recorded ``name: value`` pair in the order the item recorded them. A value
spanning several lines continues on lines indented by two spaces. Values arrive already
redacted and control-escaped (``report/run_phase.py::record_properties``).
"""

from __future__ import annotations

from collections.abc import Sequence


def system_out(properties: Sequence[tuple[str, str]], outcome: str) -> str:
    """The ``<system-out>`` text of one item: a headline, then one ``name: value`` line per property."""
    values: dict[str, str] = {}
    for name, value in properties:
        values.setdefault(name, value)
    subject = values.get("metric") or values.get("check") or values.get("aggregate") or "result"
    if "score" not in values and "f1" in values:  # an agreement gate: its score is the weighted F1
        subject += " F1"
    headline = f"llmjudge {outcome}: {subject} = {values.get('score', values.get('f1', '-'))}"
    if "threshold" in values:
        threshold = values["threshold"]
        # Gates record a bare minimum ("0.7"); thresholds of suite items carry their operator.
        headline += f" ({'>= ' if threshold[:1].isdigit() else ''}{threshold})"
    if "language" in values:
        headline += f", language {values['language']}"
    if "judge" in values:
        headline += f", judge {values['judge']}"
    lines = [headline]
    for name, value in properties:
        first, *rest = value.split("\n")
        lines.append(f"{name}: {first}")
        lines.extend(f"  {line}" for line in rest)
    return "\n".join(lines) + "\n"
