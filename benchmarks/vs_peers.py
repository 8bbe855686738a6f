"""pytest-llmjudge against deepeval and promptfoo, side by side, on one loopback judge server.

All three tools judge the same N cases (default 500, one judge call each) through the same
OpenAI-compatible server -- the shipped ``LoopbackServer`` on 127.0.0.1, answering every
request after a fixed latency (default 200 ms) -- in one run of this script:

* **ours**: ``pytest --llmjudge`` on a YAML suite of N cases with one rubric
  (``--llmjudge-concurrency C``, default 32), then the same command again (cached re-run);
* **deepeval** (its pytest integration): ``deepeval test run`` on N parametrized tests, each
  ``assert_test(case, [GEval(...)])`` with a G-Eval metric (criteria + 3 fixed evaluation
  steps, so one judge request per case; the judge reads the score's ``logprobs``, which the
  server provides when asked), then ``deepeval test run -c`` (its cache). deepeval's pytest
  path runs tests one after another: it has no concurrency setting.
* **promptfoo**: ``promptfoo eval`` with an ``llm-rubric`` assertion per test (``echo`` as the
  system under test, the grader pointed at the server through ``apiBaseUrl``) at ``-j C``
  with ``--no-cache``; then with its cache on: cleared (cold) and again (warm).

Secondary configurations are measured too (``--no-extras`` skips them): promptfoo at its
default concurrency (4) and deepeval's ``evaluate()`` with ``AsyncConfig(max_concurrent=C)``
(deepeval's concurrent API, outside pytest).

Every wall time is the whole process (interpreter start-up, imports, collection, the judge
traffic, reports, exit), measured here with ``time.perf_counter`` around ``subprocess.run``;
the server's own counters give the requests, the most in flight and the span from the first
request to the last reply. The ideal is ``ceil(N / C) x latency``. Ours (cold and cached) and
promptfoo at ``-j C`` run ``--repeat`` times (default 3) and the median counts; deepeval's
runs take minutes each and run once. Child processes run
without ``PYTHONDONTWRITEBYTECODE`` (as in a normal environment), and ours gets one untimed
``--collect-only`` first so that its editable install has compiled bytecode, as pip gives
the peers at install time.

The peers are installed only inside ``benchmarks/.peers/`` (ignored by git) on the first run:
a virtual environment with ``deepeval`` (pinned below, from PyPI) and an npm project with
``promptfoo`` (pinned, from the npm registry). Telemetry, update checks and sharing are
turned off through their environment variables; no request leaves 127.0.0.1 apart from
those installs. The versions used are printed.

    python benchmarks/vs_peers.py [--cases 500] [--latency 0.2] [--concurrency 32] [--repeat 3] [--no-extras]

It also times the floor under any tool built on the openai SDK (``sdk_floor.py``: a bare
script that imports the SDK and sends the same requests, nothing else), so the part of
``ours_over_ideal`` that start-up and the server impose is visible.

The last line is ``deepeval_over_ours=<x> promptfoo_over_ours=<y> ours_over_ideal=<z>``:
deepeval's pytest integration over ours, promptfoo at the same concurrency over ours (cold
runs, whole-process wall times), and our wall time over the ideal.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from sdk_floor import clean_env, measure_floor

from pytest_llmjudge.testing import LoopbackServer, ReceivedRequest, ScriptedJudge

HERE = Path(__file__).resolve().parent
PEERS = HERE / ".peers"
DEEPEVAL_VERSION = "4.3.1"
PROMPTFOO_VERSION = "0.121.20"
INSTALL_TIMEOUT = 1800
RUN_TIMEOUT = 900

GEVAL_REPLY = json.dumps({"score": 8, "reason": "The answer is correct and fluent."})
STEPS_REPLY = json.dumps({"steps": ["Check the answer is correct.", "Check it is fluent.", "Score it."]})
RUBRIC_REPLY = json.dumps({"reason": "The answer is correct and fluent.", "pass": True, "score": 1})


@dataclass
class Measured:
    label: str
    wall: float
    requests: int
    max_in_flight: int
    span: float | None
    ok: bool
    note: str = ""


# --------------------------------------------------------------------------- the judge


def make_responder() -> tuple[ScriptedJudge, object]:
    """One judge for all three tools: each tool's prompt gets the reply shape it asks for."""
    ours = ScriptedJudge({"linguistic_acceptability": 2})

    def respond(request: ReceivedRequest) -> str:
        text = request.system + "\n" + "\n".join(t for _, t in request.messages)
        if "## Metrics" in text:
            return ours(request)
        if '"steps"' in text or "generate 3-4 concise evaluation steps" in text.lower():
            return STEPS_REPLY
        if '"pass"' in text:
            return RUBRIC_REPLY
        return GEVAL_REPLY

    return ours, respond


# --------------------------------------------------------------------------- peers' environment


def run_checked(command: list[str], cwd: Path, timeout: float = INSTALL_TIMEOUT) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def ensure_peers() -> dict[str, str]:
    """Create ``benchmarks/.peers`` on first use; return the versions installed."""
    PEERS.mkdir(exist_ok=True)
    (PEERS / ".gitignore").write_text("*\n", encoding="utf-8")
    venv = PEERS / "venv"
    python = venv / "bin" / "python"
    if not (venv / "bin" / "deepeval").exists():
        print(f"installing deepeval=={DEEPEVAL_VERSION} into {venv} ...", flush=True)
        run_checked([sys.executable, "-m", "venv", str(venv)], PEERS)
        run_checked([str(python), "-m", "pip", "install", "-q", f"deepeval=={DEEPEVAL_VERSION}", "pytest"], PEERS)
    node_project = PEERS / "pf"
    promptfoo = node_project / "node_modules" / ".bin" / "promptfoo"
    if not promptfoo.exists():
        if shutil.which("npm") is None:
            raise SystemExit("npm is needed for promptfoo (apt-get install nodejs npm)")
        print(f"installing promptfoo@{PROMPTFOO_VERSION} into {node_project} ...", flush=True)
        node_project.mkdir(exist_ok=True)
        run_checked(["npm", "init", "-y"], node_project)
        run_checked(["npm", "install", "--no-audit", "--no-fund", f"promptfoo@{PROMPTFOO_VERSION}"], node_project)
    script = "import importlib.metadata as m; print(m.version('deepeval'), m.version('openai'), m.version('pytest'))"
    deepeval, deepeval_openai, deepeval_pytest = run_checked([str(python), "-c", script], PEERS).split()
    package = json.loads((node_project / "node_modules" / "promptfoo" / "package.json").read_text(encoding="utf-8"))
    node = run_checked(["node", "--version"], PEERS).strip()
    import importlib.metadata as metadata

    return {
        "python": sys.version.split()[0],
        "pytest-llmjudge": metadata.version("pytest-llmjudge"),
        "pytest (ours)": metadata.version("pytest"),
        "openai SDK (ours)": metadata.version("openai"),
        "deepeval": deepeval,
        "openai SDK (deepeval's venv)": deepeval_openai,
        "pytest (deepeval's venv)": deepeval_pytest,
        "promptfoo": str(package["version"]),
        "node": node,
    }


# --------------------------------------------------------------------------- the three suites


def question(i: int) -> tuple[str, str]:
    return f"What is {i} + {i}?", f"{i} + {i} equals {2 * i}."


def write_ours(work: Path, cases: int, base_url: str) -> Path:
    lines = ["suite: vs-peers", "judge:", "  model: gpt-4o", f'  base_url: "{base_url}"', "cases:"]
    for i in range(cases):
        q, a = question(i)
        lines.append(f'  - {{id: c{i:04d}, language: en, input: "{q}", output: "{a}"}}')
    lines += ["assert:", "  - linguistic_acceptability >= 1", ""]
    path = work / "ours" / "vs_peers.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def write_deepeval(work: Path, cases: int, base_url: str, concurrency: int) -> Path:
    directory = work / "deepeval"
    directory.mkdir(parents=True, exist_ok=True)
    common = f'''\
        from deepeval.metrics import GEval
        from deepeval.models import GPTModel
        from deepeval.test_case import LLMTestCase, LLMTestCaseParams

        BASE_URL = "{base_url}"
        CASES = [
            LLMTestCase(input=f"What is {{i}} + {{i}}?", actual_output=f"{{i}} + {{i}} equals {{2 * i}}.")
            for i in range({cases})
        ]


        def make_metric():
            return GEval(
                name="Correctness",
                criteria="Is the answer correct and fluent?",
                evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT],
                evaluation_steps=[
                    "Check whether the actual output correctly answers the input.",
                    "Check whether the actual output is fluent.",
                    "Penalize factual errors heavily.",
                ],
                model=GPTModel(model="gpt-4o", base_url=BASE_URL, api_key="x"),
                threshold=0.5,
            )
        '''
    (directory / "peer_cases.py").write_text(textwrap.dedent(common), encoding="utf-8")
    (directory / "test_geval.py").write_text(
        textwrap.dedent(
            """\
            import pytest
            from deepeval import assert_test

            from peer_cases import CASES, make_metric


            @pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
            def test_geval(case):
                assert_test(case, [make_metric()])
            """
        ),
        encoding="utf-8",
    )
    (directory / "run_evaluate.py").write_text(
        textwrap.dedent(
            f"""\
            import sys
            from deepeval import evaluate
            from deepeval.evaluate.configs import AsyncConfig, DisplayConfig

            from peer_cases import CASES, make_metric

            result = evaluate(
                CASES,
                [make_metric()],
                async_config=AsyncConfig(max_concurrent={concurrency}),
                display_config=DisplayConfig(print_results=False, show_indicator=False),
            )
            passed = sum(r.success for r in result.test_results)
            print(f"evaluate: {{passed}}/{{len(CASES)}} passed")
            sys.exit(0 if passed == len(CASES) else 1)
            """
        ),
        encoding="utf-8",
    )
    return directory


def write_promptfoo(work: Path, cases: int, base_url: str) -> Path:
    directory = work / "promptfoo"
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        "description: vs-peers llm-rubric",
        "prompts:",
        "  - 'Question: {{question}} Answer: {{answer}}'",
        "providers:",
        "  - echo",
        "defaultTest:",
        "  options:",
        "    provider:",
        "      id: openai:chat:gpt-4o",
        "      config:",
        f"        apiBaseUrl: {base_url}",
        "        apiKey: x",
        "  assert:",
        "    - type: llm-rubric",
        "      value: Is the answer correct and fluent?",
        "tests:",
    ]
    for i in range(cases):
        q, a = question(i)
        lines.append(f"  - vars: {{question: '{q}', answer: '{a}'}}")
    (directory / "promptfooconfig.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


# --------------------------------------------------------------------------- measuring


def measure(label: str, command: list[str], cwd: Path, env: dict[str, str], server: LoopbackServer) -> Measured:
    server.reset()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT, check=False)
    wall = time.perf_counter() - start
    stats = server.stats()
    ok = done.returncode == 0
    if not ok:
        sys.stderr.write(f"--- {label} exited {done.returncode}\n{done.stdout[-2500:]}\n{done.stderr[-2500:]}\n")
    result = Measured(label, wall, stats["requests"], stats["max_in_flight"], stats["span_s"], ok)
    span = f"{result.span:.2f}s" if result.span is not None else "-"
    print(
        f"  {label:<44} wall {wall:7.2f}s  requests {result.requests:4d}  max in flight {result.max_in_flight:3d}"
        f"  span {span}{'' if ok else '  FAILED'}",
        flush=True,
    )
    return result


def median(runs: list[Measured]) -> Measured:
    """The run with the median wall time (the upper one of two)."""
    return sorted(runs, key=lambda m: m.wall)[len(runs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours and of promptfoo -j C (median)")
    parser.add_argument("--no-extras", action="store_true", help="skip promptfoo -j 4 and deepeval evaluate()")
    args = parser.parse_args()
    n, c = args.cases, args.concurrency
    ideal = math.ceil(n / c) * args.latency

    versions = ensure_peers()
    work = PEERS / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _, responder = make_responder()
    with LoopbackServer(latency=args.latency, responder=responder, models=("gpt-4o",)) as server:  # type: ignore[arg-type]
        base_url = server.openai_base_url
        ours_suite = write_ours(work, n, base_url)
        deepeval_dir = write_deepeval(work, n, base_url, c)
        promptfoo_dir = write_promptfoo(work, n, base_url)
        print(f"{n} cases, latency {args.latency}s, concurrency {c}: ideal ceil(N/C) x latency = {ideal:.2f}s")
        for name, version in versions.items():
            print(f"  version {name}: {version}")

        print("ours (pytest --llmjudge):", flush=True)

        def ours_command(cache: Path) -> list[str]:
            return [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--llmjudge",
                ours_suite.name,
                f"--llmjudge-concurrency={c}",
                f"--llmjudge-cache-dir={cache}",
            ]

        ours_env = clean_env({})
        # Untimed: an editable install has no compiled bytecode yet (pip compiles the peers' at install).
        subprocess.run(
            [*ours_command(work / "ours" / "warm-up"), "--collect-only"],
            cwd=ours_suite.parent,
            env=ours_env,
            capture_output=True,
            check=False,
        )
        colds, warms = [], []
        for run in range(args.repeat):
            command = ours_command(work / "ours" / f"cache-{run}")
            colds.append(measure(f"ours cold (run {run + 1})", command, ours_suite.parent, ours_env, server))
            warms.append(measure(f"ours cached re-run (run {run + 1})", command, ours_suite.parent, ours_env, server))
        ours, ours_cached = median(colds), median(warms)
        server.reset()
        floor = measure_floor(base_url, n, c)
        print(f"  {'floor: bare openai-SDK script, same requests':<44} wall {floor:7.2f}s", flush=True)

        print("deepeval (deepeval test run, G-Eval):", flush=True)
        deepeval_bin = PEERS / "venv" / "bin" / "deepeval"
        deepeval_env = clean_env(
            {"DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "DEEPEVAL_UPDATE_WARNING_OPT_IN": "NO", "NO_COLOR": "1"}
        )
        deepeval = measure(
            "deepeval test run (pytest integration) cold",
            [str(deepeval_bin), "test", "run", "test_geval.py"],
            deepeval_dir,
            deepeval_env,
            server,
        )
        deepeval_cached = measure(
            "deepeval test run -c (its cache)",
            [str(deepeval_bin), "test", "run", "-c", "test_geval.py"],
            deepeval_dir,
            deepeval_env,
            server,
        )

        print("promptfoo (promptfoo eval, llm-rubric):", flush=True)
        promptfoo_bin = PEERS / "pf" / "node_modules" / ".bin" / "promptfoo"
        promptfoo_home = promptfoo_dir / ".promptfoo"
        promptfoo_env = clean_env(
            {
                "PROMPTFOO_DISABLE_TELEMETRY": "1",
                "PROMPTFOO_DISABLE_UPDATE": "1",
                "PROMPTFOO_DISABLE_SHARING": "1",
                "PROMPTFOO_SELF_HOSTED": "1",
                "OPENAI_API_KEY": "x",
                "NO_COLOR": "1",
                "PROMPTFOO_CONFIG_DIR": str(promptfoo_home),
                "PROMPTFOO_CACHE_PATH": str(promptfoo_home / "cache"),
            }
        )
        pf_eval = [str(promptfoo_bin), "eval", "-c", "promptfooconfig.yaml", "--no-progress-bar", "--no-table"]
        promptfoo = median(
            [
                measure(
                    f"promptfoo eval -j {c} --no-cache (run {run + 1})",
                    [*pf_eval, "--no-cache", "-j", str(c)],
                    promptfoo_dir,
                    promptfoo_env,
                    server,
                )
                for run in range(args.repeat)
            ]
        )
        shutil.rmtree(promptfoo_home / "cache", ignore_errors=True)
        promptfoo_cold = measure(
            f"promptfoo eval -j {c}, cache on, cold", [*pf_eval, "-j", str(c)], promptfoo_dir, promptfoo_env, server
        )
        promptfoo_warm = measure(
            f"promptfoo eval -j {c}, cache on, warm", [*pf_eval, "-j", str(c)], promptfoo_dir, promptfoo_env, server
        )

        extras: list[tuple[str, Measured]] = []
        if not args.no_extras:
            print("secondary configurations:", flush=True)
            extras.append(
                (
                    "promptfoo at its default -j (4)",
                    measure(
                        "promptfoo eval --no-cache (default -j)",
                        [*pf_eval, "--no-cache"],
                        promptfoo_dir,
                        promptfoo_env,
                        server,
                    ),
                )
            )
            shutil.rmtree(deepeval_dir / ".deepeval", ignore_errors=True)
            extras.append(
                (
                    f"deepeval evaluate(max_concurrent={c})",
                    measure(
                        f"deepeval evaluate() max_concurrent={c}",
                        [str(PEERS / "venv" / "bin" / "python"), "run_evaluate.py"],
                        deepeval_dir,
                        deepeval_env,
                        server,
                    ),
                )
            )

    failed = [
        m.label
        for m in (ours, ours_cached, deepeval, deepeval_cached, promptfoo, promptfoo_cold, promptfoo_warm)
        if not m.ok
    ]
    if ours.requests != n:
        failed.append(f"ours made {ours.requests} requests, expected {n}")
    print()
    print(
        f"cold, ratio peer/ours: deepeval pytest integration {deepeval.wall / ours.wall:.2f}, "
        f"promptfoo -j {c} {promptfoo.wall / ours.wall:.2f}"
    )
    for label, measured in extras:
        print(f"cold, ratio peer/ours: {label} {measured.wall / ours.wall:.2f}")
    print(
        f"cached re-run, ratio peer/ours: deepeval -c {deepeval_cached.wall / ours_cached.wall:.2f} "
        f"({deepeval_cached.requests} requests), promptfoo warm cache {promptfoo_warm.wall / ours_cached.wall:.2f} "
        f"({promptfoo_warm.requests} requests); ours cached {ours_cached.requests} requests"
    )
    print(
        f"ours: wall {ours.wall:.2f}s over ideal {ideal:.2f}s = {ours.wall / ideal:.3f}; "
        f"judge traffic span {ours.span or 0:.2f}s = {(ours.span or 0) / ideal:.3f} of ideal"
    )
    print(
        f"floor (sdk_floor.py: start Python, import openai, send the {n} requests with {c} in flight, exit):"
        f" {floor:.2f}s = {floor / ideal:.3f} x ideal; ours over the floor {ours.wall / floor:.3f}"
    )
    if failed:
        print("FAILED runs: " + "; ".join(failed))
    print(
        f"deepeval_over_ours={deepeval.wall / ours.wall:.2f} promptfoo_over_ours={promptfoo.wall / ours.wall:.2f} "
        f"ours_over_ideal={ours.wall / ideal:.3f}"
    )


if __name__ == "__main__":
    main()
