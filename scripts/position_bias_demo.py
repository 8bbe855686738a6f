"""Show, offline, what order randomisation does to a position-biased pairwise judge.

Three systems answer 20 Hindi prompts; their true order is good > okay > poor. A scripted
judge behind the loopback server (the real OpenAI SDK path, ``pytest_llmjudge.testing``)
prefers the better answer, except that with probability ``bias`` it names slot A whatever
it reads. For each bias and each ``pairwise.order`` the script runs a ranking file through
pytest and prints the leaderboard and the position-bias statistics the plugin reports.

    python scripts/position_bias_demo.py            # biases 1.0 and 0.3, all three orders

Nothing leaves 127.0.0.1 and nothing is cached between runs (``--llmjudge-cache=off``).
A real judge's position bias, measured on pairs PARIKSHA had GPT-4 judge in both orders, is
an assertion of ``example_suites/pariksha_arena.yaml`` (``position_bias(gpt4)``; docs/rankings.md).
"""

from __future__ import annotations

import json
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_llmjudge.testing import LoopbackServer, ScriptedPairwiseJudge

QUALITY = {"poor": 0, "okay": 1, "good": 2}
RANKING = """\
ranking: demo
judge: {{model: loopback-judge, base_url: "{base_url}"}}
pairwise: {{order: {order}, seed: 3}}
systems: [poor, okay, good]
cases_file: cases.jsonl
bootstrap: {{resamples: 200}}
"""


def run(directory: Path, server: LoopbackServer, order: str) -> dict[str, str]:
    (directory / "demo.yaml").write_text(RANKING.format(base_url=server.openai_base_url, order=order), "utf-8")
    junit = directory / f"{order}.xml"
    pytest.main(
        [
            str(directory / "demo.yaml"),
            "--llmjudge",
            "--llmjudge-cache=off",
            f"--junitxml={junit}",
            "--llmjudge-junit-properties",  # the numbers are read back from the testcase <properties>
            "-q",
            "-p",
            "no:cacheprovider",
        ]
    )
    case = next(ET.parse(junit).getroot().iter("testcase"))
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        rows = [
            json.dumps(
                {
                    "id": f"q{i}",
                    "language": "hi",
                    "input": f"प्रश्न {i}",
                    "outputs": {s: f"{s} answer {i}" + " detail" * q for s, q in QUALITY.items()},
                }
            )
            for i in range(20)
        ]
        (directory / "cases.jsonl").write_text("\n".join(rows) + "\n", "utf-8")
        report = []
        for bias in (1.0, 0.3):
            judge = ScriptedPairwiseJudge(quality=lambda text: QUALITY[text.split()[0]], position_bias=bias)
            with LoopbackServer(responder=judge) as server:
                for order in ("fixed", "random", "both"):
                    props = run(directory, server, order)
                    board = " > ".join(props[f"rank_{k}"].split(" [")[0] for k in (1, 2, 3) if f"rank_{k}" in props)
                    report.append(
                        f"bias {bias:.1f}  order {order:<6}  {board:<40}  first-slot share {float(props['first_slot_rate']):.2f}"
                        f"  position-bias rate {float(props['position_bias_rate']):.2f}"
                    )
        print("\n".join(report), file=sys.stderr)


if __name__ == "__main__":
    main()
