"""Dependency drift is visible on purpose, never as a red CI after the fact.

CI installs with the README's two commands, both ``-c constraints.txt``, so a new release of
a dependency changes nothing until ``scripts/update_constraints.sh`` refreshes the pins; the
weekly ``.github/workflows/dependency-drift.yml`` job installs the newest releases (no
constraints) and runs the suite, so the drift is seen there first. (PyYAML 6.0.4 turned CI
red on a fresh machine because nothing was pinned: its libyaml nesting limit changed a message.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins with '==' only: {line!r}"
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_every_dependency_ci_installs_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = {_name(r) for r in [*project["dependencies"], *extras["metrics"], *extras["dev"]]}
    missing = sorted(wanted - set(_pins()))
    assert not missing, f"constraints.txt lacks {missing}: run scripts/update_constraints.sh"


def test_the_readme_commands_install_from_the_constraints() -> None:
    readme = (ROOT / "README.md").read_text()
    for marker in ("ci:main", "ci:tests"):
        block = readme.split(f"<!-- {marker} -->", 1)[1]
        command = next(line for line in block.splitlines() if line.startswith("$ "))
        assert "pip install -c constraints.txt" in command, command


def test_the_drift_job_installs_the_newest_releases_and_runs_the_suite() -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows/dependency-drift.yml").read_text())
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    installs = [run for run in steps if "pip install" in run and "-e" in run]
    assert installs and all("constraints" not in run and "--upgrade" in run for run in installs)
    assert any(run.startswith("pytest -n auto") for run in steps)
    # PyYAML reads the key 'on' as True.
    assert "schedule" in workflow[True]


def test_the_release_workflow_builds_checks_and_loads_the_wheel() -> None:
    # The build itself (python -m build, then twine check --strict: both PASSED, 0 deprecation
    # warnings with setuptools>=77 and an SPDX license string) needs the package index for the
    # build backend, so it runs in the workflow, not here.
    workflow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    order = [
        next(i for i, run in enumerate(steps) if run.startswith(prefix))
        for prefix in (
            "python -m build",
            "twine check --strict dist/*",
            'python -m pip install "$(ls dist/*.whl)[metrics]"',
        )
    ]
    assert order == sorted(order)
    assert any("pytest --llmjudge example_suites" in run for run in steps[order[-1] :])
    build_system = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert build_system["project"]["license"] == "MIT", "an SPDX string: the TOML table form is deprecated"
