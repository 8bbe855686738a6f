"""Report inputs from a real run: the example suites, once per test session, in process.

:func:`real_run` copies ``example_suites`` (recorded PARIKSHA scores, a calibration set, a
release gate against a committed baseline, pairwise rankings, reference metrics), points
the OpenAI live-judge suite at a loopback judge (the Anthropic one has no key and is
skipped: the report's ``not_run``), runs ``pytest --llmjudge`` on them with a JSON report,
and keeps what the plugin really emitted: the JSON text, the document parsed back, and
the terminal output. Larger documents replicate those real records under new case ids
(:func:`replicated`); the page-size tests also use the speed benchmark's generator
(``benchmarks/report_speed.py``, typed records shaped like the plugin's).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_llmjudge.records import ItemRecord, PairedCase, RegressionRecord
from pytest_llmjudge.report.assemble import RunInputs, build_document
from pytest_llmjudge.report.document import ReportDocument
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

EXAMPLES = Path(__file__).resolve().parents[2] / "example_suites"
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "report_speed.py"


@dataclass(frozen=True)
class RealRun:
    document: ReportDocument
    json_text: str
    terminal: str
    exit_code: int


def _justify_and_score(query: Any) -> int:
    """Swahili answers fail linguistic acceptability; everything else gets the top score."""
    if query.metric == "linguistic_acceptability":
        return 0 if query.language == "sw" else 2
    return 0 if query.metric in ("hallucinations", "problematic_content") else 2


@pytest.fixture(scope="session")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRun]:
    root = tmp_path_factory.mktemp("examples")
    shutil.copytree(EXAMPLES, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    judge = ScriptedJudge(_justify_and_score)
    report = root / "report.json"
    terminal = io.StringIO()
    with LoopbackServer(responder=judge) as server, pytest.MonkeyPatch.context() as patch:
        suite = root / "live_judge_openai.yaml"
        text = suite.read_text(encoding="utf-8")
        pointed = text.replace(
            "  provider: openai\n", f'  provider: openai\n  base_url: "{server.openai_base_url}"\n', 1
        )
        assert pointed != text, "the example's judge block changed: point it at the loopback judge another way"
        suite.write_text(pointed, encoding="utf-8")
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CI"):
            patch.delenv(variable, raising=False)
        patch.chdir(root)
        args = ["--llmjudge", str(root), f"--llmjudge-report=json:{report}", "-p", "no:randomly"]
        args += ["-p", "no:cacheprovider", "-q", "-rN", f"--llmjudge-cache-dir={root / '.cache'}"]
        with contextlib.redirect_stdout(terminal):
            exit_code = int(pytest.main(args))
    json_text = report.read_text(encoding="utf-8")
    yield RealRun(ReportDocument.model_validate_json(json_text), json_text, terminal.getvalue(), exit_code)


def replicated(document: ReportDocument, n_cases: int) -> ReportDocument:
    """A document of ``n_cases`` case records: the real run's, repeated under new case ids.

    Aggregates, gates, regressions, rankings and the other records are kept once.
    """
    real_cases = document.cases
    cases: list[ItemRecord] = []
    for index in range(n_cases):
        case = real_cases[index % len(real_cases)]
        copy = index // len(real_cases)
        new_id = case.case if copy == 0 else f"{case.case}-r{copy}"
        nodeid = None if case.nodeid is None else f"{case.nodeid}-r{copy}"  # None: judged for aggregates only
        cases.append(case.model_copy(update={"case": new_id, "nodeid": nodeid}))
    rest: list[ItemRecord] = [*document.aggregates, *document.gates, *document.regressions, *document.rankings]
    return build_document(
        RunInputs(
            records=[*cases, *rest, *document.other],
            not_run=document.not_run,
            suites=document.suites,
            run=document.run,
        )
    )


@pytest.fixture(scope="session")
def real_document(real_run: RealRun) -> ReportDocument:
    return real_run.document


@pytest.fixture(scope="session")
def many_cases(real_run: RealRun) -> Callable[[int], ReportDocument]:
    """``many_cases(n)``: the real run's document with n case records."""
    return lambda n: replicated(real_run.document, n)


def _page_cases(page: str) -> list[dict[str, Any]]:
    """The cases an HTML report embeds for its case browser, with shared text resolved."""
    found = re.search(r'<script type="application/json" id="case-data">(.*?)</script>', page, re.S)
    assert found is not None, "the page embeds its cases"
    packed = json.loads(found.group(1))
    shared = ("s", "l", "m", "t", "input", "output", "reference", "judge", "justification", "reason", "raw", "w")
    shared += ("bout",)
    return [
        {k: packed["strings"][v] if k in shared and isinstance(v, int) else v for k, v in c.items()}
        for c in packed["cases"]
    ]


@pytest.fixture(scope="session")
def page_cases() -> Callable[[str], list[dict[str, Any]]]:
    """``page_cases(html)``: the cases an HTML report embeds, with shared text resolved."""
    return _page_cases


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("report_speed", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def report_speed() -> ModuleType:
    return load_benchmark()


@pytest.fixture(scope="session")
def synthetic(report_speed: ModuleType) -> Callable[[int], RunInputs]:
    """``synthetic(n)``: the speed benchmark's run of n typed case records (for the page-size tests)."""
    return report_speed.synthetic_inputs  # type: ignore[no-any-return]


def _regressed(metric: str, language: str, nodeid: str) -> RegressionRecord:
    """A failed regression of suite ``s`` pairing c1 (2 -> 0, baseline output "alt") and c2 (2 -> 2, "gleich")."""
    return RegressionRecord(
        suite="s",
        suite_path="s.yaml",
        metric=metric,
        language=language,
        group_by=["language"],
        baseline="prod",
        baseline_suite="s",
        gate="fail",
        verdict="regressed",
        n=2,
        higher_is_better=True,
        method="paired bootstrap",
        passed=False,
        cases=[
            PairedCase(case="c1", baseline=2, candidate=0, baseline_output="alt"),
            PairedCase(case="c2", baseline=2, candidate=2, baseline_output="gleich"),
        ],
        nodeid=nodeid,
        outcome="failed",
    )


@pytest.fixture(scope="session")
def regressed() -> Callable[[str, str, str], RegressionRecord]:
    """``regressed(metric, language, nodeid)``: a failed regression pairing cases c1 and c2 of suite ``s``."""
    return _regressed
