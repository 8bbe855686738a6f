"""Which cases to send to annotators next: a seeded random sample per group and metric, sized for a width.

For every group x metric of a ``human_mean``/``human_pass_rate`` aggregate, with ``n``
labelled of ``N`` judged cases, the number of labels that gives a 95% interval of total
width ``w`` follows from the PPI++ standard error (``stats/prediction_powered.py``)::

    w = 2 z sqrt(lambda^2 var_N(f) / N + var_n(y - lambda f) / n)
    =>  n_needed = ceil( var_n(y - lambda f) / ((w / 2z)^2 - lambda^2 var_N(f) / N) )

with ``lambda``, ``var_n(y - lambda f)`` (at least the aggregate's small-sample floor) and
``var_N(f)`` estimated from the labels there are; ``z`` is the normal quantile (the
aggregate's Student ``t`` with ``n - 1`` degrees of freedom is within 3% of it from 40 labels on). With fewer than two labels nothing is known of the residuals: the worst case for
the scale ``[low, high]``, ``var = (high - low)^2 / 4`` with ``lambda = 0`` (the human-only
size, an upper bound). At least the aggregate's ``min_labels``. If the judge's term alone
is wider than ``w``, no number of labels reaches it: every unlabelled case is queued.

The queue holds ``min(n_needed - n, unlabelled)`` cases drawn uniformly without
replacement from the group's unlabelled (and judged) cases, in id order, with
``random.Random(f"{seed}:{suite}:{metric}:{group}")``: a simple random sample, which is
what keeps the estimate unbiased (labelling the easiest or the first cases would not be).
The same run with the same seed writes the same queue.

Written as CSV (``.csv``) or JSON lines (``.jsonl``), one row per case: suite, group,
language, metric, id, input, output, and the group's ``n_labelled``, ``n_needed`` and ``N``.
Degenerate cases: a group with every case labelled queues nothing; a group without judged
cases is left out (the estimate needs the judge's scores).
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pytest_llmjudge.stats.prediction_powered import labels_needed, ppi_mean

SUFFIXES = (".csv", ".jsonl")


@dataclass(frozen=True)
class QueueCase:
    """One case of one human aggregate's group: its judge value and its label, if any, on the statistic's scale."""

    suite: str
    metric: str
    group: str
    language: str
    case_id: str
    input: str | None
    output: str | None
    judge: float | None
    human: float | None
    scale: tuple[float, float] | None
    min_labels: int


@dataclass(frozen=True)
class QueueRow:
    suite: str
    group: str
    language: str
    metric: str
    id: str
    input: str | None
    output: str | None
    n_labelled: int
    n_needed: int
    N: int


def _var(values: Sequence[float]) -> float:
    centre = math.fsum(values) / len(values)
    return math.fsum((v - centre) ** 2 for v in values) / len(values)


def needed_for(cases: Sequence[QueueCase], width: float) -> int:
    """Labels the group needs for an interval of ``width`` (module docstring); at least ``min_labels``."""
    judged = [c for c in cases if c.judge is not None]
    pairs = [(c.human, c.judge) for c in judged if c.human is not None and c.judge is not None]
    f_all = [c.judge for c in judged if c.judge is not None]
    scale = cases[0].scale
    if len(pairs) >= 2:
        estimate = ppi_mean([y for y, _ in pairs], [f for _, f in pairs], f_all, scale=scale)
        lam = estimate.lam
        residuals = [y - lam * f for y, f in pairs]
        residual_variance = _var(residuals)
        if scale is not None:  # the aggregate's small-sample floor (stats/prediction_powered.py)
            residual_variance = max(residual_variance, (scale[1] - scale[0]) ** 2 * (len(pairs) - 1) / len(pairs) ** 2)
    else:
        lam = 0.0
        spread = (scale[1] - scale[0]) if scale is not None else (max(f_all) - min(f_all) or 1.0)
        residual_variance = spread**2 / 4
    needed = labels_needed(
        width, residual_variance=residual_variance, judge_variance=_var(f_all), lam=lam, N=len(f_all)
    )
    return max(cases[0].min_labels, len(f_all) if needed is None else needed)


def plan(cases: Sequence[QueueCase], *, width: float, seed: int = 0) -> list[QueueRow]:
    """The queue rows of every group x metric in ``cases`` (module docstring)."""
    groups: dict[tuple[str, str, str], list[QueueCase]] = {}
    for case in cases:
        groups.setdefault((case.suite, case.metric, case.group), []).append(case)
    rows: list[QueueRow] = []
    for (suite, metric, group), members in sorted(groups.items()):
        judged = [c for c in members if c.judge is not None]
        if not judged:
            continue
        n = sum(1 for c in judged if c.human is not None)
        needed = needed_for(members, width)
        unlabelled = sorted((c for c in judged if c.human is None), key=lambda c: c.case_id)
        take = min(len(unlabelled), max(0, needed - n))
        chosen = random.Random(f"{seed}:{suite}:{metric}:{group}").sample(unlabelled, take)
        rows.extend(
            QueueRow(suite, group, c.language, metric, c.case_id, c.input, c.output, n, needed, len(judged))
            for c in sorted(chosen, key=lambda c: c.case_id)
        )
    return rows


def write(rows: Sequence[QueueRow], path: Path) -> None:
    """CSV or JSON lines, by the file's suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(QueueRow.__dataclass_fields__))
            writer.writeheader()
            for row in rows:
                writer.writerow(asdict(row))
        return
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
