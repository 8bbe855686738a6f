"""Sampled vs probability-weighted (``scoring: expected``) scores near a threshold: flip rates.

A loopback judge (OpenAI wire format, real SDK, the plugin's runner and reply parsing) whose
belief about a case is a distribution over the scores 1 and 2 with ``p = P(2)``. Each
repeat (a new seed) it writes a score *sampled* from its belief, as a judge at temperature
> 0 does, and its token log-probabilities show the belief, jittered per repeat by
``N(0, jitter)`` on ``p`` (the distribution itself is not perfectly stable either). The
threshold is ``>= 1.5``. A *flip* is a repeat whose pass/fail verdict differs from the
previous repeat's. Prints, per ``p``: the flip rate of the sampled score and of the
expected score over ``repeats`` repeats of ``cases`` cases, and the mean expected score.

    python benchmarks/expected_scores.py [--cases 20] [--repeats 10] [--jitter 0.05]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable
from dataclasses import replace

from pytest_llmjudge.execution.cache import JudgeCache
from pytest_llmjudge.execution.runner import JudgeRunner
from pytest_llmjudge.execution.scorer import TOP_LOGPROBS, verdict_score
from pytest_llmjudge.judges.openai import OpenAIProvider
from pytest_llmjudge.judges.prompts import JudgedText, JudgeSettings, build_request
from pytest_llmjudge.judges.rubrics import BUILTIN_RUBRICS
from pytest_llmjudge.testing import LoopbackServer
from pytest_llmjudge.testing.scripted import read_prompt
from pytest_llmjudge.testing.server import ReceivedRequest, Reply

THRESHOLD = 1.5


def judge(p_of_case: dict[str, float], jitter: float) -> Callable[[ReceivedRequest], Reply]:
    def respond(request: ReceivedRequest) -> Reply:
        output = read_prompt(request.system, request.last_user_text).texts.get("Output to evaluate", "")
        rng = random.Random(f"{output}|{request.seed}")
        p = min(max(p_of_case[output] + rng.gauss(0.0, jitter), 0.01), 0.99)
        written = 2 if rng.random() < p else 1
        text = f'{{"justification": "scripted", "score": {written}}}'
        return Reply(text=text, score_logprobs={"2": math.log(p), "1": math.log(1 - p)})

    return respond


def flip_rate(verdicts: list[list[bool]]) -> float:
    flips = sum(a != b for row in verdicts for a, b in zip(row, row[1:], strict=False))
    pairs = sum(len(row) - 1 for row in verdicts)
    return flips / pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--jitter", type=float, default=0.05)
    args = parser.parse_args()
    rubric = BUILTIN_RUBRICS["linguistic_acceptability"]
    beliefs = (0.3, 0.45, 0.55, 0.7, 0.9)
    p_of_case = {f"case {b} {i}": b for b in beliefs for i in range(args.cases)}
    print(f"threshold >= {THRESHOLD}; {args.cases} cases x {args.repeats} repeats per p; jitter {args.jitter}")
    print(f"{'P(2)':>5} {'flips sampled':>14} {'flips expected':>15} {'mean expected':>14}")
    with LoopbackServer(responder=judge(p_of_case, args.jitter)) as server:
        runner = JudgeRunner(JudgeCache(None, "off"), concurrency=16)
        provider = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        runner.track_provider(provider)
        settings = JudgeSettings(
            provider="openai", model="loopback-judge", base_url=server.openai_base_url, structured_output="none"
        )
        try:
            for belief in beliefs:
                sampled_rows, expected_rows, means = [], [], []
                for i in range(args.cases):
                    futures = []
                    for sample in range(args.repeats):
                        text = JudgedText(language="hi", output=f"case {belief} {i}")
                        request = build_request([rubric], text, settings, sample=sample)
                        request = replace(request, top_logprobs=TOP_LOGPROBS)
                        futures.append(runner.submit_judgment(provider, request, [rubric]))
                    outcomes = [future.result() for future in futures]
                    sampled = [verdict_score(rubric, "j", [o]) for o in outcomes]
                    expected = [verdict_score(rubric, "j", [o], scoring="expected") for o in outcomes]
                    sampled_rows.append([float(s.value or 0) >= THRESHOLD for s in sampled])
                    expected_rows.append([float(s.value or 0) >= THRESHOLD for s in expected])
                    means.extend(float(s.value or 0) for s in expected)
                print(
                    f"{belief:>5} {flip_rate(sampled_rows):>14.3f} {flip_rate(expected_rows):>15.3f} "
                    f"{sum(means) / len(means):>14.3f}"
                )
        finally:
            runner.close()


if __name__ == "__main__":
    main()
