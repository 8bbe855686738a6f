"""The HTML report in a real browser: headless Chromium draws the charts and runs the filter.

Skipped when Debian's ``chromium`` is not installed (``apt-get install -y chromium``).
The screenshot goes to ``tmp_path``; set ``PYTEST_LLMJUDGE_SCREENSHOT_DIR`` to keep a copy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from urllib.parse import quote

import pytest

from pytest_llmjudge.records import CaseRecord, Threshold
from pytest_llmjudge.report.assemble import RunInputs, build_document
from pytest_llmjudge.report.document import ReportDocument
from pytest_llmjudge.report.html import write_html

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (Debian: apt-get install -y chromium); the HTML report is not opened in a browser",
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)


@pytest.fixture
def document(synthetic: Callable[[int], RunInputs]) -> ReportDocument:
    return build_document(synthetic(1500))


@pytest.fixture
def report(tmp_path: Path, document: ReportDocument) -> Path:
    path = tmp_path / "report.html"
    write_html(document, path)
    return path


def dom_of(tmp_path: Path, url: str) -> str:
    result = chromium(tmp_path, "--dump-dom", url)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'data-ready="1"' in result.stdout, "the page script ran to its end"
    return result.stdout


def screenshot(tmp_path: Path, url: str, name: str, height: int = 1400) -> bytes:
    png = tmp_path / f"{name}.png"
    result = chromium(tmp_path, f"--screenshot={png}", f"--window-size=1280,{height}", url)
    assert result.returncode == 0, result.stderr[-2000:]
    keep = os.environ.get("PYTEST_LLMJUDGE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / png.name)
    return png.read_bytes()


def shown_rows(dom: str) -> list[tuple[str, str, str]]:
    """(language, metric, status) of the case rows the page drew."""
    return re.findall(r'<tr data-i="\d+" data-s="[^"]*" data-l="([^"]*)" data-m="([^"]*)" class="([^"]*)">', dom)


def test_charts_render_and_the_filter_runs(tmp_path: Path, report: Path) -> None:
    dom = dom_of(tmp_path, report.as_uri() + "#lang=ja&metric=linguistic_acceptability&status=pass")
    svgs = dom.count("<svg")
    drawn = int(re.search(r'data-charts-drawn="(\d+)"', dom).group(1))  # type: ignore[union-attr]
    assert svgs >= 60 and drawn == svgs, f"{drawn} of {svgs} charts have a size on the page"
    rows = shown_rows(dom)
    assert rows and set(rows) == {("ja", "linguistic_acceptability", "pass")}, "the URL fragment filtered the table"
    assert re.search(rf">{len(rows)} of 1500 match<", dom), "passing cases are listed too"


def test_sorting_by_score(tmp_path: Path, report: Path) -> None:
    dom = dom_of(tmp_path, report.as_uri() + "#metric=chrf%2B%2B&sort=-v")
    scores = [float(v) for v in re.findall(r'<td class="res">[a-z]+</td><td class="n">([0-9.]+)', dom)]
    assert len(scores) == 200 and scores == sorted(scores, reverse=True), "highest score first, one page of rows"


def test_ten_thousand_failing_cases_render_under_10_mb(
    tmp_path: Path, synthetic: Callable[[int], RunInputs], report_speed: ModuleType
) -> None:
    # issue 13's worst case: every case failed, with a justification three times as long.
    path = tmp_path / "big.html"
    write_html(build_document(report_speed.make_all_fail(synthetic(10_000))), path)
    assert path.stat().st_size < 10_000_000
    dom = dom_of(tmp_path, path.as_uri())
    assert ">10000 of 10000 match, first 200 shown<" in dom and len(shown_rows(dom)) == 200
    assert {status for _, _, status in shown_rows(dom)} <= {"fail", "unscored"}
    assert re.search(r'data-render-ms="\d+"', dom), "the page says how long it took (read by the benchmark)"


def test_screenshots_of_the_summary_a_failing_case_and_a_regression(
    tmp_path: Path, report: Path, document: ReportDocument
) -> None:
    failing = next(c for c in document.cases if c.outcome == "failed" and c.justification)
    changed = next(c for c in document.cases if c.baseline is not None and c.baseline.output != c.output)
    summary = screenshot(tmp_path, report.as_uri(), "summary", height=2000)
    assert summary.startswith(b"\x89PNG\r\n\x1a\n") and len(summary) > 50_000, "a real picture, not a blank page"
    for name, case in (("failing-case", failing), ("regression-case", changed)):
        assert case.nodeid is not None
        url = report.as_uri() + "#case=" + quote(case.nodeid, safe="")
        dom = dom_of(tmp_path, url)
        assert 'class="one-case"' in dom and f'data-case="{case.nodeid}"' in dom, "the linked case alone, in full"
        assert '<div id="case-detail">' in dom or '<div id="case-detail" data-case=' in dom, "the detail is shown"
        if name == "regression-case":
            assert "<dt>baseline output</dt>" in dom and "<dt>vs baseline</dt>" in dom
        assert len(screenshot(tmp_path, url, name, height=900)) > 20_000


def test_search_and_the_case_view_read_text_the_page_holds_once(tmp_path: Path) -> None:
    # A judge that repeats itself: half the cases share one justification, which the page embeds once.
    shared = "La réponse est claire, mais une tournure sonne peu naturelle."
    records = [
        CaseRecord(
            suite="release",
            suite_path="release.yaml",
            case=f"fr-{i:02d}",
            language="fr",
            metric="linguistic_acceptability",
            threshold=Threshold(op=">=", value=1),
            score=1,
            source="judge",
            justification=shared if i % 2 else f"Réponse {i} correcte.",
            input=f"Question {i}",
            output=f"Réponse {i}",
            passed=True,
            nodeid=f"release.yaml::fr-{i:02d}[linguistic_acceptability]",
            outcome="passed",
        )
        for i in range(40)
    ]
    path = tmp_path / "shared.html"
    write_html(ReportDocument(cases=records), path)
    assert path.read_text(encoding="utf-8").count(shared) == 1
    dom = dom_of(tmp_path, path.as_uri() + "#q=" + quote("tournure sonne"))
    assert ">20 of 40 match<" in dom and dom.count(f'<td class="why" dir="auto">{shared}</td>') == 20
    dom = dom_of(tmp_path, path.as_uri() + "#case=" + quote("release.yaml::fr-07[linguistic_acceptability]", safe=""))
    assert f'<dt>justification</dt><dd dir="auto" class="full">{shared}</dd>' in dom
