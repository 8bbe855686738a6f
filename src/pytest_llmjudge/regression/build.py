"""Reading a baseline file into a :class:`~pytest_llmjudge.regression.schema.Baseline`, field by field.

What it is
    :func:`load_baseline` reads a regular file of at most :data:`MAX_BASELINE_BYTES`, decodes
    it, parses the JSON and validates every field, raising
    :class:`~pytest_llmjudge.errors.BaselineError` with the file and the field; a missing file
    names the baselines that exist beside it (a typo is likely). The format is in
    ``regression/baseline.py``, which writes it.

Degenerate cases: another format or a newer version, a score that is not a finite number,
a file larger than the cap, a FIFO or a directory: each a :class:`BaselineError`.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from pytest_llmjudge.errors import BaselineError
from pytest_llmjudge.regression.schema import FORMAT, VERSION, Baseline, MetricScores, SuiteScores
from pytest_llmjudge.util.formatting import number


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
