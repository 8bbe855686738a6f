#!/usr/bin/env python3
"""Move pytest_llmjudge's modules into the packages they belong to, and rewrite every reference (issue 25, item 5).

Run from the repository root, on a clean tree, after the branches that move code have been merged::

    python scripts/rename_modules.py            # move, rewrite, re-sort imports, report leftovers
    python scripts/rename_modules.py --dry-run  # only say what would move and which files refer to it

then check and commit the result (``git add -A && git commit``). The script is idempotent: a
second run finds every move done and changes nothing, except references to the old names that a
branch merged since brought in, which it rewrites too: run it again after merging such a branch. A planned move whose source is gone (another
branch folded the module away) is skipped with a message; one whose source and target both exist
stops the script before anything changes.

What it does, in order:

1. ``git mv`` each module of :data:`MOVES` (creating the new packages of :data:`PACKAGES` with
   their ``__init__.py`` docstrings), after turning the moved module's relative imports absolute;
2. in every tracked text file of src/, tests/, benchmarks/, docs/, example_suites/, scripts/,
   pyproject.toml and README.md, rewrites the references to a moved module: dotted names
   (``pytest_llmjudge.a.b``, in imports, strings, ``importlib.import_module`` names, mock targets,
   ``:class:`` roles, ``f"{PACKAGE}.a.b"`` / ``f"{SESSION}.b"`` in tests/unit/test_import_graph.py,
   ``a.b`` in backticks), file paths (``src/pytest_llmjudge/a/b.py``, ``a/b.py``, and a bare
   ``b.py`` where it can only mean that module), ``from pytest_llmjudge.a import b`` of a moved
   module (split off from the names that stay), and relative imports of moved modules;
3. renames the identifiers of :data:`IDENTIFIERS` (every token containing one of them: the class,
   its stash key, attributes and variables, prose);
4. re-sorts the imports and re-formats the changed Python files under src/, tests/ and
   benchmarks/ with ruff (the new module paths sort differently);
5. prints every move, every file changed, and any reference to an old name still left.

Checks after it (the project's usual ones): ``ruff check src tests benchmarks``, ``mypy``,
``python /work/shared/tools/import_cycles.py``, ``pytest tests/unit/test_import_graph.py``, and the
test suite. ``--verify`` runs the first four (the import-cycle tool when it exists).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

PACKAGE = "pytest_llmjudge"
SRC = Path("src") / PACKAGE

# old module -> new module, both relative to pytest_llmjudge. The entry point (plugin), the public
# modules (__init__, testing) and every public name stay where they are.
MOVES: list[tuple[str, str]] = [
    # A suite's items and aggregates live with the suite file format, as calibration/, pairwise/
    # and regression/ keep theirs (and session/items.py is no longer its near-namesake).
    ("suite_items", "suite.items"),
    ("aggregate", "suite.aggregate"),
    # The item base every item kind derives from, named for what it is.
    ("session.items", "session.item_base"),
    # Which items run: language and tag selection, CI shards.
    ("selection_plugin", "selection.run_phase"),
    ("sharding", "selection.sharding"),
    ("sharding_plugin", "selection.shard_phase"),
    # Live progress: the counters and their line, and the terminal thread.
    ("progress", "progress.counters"),
    ("progress_plugin", "progress.run_phase"),
    # The annotators' queue: the plan and its hooks.
    ("label_queue", "label_queue.plan"),
    ("label_queue_plugin", "label_queue.run_phase"),
    # Engine pieces next to what they use.
    ("fixture_judge", "execution.judge"),
    ("judge_policy", "judges.no_judge_policy"),
    # Sharing judge calls between xdist workers, not to be mistaken for CI shards.
    ("execution.sharing", "execution.xdist_sharing"),
    # Plans the run's scores and produces them (judge calls, target outputs, metrics): the Scorer.
    ("execution.scoreboard", "execution.scorer"),
    # One gate's statistics and verdict vs the run's registry of gates.
    ("calibration.gate", "calibration.agreement_gate"),
    ("calibration.gates", "calibration.gate_computer"),
    # Small helpers for what the plugin writes.
    ("atomic", "util.atomic"),
    ("escaping", "util.escaping"),
    ("formatting", "util.formatting"),
    ("redaction", "util.redaction"),
    # No longer pytest plugins once the Run (session/run.py) owns the hooks: each feature's part in
    # the Run's phases is its run_phase module (the names the first moves gave them, then these).
    ("selection.plugin", "selection.run_phase"),
    ("selection.sharding_plugin", "selection.shard_phase"),
    ("progress.plugin", "progress.run_phase"),
    ("label_queue.plugin", "label_queue.run_phase"),
    ("regression.plugin", "regression.run_phase"),
    ("report.plugin", "report.run_phase"),
    ("calibration.plugin", "calibration.run_phase"),
    ("canaries.plugin", "canaries.run_phase"),
    ("pairwise.plugin", "pairwise.run_phase"),
    ("execution.batch_plugin", "execution.batch_phase"),
    # A ranking file reads as every file kind does: schema.py -> build.py -> items.py.
    ("pairwise.ranking_loader", "pairwise.build"),
]

# Test files renamed with the module they test (path -> path), skipped like modules when missing.
FILE_MOVES: list[tuple[str, str]] = [
    ("tests/unit/test_sharing.py", "tests/unit/test_xdist_sharing.py"),
]

# New packages and their __init__ docstrings: a first line, one bullet per module that is there (a move
# skipped leaves its bullet out), a closing paragraph. Module names only: no bare ``x.py`` an old name could match.
PACKAGES: dict[str, tuple[str, dict[str, str], str]] = {
    "util": (
        "Small helpers every layer uses for what the plugin writes; none imports pytest or a feature package.",
        {
            "atomic": "replace a file so that a reader sees the old one or the whole new one",
            "escaping": "control characters made visible in text written to a terminal, HTML or XML",
            "formatting": "numbers as text, the one way a score or threshold reads everywhere",
            "redaction": "credentials masked in everything written",
        },
        "",
    ),
    "selection": (
        "Which of the collected items run; every item left out is reported as deselected, as ``-k`` does.",
        {
            "run_phase": "``--llmjudge-language`` and the suites' tags as ``-m`` markers (called by the Run)",
            "sharding": "the stable hash that gives each case to one shard of ``--llmjudge-shard i/N``",
            "shard_phase": "keeps one shard's items (called by the Run)",
        },
        "Not to be confused with ``execution.xdist_sharing``, which splits a run's judge calls (not its\n"
        "items) between the pytest-xdist workers of one run.",
    ),
    "progress": (
        "Live progress of a run's judge calls.",
        {
            "counters": "what one process counts (calls planned and done, cache hits, failures, tokens) and\n"
            "  the one line of text made of them",
            "run_phase": "the thread that draws that line on the terminal, through capture and pytest-xdist",
        },
        "",
    ),
    "label_queue": (
        "``--llmjudge-label-queue``: which cases to send to annotators next.",
        {
            "plan": "how many labels a group needs for an interval of a given width, and the seeded sample",
            "run_phase": "gathers the scored cases of the human aggregates and writes the queue at the end",
        },
        "",
    ),
}

# Identifiers renamed wherever they occur as part of a token (``ScoreBoard``, ``scoreboard_key``,
# ``self._scoreboard``, "the scoreboard" in prose), applied when the module move they belong to is in effect.
IDENTIFIERS: list[tuple[str, str, str]] = [
    # (old fragment, new fragment, the move it belongs to)
    ("ScoreBoard", "Scorer", "execution.scoreboard"),
    ("Scoreboard", "Scorer", "execution.scoreboard"),
    ("scoreboard", "scorer", "execution.scoreboard"),
    ("SCOREBOARD", "SCORER", "execution.scoreboard"),
]

# Edits that only make sense after a move (file, pattern, replacement, the move): the import-graph test
# named suite_items.py as an items module by hand; as suite/items.py it is one by its name.
POST_EDITS: list[tuple[str, str, str, str]] = [
    ("tests/unit/test_import_graph.py", r' or module == f"\{PACKAGE\}\.suite\.items"', "", "suite_items"),
    ("tests/unit/test_import_graph.py", r", and ``suite/items\.py``\)", ")", "suite_items"),
]

# Where references are rewritten: tracked files under these roots with these suffixes.
ROOTS = ("src", "tests", "benchmarks", "docs", "example_suites", "scripts", "pyproject.toml", "README.md")
SUFFIXES = {".py", ".pyi", ".md", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".txt", ".rst"}
JSON_ROOTS = ("src/", "docs/")  # generated schemas carry the records' docstrings
SELF = Path("scripts/rename_modules.py")
FORMATTED_ROOTS = ("src/", "tests/", "benchmarks/")  # what the project runs ruff format on


@dataclass
class Move:
    old: str
    new: str
    state: str = ""  # "moved", "done" (an earlier run moved it), "skipped" (source gone), "conflict"

    @property
    def old_path(self) -> Path:
        return SRC / (self.old.replace(".", "/") + ".py")

    @property
    def new_path(self) -> Path:
        return SRC / (self.new.replace(".", "/") + ".py")

    @property
    def active(self) -> bool:
        return self.state in ("moved", "done")

    @property
    def old_is_now_package(self) -> bool:
        """``progress`` -> ``progress.counters``: the old name is the new package, a valid name of its own."""
        return self.new.startswith(self.old + ".")

    @property
    def rewrite(self) -> bool:
        """Whether references to the old name are rewritten: whenever the move is in effect (a branch
        merged after the moves may still use the old names; run the script again after merging it)."""
        return self.active

    @property
    def old_names_package(self) -> bool:
        """After an earlier run moved ``progress`` to ``progress.counters``, a bare ``pytest_llmjudge.progress``
        (or ``from pytest_llmjudge import progress``) may name the new package: left alone then."""
        return self.state == "done" and self.old_is_now_package


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def tracked_files() -> list[Path]:
    files = []
    for name in git("ls-files", "--", *ROOTS).splitlines():
        path = Path(name)
        if path == SELF or not path.is_file():
            continue
        if path.suffix in SUFFIXES or (path.suffix == ".json" and name.startswith(JSON_ROOTS)):
            files.append(path)
    return files


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# -- relative imports -------------------------------------------------------------------------

RELATIVE = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+(?P<dots>\.+)(?P<rest>[\w.]*)[ \t]+import\b", re.M)


def absolute_relative_imports(text: str, package: str, wanted: set[str] | None) -> tuple[str, int]:
    """Relative imports made absolute (all of them, or those that name one of ``wanted`` or a name in it)."""
    count = 0

    def sub(match: re.Match[str]) -> str:
        nonlocal count
        parts = package.split(".")
        level = len(match["dots"])
        base = ".".join(parts[: len(parts) - level + 1] + ([match["rest"]] if match["rest"] else []))
        if wanted is not None and not any(
            base == w or base.startswith(w + ".") or w.startswith(base + ".") for w in wanted
        ):
            return match[0]
        count += 1
        return f"{match['indent']}from {base} import"

    return RELATIVE.sub(sub, text), count


# -- `from pytest_llmjudge.a import b` where a.b is a moved module -------------------------------


def split_module_imports(text: str, moved: dict[str, str]) -> tuple[str, int]:
    """``from pytest_llmjudge[.pkg] import mod, other`` with ``mod`` moved: ``mod`` imported from its new package."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text, 0
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        if node.module != PACKAGE and not node.module.startswith(PACKAGE + "."):
            continue
        base = node.module[len(PACKAGE) + 1 :] if node.module != PACKAGE else ""
        hits = [a for a in node.names if (f"{base}.{a.name}" if base else a.name) in moved]
        if not hits:
            continue
        statements = []
        rest = [a for a in node.names if a not in hits]
        if rest:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in rest)
            statements.append(f"from {node.module} import {names}")
        for alias in hits:
            new = moved[f"{base}.{alias.name}" if base else alias.name]
            package, _, leaf = new.rpartition(".")
            source = f"{PACKAGE}.{package}" if package else PACKAGE
            local = alias.asname or alias.name
            statements.append(f"from {source} import {leaf}" + (f" as {local}" if local != leaf else ""))
        edits.append((node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset, statements))
    if not edits:
        return text, 0
    lines = text.splitlines(keepends=True)
    for lineno, col, end_lineno, end_col, statements in sorted(edits, reverse=True):
        first, last = lines[lineno - 1], lines[end_lineno - 1]
        indent = first[:col]
        joined = ("\n" + indent).join(statements)
        lines[lineno - 1 : end_lineno] = [first[:col] + joined + last[end_col:]]
    return "".join(lines), len(edits)


# -- references by regex ------------------------------------------------------------------------


def package_exclude(move: Move) -> str:
    """For an old name that is now a package (``progress``), a lookahead that leaves its modules alone:
    not ``pytest_llmjudge.progress.counters``, nor ``from pytest_llmjudge.progress import counters``."""
    if not move.old_is_now_package:
        return ""
    package_dir = SRC / move.old.replace(".", "/")
    children = sorted(p.stem for p in package_dir.glob("*.py") if p.stem != "__init__")
    if not children:
        return ""
    names = "|".join(map(re.escape, children))
    return r"(?!\.(?:" + names + r")\b)(?![ \t]+import[ \t]+(?:" + names + r")\b)"


class Rule(NamedTuple):
    pattern: re.Pattern[str]
    replacement: str
    label: str  # what the rule rewrites, for the report
    where: str | None = None  # only in this file, or in the files of this directory


LEAF_DIRS: dict[str, set[str]] = {}
"""File name -> the directories of the package's modules with that name (filled at the start of a run)."""


def reference_rules(moves: list[Move], ambiguous: set[str]) -> list[Rule]:
    """The rewrites of every move whose references are rewritten (:attr:`Move.rewrite`)."""
    rules: list[Rule] = []
    for move in moves:
        if not move.rewrite:
            continue
        old_dotted = re.escape(move.old)
        exclude = package_exclude(move)
        dotted = f"{PACKAGE}.{move.old} -> {PACKAGE}.{move.new}"
        if move.old_names_package:  # only pytest_llmjudge.progress.Name / ... progress import Name
            exclude += r"(?=\.\w|[ \t]+import\b)"
        # pytest_llmjudge.a.b (and f"{PACKAGE}.a.b" in the import-graph test)
        rules.append(
            Rule(
                re.compile(r"(?<![\w.])(" + PACKAGE + r"|\{PACKAGE\})\." + old_dotted + r"(?!\w)" + exclude),
                r"\1." + move.new,
                dotted,
            )
        )
        # f"{SESSION}.items" (the import-graph test names the session package so)
        if move.old.startswith("session.") and move.new.startswith("session."):
            rules.append(
                Rule(
                    re.compile(r"\{SESSION\}\." + re.escape(move.old[8:]) + r"(?!\w)"),
                    "{SESSION}." + move.new[8:],
                    dotted,
                )
            )
        # ``a.b`` / `a.b` / :mod:`~a.b` of a nested module, in prose (never code: pytest's ``session.items``)
        if "." in move.old:
            rules.append(Rule(re.compile(r"(?<=[`~])" + old_dotted + r"(?!\w)" + exclude), move.new, dotted))
        # file paths: src/pytest_llmjudge/a/b.py, pytest_llmjudge/a/b.py, a/b.py (a bare b.py when top-level)
        old_rel, new_rel = move.old.replace(".", "/") + ".py", move.new.replace(".", "/") + ".py"
        rules.append(
            Rule(
                re.compile(r"(?<![\w/.-])((?:src/)?(?:" + PACKAGE + r"/)?)" + re.escape(old_rel) + r"(?!\w)"),
                r"\1" + new_rel,
                f"{old_rel} -> {new_rel}",
            )
        )
        # a bare b.py of a nested module: everywhere when no other module has that file name, else only
        # in the files of its own directory (session/__init__.py's ``items.py``)
        if "/" in old_rel:
            old_dir, _, leaf = old_rel.rpartition("/")
            new_dir, _, new_leaf = new_rel.rpartition("/")
            target = new_leaf if new_dir == old_dir else new_rel
            # Ambiguous when another module of that file name exists (at the time of the run) outside the
            # module's old directory: a bare ``plugin.py`` is the entry point once every package's moved away.
            elsewhere = {d for d in LEAF_DIRS.get(leaf, set()) if d != str(SRC / old_dir)}
            where = None if leaf not in ambiguous and not elsewhere else str(SRC / old_dir)
            rules.append(
                Rule(re.compile(r"(?<![\w/.-])" + re.escape(leaf) + r"(?!\w)"), target, f"{leaf} -> {target}", where)
            )
    return rules


def file_move_rules(moves: list[tuple[str, str]]) -> list[Rule]:
    rules: list[Rule] = []
    for old, new in moves:
        rules.append(Rule(re.compile(r"(?<![\w/.-])" + re.escape(old) + r"(?!\w)"), new, f"{old} -> {new}"))
        old_leaf, new_leaf = old.rpartition("/")[2], new.rpartition("/")[2]
        rules.append(
            Rule(re.compile(r"(?<![\w/.-])" + re.escape(old_leaf) + r"(?!\w)"), new_leaf, f"{old_leaf} -> {new_leaf}")
        )
    return rules


def post_edit_rules(moves: dict[str, Move]) -> list[Rule]:
    return [
        Rule(re.compile(pattern), replacement, f"{path}: {pattern}", path)
        for path, pattern, replacement, move in POST_EDITS
        if move in moves and moves[move].active
    ]


def identifier_rules(moves: dict[str, Move]) -> list[Rule]:
    """Every token containing an identifier of :data:`IDENTIFIERS` (its move in effect)."""
    return [
        Rule(re.compile(re.escape(old)), new, f"{old} -> {new}")
        for old, new, move in IDENTIFIERS
        if move in moves and moves[move].active
    ]


def rewrite_text(path: Path, text: str, rules: list[Rule], moved_modules: dict[str, str]) -> tuple[str, list[str]]:
    notes = []
    if path.suffix in (".py", ".pyi"):
        if path.is_relative_to(SRC):
            package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
            text, n = absolute_relative_imports(text, package, {f"{PACKAGE}.{m}" for m in moved_modules})
            if n:
                notes.append(f"{n} relative import(s) made absolute")
        text, n = split_module_imports(text, moved_modules)
        if n:
            notes.append(f"{n} 'from package import module' split")
    for rule in rules:
        if rule.where is not None and rule.where not in (str(path), str(path.parent)):
            continue
        text, n = rule.pattern.subn(rule.replacement, text)
        if n:
            notes.append(f"{rule.label}" + (f" x{n}" if n > 1 else ""))
    return text, notes


# -- the run ------------------------------------------------------------------------------------


def plan_moves() -> list[Move]:
    moves = [Move(old, new) for old, new in MOVES]
    for move in moves:
        old, new = move.old_path.exists(), move.new_path.exists()
        # progress.py -> progress/counters.py: the old file and the new package coexist only mid-move
        move.state = "conflict" if old and new else "moved" if old else "done" if new else "skipped"
    return moves


def ensure_package(name: str, modules: list[str], created: list[str]) -> None:
    directory = SRC / name.replace(".", "/")
    init = directory / "__init__.py"
    if init.exists():
        return
    if name not in PACKAGES:
        raise SystemExit(f"rename_modules: no docstring for the new package {name!r}: add it to PACKAGES")
    first, described, last = PACKAGES[name]
    bullets = [f"* ``{leaf}``: {text};" for leaf, text in described.items() if leaf in modules]
    if bullets:
        bullets[-1] = bullets[-1][:-1] + "."
    docstring = "\n\n".join(part for part in (first, "\n".join(bullets), last) if part)
    directory.mkdir(parents=True, exist_ok=True)
    init.write_text(f'"""{docstring}\n"""\n', encoding="utf-8")
    git("add", str(init))
    created.append(str(init))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would move and which files refer to it")
    parser.add_argument("--no-ruff", action="store_true", help="don't re-sort imports and re-format with ruff")
    parser.add_argument(
        "--verify", action="store_true", help="run ruff, mypy, the import-cycle tool and the import-graph test after"
    )
    args = parser.parse_args()

    if not SRC.is_dir() or not Path(".git").exists():
        print("rename_modules: run from the repository root (src/pytest_llmjudge and .git expected)", file=sys.stderr)
        return 2
    modules_before = sorted(SRC.rglob("*.py"))
    leaves: dict[str, int] = {}
    for path in modules_before:
        leaves[path.name] = leaves.get(path.name, 0) + 1
    ambiguous = {name for name, count in leaves.items() if count > 1}
    for path in modules_before:
        LEAF_DIRS.setdefault(path.name, set()).add(str(path.parent))

    moves = plan_moves()
    conflicts = [m for m in moves if m.state == "conflict"]
    for move in moves:
        message = {
            "moved": "move",
            "done": "already moved",
            "skipped": f"SKIP: {move.old_path} is gone (and {move.new_path} does not exist)",
            "conflict": f"CONFLICT: both {move.old_path} and {move.new_path} exist",
        }[move.state]
        print(f"{move.old:24} -> {move.new:28} {message}")
    if conflicts:
        print("rename_modules: resolve the conflicts above first; nothing was changed", file=sys.stderr)
        return 1
    file_moves = []
    for old, new in FILE_MOVES:
        if Path(old).exists() and not Path(new).exists():
            file_moves.append((old, new, "move"))
        elif Path(new).exists():
            file_moves.append((old, new, "already moved"))
        else:
            print(f"{old} -> {new}  SKIP: {old} is gone")
            continue
        print(f"{old} -> {new}  {file_moves[-1][2]}")

    if args.dry_run:
        rules = reference_rules(moves, ambiguous)
        for path in tracked_files():
            text = path.read_text(encoding="utf-8")
            hits = sum(len(r.pattern.findall(text)) for r in rules if r.where in (None, str(path), str(path.parent)))
            if hits:
                print(f"  {path}: {hits} reference(s)")
        return 0

    # 1. move (relative imports of a moved module made absolute first: its package changes)
    created: list[str] = []
    for move in moves:
        if move.state != "moved":
            continue
        package = move.new.rpartition(".")[0]
        for i in range(1, len(package.split(".")) + 1) if package else ():
            name = ".".join(package.split(".")[:i])
            modules = [m.new.rpartition(".")[2] for m in moves if m.active and m.new.rpartition(".")[0] == name]
            ensure_package(name, modules, created)
        text = move.old_path.read_text(encoding="utf-8")
        text, n = absolute_relative_imports(text, f"{PACKAGE}.{move.old}".rpartition(".")[0], None)
        if n:
            move.old_path.write_text(text, encoding="utf-8")
            print(f"  {move.old_path}: {n} relative import(s) made absolute before the move")
        git("mv", str(move.old_path), str(move.new_path))
    for old, new, state in file_moves:
        if state == "move":
            git("mv", old, new)
    for init in created:
        print(f"created {init}")

    # 2-3. rewrite references and identifiers
    moved_modules = {m.old: m.new for m in moves if m.rewrite and not m.old_names_package}
    rules = reference_rules(moves, ambiguous) + file_move_rules([(o, n) for o, n, _ in file_moves])
    by_name = {m.old: m for m in moves}
    rules += identifier_rules(by_name) + post_edit_rules(by_name)
    changed: list[Path] = []
    for path in tracked_files() + [Path(p) for p in created]:
        text = path.read_text(encoding="utf-8")
        new_text, notes = rewrite_text(path, text, rules, moved_modules)
        if new_text != text:
            path.write_text(new_text, encoding="utf-8")
            changed.append(path)
            print(f"rewrote {path}: " + "; ".join(notes))

    # 4. imports sorted and code formatted as the project's checks want
    python_files = [str(p) for p in changed if p.suffix == ".py" and str(p).startswith(FORMATTED_ROOTS)]
    if python_files and not args.no_ruff:
        ruff = shutil.which("ruff")
        if ruff is None:
            print(
                "WARNING: ruff not found: run `ruff check --fix --select I src tests benchmarks && ruff format src tests benchmarks`"
            )
        else:
            subprocess.run([ruff, "check", "--fix", "--select", "I", "--quiet", *python_files], check=False)
            subprocess.run([ruff, "format", "--quiet", *python_files], check=False)
            print(f"ruff: imports re-sorted and formatted in {len(python_files)} file(s)")

    # 5. anything still named the old way
    leftovers = report_leftovers(moves)
    print(
        f"\n{sum(m.state == 'moved' for m in moves)} moved, {sum(m.state == 'done' for m in moves)} already moved, "
        f"{sum(m.state == 'skipped' for m in moves)} skipped; {len(changed)} file(s) rewritten; "
        f"{leftovers} possible leftover reference(s)"
    )
    if args.verify:
        return verify()
    return 0


def report_leftovers(moves: list[Move]) -> int:
    """Old dotted names and paths of moved modules still present (printed for a human to judge)."""
    patterns = []
    for move in moves:
        if not move.rewrite:
            continue
        patterns.append(
            re.compile(r"(?<![\w.])" + PACKAGE + r"\." + re.escape(move.old) + r"(?!\w)" + package_exclude(move))
        )
        patterns.append(re.compile(r"(?<![\w/.-])" + re.escape(move.old.replace(".", "/")) + r"\.py(?!\w)"))
    for old, _new, owner in IDENTIFIERS:
        if any(m.old == owner and m.active for m in moves):
            patterns.append(re.compile(re.escape(old)))
    count = 0
    for path in tracked_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(p.search(line) for p in patterns):
                count += 1
                print(f"  leftover? {path}:{lineno}: {line.strip()[:110]}")
    return count


def verify() -> int:
    commands = [
        ["ruff", "check", "src", "tests", "benchmarks"],
        ["ruff", "format", "--check", "src", "tests", "benchmarks"],
        ["mypy"],
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_import_graph.py"],
    ]
    cycles = Path("/work/shared/tools/import_cycles.py")
    if cycles.exists():
        commands.insert(3, [sys.executable, str(cycles)])
    status = 0
    for command in commands:
        print(f"$ {' '.join(command)}", flush=True)
        status |= subprocess.run(command, check=False).returncode
    print("verify: " + ("all passed" if status == 0 else "FAILED (see above)"))
    return status


if __name__ == "__main__":
    sys.exit(main())
