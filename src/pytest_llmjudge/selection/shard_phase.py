"""``--llmjudge-shard i/N``: run one shard of the cases, for splitting a run over N CI machines.

A shard keeps the case items of the cases :mod:`pytest_llmjudge.selection.sharding` assigns to it and
deselects every other item (reported as "N deselected", as ``-k`` does):

* case items of other shards' cases;
* every item that is computed over many cases: aggregates, regressions, calibration
  gates and checks, rankings. Computed over a shard's cases they would be verdicts about a
  third of the suite; they run once, in the merge job, over all cases;
* items that aren't the plugin's (plain Python tests) go by a hash of their node id, so
  each runs in exactly one shard.

Invalid-file items run in shard 1 (an error is never hidden by sharding). A shard left with
no item (more shards than cases) exits 0, not pytest's 5 ("no tests collected").

The merge job is an ordinary unsharded run on the cache the shards filled
(``--llmjudge-cache-url``, or the shards' cache directories copied into one): every judge
call is a cache hit, so it pays nothing and computes aggregates, gates and regressions
exactly as one run would (docs/ci.md#shards). ``--llmjudge-save-baseline`` is refused in
a shard: a baseline of a third of the cases would read as a regression of the rest later.

The merge run's own accounting says 0 provider requests: the shards paid. With
``--llmjudge-shard-reports=PATTERN`` (glob; repeatable or comma-separated) it reads the shards'
JSON reports (``--llmjudge-report=json:...``) and adds their judge-call accounting (requests,
tokens, cache hits, failures) to its own, so the merged summary and reports carry the run's
calls and estimated cost. A pattern that matches nothing, or a file that is not a report,
is a usage error naming it; the option is refused in a shard.

Plain functions the Run calls (``session/run.py``): :func:`configure`, :func:`select` after
every other selection, :func:`announce_reports` at session start.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_llmjudge.errors import ConfigError
from pytest_llmjudge.selection.sharding import Shard, shard_key
from pytest_llmjudge.session.item_base import InvalidFileItem, LLMJudgeItem


def read_shard_reports(patterns: list[str], base: Path) -> list[tuple[str, dict[str, int]]]:
    """``(path, judge-call accounting)`` of every JSON report the glob ``patterns`` name."""
    import glob
    import json

    from pytest_llmjudge.execution.runner import RunnerStats

    names = {f.name for f in dataclasses.fields(RunnerStats)}
    found: list[tuple[str, dict[str, int]]] = []
    for pattern in (part.strip() for raw in patterns for part in raw.split(",") if part.strip()):
        paths = sorted(glob.glob(str(base / pattern)))
        if not paths:
            raise ConfigError(f"--llmjudge-shard-reports: {pattern!r} matches no file")
        for path in paths:
            try:
                document = json.loads(Path(path).read_text(encoding="utf-8"))
                accounting = document.get("accounting") or {}
                stats = {name: int(accounting.get(name) or 0) for name in names}
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                raise ConfigError(f"{path}: not an llmjudge JSON report ({exc.__class__.__name__}: {exc})") from None
            found.append((path, stats))
    return found


def announce_reports(config: pytest.Config, reports: list[tuple[str, dict[str, int]]]) -> None:
    """Say that the shards' accounting is added to the merge run's (summed like xdist workers' stats)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        calls = sum(stats["provider_calls"] for _, stats in reports)
        reporter.write_line(
            f"llmjudge: judge calls and cost include {len(reports)} shard report(s) ({calls} provider requests): "
            + ", ".join(path for path, _ in reports)
        )


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmjudge", "LLM-judge evaluation suites (pytest-llmjudge)")
    group.addoption(
        "--llmjudge-shard",
        default=None,
        dest="llmjudge_shard",
        metavar="I/N",
        help="Run shard I of N (1-based): a stable share of the cases; aggregates and gates run in the merge job.",
    )
    group.addoption(
        "--llmjudge-shard-reports",
        action="append",
        default=None,
        dest="llmjudge_shard_reports",
        metavar="PATTERN",
        help="In the merge run: the shards' JSON reports (glob), whose judge calls and cost are added to this run's.",
    )


def configure(config: pytest.Config) -> tuple[Shard | None, list[tuple[str, dict[str, int]]]]:
    """This run's shard (None unsharded) and, in the merge run, the shards' reports' accounting."""
    patterns = config.getoption("llmjudge_shard_reports", None)
    spec = config.getoption("llmjudge_shard", None)
    reports: list[tuple[str, dict[str, int]]] = []
    if patterns and spec is None:
        try:
            reports = read_shard_reports(patterns, Path(config.invocation_params.dir))
        except ConfigError as exc:
            raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None
    if spec is None:
        return None, reports
    if patterns:
        raise pytest.UsageError("pytest-llmjudge: --llmjudge-shard-reports is for the merge run, not a shard")
    try:
        shard = Shard.parse(spec)
    except ConfigError as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None
    if config.getoption("llmjudge_save_baseline", None):
        raise pytest.UsageError(
            "pytest-llmjudge: --llmjudge-save-baseline can't be used with --llmjudge-shard: save it in the merge run"
        )
    return shard, reports


def _suite_path(path: Path, rootdir: Path) -> str:
    try:
        return path.resolve().relative_to(rootdir.resolve()).as_posix()
    except ValueError:  # a suite outside rootdir: its absolute path (machines must then agree on it)
        return path.resolve().as_posix()


def _keeps(shard: Shard, item: pytest.Item, rootdir: Path) -> bool:
    if isinstance(item, InvalidFileItem):
        return shard.index == 1
    if not isinstance(item, LLMJudgeItem):
        return shard.owns(item.nodeid)
    case, suite = getattr(item, "case", None), getattr(item, "suite", None)
    if case is None or suite is None:
        return False  # computed over many cases: the merge job's
    return shard.owns(shard_key(_suite_path(suite.path, rootdir), case.id))


def select(shard: Shard, config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """Keep this shard's items in ``items`` (in place) and say so; returns the deselected ones."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if _keeps(shard, item, config.rootpath) else dropped).append(item)
    if dropped:
        items[:] = kept
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and config.get_verbosity() > -2:  # shown with -q: a CI log should say which shard ran
        reporter.write_line(
            f"llmjudge: shard {shard}: {len(kept)} item(s) kept, {len(dropped)} deselected"
            " (other shards' cases; aggregates, gates and regressions run in the merge job)"
        )
    return dropped
