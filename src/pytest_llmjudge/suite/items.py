"""pytest collection nodes: a suite file and its items.

* :class:`SuiteFile` (``pytest.File``) loads and validates a suite and yields items; an
  invalid suite yields one :class:`InvalidSuiteItem` that errors with ``file:line: message``
  so the other suites still run (a real collection error would stop the whole session).
* :class:`CaseItem`: one case x one threshold, node id ``suite.yaml::case-id[metric]``.
* :class:`AggregateItem`: one suite aggregate for one group of cases (or ``all``), node id
  ``suite.yaml::mean(metric)[hi]``; with ``group_by: [language, task]``
  ``suite.yaml::mean(metric)[hi-task=qa]`` (the grouping is ``AggregateCheck.groups``).

A case with no threshold of its own on an aggregated metric has no item; the aggregate
items of its row carry its full case record (``AggregateRecord.cases``, no threshold, no
verdict) so the reports still show what was judged.

Each item keeps what it found as a typed record (``records.py``: :class:`CaseRecord`,
:class:`AggregateRecord`) in ``llmjudge_result``, and records the record's JUnit properties
(score, threshold, metric, language, judge, cached, source, suite) through
``session.item_base.record``: JUnit shows them as a ``<system-out>`` of the testcase (and as
``<properties>`` with ``--llmjudge-junit-properties``). Failures
render through ``repr_failure`` as a short explanation, never a traceback into the plugin;
the report plugin redacts that text and makes its control characters visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.errors import CaseFailure, LLMJudgeError
from pytest_llmjudge.execution.scorer import Score, Scorer
from pytest_llmjudge.execution.sequential import NOT_NEEDED, SEQUENTIAL_STATS, RowRun, order_key, run_rounds
from pytest_llmjudge.execution.spend import NOT_JUDGED
from pytest_llmjudge.label_queue.run_phase import queue_key
from pytest_llmjudge.records import (
    AggregateRecord,
    CaseRecord,
    CaseScore,
    HumanEstimate,
    ReleaseMember,
    Threshold,
    Turn,
)
from pytest_llmjudge.records import AggregateRow as RecordRow
from pytest_llmjudge.session.item_base import InvalidFileItem, LLMJudgeItem, record
from pytest_llmjudge.session.suites import built_suite
from pytest_llmjudge.suite.aggregate import (
    ALL_LANGUAGES,
    AggregateRow,
    ScoredValue,
    compute_rows,
    pass_k_cases,
    render_human_table,
    render_table,
)
from pytest_llmjudge.suite.expressions import HUMAN_STATS, PASS_K_STATS, MetricThreshold
from pytest_llmjudge.suite.model import JUDGE_KINDS, AggregateCheck, Case, Suite
from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls
from pytest_llmjudge.util.formatting import format_fixed, format_value

EXCERPT_CHARS = 300


def _excerpt(text: str | None) -> str:
    if not text:
        return "(empty)"
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + " …"


def _case_record(
    config: pytest.Config, suite: Suite, case: Case, metric: str, score: Score, **verdict: Any
) -> CaseRecord:
    """A case's record on ``metric``: its score, how it was got, and what was judged, in full, so a
    reviewer can read it and two reports diff per case. ``verdict``: ``threshold`` and ``passed``
    (and ``aggregates`` for a case only aggregates assert)."""
    output = _judged_output(config, suite, case)
    return CaseRecord(
        suite=suite.name,
        suite_path=str(suite.path),
        case=case.id,
        language=case.language,
        metric=metric,
        score=score.value,
        samples=list(score.samples),
        spread=score.spread,
        source=score.source,
        judge=score.judge,
        cached=score.cached,
        justification=score.justification,
        unscored_reason=score.error,
        raw_reply=score.raw_reply,
        detail=dict(score.detail),
        judge_identity=dict(score.identity) if score.identity else None,
        higher_is_better=score.higher_is_better,
        input=case.input,
        output=output,
        reference=case.reference,
        transcript=[Turn(role=turn.role, content=turn.content) for turn in case.transcript(output)] or None,
        human=case.human.get(metric),
        **verdict,
    )


def _judged_item(entry: dict[str, Any]) -> str:
    """``[supported] claim (reason)`` for one entry of a RAG metric's detail list."""
    flag = next((key for key in ("supported", "useful", "attributed") if key in entry), None)
    text = next((entry[key] for key in ("claim", "passage", "statement") if key in entry), "")
    mark = "" if flag is None else f"[{flag if entry[flag] else 'not ' + flag}] "
    reason = entry.get("reason")
    return mark + _excerpt(str(text)) + (f" ({_excerpt(str(reason))})" if reason else "")


def _judged_output(config: pytest.Config, suite: Suite, case: Case) -> str | None:
    """The judged output: the case's own, else the model's (None when it could not be produced)."""
    if case.output is not None:
        return case.output
    try:
        return _scorer(config).output(suite, case)
    except LLMJudgeError:
        return None


def _scorer(config: pytest.Config) -> Scorer:
    from pytest_llmjudge.session.state import scorer_key

    return config.stash[scorer_key]


class SuiteFile(pytest.File):
    """A YAML suite."""

    suite: Suite | None = None

    def collect(self) -> Iterator[pytest.Item]:
        try:
            suite = built_suite(self.config, self.path, self.ihook)
        except LLMJudgeError as exc:
            yield InvalidSuiteItem.from_parent(self, name="suite-error", error=str(exc))
            return
        self.suite = suite
        board = _scorer(self.config)
        problem = board.judge_problem(suite.judge) if suite.needs_live_judge else None
        names: set[str] = set()
        for case in suite.cases:
            for threshold in case.thresholds:
                # Node ids reach the terminal and JUnit raw: a control character in a case id shows as text.
                name = escape_controls(f"{case.id}[{threshold.metric}]", ONE_LINE)
                if name in names:
                    # A second threshold on one metric: named by what it asserts (``de-1[chrf <= 99]``).
                    name = escape_controls(f"{case.id}[{threshold.render()}]", ONE_LINE)
                names.add(name)
                yield CaseItem.from_parent(
                    self, name=name, suite=suite, case=case, threshold=threshold, judge_problem=problem
                )
        for check in suite.aggregates:
            rows = [(group.name, group.value("language")) for group in check.groups(suite.cases)]
            for language, group_language in (*rows, (ALL_LANGUAGES, None)):
                item = AggregateItem.from_parent(
                    self,
                    # A group name carries metadata values: control characters show as text, as in case ids.
                    name=escape_controls(f"{check.spec.label}[{language}]", ONE_LINE),
                    suite=suite,
                    check=check,
                    language=language,
                    judge_problem=problem,
                )
                reason = check.xfail_reason(language, group_language) if check.xfail else None
                if reason is not None:
                    # Strict: a known failure that starts passing fails, so the xfail entry is removed.
                    item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=CaseFailure))
                yield item


@dataclass
class _CheckScores:
    """One aggregate check's scores and rows, shared by its row items (``AggregateItem._shared_scores``)."""

    check: AggregateCheck
    scored: list[tuple[Case, Score, str]]
    """Every case of the suite, its score and its group's name, in case order."""
    rows: list[AggregateRow]
    takers: int
    """Selected row items of the check that have not taken these yet."""


_check_scores_key = pytest.StashKey[dict[tuple[int, int], _CheckScores]]()
"""(id of the suite, id of the check) -> its shared scores; the entry holds the check, so the ids stay its own."""

_carriers_key = pytest.StashKey[dict[tuple[str, str], dict[str, set[str]]]]()
"""(suite path, metric) -> aggregate item node id -> ids of the unasserted cases whose records it carries."""


_sequential_key = pytest.StashKey[dict[tuple[int, int], dict[str, RowRun]]]()
"""(id of the suite, id of the check) -> row name -> how sequential judging ran that row (``judge_sequentially``)."""


def sequential_scale(board: Scorer, suite: Suite, check: AggregateCheck) -> tuple[float, float] | None:
    """The scale a check's rows are judged sequentially on, or None when they are judged in full:
    sequential mode off or in batch mode, or a check it does not apply to (``execution/sequential.py``)."""
    settings = board.settings
    spec = check.spec
    if not _sequential_settings(board, suite)[0] or settings.batch or spec.stat not in SEQUENTIAL_STATS:
        return None
    if suite.metric_kinds.get(spec.metric) != "rubric":
        return None  # recorded scores and reference metrics cost no judge call: nothing to save
    if spec.stat == "pass_rate":
        return (0.0, 1.0)
    return suite.scale_of(spec.metric)


def _sequential_settings(board: Scorer, suite: Suite) -> tuple[bool, int, int]:
    """(on, round, seed) of a suite: its ``sequential:`` setting over the run's options."""
    settings = board.settings
    on, size, seed = suite.sequential or (settings.sequential, None, None)
    return on, size or settings.sequential_round, settings.sequential_seed if seed is None else seed


def _sequential_value(
    spec_inner: MetricThreshold | None, case: Case, score: Score, scale: tuple[float, float]
) -> float | None:
    """A judged case's value for the confidence sequence: its score (``mean``) or 1/0 for
    passing (``pass_rate``); None (the row is then judged in full) when it is unscored,
    categorical or off the scale."""
    if not score.scored or isinstance(score.value, str) or score.value is None:
        return None
    if spec_inner is not None:
        return 1.0 if spec_inner.holds(score.value, case.language) else 0.0
    value = float(score.value)
    return value if scale[0] <= value <= scale[1] else None


def judge_sequentially(
    items: list[pytest.Item], config: pytest.Config, paid_needs: Iterable[tuple[Suite, Case, str]] = ()
) -> tuple[int, int, int, int] | None:
    """Judge the selected sequential aggregate rows in rounds (``execution/sequential.py``);
    ``paid_needs``: the calls the run plans for its other items.

    Runs where the calls are planned (``pytest_collection_finish``), in every xdist worker
    alike: each worker sends the calls it owns and waits for the others' replies, so all see
    the same scores in the same order and reach the same decisions. Returns (rows, settled
    rows, rounds, judge calls not needed), or None when no row is sequential.
    """
    board = _scorer(config)
    checks: dict[tuple[int, int], list[AggregateItem]] = {}
    for item in items:
        if isinstance(item, AggregateItem) and item.sequential:
            checks.setdefault((id(item.suite), id(item.check)), []).append(item)
    if not checks:
        return None
    # Cases whose calls the other selected items pay for anyway (case items, regression items: their
    # metric, or any rubric of a compound judge): a row of such cases only is judged in full, its
    # verdict the full run's. From the items' needs, not from what was sent, so every xdist worker
    # (which sends only the calls it owns) agrees.
    asserted: set[tuple[int, str, str]] = set()
    for suite, case, metric in paid_needs:
        compound = suite.judge.mode == "compound" and suite.metric_kinds.get(metric) == "rubric"
        asserted.add((id(suite), case.key, "*" if compound else metric))
    runs: dict[tuple[int, int], dict[str, RowRun]] = {}
    where: dict[int, tuple[Suite, AggregateCheck, tuple[float, float]]] = {}
    by_key: dict[str, Case] = {}
    for key, members in checks.items():
        suite, check = members[0].suite, members[0].check
        scale = sequential_scale(board, suite, check)
        assert scale is not None
        _, size, seed = _sequential_settings(board, suite)
        groups = {group.name: group for group in check.groups(suite.cases)}
        rows: dict[str, RowRun] = {}
        for name in dict.fromkeys(member.language for member in members):
            spec = check.spec if name == ALL_LANGUAGES else check.for_group(groups[name])
            cases = [case for case in suite.cases if name == ALL_LANGUAGES or case.group(check.group_by).name == name]
            cases.sort(key=lambda case: order_key(seed, case.key))
            by_key.update((case.key, case) for case in cases)
            keys = [case.key for case in cases]
            # The ``all`` row holds every group: it takes a round of each per round, so it reaches
            # its end in as many rounds as a group (not one round per ``size`` of all the cases).
            step = size * max(len(groups), 1) if name == ALL_LANGUAGES else size
            row = RowRun(name, keys, spec.op, spec.value, scale, min_cases=check.min_cases, size=step)
            # ``==``/``!=`` (the sequence can't decide them), or nothing to save: judged in full.
            paid = bool(cases) and all(
                (id(suite), case.key, check.spec.metric) in asserted or (id(suite), case.key, "*") in asserted
                for case in cases
            )
            row.full = spec.op not in (">=", ">", "<=", "<") or paid
            rows[name] = row
            where[id(row)] = (suite, check, scale)
        runs[key] = rows

    def judge(batch: list[tuple[RowRun, list[str]]]) -> list[list[float | None]]:
        needs = [(where[id(row)][0], by_key[k], where[id(row)][1].spec.metric) for row, keys in batch for k in keys]
        board.plan(needs)
        results: list[list[float | None]] = []
        for row, keys in batch:
            suite, check, scale = where[id(row)]
            results.append(
                [
                    _sequential_value(
                        check.spec.inner, by_key[k], board.score(suite, by_key[k], check.spec.metric), scale
                    )
                    for k in keys
                ]
            )
        return results

    every = [row for rows in runs.values() for row in rows.values()]
    rounds = run_rounds(every, judge)
    config.stash[_sequential_key] = runs
    skipped = [
        (suite, by_key[k], check.spec.metric)
        for key, rows in runs.items()
        for k in _not_needed(rows)
        for suite, check, _ in [where[id(next(iter(rows.values())))]]
    ]
    settled = sum(1 for row in every if not row.full and row.decision is not None and row.decision.settled)
    return len(every), settled, rounds, board.unplanned(skipped)


def _not_needed(rows: dict[str, RowRun]) -> dict[str, str]:
    """Case key -> why it was not judged, for the cases no row of a check needed."""
    needed = {k for row in rows.values() for k in row.case_keys[: len(row.case_keys) - len(row.not_needed)]}
    reasons: dict[str, str] = {}
    # A case's own group's reason first; the ``all`` row's for cases only it had.
    for name in sorted(rows, key=lambda name: name == ALL_LANGUAGES):
        row = rows[name]
        for k in row.not_needed:
            if k not in needed:
                reasons.setdefault(k, row.reason)
    return reasons


def _sequential_row(row: AggregateRow, run: RowRun | None) -> AggregateRow:
    """``row`` as sequential judging decided it: a settled row's verdict, value and bounds are the
    confidence sequence's at its stop; a ``lower``/``upper`` row that ran to the end keeps its
    sequence's bounds (its verdict reads them); any other row is the full run's."""
    if run is None or run.full or run.decision is None:
        return row
    decision = run.decision
    if not decision.settled and row.spec.bound is None:
        return row
    values = run.values
    seq = replace(
        row,
        n_scored=len(values),
        n_unscored=0,
        value=sum(values) / len(values) if values else None,
        ci_low=decision.low,
        ci_high=decision.high,
    )
    passed = decision.passed if decision.settled else row.spec.holds(seq.asserted)
    return replace(seq, passed=row.problem is None and bool(passed))


def _assign_carriers(items: list[pytest.Item], suite_path: str, metric: str) -> dict[str, set[str]]:
    """Which selected aggregate item of a suite and metric carries each case's record: the first
    (in run order) whose own group holds the case, else the first selected ``all`` item.

    Every worker under pytest-xdist has the same selected items, so each assigns the same carriers.
    """
    mine = [
        item
        for item in items
        if isinstance(item, AggregateItem) and str(item.suite.path) == suite_path and item.check.spec.metric == metric
    ]
    if not mine:
        return {}
    fallback = next((item for item in mine if item.language == ALL_LANGUAGES), None)
    groups = [item for item in mine if item.language != ALL_LANGUAGES]
    # The first group item (in run order) of each (group_by, group name): a case's group is
    # computed once per distinct group_by, not once per item (per item it grew with cases x groups).
    first: dict[tuple[tuple[str, ...], str], int] = {}
    for index, item in enumerate(groups):
        first.setdefault((item.check.group_by, item.language), index)
    group_bys = list(dict.fromkeys(item.check.group_by for item in groups))
    carriers: dict[str, set[str]] = {}
    for case in mine[0].suite.cases:
        hits = [first[key] for group_by in group_bys if (key := (group_by, case.group(group_by).name)) in first]
        own = groups[min(hits)] if hits else fallback
        if own is not None:
            carriers.setdefault(own.nodeid, set()).add(case.id)
    return carriers


def _selected_groups(rows: list[AggregateItem]) -> set[str] | None:
    """The group names whose cases the selected rows of one check need; None when that is
    every case (the ``all`` row is selected)."""
    names = {item.language for item in rows}
    return None if ALL_LANGUAGES in names else names


def human_message(suite: str, row: AggregateRow, rows: list[AggregateRow], language: str, judges: str | None) -> str:
    """The failure text of a ``human_mean``/``human_pass_rate`` item, in the agreement gate's shape:
    what was estimated, from what, how sure, then every group's row."""
    statistic = (
        f"mean {row.spec.metric}"
        if row.spec.stat == "human_mean"
        else f"pass rate of {row.spec.inner.render() if row.spec.inner else row.spec.metric}"
    )
    target = f"{suite}: the native speakers' {statistic} in {language}"
    if row.problem is not None:
        head = f"ERROR: {target}: {row.problem}"
    else:
        head = f"FAILED: {target}: {row.spec.label} = {format_value(row.asserted)}, expected {row.spec.op} {row.spec.value:g}"
    lines = [head]
    detail = row.human
    if detail is not None and detail.judge is not None:
        lines.append(
            f"  {'estimate':<15} {format_fixed(row.value)} (95% CI {format_fixed(row.ci_low)} - {format_fixed(row.ci_high)}; "
            "prediction-powered, PPI++: the judge's scores on all cases rectified by the labelled ones"
            + ("" if detail.lam is None else f", lambda {detail.lam:.2f}")
            + ")"
        )
        lines.append(f"  {'from':<15} {detail.n_labelled} human-labelled of {detail.n_total} judged cases")
        lines.append(
            f"  {'human only':<15} {format_fixed(detail.human_only)} (95% CI {format_fixed(detail.human_only_low)} - "
            f"{format_fixed(detail.human_only_high)}; the labels alone)"
        )
        lines.append(
            f"  {'judge':<15} {format_fixed(detail.judge)} (the judge's own value; estimated bias "
            f"{'-' if detail.bias is None else f'{detail.bias:+.3f}'}, judge minus human)"
        )
    if judges:
        lines.append(f"  {'judged by':<15} {judges}")
    lines.append(render_human_table(rows, highlight=language))
    return "\n".join(lines)


class InvalidSuiteItem(InvalidFileItem):
    """Stands in for a suite that failed to load, so its error is reported with the run."""

    what = "suite"


class _SuiteItem(LLMJudgeItem):
    suite: Suite
    judge_problem: str | None

    def _skip_or_fail_without_judge(self, metric: str, recorded: bool) -> None:
        if self.judge_problem is None or recorded or self.suite.metric_kinds.get(metric) not in JUDGE_KINDS:
            return
        from pytest_llmjudge.session.no_judge import skip_or_fail_without_judge

        board = _scorer(self.config)
        reason = f"judge {board.judge_settings(self.suite.judge).label} {self.judge_problem}"
        skip_or_fail_without_judge(board.settings, reason, self.suite.judge.required)


class CaseItem(_SuiteItem):
    """One case checked against one threshold."""

    def __init__(
        self, *, suite: Suite, case: Case, threshold: MetricThreshold, judge_problem: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.case = case
        self.threshold = threshold
        self.judge_problem = judge_problem
        self.extra_keyword_matches.update({case.language, threshold.metric, case.id})

    def setup(self) -> None:
        self._skip_or_fail_without_judge(self.threshold.metric, self.threshold.metric in self.case.recorded)

    def runtest(self) -> None:
        score = _scorer(self.config).score(self.suite, self.case, self.threshold.metric)
        expected = self.threshold.expected(self.case.language)
        passed = score.scored and self.threshold.holds(score.value, self.case.language)
        result = _case_record(
            self.config,
            self.suite,
            self.case,
            self.threshold.metric,
            score,
            threshold=Threshold(op=self.threshold.op, value=expected),
            passed=passed,
        )
        self.llmjudge_result = result
        record(self, result.junit_properties())
        if score.error is not None and score.error.startswith(NOT_JUDGED):
            # The spend cap kept the call from being sent: the headline names the cap.
            raise CaseFailure(
                f"NOT JUDGED: {self.case.id} [{self.case.language}] {self.threshold.metric}, expected "
                f"{self.threshold.op} {format_value(expected)}: {score.error}"
            )
        if not score.scored:
            raise CaseFailure(self._explain(score, "UNSCORED"))
        if not passed:
            raise CaseFailure(self._explain(score, "FAILED"))

    def explain_untrusted(self) -> str:
        """What the judge said for this case (score, justification, output) though it is not trusted."""
        score = _scorer(self.config).score(self.suite, self.case, self.threshold.metric)
        return self._explain(score, "UNTRUSTED")

    def _explain(self, score: Score, verdict: str) -> str:
        from pytest_llmjudge.judges.diagnosis import PROVIDER_FAILED, reply_excerpt

        expected = format_value(self.threshold.expected(self.case.language))
        head = (
            f"{verdict}: {self.case.id} [{self.case.language}] {self.threshold.metric} = {format_value(score.value)}, "
            f"expected {self.threshold.op} {expected}"
        )
        if score.error and score.error.startswith(PROVIDER_FAILED):
            # The judge, not the case, failed: one line per case; the summary's headline says the rest.
            return f"{head}: judge call failed: {score.error.removeprefix(PROVIDER_FAILED)}"
        lines = [head]
        if score.error:
            lines.append(f"  reason:        {score.error}")
        if score.raw_reply is not None:
            lines.append(f"  raw reply:     {reply_excerpt(score.raw_reply)}")
        if score.judge:
            cached = " (from cache)" if score.cached else ""
            lines.append(f"  judge:         {score.judge}{cached} [{score.source}]")
        if score.samples:
            lines.append(
                f"  samples:       {', '.join(format_value(s) for s in score.samples)} (spread {format_value(score.spread)})"
            )
        if score.justification:
            lines.append(f"  justification: {_excerpt(score.justification)}")
        for key, value in score.detail.items():
            if isinstance(value, list) and value and all(isinstance(entry, dict) for entry in value):
                # A RAG metric's judged items (metrics/rag.py): one line each, verdict first.
                lines.append(f"  {key}:")
                lines.extend(f"    {_judged_item(entry)}" for entry in value)
                continue
            lines.append(f"  {key + ':':<14} {value}")
        if self.case.messages:
            roles = ", ".join(turn.role for turn in self.case.messages)
            lines.append(f"  conversation:  {len(self.case.messages)} turn(s) before the output ({roles})")
        if self.case.input:
            lines.append(f"  input:         {_excerpt(self.case.input)}")
        lines.append(f"  output:        {_excerpt(_judged_output(self.config, self.suite, self.case))}")
        if self.case.reference:
            lines.append(f"  reference:     {_excerpt(self.case.reference)}")
        return "\n".join(lines)

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        return [] if self.judge_problem is not None else [(self.suite, self.case, self.threshold.metric)]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.case.line - 1 if self.case.line else 0
        return self.case.path, line, f"{self.case.id}[{self.threshold.render()}]"


class AggregateItem(_SuiteItem):
    """One suite aggregate, asserted for one group (``language`` holds its name: ``hi``, ``hi-task=qa``) or all."""

    checks_not_judged = True
    """Fails on its own row's cases the spend cap left unjudged (``runtest``), not on other rows' it scored."""

    def __init__(
        self, *, suite: Suite, check: AggregateCheck, language: str, judge_problem: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.suite = suite
        self.check = check
        self.language = language
        self.judge_problem = judge_problem
        self.extra_keyword_matches.update({language, check.spec.metric, "aggregate"})

    @property
    def cases(self) -> list[Case]:
        """The cases of this item's row: its group's, or every case for ``all``."""
        if self.language == ALL_LANGUAGES:
            return list(self.suite.cases)
        return [case for case in self.suite.cases if case.group(self.check.group_by).name == self.language]

    def setup(self) -> None:
        metric = self.check.spec.metric
        recorded = all(metric in case.recorded for case in self.suite.cases)
        self._skip_or_fail_without_judge(metric, recorded)

    def rows(self) -> list[AggregateRow]:
        shared = self._shared = self._shared_scores()
        metric = self.check.spec.metric
        self.case_scores: list[CaseScore] = []  # per-case scores of this row, for baselines
        self.unasserted: list[CaseRecord] = []  # the row's cases no case item reports on this metric
        carried = self._carried_cases()
        for case, score, group in shared.scored:
            if self.language in (ALL_LANGUAGES, group):
                if score.error is not None and score.error.startswith(NOT_NEEDED):
                    # Never judged: no score for baselines, but its record says why.
                    if case.id in carried and not any(threshold.metric == metric for threshold in case.thresholds):
                        self.unasserted.append(self._unasserted_record(case, score))
                    continue
                self.case_scores.append(
                    CaseScore(
                        case=case.id,
                        language=case.language,
                        score=score.value if score.scored else None,
                        source=score.source,
                        judge=score.judge,
                        higher_is_better=score.higher_is_better,
                        human=case.human.get(metric),
                    )
                )
                if case.id in carried and not any(threshold.metric == metric for threshold in case.thresholds):
                    self.unasserted.append(self._unasserted_record(case, score))
        return shared.rows

    def _shared_scores(self) -> _CheckScores:
        """Every case's score and group, and the rows of every group, for this item's check.

        Computed by the first of the check's row items to run and shared by the others: each
        row item needs all rows (its failure shows the table), so computing them per item cost
        one pass over every case and a bootstrap interval per group, for each group (about half
        of a large multilingual run, docs/scale.md). Let go of once all the
        check's selected items have taken it (in one process; an xdist worker keeps it).

        "All rows" are the selected ones: only their groups' cases are judged, so a run of one
        language (``--llmjudge-language sw``, ``-k "sw and mean"``) pays for that language's
        cases alone; its table shows the selected rows, and no ``all`` row unless that row is
        selected (which needs every case).
        """
        memo = self.config.stash.setdefault(_check_scores_key, {})
        key = (id(self.suite), id(self.check))
        shared = memo.get(key)
        if shared is None:
            board = _scorer(self.config)
            metric = self.check.spec.metric
            siblings = [
                item
                for item in self.session.items
                if isinstance(item, AggregateItem) and item.check is self.check and item.suite is self.suite
            ]
            wanted = _selected_groups(siblings or [self])
            # Only the cases of the selected rows are judged (a deselected row costs nothing);
            # the ``all`` row, when selected, needs every case.
            cases = [
                case for case in self.suite.cases if wanted is None or case.group(self.check.group_by).name in wanted
            ]
            runs = self.config.stash.get(_sequential_key, {}).get(key)
            skipped = _not_needed(runs) if runs else {}
            board.plan((self.suite, case, metric) for case in cases if case.key not in skipped)
            scored: list[tuple[Case, Score, str]] = []
            values = []
            for case in cases:
                group = case.group(self.check.group_by).name
                if case.key in skipped:  # sequential judging settled its row first: no call, no value
                    scored.append(
                        (case, Score(metric=metric, value=None, source="judge", error=skipped[case.key]), group)
                    )
                    continue
                score = board.score(self.suite, case, metric)
                scored.append((case, score, group))
                values.append(
                    ScoredValue(
                        case.language,
                        score.value,
                        score.scored,
                        group=group,
                        human=case.human.get(metric),
                        samples=score.samples,
                        case=case.id,
                    )
                )
            overrides = {group.name: self.check.for_group(group) for group in self.check.groups(self.suite.cases)}
            rows = compute_rows(
                overrides,
                self.check.spec,
                values,
                min_cases=self.check.min_cases,
                max_unscored_rate=self.check.max_unscored_rate,
                min_labels=self.check.min_labels,
                scale=self.suite.scale_of(metric),
            )
            if wanted is not None:
                # The ``all`` row of a subset of the groups is no row of the suite: not shown.
                rows = [row for row in rows if row.language != ALL_LANGUAGES]
            if runs:
                rows = [_sequential_row(row, runs.get(row.language)) for row in rows]
            queue = self.config.stash.get(queue_key, None)
            if queue is not None and self.check.spec.stat in HUMAN_STATS:
                queue.append((self.suite, self.check, scored, self.suite.scale_of(metric)))
            takers = len(siblings)
            shared = memo[key] = _CheckScores(self.check, scored, rows, takers)
        shared.takers -= 1
        if shared.takers <= 0:
            del memo[key]
        return shared

    def _carried_cases(self) -> set[str]:
        """Ids of the cases whose unasserted records this item carries: each case's record rides on
        one selected item of the suite and metric (:func:`_assign_carriers`), so 10,000
        aggregate-only cases are 10,000 records, not one set per group item, ``all`` item and
        aggregate."""
        carriers = self.config.stash.setdefault(_carriers_key, {})
        key = (str(self.suite.path), self.check.spec.metric)
        if key not in carriers:
            carriers[key] = _assign_carriers(self.session.items, *key)
        return carriers[key].get(self.nodeid, set())

    def _unasserted_record(self, case: Case, score: Score) -> CaseRecord:
        """The record of a case judged only for the suite's aggregates: what a case item would
        record, without a threshold or a verdict of its own."""
        metric = self.check.spec.metric
        aggregates = [check.spec.label for check in self.suite.aggregates if check.spec.metric == metric]
        return _case_record(
            self.config, self.suite, case, metric, score, threshold=None, passed=None, aggregates=aggregates
        )

    def release_family_key(self) -> tuple[str, ...] | None:
        """The release family this row joins (``family: release``, ``--llmjudge-family-include``), or None."""
        from pytest_llmjudge.regression.items import family_key_of
        from pytest_llmjudge.regression.items import state_key as regression_key

        state = self.config.stash.get(regression_key, None)
        if state is None or not self.check.joinable or self.sequential:
            # A row judged in rounds stopped when its anytime bound settled: a fixed-n p-value of
            # the cases it judged would not be valid after that optional stopping.
            return None
        included = "aggregates" in state.include and self.suite.scale_of(self.check.spec.metric) is not None
        if self.check.family != "release" and not included:
            return None
        return family_key_of(self.config, self.suite, self.check.spec.metric)

    def release_pvalue(self, design_level: float) -> float | None:
        """The betting p-value of this row's bound check (``stats/betting.py``); None for an error row."""
        from pytest_llmjudge.stats.betting import betting_pvalue
        from pytest_llmjudge.suite.aggregate import compute_row

        metric = self.check.spec.metric
        scale = self.suite.scale_of(metric)
        if scale is None:
            return None
        board = _scorer(self.config)
        board.plan((self.suite, case, metric) for case in self.cases)
        values = [
            ScoredValue(case.language, score.value, score.scored, group=case.group(self.check.group_by).name)
            for case in self.cases
            for score in [board.score(self.suite, case, metric)]
        ]
        specs = {group.name: self.check.for_group(group) for group in self.check.groups(self.suite.cases)}
        spec = self.check.spec if self.language == ALL_LANGUAGES else specs.get(self.language, self.check.spec)
        row = compute_row(
            self.language,
            spec,
            values,
            min_cases=self.check.min_cases,
            max_unscored_rate=self.check.max_unscored_rate,
            scale=scale,
        )
        if row.problem is not None or spec.bound is None:
            return None
        numbers = [float(v.value) for v in values if v.scored and isinstance(v.value, (int, float))]
        return betting_pvalue(numbers, scale[0], scale[1], spec.value, side=spec.bound, design_level=design_level)

    def _release(self, row: AggregateRow) -> tuple[AggregateRow, ReleaseMember | None]:
        """The row decided by its release family (adjusted p <= alpha), when it joined one."""
        from pytest_llmjudge.regression.items import joined_decision

        if self.check.family == "release" and self.sequential and row.problem is None:
            stopped = (
                "family: release needs the row judged in full, but it is judged sequentially (a fixed-n p-value "
                "is not valid after stopping early); set sequential: false on the suite"
            )
            return replace(row, problem=stopped, passed=False), None
        key = self.release_family_key()
        if key is None:
            return row, None
        d = joined_decision(self, key)
        problem = row.problem
        if problem is None and d.p_value is None:
            problem = f"family: release needs a known scale of {self.check.spec.metric} (a rubric, or scale:)"
        return replace(row, problem=problem, passed=problem is None and d.passed), d.member()

    def _sibling_decided(self, row: AggregateRow) -> AggregateRow:
        """Another row of the table as its own item's family decided it (if it joined one and was decided)."""
        from pytest_llmjudge.regression.items import state_key as regression_key

        state = self.config.stash.get(regression_key, None)
        if state is None or not state.joined or row.problem is not None:
            return row
        sibling = next(
            (
                item
                for item in self.session.items
                if isinstance(item, AggregateItem) and item.check is self.check and item.language == row.language
            ),
            None,
        )
        decision = state.joined.get(sibling.nodeid) if sibling is not None else None
        return row if decision is None else replace(row, passed=decision.passed)

    def runtest(self) -> None:
        rows = self.rows()
        row = next(r for r in rows if r.language == self.language)
        row, release = self._release(row)
        rows = [row if r.language == self.language else self._sibling_decided(r) for r in rows]
        result = AggregateRecord(
            release=release,
            suite=self.suite.name,
            suite_path=str(self.suite.path),
            aggregate=self.check.spec.label,
            metric=self.check.spec.metric,
            language=self.language,
            passed=row.passed,
            case_scores=self.case_scores,
            cases=self.unasserted or None,
            rows=[
                RecordRow(
                    language=r.language,
                    n_scored=r.n_scored,
                    n_unscored=r.n_unscored,
                    value=r.value,
                    ci_low=r.ci_low,
                    ci_high=r.ci_high,
                    threshold=Threshold(op=r.spec.op, value=r.spec.value),
                    passed=r.passed,
                    problem=r.problem,
                    human=None if r.human is None else HumanEstimate(**vars(r.human)),
                )
                for r in rows
            ],
        )
        self.llmjudge_result = result
        record(self, result.junit_properties())
        judges = result.judges
        unjudged = [
            s.error
            for _, s, group in self._shared.scored
            if self.language in (ALL_LANGUAGES, group) and s.error is not None and s.error.startswith(NOT_JUDGED)
        ]
        if unjudged:  # never passes on the cases it has, however many it tolerates unscored
            raise CaseFailure(
                f"NOT JUDGED: {self.check.spec.label} for {self.language}: {len(unjudged)} of "
                f"{row.n_scored + row.n_unscored} case(s) not judged: {unjudged[0]}"
            )
        if row.passed:
            return
        verdict = "ERROR" if row.problem else "FAILED"
        if row.spec.stat in HUMAN_STATS:
            raise CaseFailure(human_message(self.suite.name, row, rows, self.language, judges))
        detail = f" ({row.problem})" if row.problem else ""
        if release is not None and release.p_adjusted is not None:
            from pytest_llmjudge.stats.multiplicity import method_name

            detail += (
                f" (release family: p = {format_fixed(release.p_value, 4)}, adjusted "
                f"{format_fixed(release.p_adjusted, 4)} > alpha {release.alpha:g}, {method_name(release.correction)} "
                f"over {release.size} comparison(s) ({release.family}))"
            )
        judged_by = f"  judge: {judges}\n" if judges else ""  # where CI shows only the failure message
        per_case = self._pass_k_cases(row) if row.spec.stat in PASS_K_STATS else ""
        raise CaseFailure(
            f"{verdict}: {row.spec.label} for {self.language} = {format_value(row.asserted)}, "
            f"expected {row.spec.op} {row.spec.value:g}{detail}\n"
            f"{judged_by}{self._sequential_note()}{render_table(rows, highlight=self.language)}{per_case}"
        )

    def _sequential_note(self) -> str:
        """How sequential judging decided this row, for its failure message ('' when it did not)."""
        runs = self.config.stash.get(_sequential_key, {}).get((id(self.suite), id(self.check)))
        run = runs.get(self.language) if runs else None
        if run is None or run.full or run.decision is None:
            return ""
        how = "settled" if run.decision.settled else "not settled"
        return (
            f"  sequential: {how} after {run.judged} of {len(run.case_keys)} cases; anytime-valid 95% bounds "
            f"[{format_value(run.decision.low)}, {format_value(run.decision.high)}]\n"
        )

    @property
    def sequential(self) -> bool:
        """Whether this row's cases are judged in rounds (``judge_sequentially``), not planned up front."""
        return self.judge_problem is None and sequential_scale(_scorer(self.config), self.suite, self.check) is not None

    def _pass_k_cases(self, row: AggregateRow, shown: int = 10) -> str:
        """The row's cases with the lowest pass@k/pass^k estimates: which cases pulled the mean down."""
        values = [
            ScoredValue(case.language, score.value, score.scored, samples=score.samples, case=case.id)
            for case, score, group in self._shared.scored
            if self.language in (ALL_LANGUAGES, group)
        ]
        try:
            cases = pass_k_cases(row.spec, values)
        except ValueError:
            return ""  # the row's problem already names the case
        low = sorted((case for case in cases if case.estimate < 1.0), key=lambda case: case.estimate)
        if not low:
            return ""
        lines = [f"\n  lowest cases ({min(shown, len(low))} of {len(low)} below 1; passing samples of n, k):"]
        for case in low[:shown]:
            counted = f"{case.passing}/{case.n}, k={case.k}" if case.scored else "unscored"
            lines.append(f"    {case.case} [{case.language}] {counted}: {case.estimate:.3f}")
        return "\n".join(lines)

    def planned_calls(self) -> list[tuple[Suite, Case, str]]:
        # This row's cases only (every case for ``all``): a row selected alone (-k, -m,
        # --llmjudge-language) pays for its own group, not for the groups left out.
        if self.judge_problem is not None or self.sequential:
            return []
        return [(self.suite, case, self.check.spec.metric) for case in self.cases]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.check.line - 1 if self.check.line else 0
        return self.path, line, f"{self.check.spec.label}[{self.language}]"
