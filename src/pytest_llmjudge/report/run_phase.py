"""The reports: ``--llmjudge-report=FORMAT:PATH``, prices, the summary (called by the Run, ``session/run.py``).

Plain functions of the run's report phase; the Run calls them in its order (no hook here).

* ``--llmjudge-report=json:PATH`` / ``html:PATH`` / ``md:PATH`` (repeatable; or ini ``llmjudge_report``,
  one ``FORMAT:PATH`` per line, used when the option is not given). A relative PATH is taken
  from the directory pytest was invoked in; missing parent directories are created.
* ``$GITHUB_STEP_SUMMARY``: when set, the Markdown verdict (``report/markdown.py``) is
  appended to that file, unless ``--llmjudge-step-summary=no`` / ini ``llmjudge_step_summary``.
* ini ``llmjudge_prices``: ``MODEL = INPUT OUTPUT`` lines, USD per 1M tokens, over the
  built-in table (:data:`~pytest_llmjudge.report.assemble.DEFAULT_PRICES`); ``--llmjudge-price``
  (repeatable, same form) over both.
* JUnit XML (``--junitxml``): each item's recorded results (:func:`record_properties`) go
  into a ``<system-out>`` element of its testcase (``report/junit.py``), so the file stays
  valid against ``junit-10.xsd``; ``--llmjudge-junit-properties`` (ini
  ``llmjudge_junit_properties``) also writes them as testcase ``<properties>``, as before.
* What leaves the process: the failure and skip text of the plugin's items, the values they
  record and the terminal summary are redacted (:func:`run_secrets`, ``util/redaction.py``) and
  control characters in them made visible (``util/escaping.py``), before pytest, xdist or JUnit
  see them.

The reports are written once, at session end, by the process that owns the terminal (the
controller under pytest-xdist, which receives every item's record with its report). What
only collection knows (each suite's judge and rubric versions) is gathered where items are
collected, so under xdist the workers send it in ``workeroutput``. A report that can't be
written (a directory in the way, no permission) is reported in the summary and makes the
run exit non-zero (a CI job that asked for a report must not pass without it).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_llmjudge.session.secrets import clean_text, note_judge, run_secrets
from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls

# The document's models (pydantic) are imported where they are built: every pytest run loads
# this module, with or without --llmjudge, and pydantic with the models was most of its import.
if TYPE_CHECKING:
    from pytest_llmjudge.execution.scorer import Scorer
    from pytest_llmjudge.history import History
    from pytest_llmjudge.records import ItemRecord
    from pytest_llmjudge.report.document import ReportDocument, SuiteInfo
    from pytest_llmjudge.session.collector import ResultsCollector
    from pytest_llmjudge.suite.model import Suite

FORMATS = ("json", "html", "md")


@dataclass
class ReportState:
    targets: list[tuple[str, Path]]
    prices: dict[str, tuple[float, float]]
    history: History | None = None
    started: float = field(default_factory=time.time)
    suites: dict[str, SuiteInfo] = field(default_factory=dict)
    properties: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """nodeid -> an item's recorded JUnit values (:func:`record_properties`), until its call report takes them.
    Kept here, not on the item: an attribute added to 100,000 items as they run grew each one's
    ``__dict__`` by 768 bytes."""
    document: ReportDocument | None = None
    written: list[tuple[str, Path]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("llmjudge", "LLM-judge evaluation suites (pytest-llmjudge)")
    group.addoption(
        "--llmjudge-report",
        action="append",
        default=[],
        dest="llmjudge_report",
        metavar="FORMAT:PATH",
        help="Write a report at the end of the run: json:PATH, html:PATH or md:PATH (repeatable).",
    )
    parser.addini(
        "llmjudge_report",
        "Reports to write, one FORMAT:PATH per line (json, html or md), when --llmjudge-report is not given.",
        type="linelist",
        default=[],
    )
    group.addoption(
        "--llmjudge-history",
        default=None,
        dest="llmjudge_history",
        metavar="DIR",
        help="Append this run's per-suite/metric/language summary to DIR/history.jsonl, keep its scores as "
        "DIR/baselines/<branch>.json (baseline name history:<branch>), and show the trend in the HTML report.",
    )
    parser.addini(
        "llmjudge_history",
        "History directory (see --llmjudge-history), relative to the rootdir.",
        default=None,
    )
    parser.addini(
        "llmjudge_history_runs",
        "How many earlier runs the HTML report's trends show (default 10).",
        default="10",
    )
    group.addoption(
        "--llmjudge-summary",
        choices=("short", "full"),
        default=None,
        dest="llmjudge_summary",
        help="The end-of-run summary: short (one line per suite, failing rows; the default) or full "
        "(every language x metric table; the default with -v). Env LLMJUDGE_SUMMARY.",
    )
    parser.addini(
        "llmjudge_summary",
        "The end-of-run summary: short or full (see --llmjudge-summary).",
        default=None,
    )
    group.addoption(
        "--llmjudge-step-summary",
        choices=("auto", "no"),
        default=None,
        dest="llmjudge_step_summary",
        help="auto (default): append the Markdown verdict to $GITHUB_STEP_SUMMARY when it is set; no: don't.",
    )
    parser.addini(
        "llmjudge_step_summary",
        "Append the Markdown verdict to $GITHUB_STEP_SUMMARY when it is set (default true).",
        type="bool",
        default=True,
    )
    group.addoption(
        "--llmjudge-junit-properties",
        action="store_true",
        default=None,
        dest="llmjudge_junit_properties",
        help="Also write each item's results as <properties> of its JUnit testcase (not valid under junit-10.xsd).",
    )
    parser.addini(
        "llmjudge_junit_properties",
        "Also write each item's results as <properties> of its JUnit testcase (not valid under junit-10.xsd).",
        type="bool",
        default=False,
    )
    parser.addini(
        "llmjudge_prices",
        "Judge prices for the cost estimate, 'MODEL = INPUT OUTPUT' (USD per 1M tokens) per line.",
        type="linelist",
        default=[],
    )
    group.addoption(
        "--llmjudge-price",
        action="append",
        default=[],
        dest="llmjudge_price",
        metavar="'MODEL = INPUT OUTPUT'",
        help="A judge price (USD per 1M tokens) for the cost estimate, over llmjudge_prices (repeatable).",
    )


def price_lines(config: pytest.Config) -> list[str]:
    """``llmjudge_prices`` then ``--llmjudge-price``: a model named twice takes the command line's price."""
    return [str(line) for line in [*config.getini("llmjudge_prices"), *config.getoption("llmjudge_price", [])]]


def parse_target(raw: str, base: Path) -> tuple[str, Path]:
    """``json:PATH`` -> ("json", absolute path); raises ValueError with the reason."""
    kind, sep, path = raw.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in FORMATS or not path.strip():
        raise ValueError(f"--llmjudge-report expects FORMAT:PATH with FORMAT one of {', '.join(FORMATS)}; got {raw!r}")
    target = Path(path.strip()).expanduser()
    return kind, target if target.is_absolute() else base / target


def configure(config: pytest.Config, history: History | None) -> tuple[ReportState, list[tuple[str, Path]]]:
    """The run's report state, and the files it will write (for the Run to claim as write targets)."""
    from pytest_llmjudge.errors import PriceError
    from pytest_llmjudge.report.assemble import parse_prices

    raw_targets = config.getoption("llmjudge_report") or config.getini("llmjudge_report")
    base = Path(config.invocation_params.dir)
    try:
        targets = [parse_target(str(raw), base) for raw in raw_targets]
        prices = parse_prices(price_lines(config))
    except (ValueError, PriceError) as exc:
        raise pytest.UsageError(f"pytest-llmjudge: {exc}") from None
    claimed = [(f"--llmjudge-report={kind}:", path) for kind, path in targets]
    if history is not None:
        from pytest_llmjudge.history import FILE_NAME, LocalHistory

        if isinstance(history, LocalHistory):  # appended to, not replaced: a FIFO there would block the run's end
            claimed.append(("--llmjudge-history", history.directory / FILE_NAME))
    return ReportState(targets=targets, prices=prices, history=history), claimed


def _terminal_width(terminalreporter: Any) -> int:
    """The terminal's width as pytest measured it (100 when it can't say)."""
    width = getattr(getattr(terminalreporter, "_tw", None), "fullwidth", None)
    return width if isinstance(width, int) and width > 0 else 100


def _suite_info(config: pytest.Config, board: Scorer, suite: Suite) -> SuiteInfo:
    from pytest_llmjudge.report.assemble import clean_url
    from pytest_llmjudge.report.document import JudgeInfo, SuiteInfo

    judge = suite.judge
    effective = board.judge_settings(suite.judge)
    provider, model, base_url = effective.provider, effective.model, effective.base_url
    rubric_metrics = sorted(name for name, kind in suite.metric_kinds.items() if kind == "rubric")
    try:
        path = Path(suite.path).resolve().relative_to(Path(config.rootpath).resolve()).as_posix()
    except ValueError:
        path = Path(suite.path).as_posix()
    return SuiteInfo(
        name=suite.name,
        path=path,
        languages=list(suite.languages),
        n_cases=len(suite.cases),
        live_judge=suite.needs_live_judge,
        judge=JudgeInfo(
            provider=provider,
            model=model,
            label=f"{provider}:{model}",
            base_url=clean_url(base_url),
            temperature=judge.temperature,
            seed=judge.seed,
            mode=judge.mode,
            instructions=judge.instructions,
            repeats=judge.repeats,
            api_key_env=judge.api_key_env,
        ),
        metrics={name: str(kind) for name, kind in sorted(suite.metric_kinds.items())},
        rubrics={name: suite.rubrics[name].version for name in rubric_metrics if name in suite.rubrics},
        # Each rubric's score range, so charts keep axes and intervals on the scale.
        scales={
            # An aggregate's declared ``scale:`` too: its betting interval rests on it.
            **{check.spec.metric: list(check.scale) for check in suite.aggregates if check.scale is not None},
            **{
                name: [min(suite.rubrics[name].scale), max(suite.rubrics[name].scale)]
                for name in rubric_metrics
                if name in suite.rubrics and suite.rubrics[name].scale
            },
        },
        recorded_judges=sorted(
            {str(value.judge) for case in suite.cases for value in case.recorded.values() if value.judge}
        ),
        calibration=None if judge.calibration is None else Path(judge.calibration).name,
        uncalibrated_metrics=[
            name for name in rubric_metrics if judge.calibration and not judge.calibration_covers(name)
        ],
    )


def note_suites(config: pytest.Config, state: ReportState, board: Scorer, items: list[pytest.Item]) -> None:
    """What only collection knows of each selected item's suite (judge, rubric versions), and its credentials."""
    from pytest_llmjudge.suite.model import Suite

    seen: set[int] = set()
    for item in items:
        suite = getattr(item, "suite", None)
        if isinstance(suite, Suite) and id(suite) not in seen:
            seen.add(id(suite))
            info = _suite_info(config, board, suite)
            state.suites[f"{info.path}::{info.name}"] = info
            base_urls = [suite.judge.base_url, board.judge_settings(suite.judge).base_url]
            note_judge(config, suite.judge.provider, suite.judge.api_key_env, base_urls)


def note_worker_suites(config: pytest.Config, state: ReportState, suites: list[SuiteInfo]) -> None:
    """On the xdist controller: the suites a finished worker collected (the controller collects none itself)."""
    for info in suites:
        state.suites[f"{info.path}::{info.name}"] = info
        if info.judge is not None:
            note_judge(config, info.judge.provider or "", info.judge.api_key_env)


def junit_properties_enabled(config: pytest.Config) -> bool:
    option = config.getoption("llmjudge_junit_properties", None)
    return bool(option) if option is not None else bool(config.getini("llmjudge_junit_properties"))


def record_properties(state: ReportState, item: pytest.Item, properties: Iterable[tuple[str, Any]]) -> None:
    """Record an item's results for JUnit: ``(name, value)`` pairs, ``None`` values left out.

    They are kept in the run's report state (redacted and control-escaped text) until the
    item's call report takes them for its ``<system-out>``; with
    ``--llmjudge-junit-properties`` they also go to ``item.user_properties``, which pytest
    writes as testcase ``<properties>``.
    """
    secrets = run_secrets(item.config)
    recorded = state.properties.setdefault(item.nodeid, [])
    opted_in = junit_properties_enabled(item.config)
    for name, value in properties:
        if value is None:
            continue
        text = clean_text(str(value), secrets)
        recorded.append((name, text))
        if opted_in:
            item.user_properties.append((name, value if text == str(value) else text))


def _own_item(item: pytest.Item) -> bool:
    return type(item).__module__.startswith("pytest_llmjudge.")


def _clean_longrepr(report: pytest.TestReport, secrets: list[str]) -> None:
    """The failure or skip text of one of the plugin's items, redacted and escaped in place.

    A skip is ``(path, line, message)``; a failure is the item's ``repr_failure`` text, or
    for an unexpected exception pytest's traceback, which is turned into plain text so it
    can be cleaned too.
    """
    longrepr = report.longrepr
    if longrepr is None:
        return
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        path, line, message = longrepr
        report.longrepr = (path, line, clean_text(str(message), secrets))
    else:
        report.longrepr = clean_text(str(longrepr), secrets)


def clean_report(state: ReportState, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """One of the plugin's items' reports: text cleaned, recorded results attached (they travel under xdist)."""
    if not _own_item(item):
        return
    if report.longrepr is not None:
        _clean_longrepr(report, run_secrets(item.config))
    reason = getattr(report, "wasxfail", None)
    if isinstance(reason, str) and reason:  # a known failure's reason, from a calibration file
        report.wasxfail = clean_text(reason, run_secrets(item.config), ONE_LINE)
    path, line, domain = report.location
    # The failure's headline, and the file pytest shows with -vv (and JUnit's xunit1 'file').
    report.location = (escape_controls(path, ONE_LINE), line, escape_controls(domain, ONE_LINE))
    recorded = state.properties.pop(item.nodeid, None) if call.when == "call" else None
    # Only a run that writes JUnit needs them on the report (xdist workers have the option too):
    # pytest's terminal statistics keep every report to the end of the run.
    if recorded and getattr(item.config.option, "xmlpath", None):
        report.llmjudge_junit = [list(pair) for pair in recorded]  # type: ignore[attr-defined]


def junit_system_out(config: pytest.Config, collector: ResultsCollector, report: pytest.TestReport) -> None:
    """Write an item's recorded results as a ``<system-out>`` of its JUnit testcase.

    Called after pytest's own JUnit writer handled the same report, on the process that
    writes the file (the controller under xdist), whatever ``junit_logging`` says. The call
    report is the last one before the teardown report closes the testcase.
    """
    # Taken off the report once written: the report lives to the end of the run.
    recorded = report.__dict__.pop("llmjudge_junit", None)
    if not recorded or report.when != "call":
        return
    from xml.etree import ElementTree

    from _pytest.junitxml import bin_xml_escape, xml_key

    from pytest_llmjudge.report.junit import system_out

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    outcome = collector.xfail.get(report.nodeid) or report.outcome
    element = ElementTree.Element("system-out")
    element.text = bin_xml_escape(system_out([(str(n), str(v)) for n, v in recorded], outcome))
    xml.node_reporter(report).append(element)


def _records(collector: ResultsCollector, xfail: dict[str, str]) -> list[ItemRecord]:
    """The collector's records, with pytest's outcome of an expected failure told apart."""
    records = []
    for record in collector.records:
        outcome = xfail.get(record.nodeid or "")
        records.append(record if outcome is None else record.model_copy(update={"outcome": outcome}))
    return records


def build(
    config: pytest.Config,
    state: ReportState,
    collector: ResultsCollector,
    board: Scorer,
    exit_status: int | None = None,
) -> ReportDocument:
    """The run's report document (cached once the session has finished)."""
    if state.document is not None:
        return state.document
    import pytest_llmjudge
    from pytest_llmjudge.report.assemble import RunInputs, build_document
    from pytest_llmjudge.report.document import RunInfo

    settings = board.settings
    randomly_seed = config.getoption("randomly_seed", None)
    run = RunInfo(
        timestamp=datetime.fromtimestamp(state.started, timezone.utc).isoformat(timespec="seconds"),
        duration_s=round(time.time() - state.started, 2),
        plugin_version=pytest_llmjudge.__version__,
        pytest_version=pytest.__version__,
        python_version=platform.python_version(),
        pytest_args=[str(arg) for arg in config.invocation_params.args],
        exit_status=None if exit_status is None else int(exit_status),
        xdist_workers=collector.workers,
        pytest_randomly_seed=randomly_seed if isinstance(randomly_seed, int) else None,
        cache_mode=settings.cache_mode,
        overrides={"provider": settings.provider, "model": settings.model, "base_url": settings.base_url},
        # A dead judge or a rejected key, once for the run (the cases say it in one line each).
        judge_headlines=collector.judge_headlines(),
    )
    records = _records(collector, collector.xfail)
    recorded = {record.nodeid for record in records}
    document = build_document(
        RunInputs(
            records=records,
            not_run=[entry for nodeid, entry in collector.not_run.items() if nodeid not in recorded],
            suites=list(state.suites.values()),
            stats=collector.run_stats(),
            prices=state.prices,
            run=run,
            secrets=run_secrets(config),
            root=str(Path(config.rootpath).resolve()),
        )
    )
    if exit_status is not None:
        state.document = document
    return document


def write_reports(
    session: pytest.Session, exitstatus: int, state: ReportState, collector: ResultsCollector, board: Scorer
) -> None:
    """Write the report files, the history and the step summary (the process that owns the terminal)."""
    config = session.config
    step_summary = _step_summary_path(config)
    history = state.history
    if not state.targets and step_summary is None and history is None:
        return
    document = build(config, state, collector, board, int(exitstatus))
    if history is not None:
        _with_history(config, state, collector, document, history, int(exitstatus))
    from pytest_llmjudge.report.html import write_html
    from pytest_llmjudge.report.json_report import write_json
    from pytest_llmjudge.report.markdown import append_step_summary, write_markdown

    links = [(f"{kind} report", _shown_path(path, config)) for kind, path in state.targets if kind != "md"]
    for kind, path in state.targets:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "json":
                write_json(document, path)
            elif kind == "md":
                write_markdown(document, path, links=links)
            else:
                write_html(document, path)
        except OSError as exc:
            state.errors.append(f"could not write the {kind} report to {path}: {exc}")
            continue
        except Exception as exc:  # a rendering bug must not hide the test results
            state.errors.append(f"could not render the {kind} report: {exc.__class__.__name__}: {exc}")
            continue
        state.written.append((kind, path))
    if step_summary is not None:
        try:
            append_step_summary(document, step_summary, links=links)
        except OSError as exc:
            state.errors.append(f"could not append the verdict to GITHUB_STEP_SUMMARY ({step_summary}): {exc}")
    if state.errors and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def open_run_history(config: pytest.Config) -> History | None:
    """The run's history (``--llmjudge-history``: a directory relative to the invocation
    directory, or a ``redis://``/``s3://`` URL; ini ``llmjudge_history``: relative to the rootdir),
    opened once per run by the Run. A remote history that can't be opened is a usage error."""
    from pytest_llmjudge.errors import LLMJudgeError
    from pytest_llmjudge.history import open_history

    option = config.getoption("llmjudge_history", None)
    ini = config.getini("llmjudge_history")
    try:
        if option:
            return open_history(str(option), Path(config.invocation_params.dir))
        if ini:
            return open_history(str(ini), Path(config.rootpath))
    except LLMJudgeError as exc:
        raise pytest.UsageError(f"pytest-llmjudge: --llmjudge-history: {exc}") from None
    return None


def _with_history(
    config: pytest.Config,
    state: ReportState,
    collector: ResultsCollector,
    document: ReportDocument,
    store: History,
    exitstatus: int,
) -> None:
    """Earlier runs' rows into the document (for the HTML trends), then this run appended and its
    scores kept as the branch's baseline. A history that can't be written fails the run, like a report."""
    from pytest_llmjudge import history
    from pytest_llmjudge.regression.baseline import baseline_text, build_baseline, run_metadata
    from pytest_llmjudge.report.document import TrendPoint
    from pytest_llmjudge.util.redaction import redact

    try:
        last = max(1, int(str(config.getini("llmjudge_history_runs"))))
    except ValueError:
        last = 10
    keys = [(row.suite, row.metric, row.language) for row in document.summary]
    try:
        earlier = list(store.runs())
    except Exception as exc:  # a remote store's own errors: the run's verdicts stand, the history is named
        state.errors.append(f"could not read the history in {store.description}: {type(exc).__name__}: {exc}")
        earlier = []
    for points in history.trends(earlier, keys, last).values():
        document.history.extend(
            TrendPoint(
                suite=row.suite,
                metric=row.metric,
                language=row.language,
                timestamp=run.timestamp,
                commit=run.commit,
                branch=run.branch,
                n=row.n,
                mean=row.mean,
                ci_low=row.ci_low,
                ci_high=row.ci_high,
                pass_rate=row.pass_rate,
                status=row.status,
            )
            for run, row in points
        )
    if exitstatus == pytest.ExitCode.INTERRUPTED or not document.summary:
        return  # an interrupted run's numbers are not a point of the trend
    commit, branch = history.current_revision(Path(config.rootpath))
    run = history.HistoryRun(
        timestamp=document.run.timestamp or "",
        commit=commit,
        branch=branch,
        exit_status=exitstatus,
        judges=tuple(document.run.judge_labels or document.run.judge_models),
        baseline=config.getoption("llmjudge_baseline", None),
        rows=tuple(
            history.HistoryRow(
                r.suite, r.metric, r.language, r.n, r.n_unscored, r.mean, r.ci_low, r.ci_high, r.pass_rate, r.status
            )
            for r in document.summary
        ),
    )
    try:
        store.append(run)
        baseline = build_baseline(
            f"{history.PREFIX}{branch}",
            collector.records,
            rootdir=Path(config.rootpath),
            run=run_metadata(
                Path(config.rootpath),
                items=len(collector.records),
                failed_items=sum(r.outcome == "failed" for r in collector.records),
                pytest_version=pytest.__version__,
            ),
        )
        if baseline.suites:
            secrets = run_secrets(config)  # a kept baseline is shared like a report: no key in an echoed output
            for suite in baseline.suites.values():
                suite.outputs = {case: redact(text, secrets) for case, text in suite.outputs.items()}
            store.save_baseline(branch, baseline_text(baseline))
    except Exception as exc:  # a full disk, a lost Redis or S3: named, and the run fails like an unwritten report
        state.errors.append(f"could not append to the history in {store.description}: {type(exc).__name__}: {exc}")
        return
    state.written.append(("history", Path(store.description)))


def _step_summary_path(config: pytest.Config) -> Path | None:
    """The GitHub step-summary file to append the verdict to, unless the user opted out."""
    import os

    target = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
    option = config.getoption("llmjudge_step_summary", None)
    wanted = option != "no" if option is not None else bool(config.getini("llmjudge_step_summary"))
    return Path(target) if target and wanted else None


def _shown_path(path: Path, config: pytest.Config) -> str:
    """A report's path relative to the rootdir when it is inside it (what a reader can find)."""
    try:
        return str(path.resolve().relative_to(Path(config.rootpath).resolve()))
    except ValueError:
        return str(path)


def summary_mode(config: pytest.Config) -> str:
    """``short`` or ``full``: the option, else ``LLMJUDGE_SUMMARY``, else the ini, else full with -v, short without."""
    import os

    chosen = (
        config.getoption("llmjudge_summary", None)
        or os.environ.get("LLMJUDGE_SUMMARY", "").strip().lower()
        or str(config.getini("llmjudge_summary") or "").strip().lower()
    )
    if chosen in ("short", "full"):
        return chosen
    return "full" if config.get_verbosity() > 0 else "short"


def write_summary(
    config: pytest.Config,
    terminalreporter: Any,
    state: ReportState,
    collector: ResultsCollector,
    board: Scorer,
) -> None:
    """The ``llmjudge summary`` section and the "judge items did not run" lines."""
    from pytest_llmjudge.judges.no_judge_policy import summary_lines as no_judge_lines
    from pytest_llmjudge.report.terminal import short_summary_lines, summary_lines

    document = build(config, state, collector, board)
    quiet = config.get_verbosity() < 0
    width = _terminal_width(terminalreporter)
    if quiet or summary_mode(config) == "full":
        lines = summary_lines(document, quiet=quiet, width=width)
    else:
        lines = short_summary_lines(document, width=width)
    if lines:
        terminalreporter.write_sep("=", "llmjudge summary")
        for text, style in lines:
            # The document is redacted already; its names and ids may still hold control characters.
            terminalreporter.write_line(escape_controls(text, ONE_LINE), **({style: True} if style else {}))
    # Always, also with -q: a run whose judge items did not run must say so.
    for line, failed in no_judge_lines(collector.no_judge):
        terminalreporter.write_line(line, **({"red": True} if failed else {"yellow": True}))


def write_written(config: pytest.Config, terminalreporter: Any, state: ReportState) -> None:
    """The files written (like pytest's "generated xml file" line) and the ones that could not be."""
    for kind, path in state.written:
        if config.get_verbosity() >= 0:
            terminalreporter.write_sep("-", f"llmjudge {kind} report: {path}")
    for error in state.errors:
        terminalreporter.write_sep("-", f"llmjudge: {error}", red=True)
