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

import pytest

from pytest_llmjudge.report.html import write_html
from pytest_llmjudge.report.model import RunInputs, build_document

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
def report(tmp_path: Path, synthetic: Callable[[int], RunInputs]) -> Path:
    path = tmp_path / "report.html"
    write_html(build_document(synthetic(1500)), path)
    return path


def test_charts_render_and_the_filter_runs(tmp_path: Path, report: Path) -> None:
    url = report.as_uri() + "#lang=ja&metric=linguistic_acceptability"
    result = chromium(tmp_path, "--dump-dom", url)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert 'data-ready="1"' in dom, "the page script ran to its end"
    svgs = dom.count("<svg")
    drawn = int(re.search(r'data-charts-drawn="(\d+)"', dom).group(1))  # type: ignore[union-attr]
    assert svgs >= 60 and drawn == svgs, f"{drawn} of {svgs} charts have a size on the page"
    rows = re.findall(r'<tr data-s="[^"]*" data-l="([^"]*)" data-m="([^"]*)"( hidden="")?>', dom)
    shown = [(lang, metric) for lang, metric, hidden in rows if not hidden]
    assert rows and shown, "some failed rows exist and some are shown"
    assert set(shown) == {("ja", "linguistic_acceptability")}, "the URL fragment filtered the table"
    assert f"{len(shown)} of {len(rows)} shown" in dom


def test_screenshot(tmp_path: Path, report: Path) -> None:
    png = tmp_path / "report.png"
    result = chromium(tmp_path, f"--screenshot={png}", "--window-size=1280,2000", report.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 50_000, "a real picture, not a blank page"
    keep = os.environ.get("PYTEST_LLMJUDGE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / "report.png")
        shutil.copy(report, Path(keep) / "report.html")
