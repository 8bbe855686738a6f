"""The package's import graph obeys the layering of ``docs/design.md``.

Every module's imports are read with ``ast`` (module level, in functions and under
``TYPE_CHECKING`` alike: a cycle through a lazy import is still a cycle, it only waits for
the first call to bite). The graph has one node per module of ``src/pytest_llmjudge``;
``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``.

The rules:

1. no import cycle anywhere in the package;
2. only the pytest-facing modules import pytest (or ``_pytest``);
3. nothing imports the core plugin (``plugin.py``): it sits on top; and nothing but it
   imports the Run (``session/run.py``), which sits just below it;
4. the session layer (``session/``) imports no other pytest-facing module: every plugin
   and item module builds on it, never the other way round (the Run excepted: it calls them);
5. the plain engine (every module that is not pytest-facing) imports no pytest-facing module;
6. only ``plugin.py`` registers plugins with the plugin manager (the built-in providers and
   the Run); only ``plugin.py``, the Run and ``builtin_plugins.py`` (which implements the
   plugin's own hook specifications, ``hookspecs.py``) define ``pytest_*`` hooks: the feature modules are plain
   code the Run calls; ordering markers (``tryfirst``/``trylast``) stand only in the Run.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import pytest_llmjudge

ROOT = Path(pytest_llmjudge.__file__).parent
PACKAGE = "pytest_llmjudge"

# The modules allowed to import pytest: hooks and items (``plugin.py``, ``run_phase.py`` and ``*_phase.py``, ``items.py``
# at any depth) and the session layer they share.
SESSION = f"{PACKAGE}.session"
RUN = f"{SESSION}.run"
HOOK_MODULES = {f"{PACKAGE}.plugin", RUN, f"{PACKAGE}.builtin_plugins", f"{PACKAGE}.hookspecs"}
"""The modules allowed to define ``pytest_*`` functions (rule 6): the hooks, the built-in providers'
implementations of the plugin's own hook specifications, and those specifications."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per process (several tests read every module)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name ``module`` imports, at any depth of its source."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package's modules it imports (a name resolves to its longest module prefix)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges = set()
        for name in _imported_names(module, path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            # A package's own __init__ runs before its submodules: not an edge worth a cycle.
            if name and name != module and not module.startswith(name + "."):
                edges.add(name)
        graph[module] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _plugin_or_items(module: str) -> bool:
    name = module.rpartition(".")[2]
    return name in ("plugin", "items") or name.endswith("_phase")


def _pytest_facing(module: str) -> bool:
    return _plugin_or_items(module) or module == SESSION or module.startswith(SESSION + ".")


MODULES = _modules()


@functools.cache
def _package_graph() -> dict[str, set[str]]:
    """The package's graph, built at the first test that needs it, not when the file is
    collected (every xdist worker collects it; one runs these tests)."""
    return _graph(MODULES)


def test_the_graph_sees_lazy_imports_and_finds_a_cycle() -> None:
    """The checker itself: a cycle made only of a function-level import is found."""
    graph = dict(_package_graph())
    graph[f"{PACKAGE}.judges.base"] = graph[f"{PACKAGE}.judges.base"] | {f"{PACKAGE}.judges.diagnosis"}
    assert [f"{PACKAGE}.judges.base", f"{PACKAGE}.judges.diagnosis"] in _cycles(graph)
    # ... and function-level imports are read: the Run imports suite/items.py only inside functions.
    assert f"{PACKAGE}.suite.items" in _package_graph()[RUN]


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(_package_graph()) == []


def test_only_pytest_facing_modules_import_pytest() -> None:
    offenders = sorted(
        module
        for module, path in MODULES.items()
        if not _pytest_facing(module)
        and any(name.split(".")[0] in ("pytest", "_pytest") for name in _imported_names(module, path))
    )
    assert offenders == []


def test_nothing_imports_the_core_plugin() -> None:
    assert sorted(module for module, edges in _package_graph().items() if f"{PACKAGE}.plugin" in edges) == []


def test_only_the_core_plugin_imports_the_run() -> None:
    assert sorted(module for module, edges in _package_graph().items() if RUN in edges) == [f"{PACKAGE}.plugin"]


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if _pytest_facing(m) and m.startswith(SESSION) and m != RUN)
)
def test_the_session_layer_imports_no_plugin_or_item_module(module: str) -> None:
    upward = sorted(edge for edge in _package_graph()[module] if _plugin_or_items(edge))
    assert upward == []


def test_the_engine_imports_no_pytest_facing_module() -> None:
    offenders = sorted(
        f"{module} -> {edge}"
        for module, edges in _package_graph().items()
        if not _pytest_facing(module)
        for edge in edges
        if _pytest_facing(edge)
    )
    assert offenders == []


def test_every_item_derives_from_the_one_item_base() -> None:
    """Only ``session/item_base.py`` subclasses ``pytest.Item``: every item kind shares its failure handling."""
    direct = sorted(
        f"{module}.{node.name}"
        for module, path in MODULES.items()
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base) in ("pytest.Item", "Item") for base in node.bases)
    )
    assert direct == [f"{SESSION}.item_base.LLMJudgeItem"]


def _hook_definitions(path: Path) -> list[str]:
    """The ``pytest_*`` functions and methods a module defines (its hook implementations)."""
    return [
        node.name
        for node in ast.walk(_tree(path))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("pytest_")
    ]


def test_only_the_core_plugin_and_the_run_define_hooks() -> None:
    """Feature modules are plain code the Run calls, not plugins with hooks of their own."""
    offenders = sorted(
        f"{module}.{name}"
        for module, path in MODULES.items()
        if module not in HOOK_MODULES
        for name in _hook_definitions(path)
    )
    assert offenders == []


def _calls_named(path: Path, attribute: str) -> list[str]:
    """``x.<attribute>(...)`` calls in a module, as their source text's callee."""
    return [
        ast.unparse(node.func)
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute
    ]


def test_only_the_core_plugin_registers_plugins() -> None:
    """One place registers with pytest's plugin manager: ``plugin.py`` (the built-in providers, the Run)."""
    offenders = sorted(
        f"{module}: {callee}"
        for module, path in MODULES.items()
        if module != f"{PACKAGE}.plugin"
        for callee in _calls_named(path, "register")
        if "pluginmanager" in callee
    )
    assert offenders == []
    assert any("pluginmanager" in callee for callee in _calls_named(MODULES[f"{PACKAGE}.plugin"], "register"))


def test_ordering_markers_stand_only_in_the_run() -> None:
    """``tryfirst``/``trylast`` only where the Run orders itself against pytest's own plugins."""
    offenders = sorted(
        module
        for module, path in MODULES.items()
        if module != RUN
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.keyword) and node.arg in ("tryfirst", "trylast")
    )
    assert offenders == []


def test_worker_traffic_goes_through_the_one_channel() -> None:
    """Only ``session/channel.py`` touches xdist's ``workerinput``/``workeroutput``, and its docstring
    lists every key it defines (what crosses between controller and workers is read in one place)."""
    channel = f"{SESSION}.channel"
    offenders = sorted(
        module
        for module, path in MODULES.items()
        if module != channel
        for node in ast.walk(_tree(path))
        if (isinstance(node, ast.Attribute) and node.attr in ("workerinput", "workeroutput"))
        or (isinstance(node, ast.Constant) and node.value in ("workerinput", "workeroutput"))
    )
    assert offenders == []
    tree = _tree(MODULES[channel])
    doc = ast.get_docstring(tree) or ""
    keys = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.value.value.startswith("llmjudge_")
    ]
    assert len(keys) == 9
    assert [key for key in keys if f"``{key}``" not in doc] == []
