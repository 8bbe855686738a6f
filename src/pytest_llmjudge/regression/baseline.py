"""Baseline files: the per-case scores of one run, saved to compare later runs against.

What it is
    ``--llmjudge-save-baseline=NAME`` writes, at the end of a run, every numeric score the
    run's items produced, per suite, metric and language, keyed by case id. A later run
    with ``--llmjudge-baseline=NAME`` (or a suite's ``regression.baseline``) compares its
    own scores with these case by case (``regression.compare``). Release gating against a
    stored baseline is one of the plugin's own additions (``docs/methods.md``, section 6).

Format (``version`` 1; JSON, UTF-8, keys sorted, two-space indent so that a committed
baseline diffs one case per line)::

    {
      "format": "pytest-llmjudge-baseline",
      "version": 1,
      "name": "prod-2026-11",
      "created": "2026-11-02T09:14:03Z",
      "run": {"plugin_version": "0.1.0", "python": "3.12.3", "pytest": "8.3.3",
              "git_commit": "0a1b2c3" | null, "items": 412, "failed_items": 3},
      "suites": {
        "<suite name>": {
          "path": "example_suites/x.yaml",
          "metrics": {
            "<metric>": {
              "higher_is_better": true,
              "sources": ["judge"],
              "judges": ["openai:gpt-4o-mini"],
              "scores": {"<language>": {"<case id>": 2.0, "<case id>": null}},
              "human": {"<language>": {"<case id>": 1.5}}
            }
          },
          "outputs": {"<case id>": "the judged output text"}
        }
      }
    }

``null`` is a case the baseline run could not score (an unscored judge reply, a failed
output target): it is kept so a later comparison reports it instead of silently dropping it.
Categorical values (a detected language code) are not saved: they have no mean difference.
``outputs`` (optional; written since the reports show per case what changed) holds each
case's judged output, so a later report can show old and new output side by side; a
baseline without it loads the same and shows old scores only. ``human`` (optional, per
metric) holds the aggregated human label of each case that had one in the saved run
(``human:`` on a case, a ``human_labels:`` file): a later comparison with labels of its own
estimates the human-scale change (``regression/human.py``). A baseline without it loads the
same and gets no human-scale estimate.

Where
    A bare NAME (letters, digits, ``.``, ``_``, ``-``) is ``<baseline dir>/NAME.json``, the
    directory being the ini option ``llmjudge_baseline_dir`` (default
    ``llmjudge_baselines`` under pytest's rootdir). A NAME ending in ``.json`` or holding a
    path separator is a file path instead.

Groups
    Scores are stored per language and case id whatever the suite's ``group_by``; a
    comparison per group (``[language, task]``) recomputes each case's group from the suite
    (:meth:`MetricScores.group`), so a baseline saved before a suite gained ``group_by`` (or
    before grouping existed) is compared per group unchanged.

Saving reads the run's typed records (case records, and aggregate records' per-case
scores); loading (``regression/build.py``) reads a file, so it is validated field by field
with an error naming the file and the field; the model is in ``regression/schema.py``. Degenerate cases: a record without a numeric score and not unscored
(a categorical value) is skipped; a case seen twice (two thresholds on one metric) keeps its first score, and
the two must agree; a file of another format or a newer version is a
:class:`BaselineError`, as is a missing file.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_llmjudge.errors import BaselineError
from pytest_llmjudge.records import AggregateRecord, CaseRecord, CaseScore, ItemRecord
from pytest_llmjudge.regression.schema import Baseline, MetricScores, SuiteScores
from pytest_llmjudge.util.atomic import write_atomic
from pytest_llmjudge.util.formatting import number

if TYPE_CHECKING:
    from pytest_llmjudge.history import History

DEFAULT_DIR = "llmjudge_baselines"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def resolve_path(name: str, baseline_dir: Path, relative_to: Path, history_store: History | None = None) -> Path:
    """Where baseline ``name`` lives (see the module docstring); raises on a bad name.

    ``history:BRANCH`` is the last run of BRANCH kept by ``--llmjudge-history`` (``history.py``)."""
    from pytest_llmjudge import history

    if name.startswith(history.PREFIX):
        branch = name.removeprefix(history.PREFIX).strip()
        if history_store is None:
            raise BaselineError(f"baseline {name!r} needs a history directory: --llmjudge-history=DIR")
        if not branch:
            raise BaselineError(f"baseline {name!r} names no branch (e.g. history:main)")
        try:
            return history_store.baseline_file(branch)
        except Exception as exc:  # a remote history's own errors
            raise BaselineError(f"baseline {name!r}: can't read {history_store.description}: {exc}") from None
    if name.endswith(".json") or "/" in name or os.sep in name:
        path = Path(name).expanduser()
        return path if path.is_absolute() else relative_to / path
    if not _NAME.match(name):
        raise BaselineError(
            f"baseline name {name!r} must be letters, digits, '.', '_' or '-' (or a path ending in .json)"
        )
    return baseline_dir / f"{name}.json"


def _git_commit(cwd: Path) -> str | None:
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = completed.stdout.strip()
    return text if completed.returncode == 0 and text else None


def _relative(path: str | None, root: Path) -> str | None:
    if not path:
        return None
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def build_baseline(
    name: str,
    records: Iterable[ItemRecord],
    *,
    rootdir: Path,
    run: Mapping[str, Any] | None = None,
) -> Baseline:
    """A baseline from the run's item records (``records.py``).

    A :class:`~pytest_llmjudge.records.CaseRecord` gives one score (and the judged output);
    an :class:`~pytest_llmjudge.records.AggregateRecord` gives the scores of its
    ``case_scores``. Records of other kinds are ignored.
    """
    baseline = Baseline(
        name=name,
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        run=dict(run or {}),
    )

    def add(record: CaseRecord | AggregateRecord, score: CaseRecord | CaseScore, unscored: bool) -> None:
        value = number(score.score)
        if value is None and not unscored:
            return  # categorical or missing: nothing to compare a mean difference on
        suite = baseline.suites.setdefault(record.suite, SuiteScores(path=_relative(record.suite_path, rootdir)))
        metric = suite.metrics.setdefault(record.metric, MetricScores())
        if score.higher_is_better is False:
            metric.higher_is_better = False
        metric.sources.add(score.source)
        if score.judge is not None:
            metric.judges.add(score.judge)
        metric.scores.setdefault(score.language, {}).setdefault(score.case, value)
        if score.human is not None:
            metric.human.setdefault(score.language, {}).setdefault(score.case, score.human)
        if isinstance(score, CaseRecord) and score.output is not None:
            suite.outputs.setdefault(score.case, score.output)

    for record in records:
        if isinstance(record, CaseRecord):
            add(record, record, record.unscored_reason is not None or record.score is None)
        elif isinstance(record, AggregateRecord):
            for entry in record.case_scores or ():
                add(record, entry, entry.score is None)
    return baseline


def run_metadata(rootdir: Path, *, items: int, failed_items: int, pytest_version: str) -> dict[str, Any]:
    """The ``run`` section: versions, the rootdir's git commit (or None) and item counts."""
    from pytest_llmjudge import __version__

    return {
        "plugin_version": __version__,
        "python": platform.python_version(),
        "pytest": pytest_version,
        "git_commit": _git_commit(rootdir),
        "items": items,
        "failed_items": failed_items,
    }


def baseline_text(baseline: Baseline) -> str:
    """The file text of ``baseline`` (keys in the format's order, two-space indentation)."""
    return json.dumps(baseline.to_json(), ensure_ascii=False, indent=2, sort_keys=False) + "\n"


def save_baseline(baseline: Baseline, path: Path) -> None:
    """Write ``baseline`` to ``path`` atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = baseline_text(baseline)
    # Shared (a baseline is meant to be read by others); not fsynced: a lost save is redone by the next run.
    write_atomic(path, text, fsync=False, private=False)
    baseline.path = path
