"""Every command in the docs runs: ```console blocks of README.md and docs/*.md.

Each ``$ `` line of a ```console block is a shell command (a line ending in ``\\`` continues
on the next). The blocks of one file run in order (a later block may use what an earlier
one wrote), each command with ``bash -c`` from the repository root, with this interpreter's
``bin`` first on ``PATH`` (so ``python`` and ``pytest`` are the ones under test) and without
API keys or ``LLMJUDGE_*`` variables (``tests/conftest.py``). A command must exit 0.

HTML comments right above a block's opening fence (blank lines and other comments may sit
between) change that:

* ``<!-- doc-test: skip (reason) -->``: don't run the block;
* ``<!-- doc-test: exit N -->``: the block's last command must exit N.

Files run side by side (at most one per CPU, at most 4); blocks of one file run in order.
Under pytest-xdist each file is its own test, so the workers already use the CPUs and a
file's commands run one at a time. A command that fails only because it imports an
optional module this interpreter lacks (``ModuleNotFoundError``, say ``jsonschema``) is
reported as not run, not as a failure.

A command that appears, with the same expected exit status, in several files runs once,
in the first file (README.md, then docs/*.md by name), when it reads nothing an earlier
command could have written: no ``/tmp`` path and no ``cd``. Running the example suites
again for another page would only repeat the same work (each ``pytest --llmjudge`` command
pays an interpreter start and the plugin's imports); the later file lists it as checked
in the first one.

Never run: ``pip install`` commands ("CI runs the install"), and commands that call a
program outside :data:`SAFE_PROGRAMS` (for example ``curl`` or ``docker``), reported as
skipped with the program's name so that nothing is silently left out.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT = 300
SAFE_PROGRAMS = frozenset(
    {
        "python",
        "python3",
        "pytest",
        "mkdir",
        "printf",
        "echo",
        "cd",
        "sed",
        "cat",
        "ls",
        "head",
        "tail",
        "grep",
        "diff",
        "cmp",
        "test",
        "true",
        "timeout",
        "rm",
        "cp",
        "wc",
        "sort",
        "env",
        "export",
        "[",
        "sleep",
        "kill",
        "wait",
        "until",
        "while",
        "for",
        "do",
        "done",
        "seq",
    }
)
_DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(?P<verb>skip|exit)\b\s*(?P<arg>.*?)\s*-->")
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Block:
    path: Path
    line: int
    commands: list[str]
    skip: str | None = None
    exit_code: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def _directives(lines: list[str], fence: int) -> tuple[str | None, int]:
    skip: str | None = None
    exit_code = 0
    index = fence - 1
    while index >= 0 and (not lines[index].strip() or lines[index].strip().startswith("<!--")):
        match = _DIRECTIVE.search(lines[index])
        if match and match["verb"] == "skip":
            skip = match["arg"].strip("() ") or "marked doc-test: skip"
        elif match:
            exit_code = int(match["arg"])
        index -= 1
    return skip, exit_code


def parse_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```console":
            index += 1
            continue
        skip, exit_code = _directives(lines, index)
        block = Block(path, index + 1, [], skip, exit_code)
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            text = lines[index]
            if text.startswith("$ "):
                command = text[2:]
                while command.endswith("\\") and index + 1 < len(lines):
                    index += 1
                    command = command[:-1] + "\n" + lines[index]
                block.commands.append(command)
            index += 1
        blocks.append(block)
        index += 1
    return blocks


def programs(command: str) -> list[str]:
    """The programs a command line runs: the first word of each element of its lists and pipelines."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    found: list[str] = []
    words: list[str] = []
    for token in [*tokens, ";"]:
        if token not in _SEPARATORS:
            words.append(token)
            continue
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words and words[0] == "timeout":  # timeout [-s SIGNAL | -k DURATION | --flag] DURATION PROGRAM ...
            found.append("timeout")
            rest = words[1:]
            while rest and rest[0].startswith("-"):
                rest = rest[2:] if rest[0] in ("-s", "-k") else rest[1:]
            words = rest[1:]
        if words:
            found.append(words[0].rsplit("/", 1)[-1])
        words = []
    return found


def why_not_run(command: str) -> str | None:
    if re.search(r"\bpip3?\s+install\b", command):
        return "CI runs the install"
    unknown = sorted({p for p in programs(command) if p not in SAFE_PROGRAMS})
    if unknown:
        return f"runs {', '.join(unknown)}, not known to be safe offline"
    return None


ALL_BLOCKS = [block for path in DOCS if path.exists() for block in parse_blocks(path) if block.commands]


def test_the_docs_have_commands() -> None:
    assert ALL_BLOCKS, "no ```console block with a '$ ' command in README.md or docs/*.md"
    assert any(block.path.name == "reports.md" for block in ALL_BLOCKS)


def test_parser_reads_directives_and_continuations(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n<!-- doc-test: exit 3 -->\n```console\n$ false \\\n  --flag\noutput\n```\n"
        "<!-- ci:main -->\n<!-- doc-test: skip (slow) -->\n\n```console\n$ python -V\n```\n",
        encoding="utf-8",
    )
    first, second = parse_blocks(page)
    assert first.commands == ["false \n  --flag"] and first.exit_code == 3 and first.skip is None
    assert second.skip == "slow" and second.commands == ["python -V"]
    assert why_not_run('pip install -e ".[dev]" && pytest') == "CI runs the install"
    assert why_not_run("curl -s https://example.com | python -") is not None
    assert why_not_run("LLMJUDGE_X=1 timeout -s INT 4 python -m x; echo $?") is None


def test_a_repeated_command_runs_once_unless_it_reads_what_earlier_commands_wrote(tmp_path: Path) -> None:
    one, two = tmp_path / "a.md", tmp_path / "b.md"
    fence = "```console\n$ python -m pytest --llmjudge example_suites -q\n$ cat /tmp/x.txt\n$ cd sub && ls\n```\n"
    one.write_text(fence, encoding="utf-8")
    two.write_text(
        fence + "<!-- doc-test: exit 1 -->\n```console\n$ python -m pytest --llmjudge example_suites -q\n```\n",
        encoding="utf-8",
    )
    blocks = [*parse_blocks(one), *parse_blocks(two)]
    first = first_runs(blocks)
    assert first == {
        ("python -m pytest --llmjudge example_suites -q", 0): blocks[0],
        ("python -m pytest --llmjudge example_suites -q", 1): blocks[2],  # another expected status
    }
    assert not repository_only("cat /tmp/x.txt") and not repository_only("cd sub && ls")


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    environment["PATH"] = bin_dir + os.pathsep + environment.get("PATH", "")
    environment.pop("PYTEST_ADDOPTS", None)
    environment.pop("PYTEST_XDIST_WORKER", None)
    environment.pop("PYTEST_XDIST_TESTRUNUID", None)
    environment["COLUMNS"] = "80"
    return environment


@dataclass
class FileRun:
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0


_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def _missing_optional_module(stderr: str) -> str | None:
    """The module a command failed to import, when this interpreter lacks it too."""
    match = _MISSING_MODULE.search(stderr)
    if match is None:
        return None
    name = match[1].split(".")[0]
    return None if importlib.util.find_spec(name) is not None else name


def run_file(path: Path) -> FileRun:
    """Run one file's blocks in order; collect every failure."""
    outcome = FileRun()
    environment = _environment()
    file_started = time.monotonic()
    for block in (b for b in ALL_BLOCKS if b.path == path):
        if block.skip:
            outcome.skipped.append(f"{block.id}: {block.skip}")
            continue
        for command, expected in zip(block.commands, _expected_exits(block)):
            reason = why_not_run(command)
            if reason:
                outcome.skipped.append(f"{block.id}: {reason}: {command[:80]}")
                continue
            runner = FIRST_RUNS.get((command, expected), block)
            if runner.path != path:
                outcome.skipped.append(f"{block.id}: the same command runs (and is checked) in {runner.id}")
                continue
            started = time.monotonic()
            try:
                result = subprocess.run(
                    ["bash", "-c", command],
                    cwd=ROOT,
                    env=environment,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                outcome.failures.append(f"{block.id}: timed out after {TIMEOUT} s: {command}")
                continue
            if result.returncode == expected:
                continue
            missing = _missing_optional_module(result.stderr)
            if missing is not None:
                outcome.skipped.append(f"{block.id}: needs {missing}, which is not installed: {command[:80]}")
                continue
            outcome.failures.append(
                f"{block.id}: exit {result.returncode}, expected {expected} "
                f"({time.monotonic() - started:.1f} s): {command}\n"
                f"--- stdout (end)\n{result.stdout[-1500:]}\n--- stderr (end)\n{result.stderr[-1500:]}"
            )
    outcome.seconds = time.monotonic() - file_started
    return outcome


FILES = [p for p in DOCS if any(b.path == p for b in ALL_BLOCKS)]


def repository_only(command: str) -> bool:
    """Whether a command's result depends on the repository only, not on what earlier commands wrote."""
    return "/tmp" not in command and "cd" not in programs(command)


def _expected_exits(block: Block) -> list[int]:
    return [block.exit_code if i == len(block.commands) - 1 else 0 for i in range(len(block.commands))]


def first_runs(blocks: list[Block]) -> dict[tuple[str, int], Block]:
    """The block that runs each repository-only command (with its expected exit status) first."""
    first: dict[tuple[str, int], Block] = {}
    for block in blocks:
        if block.skip:
            continue
        for command, expected in zip(block.commands, _expected_exits(block)):
            if repository_only(command) and why_not_run(command) is None:
                first.setdefault((command, expected), block)
    return first


FIRST_RUNS = first_runs(ALL_BLOCKS)


@pytest.fixture(scope="module")
def doc_runs(request: pytest.FixtureRequest) -> dict[Path, FileRun]:
    """The selected files' commands; files run side by side (blocks of one file stay in order).

    Under pytest-xdist every worker collects every item, so running the selection here
    would run each file in every worker at once, racing on the files' fixed ports and
    paths; there each test runs its own file instead (:func:`test_doc_commands_run`).
    """
    if hasattr(request.config, "workerinput"):
        return {}
    selected = [
        item.callspec.params["path"]
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == "test_doc_commands_run"
        and hasattr(item, "callspec")
    ]
    files = [path for path in FILES if path in selected] or FILES
    workers = max(1, min(len(files), os.cpu_count() or 1, 4))  # more would only contend for the CPUs
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(files, pool.map(run_file, files)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_doc_commands_run(path: Path, doc_runs: dict[Path, FileRun]) -> None:
    outcome = doc_runs[path] if path in doc_runs else run_file(path)
    if outcome.skipped:
        print("not run:\n  " + "\n  ".join(outcome.skipped))
    assert not outcome.failures, "\n\n".join(outcome.failures)
