"""The docs' Python examples import only what the package makes public, and it is all there.

Every ```python block of README.md and docs/*.md is parsed with ``ast``; each
``from pytest_llmjudge... import name`` must name a public module (``pytest_llmjudge`` or
``pytest_llmjudge.testing``, or one listed in :data:`INTERNAL` with the reason) and a name
that module has, and a name taken from ``pytest_llmjudge`` must be in its ``__all__``. So a
renamed or moved type fails here before a plugin author copies a broken import.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import pytest_llmjudge

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PUBLIC = frozenset({"pytest_llmjudge", "pytest_llmjudge.testing"})
INTERNAL = {
    # An operator's one-off script against the store layer, not an API for suites or plugins.
    ("remote-cache.md", "pytest_llmjudge.execution.stores"),
}
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[str]:
    return _PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


def package_imports(source: str) -> list[tuple[str, str]]:
    """``(module, name)`` for every import from the package in ``source`` (``name`` "" for ``import m``)."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pytest_llmjudge":
            found.extend((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names if alias.name.split(".")[0] == "pytest_llmjudge")
    return found


IMPORTS = [
    pytest.param(page.name, module, name, id=f"{page.name}:{module}:{name}")
    for page in PAGES
    for block in python_blocks(page)
    for module, name in package_imports(block)
]


def test_the_docs_have_python_examples_importing_the_package() -> None:
    pages = {page for page, _, _ in (param.values for param in IMPORTS)}
    assert {"extending.md", "judges.md", "suite-format.md"} <= pages


@pytest.mark.parametrize(("page", "module", "name"), IMPORTS)
def test_a_docs_import_is_public_and_resolves(page: str, module: str, name: str) -> None:
    assert module in PUBLIC or (page, module) in INTERNAL, (
        f"{page} imports from the private module {module}: export what plugin authors need from pytest_llmjudge"
    )
    imported = importlib.import_module(module)
    if name:
        assert hasattr(imported, name), f"{page}: {module} has no {name}"
    if module == "pytest_llmjudge" and name:
        assert name in pytest_llmjudge.__all__, f"{page} imports {name}, which pytest_llmjudge does not export"


def test_the_extending_examples_run_as_modules() -> None:
    """The conftest.py examples (a block defining a hook) import and define without error."""
    blocks = [block for block in python_blocks(ROOT / "docs" / "extending.md") if "def pytest_llmjudge_" in block]
    assert len(blocks) >= 2
    for number, block in enumerate(blocks):
        namespace: dict[str, object] = {"__name__": f"extending_example_{number}"}
        exec(compile(block, f"docs/extending.md python block {number}", "exec"), namespace)


def test_every_exported_name_resolves_and_the_list_is_sorted() -> None:
    for name in pytest_llmjudge.__all__:
        assert getattr(pytest_llmjudge, name) is not None, name

    def isort_style(name: str) -> tuple[int, str]:  # ruff's RUF022: CONSTANTS, Classes, the rest
        kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
        return (kind, name)

    assert pytest_llmjudge.__all__ == sorted(pytest_llmjudge.__all__, key=isort_style)
