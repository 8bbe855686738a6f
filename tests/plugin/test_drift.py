"""The drift sentinel (``judge.drift``) end to end: a loopback judge that swaps the model behind its name.

History: run 1 certifies ``judge-v1`` (truthful); run 2 re-asks the sample uncached and
passes; then the server starts answering as ``judge-v2``: the sentinel fails naming both
identities, refuses to certify v2 over the gate's cached v1 scores, certifies it after a
cache refresh; then v2's behaviour degrades under the same name (agreement drop), and a
``judge-v3`` reply to a new case is not taken silently for the certified judge's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge
from pytest_llmjudge.testing.scripted import JudgeQuery
from pytest_llmjudge.testing.server import ReceivedRequest, Reply

TRUTH = (0, 1, 2, 2, 1, 2, 2, 0, 2, 1)
N = 20


@dataclass
class Served:
    model: str = "judge-v1"
    truthful: bool = True


def write_calibration(root: Path, base_url: str) -> None:
    lines = []
    for i in range(N):
        t = TRUTH[i % len(TRUTH)]
        human = {"linguistic_acceptability": {"a1": t, "a2": t, "a3": t}}
        record = {"id": f"fr-{i:03d}", "language": "fr", "output": f"answer {i} has quality {t}", "human": human}
        lines.append(json.dumps(record))
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "cal.yaml").write_text(
        "calibration: tiny\nitems_file: items.jsonl\n"
        f'judge: {{provider: openai, model: fr-judge, base_url: "{base_url}"}}\nscores: judge\n'
        "gate:\n  threshold: 0.7\n  min_items: 10\n",
        encoding="utf-8",
    )


def write_suite(root: Path, base_url: str, *, on_change: str = "fail", extra_case: bool = False) -> None:
    extra = '  - {id: fr-new, language: fr, output: "a new answer has quality 2"}\n' if extra_case else ""
    (root / "suite.yaml").write_text(
        f"""suite: s
judge:
  provider: openai
  model: fr-judge
  base_url: "{base_url}"
  calibration: cal.yaml
  drift: {{sample: 8, on_change: {on_change}, tolerance: 0.1}}
cases:
  - {{id: fr-1, language: fr, output: "an answer has quality 2"}}
{extra}assert:
  - linguistic_acceptability >= 1
""",
        encoding="utf-8",
    )


@pytest.fixture
def served() -> Served:
    return Served()


@pytest.fixture
def swapping(served: Served) -> LoopbackServer:
    def score(query: JudgeQuery) -> int:
        match = re.search(r"quality (\d)", query.output)
        true = int(match[1]) if match else 2
        return true if served.truthful else 2

    judge = ScriptedJudge(score)

    def respond(request: ReceivedRequest) -> Reply:
        return Reply(text=judge(request), model=served.model, system_fingerprint=f"fp_{served.model}")

    return LoopbackServer(responder=respond)


def certified_files(root: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((root / "cal.certified").glob("*.json"))]


def test_drift_sentinel_over_a_history_of_model_swaps(
    pytester: pytest.Pytester, swapping: LoopbackServer, served: Served
) -> None:
    with swapping as server:
        url = server.openai_base_url
        write_calibration(pytester.path, url)
        write_suite(pytester.path, url)
        args = ("--llmjudge", "suite.yaml", "-v", "-W", "ignore::pytest.PytestUnraisableExceptionWarning")

        # 1: the gate passes; the sentinel certifies the identity that served its uncached sample.
        result = pytester.runpytest(*args, "--llmjudge-report=json:report.json")
        result.assert_outcomes(passed=2)
        report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
        [case] = report["cases"]
        assert case["judge_identity"]["served_model"] == "judge-v1"
        assert case["judge_identity"]["system_fingerprint"] == "fp_judge-v1"
        assert case["judge_identity"]["rubric_version"]
        [certified] = certified_files(pytester.path)
        assert certified["identity"] == {
            "served_model": "judge-v1",
            "system_fingerprint": "fp_judge-v1",
            "rubric_version": certified["identity"]["rubric_version"],  # type: ignore[index]
        }
        assert certified["agreement"]["weighted_f1"] == 1.0  # type: ignore[index]
        assert len(certified["items"]) == 8  # type: ignore[arg-type]
        first = server.stats()["requests"]
        assert first == N + 1 + 8  # gate, suite case, the sentinel's sample (not from the cache)

        # 2: nothing changed: only the sample is asked again, uncached.
        pytester.runpytest(*args).assert_outcomes(passed=2)
        assert server.stats()["requests"] == first + 8

        # 3: the server swaps the model behind the name: the sentinel fails naming both identities.
        served.model = "judge-v2"
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "*judge openai:fr-judge in fr (linguistic_acceptability, calibration 'tiny'): served identity "
                "changed: certified judge-v1 (fp_judge-v1), rubric *, now judge-v2 (fp_judge-v2), rubric * "
                "(served_model judge-v1 -> judge-v2; system_fingerprint fp_judge-v1 -> fp_judge-v2); "
                "agreement before 1.000 (95% CI 1.000-1.000, n=8), after 1.000 (95% CI 1.000-1.000, n=8)*",
            ]
        )

        # 4: re-certifying v2 over the gate's cached v1 scores is refused; after a refresh it works.
        result = pytester.runpytest(*args, "--llmjudge-recertify")
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(["*cannot certify: the gate's (cached) scores were served by judge-v1*"])
        result = pytester.runpytest(*args, "--llmjudge-recertify", "--llmjudge-cache=refresh")
        result.assert_outcomes(passed=2)
        assert certified_files(pytester.path)[0]["identity"]["served_model"] == "judge-v2"  # type: ignore[index]

        # 5: same name, same identity, worse behaviour: agreement dropped beyond the tolerance.
        served.truthful = False
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "*agreement with the humans dropped from 1.000 (95% CI 1.000-1.000, n=8) to 0.*, more than the tolerance 0.1*"
            ]
        )

        # 6: a v3 reply to a new case is not taken for the certified judge's (fail), or is flagged (warn).
        served.truthful, served.model = True, "judge-v3"
        write_suite(pytester.path, url, extra_case=True)
        result = pytester.runpytest(*args, "-k", "fr-new")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*judge drift: served by judge-v3 (fp_judge-v3), rubric *, not the certified judge-v2 (fp_judge-v2)*"]
        )
        write_suite(pytester.path, url, on_change="warn", extra_case=True)
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=3)
        result.stdout.fnmatch_lines(["*JudgeDriftWarning*served identity changed*judge-v3*"])


def test_drift_needs_a_calibration_set(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        suite='suite: s\njudge: {drift: {sample: 5}}\ncases: [{id: a, language: en, output: x}]\nassert: ["linguistic_acceptability >= 1"]\n',
    )
    result = pytester.runpytest("--llmjudge")
    result.stdout.fnmatch_lines(["*drift watches a calibrated judge: set judge.calibration*"])
