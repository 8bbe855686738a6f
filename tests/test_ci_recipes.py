"""The CI recipes of docs/ci.md work when copied: checked as the docs-command tests check commands.

What is checked, per recipe (a ```yaml block that is a GitHub workflow or a GitLab
pipeline), statically except for one ``pytest --help`` run:

* every ```yaml block of the page parses (``yaml.safe_load``);
* every shell line (``run:`` of a step, ``script:`` of a job, ``$`` lines of the page's
  console blocks), with the workflow's, job's and step's variables substituted, is
  tokenized with ``shlex``; a ``pip install`` or ``pip wheel`` that names pytest-llmjudge
  takes it from a pinned git reference with the page's marked placeholders
  (``YOUR-ORG``, ``PINNED-REF``) or from a wheel file, never from the package index;
* every option of every ``pytest`` command is listed by ``pytest --help`` (the plugin and
  pytest-xdist installed, as the recipes install them);
* the JUnit file a recipe writes is shown in the pull/merge request: a GitHub workflow
  runs a JUnit reporter action on it with ``if: always()``, a GitLab job lists it under
  ``artifacts:reports:junit``;
* the self-hosted judge recipe takes its base URL and key from CI secrets.

Not run: the wheel build itself (``pip wheel --no-deps . -w dist`` takes 7 s and needs
the package index for the build backend, measured on the development machine); what is
checked is that the GitLab job installing the wheel depends on the job that builds it, and
that the pyproject has a build system.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "ci.md"
REPORTERS = ("mikepenz/action-junit-report", "dorny/test-reporter")
PLACEHOLDER_URL = "git+https://github.com/YOUR-ORG/pytest-llmjudge@PINNED-REF"


def yaml_blocks(text: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", text, flags=re.M | re.S)


def console_commands(text: str) -> list[str]:
    blocks = re.findall(r"^```console\n(.*?)^```", text, flags=re.M | re.S)
    return [line[2:] for block in blocks for line in block.splitlines() if line.startswith("$ ")]


def substitute(line: str, variables: Mapping[str, Any]) -> str:
    """``$NAME`` and ``${NAME}`` of the recipe's own variables (others, like ``$CI_PROJECT_DIR``, stay)."""
    return re.sub(
        r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?",
        lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0),
        line,
    )


def github_steps(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], dict[str, Any]]]:
    """``(job name, step, variables)`` of a GitHub workflow."""
    for name, job in doc["jobs"].items():
        for step in job["steps"]:
            yield name, step, {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}


def gitlab_jobs(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, job in doc.items():
        if isinstance(job, Mapping) and "script" in job:
            yield name, job


def recipes() -> list[Mapping[str, Any]]:
    docs = [yaml.safe_load(block) for block in yaml_blocks(PAGE.read_text(encoding="utf-8"))]
    return [doc for doc in docs if isinstance(doc, Mapping) and ("jobs" in doc or any(gitlab_jobs(doc)))]


def shell_lines() -> list[str]:
    """Every shell line of the page, its variables substituted."""
    lines = console_commands(PAGE.read_text(encoding="utf-8"))
    for doc in recipes():
        if "jobs" in doc:
            lines += [substitute(step["run"], env) for _, step, env in github_steps(doc) if "run" in step]
        else:
            for _, job in gitlab_jobs(doc):
                variables = {**doc.get("variables", {}), **job.get("variables", {})}
                lines += [substitute(line, variables) for line in job["script"]]
    return [" ".join(line.split()) for line in lines]


def commands(line: str) -> Iterator[list[str]]:
    """The simple commands of a shell line (split at ``&&``, ``;``, ``|``)."""
    current: list[str] = []
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    for token in lexer:
        if token in (";", "&&", "||", "|", "&"):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def test_every_yaml_block_parses_and_there_are_three_recipes() -> None:
    blocks = yaml_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    for block in blocks:
        yaml.safe_load(block)  # raises on invalid YAML
    kinds = sorted("github" if "jobs" in doc else "gitlab" for doc in recipes())
    assert kinds == ["github"] * 4 + ["gitlab"] * 3


def plugin_requirements(argv: list[str]) -> list[str]:
    return [arg for arg in argv[2:] if re.search(r"pytest[-_]llmjudge", arg, flags=re.I)]


def test_the_plugin_is_never_installed_from_the_package_index() -> None:
    installs = [argv for line in shell_lines() for argv in commands(line) if argv[:1] == ["pip"]]
    assert len(installs) >= 5
    for argv in installs:
        assert argv[1] in ("install", "wheel"), argv
        for requirement in plugin_requirements(argv):
            from_git = requirement.endswith(f"@ {PLACEHOLDER_URL}")
            from_wheel = re.search(r"\.whl\)?(\[[a-z0-9,]+\])?$", requirement) is not None
            from_source_tree = requirement == "."
            assert from_git or from_wheel or from_source_tree, f"{shlex.join(argv)}: {requirement!r} is not pinned"
    # The bare name, in any spelling, never appears as something to install.
    text = PAGE.read_text(encoding="utf-8")
    assert not re.search(r"pip install (-\S+ )*[\"']?pytest[-_]llmjudge([\"'\s\[]|$)(?!.*@ git\+)", text, flags=re.M)


def pytest_arguments() -> list[list[str]]:
    """The arguments of every ``pytest`` command of the page."""
    found = []
    for line in shell_lines():
        for argv in commands(line):
            while argv and (argv[0] in ("do", "then", "timeout") or re.fullmatch(r"\w+=\S*|\d+", argv[0])):
                argv = argv[1:]  # a loop keyword, a variable assignment (CI=true), timeout N
            if argv[:3] == ["python", "-m", "pytest"]:
                found.append(argv[3:])
            elif argv[:1] == ["pytest"]:
                found.append(argv[1:])
    return found


def known_options(help_text: str) -> set[str]:
    """The options ``pytest --help`` lists, without dashes: its formatter shows ``--junit-xml``
    and drops the spelling ``--junitxml``, which differs only in dashes (and is accepted)."""
    return {option.replace("-", "") for option in re.findall(r"(?:^|[\s,])(--?[A-Za-z][\w-]*)", help_text, re.M)}


def test_every_pytest_option_of_the_recipes_exists(tmp_path: Path) -> None:
    invocations = pytest_arguments()
    assert len(invocations) >= 7  # four console commands, three recipes
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    known = known_options(help_text)
    assert {"llmjudgerequirejudge", "n", "junitxml"} <= known
    assert "llmjudgerequirejudges" not in known  # a misspelt option would be caught
    for argv in invocations:
        for arg in argv:
            if arg.startswith("-"):
                assert arg.split("=")[0].replace("-", "") in known, f"{arg} of {shlex.join(argv)} is not an option"


def _per_shard(path: str) -> str:
    """A JUnit path with its shard number (a matrix value, a variable) as ``*``."""
    return re.sub(r"\$\{\{ *matrix\.\w+ *\}\}|\$\{?(SHARD|CI_NODE_INDEX)\}?", "*", path)


def test_the_junit_file_is_shown_in_the_pull_or_merge_request() -> None:
    for doc in recipes():
        if "jobs" in doc:
            steps = [step for _, step, _ in github_steps(doc)]
            written = {_per_shard(m) for step in steps for m in re.findall(r"--junitxml=(\S+)", step.get("run", ""))}
            shown = {
                _per_shard(step["with"]["report_paths"])
                for step in steps
                if str(step.get("uses", "")).startswith(REPORTERS) and step.get("if") == "always()"
            }
            assert written and written <= shown
            assert doc["permissions"]["checks"] == "write"
        else:
            for _, job in gitlab_jobs(doc):
                written = {m for line in job["script"] for m in re.findall(r"--junitxml=(\S+)", line)}
                if written:
                    assert {job["artifacts"]["reports"]["junit"]} == written
                    assert job["artifacts"]["when"] == "always"


def test_the_gitlab_wheel_is_built_from_the_pinned_reference_then_installed() -> None:
    pipelines = [doc for doc in recipes() if "jobs" not in doc and "plugin-wheel" in doc]
    assert len(pipelines) == 2  # one job, and the sharded one
    for gitlab in pipelines:
        jobs = dict(gitlab_jobs(gitlab))
        builder = next(name for name, job in jobs.items() if any("pip wheel" in line for line in job["script"]))
        installers = [name for name, job in jobs.items() if any(".whl" in line for line in job["script"])]
        assert installers and all(builder in jobs[installer]["needs"] for installer in installers)
        assert "dist/" in jobs[builder]["artifacts"]["paths"]
        assert gitlab["variables"]["LLMJUDGE_GIT"] == PLACEHOLDER_URL
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r"^\[build-system\]\nrequires = \[.+\]\nbuild-backend = ", pyproject, flags=re.M)


def test_the_self_hosted_judge_recipe_takes_url_and_key_from_secrets() -> None:
    (step,) = [
        step
        for doc in recipes()
        if "jobs" in doc
        for _, step, env in github_steps(doc)
        if env.get("LLMJUDGE_PROVIDER") == "openai-compatible"
    ]
    assert step["env"]["LLMJUDGE_BASE_URL"].startswith("${{ secrets.")
    assert step["env"]["OPENAI_API_KEY"].startswith("${{ secrets.")
    assert "--llmjudge-require-judge" in step["run"]


def _sharded(doc: Mapping[str, Any]) -> bool:
    return "--llmjudge-shard " in yaml.safe_dump(doc, width=10_000)


def test_the_sharded_recipes_share_an_external_store_upload_every_shard_and_merge_their_accounting() -> None:
    sharded = [doc for doc in recipes() if _sharded(doc)]
    assert sorted("github" if "jobs" in doc else "gitlab" for doc in sharded) == ["github", "gitlab"]
    for doc in sharded:
        text = yaml.safe_dump(doc, width=10_000)
        # A service container is per job: shards would share nothing through it.
        assert "services" not in text
        if "jobs" in doc:
            assert doc["env"]["LLMJUDGE_CACHE_URL"].startswith("${{ secrets.")
            assert doc["env"]["LLMJUDGE_CACHE_SECRET"].startswith("${{ secrets.")
            shard_job = next(job for job in doc["jobs"].values() if "matrix" in job.get("strategy", {}))
            merge_name, merge_job = next((n, j) for n, j in doc["jobs"].items() if "needs" in j)
            shards = shard_job["strategy"]["matrix"]["shard"]
            (run,) = [step["run"] for step in shard_job["steps"] if "--llmjudge-shard " in step.get("run", "")]
            assert f"--llmjudge-shard $SHARD/{len(shards)}" in run and shard_job["strategy"]["fail-fast"] is False
            uploads = [s for s in shard_job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
            assert uploads and all(s.get("if") == "always()" for s in uploads)
            assert all(s["with"]["path"] == "reports/" for s in uploads)  # the JUnit and JSON report
            assert merge_job["if"] == "always()" and merge_name != "shard"
            merge_steps = merge_job["steps"]
            assert any(str(s.get("uses", "")).startswith("actions/download-artifact") for s in merge_steps)
            merge_run = next(s["run"] for s in merge_steps if "python -m pytest" in s.get("run", ""))
        else:
            assert "LLMJUDGE_CACHE_URL" not in doc["variables"]  # a masked CI/CD variable, not in the file
            jobs = dict(gitlab_jobs(doc))
            shard_job = next(job for job in jobs.values() if "parallel" in job)
            assert any("--llmjudge-shard $CI_NODE_INDEX/$CI_NODE_TOTAL" in line for line in shard_job["script"])
            assert shard_job["artifacts"]["when"] == "always" and "reports/" in shard_job["artifacts"]["paths"]
            shard_name = next(name for name, job in jobs.items() if "parallel" in job)
            merge_job = next(job for job in jobs.values() if shard_name in job.get("needs", []))
            assert merge_job["when"] == "always"
            merge_run = " ".join(merge_job["script"])
        assert "--llmjudge-shard-reports=reports/llmjudge-shard-*.json" in merge_run
        assert "--llmjudge-shard " not in merge_run


# --------------------------------------------------------------------------- the release gate, run


def _release_project(root: Path) -> None:
    """The layout the release-gate recipe expects: suites/, calibration/, a judge to call."""
    (root / "suites").mkdir()
    (root / "calibration").mkdir()
    cases = "\n".join(
        f"  - {{id: {lang}-{i}, language: {lang}, input: 'Say hello.', output: 'answer {lang} {i}'}}"
        for lang in ("hi", "fr")
        for i in range(6)
    )
    (root / "suites" / "release.yaml").write_text(
        "suite: release\n"
        "judge: {provider: openai, model: m, calibration: ../calibration/labels.yaml}\n"
        f"cases:\n{cases}\n"
        "assert:\n  - linguistic_acceptability >= 1\n",
        encoding="utf-8",
    )
    items = [
        {
            "id": f"{lang}-{i}",
            "language": lang,
            "input": "Say hello.",
            "output": f"labelled {lang} {i}",
            "human": {"linguistic_acceptability": {"a1": 2, "a2": 2, "a3": 2}},
        }
        for lang in ("hi", "fr")
        for i in range(8)
    ]
    (root / "calibration" / "items.jsonl").write_text("\n".join(json.dumps(item) for item in items) + "\n")
    (root / "calibration" / "labels.yaml").write_text(
        "calibration: labels\nitems_file: items.jsonl\n"
        "judge: {provider: openai, model: m}\nscores: judge\n"
        "gate:\n  threshold: 0.6\n  min_items: 8\n",
        encoding="utf-8",
    )


def _recipe_pytest_commands(name: str) -> list[list[str]]:
    """The ``pytest`` commands of one recipe, in job order (GitHub) or file order (GitLab)."""
    for doc in recipes():
        if doc.get("name") == name or (name == "gitlab" and "jobs" not in doc and "release-gate" in doc):
            lines = (
                [step.get("run", "") for _, step, _ in github_steps(doc)]
                if "jobs" in doc
                else [line for _, job in gitlab_jobs(doc) for line in job["script"]]
            )
            return [
                argv[3:]
                for line in lines
                for argv in commands(" ".join(line.split()))
                if argv[:3] == ["python", "-m", "pytest"]
            ]
    raise AssertionError(f"no recipe {name!r} in docs/ci.md")


def test_the_gitlab_release_gate_runs_what_the_github_one_runs() -> None:
    """Each GitLab command's arguments are among the GitHub command's (which the next test runs)."""
    github = sorted(_recipe_pytest_commands("release-gate"), key=lambda argv: "--llmjudge-save-baseline=prod" in argv)
    gitlab = sorted(_recipe_pytest_commands("gitlab"), key=lambda argv: "--llmjudge-save-baseline=prod" in argv)
    assert len(github) == len(gitlab) == 2
    for ours, theirs in zip(gitlab, github, strict=True):
        assert set(ours) <= set(theirs), sorted(set(ours) - set(theirs))


def test_the_release_gate_recipe_runs_as_written(tmp_path: Path) -> None:
    from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

    _release_project(tmp_path)
    gate, refresh = sorted(
        _recipe_pytest_commands("release-gate"), key=lambda argv: "--llmjudge-save-baseline=prod" in argv
    )
    assert "--llmjudge-baseline=prod" in gate and "--llmjudge-save-baseline=prod" in refresh
    with LoopbackServer(responder=ScriptedJudge(default=2)) as server:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("LLMJUDGE_", "OPENAI_", "CI"))}
        env.update(LLMJUDGE_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-recipe-test")
        for argv in (refresh, gate):
            # As written, but in one process: `-n auto` would start two workers to collect three files
            # (xdist runs of the plugin are tested in tests/plugin/test_xdist.py and others).
            argv = [arg for arg in argv if arg not in ("-n", "auto")]
            done = subprocess.run(
                [sys.executable, "-m", "pytest", *argv, "-p", "no:cacheprovider"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        requests = server.stats()["requests"]
    assert (tmp_path / "llmjudge_baselines" / "prod.json").is_file()
    junit = (tmp_path / "reports" / "junit.xml").read_text(encoding="utf-8")
    assert "agreement[hi-linguistic_acceptability]" in junit and "regression[linguistic_acceptability-hi]" in junit
    assert (tmp_path / "reports" / "llmjudge.md").read_text(encoding="utf-8").startswith("## pytest-llmjudge: PASS")
    assert any((tmp_path / ".llmjudge_history").glob("history.jsonl"))
    assert requests == 12 + 16, "the gate run pays nothing: the refresh run's replies are in the cache"
