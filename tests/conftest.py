"""Shared fixtures: a scripted judge behind the loopback server or in process, and the test run's scheduling.

The suite-text builders the test files share are in ``tests/builders.py`` (``from builders import ...``).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import builders
import pytest

from pytest_llmjudge.registry import Registry
from pytest_llmjudge.testing import LoopbackServer, MockProvider, ScriptedJudge

# Imported once per test process, in pytest_sessionstart (so not for ``pytest --help``, which
# the docs run, nor in the xdist controller, which runs no test): pytester's in-process runs
# restore sys.modules after each run, and C extensions (numpy.fft under scipy.stats) can't be
# imported twice per process. The SDKs are slow to import (about 1.3 s for openai), which would
# otherwise be paid per run, and their HTTP stack must not be re-imported: exception classes
# would stop matching.
PRELOAD = (
    "anthropic",
    "numpy",
    "openai",
    "scipy.stats",
)
"""Libraries; the package's own modules are all imported after them (:func:`_package_modules`)."""
OPTIONAL_PRELOAD = (
    "httpcore2",
    "httpx2",
    "h11",
    "anyio._backends._asyncio",
    "httpcore",
    "httpx",
)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """Collection may write bytecode: pytest's rewritten test modules, cached in __pycache__."""
    # pytest rewrites the asserts of every test module it imports, about 10 s of CPU for this
    # suite in every process that collects it (each xdist worker does), and caches the result
    # in __pycache__ unless bytecode writing is off, as PYTHONDONTWRITEBYTECODE=1 turns it off on
    # the development machine. Collection only: the tests' own runs (pytester writes modules in
    # temporary directories) keep the setting they were given.
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = dont_write


def _package_modules() -> list[str]:
    """Every module of the package, by name, without importing any (``__main__`` modules left out)."""
    import pytest_llmjudge

    root = Path(pytest_llmjudge.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        names.append(".".join(("pytest_llmjudge", *parts)))
    return names


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.pluginmanager.has_plugin("dsession"):
        return  # the xdist controller: its workers run the tests
    for name in PRELOAD:
        importlib.import_module(name)
    # The rest of the package too: a module an in-process run imports that this process lacks is
    # dropped after the run and imported again by the next (pydantic models and all), hundreds
    # of times; and a package attribute left behind can point at the dropped module.
    for name in _package_modules():
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency this environment lacks (pyarrow, datasets)
            pass
    for name in OPTIONAL_PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see real provider keys, so nothing can reach a real provider by accident."""
    if os.environ.get("LLMJUDGE_LIVE_TESTS") != "1":
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(variable, raising=False)
    for variable in [name for name in os.environ if name.startswith("LLMJUDGE_") and name != "LLMJUDGE_LIVE_TESTS"]:
        monkeypatch.delenv(variable, raising=False)
    # Tests run as on a developer's machine (judge items without a key are skipped) even when
    # the suite itself runs in CI; tests of the CI default set CI themselves.
    monkeypatch.delenv("CI", raising=False)
    # Tests read the per-language tables of the summary; tests/report/test_short_summary.py
    # removes this to check the short default a first run prints.
    monkeypatch.setenv("LLMJUDGE_SUMMARY", "full")


@pytest.fixture
def scripted_judge() -> ScriptedJudge:
    """Scores every METAL rubric at its best value unless a test changes ``scores``."""
    return ScriptedJudge(
        {
            "linguistic_acceptability": 2,
            "output_content_quality": 2,
            "task_quality": 2,
            "problematic_content": 0,
            "hallucinations": 0,
        }
    )


@pytest.fixture
def loopback(scripted_judge: ScriptedJudge) -> Iterator[LoopbackServer]:
    with LoopbackServer(responder=scripted_judge) as server:
        yield server


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The built-in providers, rubrics and metrics, as a run without plugins has them (one per module)."""
    return builders.builtin_registry()


MOCK_CONFTEST = """
import builders


def pytest_llmjudge_providers():
    return {name: provider.factory() for name, provider in builders.MOCK_PROVIDERS.items()}
"""


@pytest.fixture
def mock_judge(pytester: pytest.Pytester, scripted_judge: ScriptedJudge) -> Iterator[MockProvider]:
    """The scripted judge in process, as provider ``mock`` (``judge: {provider: mock}``) of this
    test's in-process pytester runs, for tests that need a judge but not the wire. It is
    registered as a user registers one: a conftest.py (written here) implementing the hook, so
    a test using it writes no conftest.py of its own. ``requests`` lists what the judge was asked."""
    judge = MockProvider(scripted_judge)
    builders.MOCK_PROVIDERS["mock"] = judge
    pytester.makeconftest(MOCK_CONFTEST)
    yield judge
    builders.MOCK_PROVIDERS.clear()


# ---------------------------------------------------------------------------- scheduling
# pytest-xdist hands tests to workers in collection order, so a long test collected late
# runs alone at the end while the other worker idles. The long ones (each runs Python in
# subprocesses) go first, longest first, and each worker takes the next test only when it
# is nearly free (--maxschedchunk=1 by default): longest-first scheduling.
DOCS = "tests/test_docs_commands.py::test_doc_commands_run"
LONG_TESTS: dict[str, float] = {
    f"{DOCS}[getting-started.md]": 6,
    "tests/plugin/test_soak.py": 10,
    f"{DOCS}[baselines.md]": 8.5,
    f"{DOCS}[reports.md]": 8,
    f"{DOCS}[suite-format.md]": 6.5,
    f"{DOCS}[ci.md]": 6,
    "tests/test_benchmark_scale.py": 5.5,
    f"{DOCS}[configuration.md]": 5,
    "tests/plugin/test_shards.py::test_three_shards_pay_once_per_prompt_and_merge_to_the_single_run[s3]": 4,
    "tests/test_ci_recipes.py::test_the_release_gate_recipe_runs_as_written": 2,
    "tests/plugin/test_secrets.py::test_sentinel_keys_appear_in_no_output[xdist]": 3.5,
    "tests/plugin/test_shards.py": 3,
    "tests/unit/test_stats_family.py::test_adjustments_equal_statsmodels[holm-holm]": 3,
    "tests/report/test_report_chromium.py::test_ten_thousand_failing_cases_render_under_10_mb": 3,
    "tests/report/test_report_chromium.py::test_screenshots": 3,
    "tests/plugin/test_live_progress.py::test_under_xdist_the_controller_shows_the_workers_sum": 2.5,
    "tests/report/test_report_model.py": 2.5,
    "tests/plugin/test_store_startup.py": 2.4,
    f"{DOCS}[rankings.md]": 2.2,
    f"{DOCS}[judges.md]": 2.2,
    "tests/report/test_markdown.py::test_the_real_run_renders_and_failures_are_capped": 2.1,
    "tests/stores/test_leases_shared.py": 2,
    "tests/plugin/test_judge_failures.py::test_xdist": 1.9,
    "tests/plugin/test_cache_processes.py": 1.9,
    "tests/plugin/test_batch.py::test_a_run_killed": 1.9,
    "tests/report/test_report_plugin.py::test_xdist_report_has_the_same_results": 1.8,
    "tests/plugin/test_xdist.py": 1.8,
    "tests/plugin/test_resume.py": 1.8,
    f"{DOCS}[junit.md]": 1.8,
    f"{DOCS}": 1.5,
}
"""Seconds the longest tests take (node-id prefix, the first that matches): their durations in a
``pytest -n auto --durations=40`` run of the whole suite on a quiet machine (2026-11-27, 2,536
tests); tests with "xdist" in their name, not listed, follow them."""


def _cost_rank(item: pytest.Item) -> float:
    """Sort key: minus the item's measured seconds, then the xdist tests, then the rest."""
    for prefix, seconds in LONG_TESTS.items():
        if item.nodeid.startswith(prefix):
            return -seconds
    return -1 if "xdist" in item.name else 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_cost_rank)  # stable: the rest keep pytest's order (and module fixtures their reuse)


def pytest_configure(config: pytest.Config) -> None:
    # A shell starts a background job (`pytest ... &`) with SIGINT ignored, and children
    # inherit that: the interrupt tests' subprocesses would then never see their SIGINT and
    # run to the end. Python installs its KeyboardInterrupt handler only where SIGINT was not
    # ignored, so give this process (and so its children) the default back.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.pluginmanager.hasplugin("xdist") and config.getoption("maxschedchunk", None) is None:
        config.option.maxschedchunk = 1
    if not hasattr(config, "workerinput"):
        _compile_the_package()
        if config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None):
            _rewrite_test_modules_once()


def _compile_the_package() -> None:
    """Write the plugin's bytecode once, before any test starts a Python process.

    The package is installed editable, so pip compiled none of it, and with
    ``PYTHONDONTWRITEBYTECODE=1`` (this machine and CI set it) no process writes it either:
    every pytest subprocess of the tests (the docs pages, shards, secrets: about a hundred)
    compiled the modules it imports from source again. Compiling them once here is what a
    regular install does; a module already compiled is skipped by its timestamp."""
    import compileall

    import pytest_llmjudge

    compileall.compile_dir(Path(pytest_llmjudge.__file__).parent, quiet=1)


class _NoTrace:
    """The one part of pytest's assertion state that writing a rewritten module uses."""

    def trace(self, *args: object) -> None:
        pass


def _rewrite_test_modules_once() -> None:
    """Write pytest's rewritten test modules before the xdist workers start, in two processes.

    Each worker imports every test module to collect it, and on a fresh checkout both rewrote
    each module's asserts (about 5 s of CPU each) at the same time. Written here first, the
    workers read them from ``__pycache__``, as they do on every later run. pytest's own
    functions do the work (``_pytest.assertion.rewrite``, whose cache entries carry the
    source's hash, so a stale one is never read); if they change, this is skipped and the
    workers rewrite as before."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, get_cache_dir
    except ImportError:
        return
    tests = Path(__file__).resolve().parent
    todo = [
        str(path)
        for path in sorted(tests.rglob("*.py"))
        if (path.name.startswith("test_") or path.name == "conftest.py")
        and _read_pyc(path, get_cache_dir(path) / (path.name[:-3] + PYC_TAIL), _NoTrace().trace) is None
    ]
    if len(todo) < 8:  # a warm checkout: nothing worth two processes
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        # fork: the children need this module's function, which another start method would
        # have to import by a name only pytest knows.
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
            list(pool.map(_rewrite_one, todo, chunksize=4))
    except Exception:  # an optimisation only: the workers rewrite what is missing, as before
        return


def _rewrite_one(name: str) -> None:
    from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, get_cache_dir, try_makedirs

    path = Path(name)
    cache = get_cache_dir(path)
    if not try_makedirs(cache):
        return
    # No config: the assertion-pass hook stays off, as the ini option leaves it in this project.
    source_hash, code = _rewrite_test(path, None)  # type: ignore[arg-type]
    _write_pyc(_NoTrace(), code, source_hash, cache / (path.name[:-3] + PYC_TAIL))  # type: ignore[arg-type]
