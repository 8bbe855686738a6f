"""``--llmjudge-label-queue=PATH``: write the cases to send to annotators next (``label_queue/plan.py``).

The aggregate items of ``human_mean``/``human_pass_rate`` hand their scored cases to
:data:`queue_key` as they compute their rows; at the end of the session the queue of every
group x metric is planned and written (CSV or JSONL by the suffix) by the Run
(``session/run.py``), which calls these functions. Under pytest-xdist each worker sees only
the aggregates it ran; run the queue without ``-n``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

queue_key = pytest.StashKey[list[Any]]()
"""(suite, check, [(case, score, group), ...]) of every human aggregate computed in this process:
set by the Run when the queue is asked for, appended to by the aggregate items (``suite/items.py``)."""


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmjudge")
    group.addoption(
        "--llmjudge-label-queue",
        default=None,
        dest="llmjudge_label_queue",
        metavar="PATH",
        help="Write, per language (group) and metric of each human_mean/human_pass_rate aggregate, a seeded random "
        "sample of unlabelled cases to label, sized for --llmjudge-label-width (.csv or .jsonl).",
    )
    group.addoption(
        "--llmjudge-label-width",
        default=0.2,
        type=float,
        dest="llmjudge_label_width",
        metavar="W",
        help="Target total width of the 95%% interval of human_mean that the label queue is sized for (default 0.2).",
    )
    group.addoption(
        "--llmjudge-label-seed",
        default=0,
        type=int,
        dest="llmjudge_label_seed",
        metavar="N",
        help="Seed of the label queue's random sample (default 0).",
    )


def configure(config: pytest.Config) -> list[Any] | None:
    """The queue the aggregates fill (also stashed for them), or None when no queue is asked for."""
    path = config.getoption("llmjudge_label_queue", None)
    if path is None:
        return None
    from pytest_llmjudge.label_queue.plan import SUFFIXES

    if Path(path).suffix.lower() not in SUFFIXES:
        raise pytest.UsageError(f"pytest-llmjudge: --llmjudge-label-queue must end in .csv or .jsonl, got {path!r}")
    width = config.getoption("llmjudge_label_width")
    if not width > 0:
        raise pytest.UsageError(f"pytest-llmjudge: --llmjudge-label-width must be positive, got {width}")
    entries: list[Any] = []
    config.stash[queue_key] = entries
    return entries


def _on_scale(spec: Any, raw: Any, language: str) -> float | None:
    """A score or label as the statistic sees it: the number, or 1/0 for meeting human_pass_rate's inner threshold."""
    if raw is None or (spec.stat == "human_mean" and isinstance(raw, str)):
        return None
    if spec.stat == "human_pass_rate":
        return 1.0 if spec.inner.holds(raw, language) else 0.0
    return float(raw)


def write_queue(config: pytest.Config, entries: list[Any]) -> str:
    """Plan and write the queue; the line that says so."""
    from pytest_llmjudge.label_queue.plan import QueueCase, plan, write

    cases: list[QueueCase] = []
    for suite, check, scored, scale in entries:
        spec = check.spec
        for case, score, group in scored:
            judge = _on_scale(spec, score.value, case.language) if score.scored else None
            human = _on_scale(spec, case.human.get(spec.metric), case.language)
            cases.append(
                QueueCase(
                    suite=suite.name,
                    metric=spec.metric if spec.stat == "human_mean" else spec.inner.render(),
                    group=group,
                    language=case.language,
                    case_id=case.id,
                    input=case.input,
                    output=case.output,
                    judge=judge,
                    human=human,
                    scale=(0.0, 1.0) if spec.stat == "human_pass_rate" else scale,
                    min_labels=check.min_labels,
                )
            )
    rows = plan(cases, width=config.getoption("llmjudge_label_width"), seed=config.getoption("llmjudge_label_seed"))
    path = Path(config.getoption("llmjudge_label_queue"))
    write(rows, path)
    groups = len({(row.suite, row.metric, row.group) for row in rows})
    return f"llmjudge: label queue: {len(rows)} case(s) in {groups} group(s) written to {path}"
