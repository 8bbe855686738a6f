"""The release verdict: one line that says what a run's regression comparisons add up to.

What it is
    Every regression item of a run is one comparison in a family (``regression.compare``);
    the run's verdict is FAIL when any comparison fails the run (a regression shown after the
    family's correction, an error, or with ``fail_on: warn`` an inconclusive or undecided
    one); else UNDECIDED when some comparison had too few cases to decide (the run still
    exits 0: a warning, as the items are); else PASS. The line names how many comparisons were made, in how many families,
    with which correction and alpha, which failed, and how many were inconclusive or had too
    few cases to decide::

        release verdict: FAIL: 24 comparison(s) in 1 family (run), Holm at alpha 0.05 (Tarone
        K = 9); 1 failed: gate task_quality [pa]; 2 inconclusive; 1 too few cases to decide

    ("Tarone K = 9": the correction counted 9 comparisons, leaving out those whose test could
    not reach significance at all; ``stats/multiplicity.py``.)

    The terminal summary, the JSON and HTML reports and the JUnit file (a ``<testsuite>``
    property) show this same line, built from the items' records, so it is the same under
    pytest-xdist (the controller receives every record).

Aggregate rows and agreement gates that joined a family (``family: release`` or
``--llmjudge-family-include=aggregates,gates``, an ``AggregateRecord`` or ``GateRecord`` with
``release``) count as comparisons ("24 comparison(s), 4 of them aggregate row(s)"; "32
comparison(s), 3 aggregate row(s) and 8 agreement gate(s) among them"), and a failed one is listed as ``suite lower(mean(m)) [group]`` or
``calibration agreement m [group]``. A failed one is one whose item failed (adjusted p above
alpha, an error, or another criterion of the gate).

Degenerate cases: no regression record (and no joined row) gives no verdict (``None``); a record without
family fields (a report written before families existed) counts as its own family with its
correction unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pytest_llmjudge.records import AggregateRecord, GateRecord, RegressionRecord, ReleaseMember, ReleaseVerdict
from pytest_llmjudge.stats.multiplicity import method_name

__all__ = ["release_verdict"]

_LISTED = 5


def _family_key(record: RegressionRecord) -> tuple[str, ...]:
    scope = record.family or "?"
    where = {"run": (), "suite": (record.suite_path,), "metric": (record.suite_path, record.metric)}.get(
        scope, (record.nodeid or "",)
    )
    return (scope, *where, record.correction or "?", repr(record.alpha))


def _joined_key(record: AggregateRecord | GateRecord, member: ReleaseMember) -> tuple[str, ...]:
    path = record.suite_path if isinstance(record, AggregateRecord) else record.calibration_path
    where = {"run": (), "suite": (path,), "metric": (path, record.metric)}
    return (member.family, *where.get(member.family, ()), member.correction, repr(member.alpha))


def _failed(record: AggregateRecord | GateRecord) -> bool:
    # pytest's outcome when the collector set it (an xfailed row is no failure), else the row's own verdict.
    return record.outcome == "failed" if record.outcome is not None else not record.passed


def _joined_label(record: AggregateRecord | GateRecord) -> str:
    if isinstance(record, AggregateRecord):
        return f"{record.suite} {record.aggregate} [{record.language}]"
    return f"{record.calibration} agreement {record.metric} [{record.group}]"


def release_verdict(
    records: Sequence[RegressionRecord],
    aggregates: Sequence[AggregateRecord] = (),
    gates: Sequence[GateRecord] = (),
) -> ReleaseVerdict | None:
    """The run's release verdict from its regression records and the aggregate rows and
    agreement gates that joined a family (``family: release``; module docstring)."""
    joined: list[tuple[AggregateRecord | GateRecord, ReleaseMember]] = [
        (a, a.release) for a in aggregates if a.release is not None
    ]
    joined += [(g, g.release) for g in gates if g.release is not None]
    if not records and not joined:
        return None
    families = {_family_key(r) for r in records} | {_joined_key(a, m) for a, m in joined}
    corrections = sorted(
        {(method_name(r.correction) if r.correction else "correction unknown", r.alpha) for r in records}
        | {(method_name(m.correction), m.alpha) for _, m in joined},
        key=str,
    )
    how = ", ".join(f"{name} at alpha {alpha:g}" if alpha is not None else name for name, alpha in corrections)
    scopes = sorted({r.family or "scope unknown" for r in records} | {m.family for _, m in joined})
    failing = [r for r in records if r.status == "fail"]
    failed = [f"{r.suite} {r.metric} [{r.language}]" for r in failing]
    failed += [_joined_label(a) for a, _ in joined if _failed(a)]
    inconclusive = sum(1 for r in records if r.gate == "warn")
    undecided = sum(1 for r in records if r.gate == "undecided")
    errors = sum(1 for r in records if r.gate == "error")
    passed = not failed
    status: Literal["pass", "undecided", "fail"] = "fail" if failed else ("undecided" if undecided else "pass")
    n_families = len(families)
    # Tarone's K per family: the comparisons the correction counted (those that could be significant).
    counted: dict[tuple[str, ...], int] = {}
    for r in records:
        if r.family_testable is not None:
            counted.setdefault(_family_key(r), r.family_testable)
    testable = sum(counted.values()) if len(counted) == n_families and not joined else None
    over = f" (Tarone K = {testable})" if testable is not None and testable < len(records) else ""
    comparisons = len(records) + len(joined)
    rows = sum(1 for a, _ in joined if isinstance(a, AggregateRecord))
    gates_joined = len(joined) - rows
    if gates_joined:
        kinds = [f"{rows} aggregate row(s)"] * bool(rows) + [f"{gates_joined} agreement gate(s)"]
        with_rows = f", {' and '.join(kinds)} among them"
    else:  # the wording from before gates could join
        with_rows = f", {rows} of them aggregate row(s)" if rows else ""
    parts = [
        f"release verdict: {status.upper()}: {comparisons} comparison(s){with_rows} in {n_families} "
        f"famil{'y' if n_families == 1 else 'ies'} ({', '.join(scopes)}), {how}{over}",
    ]
    if failed:
        listed = ", ".join(failed[:_LISTED]) + (f", … (+{len(failed) - _LISTED})" if len(failed) > _LISTED else "")
        parts.append(f"{len(failed)} failed: {listed}")
    else:
        parts.append("none failed")
    parts.append(f"{inconclusive} inconclusive")
    parts.append(f"{undecided} too few cases to decide")
    if errors:
        parts.append(f"{errors} error(s)")
    return ReleaseVerdict(
        passed=passed,
        status=status,
        comparisons=comparisons,
        families=n_families,
        correction=", ".join(name for name, _ in corrections),
        failed=failed,
        inconclusive=inconclusive,
        undecided=undecided,
        errors=errors,
        text="; ".join(parts),
    )
