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
scores); loading reads a file, so it is validated field by field with an error naming the
file and the field. Degenerate cases: a record without a numeric score and not unscored
(a categorical value) is skipped; a case seen twice (two thresholds on one metric) keeps its first score, and
the two must agree; a file of another format or a newer version is a
:class:`BaselineError`, as is a missing file.
"""

from __future__ import annotations

import difflib
import json
import os
import platform
import re
import subprocess
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_llmjudge.errors import BaselineError
from pytest_llmjudge.records import AggregateRecord, CaseRecord, CaseScore, ItemRecord
from pytest_llmjudge.util.atomic import write_atomic
from pytest_llmjudge.util.formatting import number

if TYPE_CHECKING:
    from pytest_llmjudge.history import History

FORMAT = "pytest-llmjudge-baseline"
VERSION = 1
DEFAULT_DIR = "llmjudge_baselines"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class MetricScores:
    """One suite metric's baseline: ``scores[language][case_id]`` (None = unscored)."""

    higher_is_better: bool = True
    sources: set[str] = field(default_factory=set)
    judges: set[str] = field(default_factory=set)
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    human: dict[str, dict[str, float]] = field(default_factory=dict)
    """``human[language][case_id]``: the case's aggregated human label (empty in older baselines)."""

    def language(self, language: str) -> dict[str, float | None]:
        return self.scores.get(language, {})

    def group(
        self, language: str, group_cases: Collection[str], suite_cases: Collection[str]
    ) -> tuple[dict[str, float | None], tuple[str, ...]]:
        """The baseline scores of one group of ``language``, and the ids of the cases it could not place.

        A baseline stores scores per language, not case fields, so groups are recomputed
        from the suite's cases: a case is in the group when the suite puts it there
        (``group_cases``). A baseline case the suite no longer has (not in ``suite_cases``,
        the suite's case ids in that language) can't be placed; it is kept in every group of
        its language, so that it is reported missing rather than silently dropped.
        """
        scores = self.language(language)
        unplaced = tuple(sorted(case for case in scores if case not in suite_cases))
        kept = {case: value for case, value in scores.items() if case in group_cases or case not in suite_cases}
        return kept, unplaced


@dataclass
class SuiteScores:
    path: str | None = None
    metrics: dict[str, MetricScores] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    """case id -> the output that was judged (empty for baselines saved before outputs were)."""


@dataclass
class Baseline:
    name: str
    created: str
    run: dict[str, Any] = field(default_factory=dict)
    suites: dict[str, SuiteScores] = field(default_factory=dict)
    path: Path | None = None

    def metric(self, suite: str, metric: str) -> MetricScores | None:
        entry = self.suites.get(suite)
        return None if entry is None else entry.metrics.get(metric)

    @property
    def n_scores(self) -> int:
        return sum(len(cases) for s in self.suites.values() for m in s.metrics.values() for cases in m.scores.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name,
            "created": self.created,
            "run": self.run,
            "suites": {
                suite_name: {
                    "path": suite.path,
                    "metrics": {
                        metric_name: {
                            "higher_is_better": metric.higher_is_better,
                            "sources": sorted(metric.sources),
                            "judges": sorted(metric.judges),
                            "scores": {
                                language: dict(sorted(cases.items()))
                                for language, cases in sorted(metric.scores.items())
                            },
                            **(
                                {
                                    "human": {
                                        language: dict(sorted(cases.items()))
                                        for language, cases in sorted(metric.human.items())
                                    }
                                }
                                if metric.human
                                else {}
                            ),
                        }
                        for metric_name, metric in sorted(suite.metrics.items())
                    },
                    **({"outputs": dict(sorted(suite.outputs.items()))} if suite.outputs else {}),
                }
                for suite_name, suite in sorted(self.suites.items())
            },
        }


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


def _fail(path: Path, message: str) -> BaselineError:
    return BaselineError(f"{path}: {message}")


MAX_BASELINE_BYTES = 32 * 1024 * 1024
"""Largest baseline file read (32 MiB, as for suite YAML). Parsed JSON costs many times its size in
memory when it is mostly short case ids and scores (measured in docs/baselines.md)."""


def load_baseline(path: Path) -> Baseline:
    """Read and validate a baseline file (a regular file of at most :data:`MAX_BASELINE_BYTES`)."""
    import stat

    from pytest_llmjudge.errors import SuiteError
    from pytest_llmjudge.suite.text import decode

    try:
        found = path.stat()
    except FileNotFoundError:
        raise BaselineError(_not_found(path)) from None
    except OSError as exc:
        raise _fail(path, f"not a readable JSON file ({exc})") from None
    if not stat.S_ISREG(found.st_mode):  # a FIFO would block the read; a directory is not a file
        what = {stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a directory"}.get(
            stat.S_IFMT(found.st_mode), "a socket or device"
        )
        raise _fail(path, f"is {what}, not a regular file")
    if found.st_size > MAX_BASELINE_BYTES:
        raise _fail(
            path,
            f"baseline file too large: {found.st_size:,} bytes, more than the {MAX_BASELINE_BYTES:,} "
            "a baseline may have (docs/baselines.md)",
        )
    try:
        # A byte-order mark (an editor on Windows) picks the encoding as for suite files.
        data = json.loads(decode(path.read_bytes(), path))
    except FileNotFoundError:
        raise BaselineError(_not_found(path)) from None
    except SuiteError as exc:
        raise BaselineError(str(exc)) from None
    except RecursionError:
        raise _fail(path, "not a readable JSON file (nested too deeply)") from None
    except (OSError, ValueError) as exc:
        raise _fail(path, f"not a readable JSON file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _fail(path, f'not a pytest-llmjudge baseline (expected "format": "{FORMAT}")')
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise _fail(path, f"bad version {version!r}")
    if version > VERSION:
        raise _fail(path, f"baseline version {version} is newer than this plugin reads ({VERSION}); upgrade it")
    suites_raw = data.get("suites")
    if not isinstance(suites_raw, dict):
        raise _fail(path, "'suites' must be an object")
    suites: dict[str, SuiteScores] = {}
    for suite_name, suite_raw in suites_raw.items():
        if not isinstance(suite_raw, dict) or not isinstance(suite_raw.get("metrics"), dict):
            raise _fail(path, f"suite {suite_name!r}: needs a 'metrics' object")
        metrics: dict[str, MetricScores] = {}
        for metric_name, metric_raw in suite_raw["metrics"].items():
            where = f"suite {suite_name!r}, metric {metric_name!r}"
            if not isinstance(metric_raw, dict) or not isinstance(metric_raw.get("scores"), dict):
                raise _fail(path, f"{where}: needs a 'scores' object")
            scores: dict[str, dict[str, float | None]] = {}
            for language, cases in metric_raw["scores"].items():
                if not isinstance(cases, dict):
                    raise _fail(path, f"{where}, language {language!r}: scores must map case ids to numbers")
                parsed: dict[str, float | None] = {}
                for case_id, value in cases.items():
                    score = number(value)
                    if value is not None and score is None:
                        raise _fail(path, f"{where}, case {case_id!r}: score {value!r} is not a finite number")
                    parsed[str(case_id)] = score
                scores[str(language)] = parsed
            human_raw = metric_raw.get("human", {})
            if not isinstance(human_raw, dict):
                raise _fail(path, f"{where}: 'human' must map languages to case labels")
            human: dict[str, dict[str, float]] = {}
            for language, cases in human_raw.items():
                if not isinstance(cases, dict):
                    raise _fail(path, f"{where}, language {language!r}: human labels must map case ids to numbers")
                for case_id, value in cases.items():
                    label = number(value)
                    if label is None:
                        raise _fail(path, f"{where}, case {case_id!r}: human label {value!r} is not a finite number")
                    human.setdefault(str(language), {})[str(case_id)] = label
            metrics[str(metric_name)] = MetricScores(
                higher_is_better=bool(metric_raw.get("higher_is_better", True)),
                sources=set(metric_raw.get("sources") or []),
                judges=set(metric_raw.get("judges") or []),
                scores=scores,
                human=human,
            )
        path_text = suite_raw.get("path")
        outputs = suite_raw.get("outputs", {})
        if not isinstance(outputs, dict) or not all(isinstance(v, str) for v in outputs.values()):
            raise _fail(path, f"suite {suite_name!r}: 'outputs' must map case ids to text")
        suites[str(suite_name)] = SuiteScores(
            path=path_text if isinstance(path_text, str) else None,
            metrics=metrics,
            outputs={str(k): v for k, v in outputs.items()},
        )
    run = data.get("run")
    return Baseline(
        name=str(data.get("name") or path.stem),
        created=str(data.get("created") or ""),
        run=run if isinstance(run, dict) else {},
        suites=suites,
        path=path,
    )


def _not_found(path: Path) -> str:
    """ "baseline file not found", with the baselines that do exist beside it (a typo is likely)."""
    message = f"baseline file not found: {path}"
    try:
        existing = sorted(entry.stem for entry in path.parent.glob("*.json") if entry.is_file())
    except OSError:
        existing = []
    if not existing:
        return message + f" (no baselines in {path.parent}; save one with --llmjudge-save-baseline=NAME)"
    close = difflib.get_close_matches(path.stem, existing, n=1)
    shown = ", ".join(existing[:20]) + (f" and {len(existing) - 20} more" if len(existing) > 20 else "")
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return message + f" (baselines in {path.parent}: {shown}){hint}"
