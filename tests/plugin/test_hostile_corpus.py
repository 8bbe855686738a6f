"""The hostile-input corpus (``tests/hostile/corpus.py``) against the plugin.

One in-process pytest run collects every corpus file next to a valid suite. Each bad file
must become a failing item whose message names the file, the line (where there is one)
and the cause; the valid suite must still run and pass; nothing in the corpus may be
executed; and the run must end with exit code 1 (tests failed), never 0 or an internal
error. The entries that attack memory or CPU (alias bombs, deep nesting, huge lines) are
loaded again in subprocesses whose address space and CPU time the OS bounds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls

CORPUS_PATH = Path(__file__).resolve().parents[1] / "hostile" / "corpus.py"


def _load_corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llmjudge_hostile_corpus", CORPUS_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()
ENTRIES = corpus.build().entries


def _write(directory: Path, entry: object) -> None:
    for name in entry.directories:  # type: ignore[attr-defined]
        (directory / name).mkdir()
    for link, target in entry.symlinks:  # type: ignore[attr-defined]
        os.symlink(target, directory / link)
    for name in entry.fifos:  # type: ignore[attr-defined]
        os.mkfifo(directory / name)
    for name, content in entry.files.items():  # type: ignore[attr-defined]
        (directory / name).write_bytes(content)


def test_the_corpus_is_large_enough() -> None:
    assert len(ENTRIES) >= 60
    assert all(entry.cause for entry in ENTRIES)


def test_every_hostile_file_fails_its_own_item_and_the_valid_suite_still_passes(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", valid=corpus.VALID_SUITE)
    for entry in ENTRIES:
        _write(pytester.path, entry)
    result = pytester.runpytest_inprocess(
        "--llmjudge",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-rA",
        "--junitxml=junit.xml",
        "--llmjudge-report=json:report.json",
        "--llmjudge-report=html:report.html",
    )

    reports = {
        report.nodeid: report
        for report in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
        if report.when == "call" or report.outcome != "passed"
    }
    collect_errors = [
        report
        for report in result.reprec.getreports("pytest_collectreport")  # type: ignore[attr-defined]
        if report.failed
    ]
    assert collect_errors == [], [report.longreprtext[:500] for report in collect_errors]

    valid = {nodeid: report.outcome for nodeid, report in reports.items() if nodeid.startswith("valid.yaml::")}
    assert len(valid) == corpus.VALID_ITEMS
    assert set(valid.values()) == {"passed"}

    # Each file is collected under one path: a symlinked directory (or a loop) adds none.
    spellings: dict[Path, set[str]] = {}
    for node in reports:
        file_part = node.split("::", 1)[0]
        spellings.setdefault((pytester.path / file_part).resolve(), set()).add(file_part)
    assert [names for names in spellings.values() if len(names) > 1] == []

    problems = []
    for entry in ENTRIES:
        # Node ids show control characters as text (util/escaping.py), file names included.
        nodeid = escape_controls(f"{entry.main}::{entry.item}", ONE_LINE)
        report = reports.get(nodeid)
        if report is None:
            collected = sorted(node for node in reports if node.startswith(f"{entry.main}::"))
            problems.append(f"{entry.name}: no item {nodeid!r} (items of the file: {collected})")
            continue
        text = report.longreprtext
        expected = [entry.named_file, entry.cause] if entry.named_file else [entry.cause]
        if entry.line is not None:
            expected.append(f"{entry.named_file}:{entry.line}:")
        missing = [part for part in expected if part not in text]
        if escape_controls(text) != text:
            problems.append(f"{entry.name}: raw control characters in the message: {text[:300]!r}")
        if report.outcome != "failed" or missing:
            problems.append(f"{entry.name}: {report.outcome}, message lacks {missing}:\n{text[:600]}")
        if entry.item == "suite-error":
            others = [node for node in reports if node.startswith(f"{entry.main}::") and node != nodeid]
            if others:
                problems.append(f"{entry.name}: an invalid suite must have one item, got {others}")
    assert problems == [], "\n\n".join(problems)

    assert not (pytester.path / corpus.MARKER).exists()
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    # Whatever the inputs hold (lone surrogates, control characters), every report is written and
    # reads back as strict UTF-8; no output holds an entry's secret.
    outputs = {"terminal": result.stdout.str() + result.stderr.str()}
    for name in ("junit.xml", "report.json", "report.html"):
        outputs[name] = (pytester.path / name).read_bytes().decode("utf-8")
    json.loads(outputs["report.json"])
    ET.fromstring(outputs["junit.xml"])
    assert "could not render" not in outputs["terminal"] and "could not write" not in outputs["terminal"]
    leaks = [
        f"{entry.name}: {secret} in {where}"
        for entry in ENTRIES
        for secret in entry.absent
        for where, text in outputs.items()
        if secret in text
    ]
    assert leaks == []


_BOUNDED_LOAD = textwrap.dedent(
    """\
    import resource, sys
    from pathlib import Path

    from pytest_llmjudge.errors import SuiteError
    from pytest_llmjudge.suite.loader import iter_jsonl, load_yaml

    # Bound the address space relative to what this interpreter already maps (the baseline
    # of Python and its imports varies by machine), and the CPU time: the OS enforces both.
    with open("/proc/self/status") as status:
        vm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = vm_kb * 1024 + 300 * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (10, 10))
    try:
        for name in sys.argv[1:]:
            path = Path(name)
            if path.suffix == ".jsonl":
                list(iter_jsonl(path))
            else:
                load_yaml(path)
    except SuiteError as exc:
        print("REJECTED", exc)
    else:
        print("LOADED")
    """
)


@pytest.mark.parametrize("entry", [entry for entry in ENTRIES if entry.resource], ids=lambda entry: entry.name)
def test_resource_attacks_are_rejected_within_os_limits(tmp_path: Path, entry: object) -> None:
    _write(tmp_path, entry)
    names = [tmp_path / name for name in entry.files if name.endswith((".yaml", ".jsonl"))]  # type: ignore[attr-defined]
    names.sort(key=lambda path: path.suffix == ".yaml", reverse=True)  # the suite file first, as the plugin reads
    completed = subprocess.run(
        [sys.executable, "-c", _BOUNDED_LOAD, *map(str, names)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.startswith("REJECTED"), completed.stdout[:500]
    assert entry.cause in completed.stdout  # type: ignore[attr-defined]


INJECTIONS = corpus.injection_entries()
_TITLES = {"input": "Input", "reference": "Reference", "context": "Context", "output": "Output to evaluate"}


def test_judged_text_cannot_rewrite_the_prompt_or_forge_its_verdict(pytester: pytest.Pytester) -> None:
    from pytest_llmjudge.testing import LoopbackServer, ReceivedRequest
    from pytest_llmjudge.testing.scripted import read_prompt

    by_model = {entry.model: entry for entry in INJECTIONS}
    problems: list[str] = []
    prompts: dict[str, int] = {}

    def respond(request: ReceivedRequest) -> str:
        entry = by_model[request.model]
        prompts[entry.name] = prompts.get(entry.name, 0) + 1
        shown = read_prompt(request.system, request.last_user_text)
        framed = [title for key, title in _TITLES.items() if key in entry.fields]
        expected = ["Task", *framed, "Metrics", "Reply format"]
        if shown.headings not in (expected, [*expected, "Note"]):  # a re-ask adds its note after the prompt
            problems.append(f"{entry.name}: headings {shown.headings}")
        for key, value in entry.fields.items():
            want = "\n\n".join(value) if isinstance(value, list) else value
            if shown.texts.get(_TITLES[key]) != want:
                problems.append(f"{entry.name}: {key} not framed byte-exact: {shown.texts.get(_TITLES[key])!r}")
        return entry.reply

    with LoopbackServer(responder=respond) as server:
        for entry in INJECTIONS:
            (pytester.path / entry.main).write_text(entry.suite(server.openai_base_url), encoding="utf-8")
        result = pytester.runpytest_inprocess("--llmjudge", "-p", "no:cacheprovider", "-p", "no:randomly")

    reports = {
        report.nodeid: report
        for report in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
        if report.when == "call"
    }
    for entry in INJECTIONS:
        report = reports.get(f"{entry.main}::c1[linguistic_acceptability]")
        if report is None:
            problems.append(f"{entry.name}: no item (items: {sorted(reports)})")
        elif report.outcome != entry.outcome or entry.cause not in report.longreprtext:
            problems.append(f"{entry.name}: {report.outcome}, lacks {entry.cause!r}:\n{report.longreprtext[:600]}")
        if entry.name not in prompts:
            problems.append(f"{entry.name}: the judge was never asked")
    assert problems == [], "\n\n".join(problems)
    # A reply with two verdicts is an unusable reply: asked, then re-asked twice, then unscored.
    assert prompts["inject_reply_two_verdicts"] == 3
    assert result.ret == pytest.ExitCode.TESTS_FAILED
