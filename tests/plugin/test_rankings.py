"""Ranking files end to end: recorded verdicts, and a live pairwise judge behind the loopback server."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_llmjudge.records import RankingCheckRecord, record_from_wire
from pytest_llmjudge.testing import LoopbackServer, ScriptedPairwiseJudge

QUALITY = {"poor": 0, "okay": 1, "good": 2}


def _junit(path: Path) -> dict[str, dict[str, str]]:
    return {
        case.get("name", ""): {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        for case in ET.parse(path).getroot().iter("testcase")
    }


# -- recorded verdicts ---------------------------------------------------------------------------


def recorded_battles(seed: int = 7) -> list[dict[str, object]]:
    """Two languages, 30 queries, all pairs of three systems; GPT-like and 3 annotators.

    In ``hi`` everyone prefers the stronger system 85% of the time; in ``ta`` the annotators
    prefer the *weaker* system, so the judge disagrees with them there.
    """
    rng = random.Random(seed)
    records = []
    for language in ("hi", "ta"):
        for query in range(30):
            for a, b in (("good", "okay"), ("good", "poor"), ("okay", "poor")):
                first, second = (a, b) if rng.random() < 0.5 else (b, a)
                better = "A" if QUALITY[first] > QUALITY[second] else "B"
                worse = "B" if better == "A" else "A"
                judge = better if rng.random() < 0.85 else worse
                human_pick = better if language == "hi" else worse
                votes = [human_pick if rng.random() < 0.85 else rng.choice(["A", "B", "tie"]) for _ in range(3)]
                records.append(
                    {
                        "query": f"{language}-{query}",
                        "language": language,
                        "a": first,
                        "b": second,
                        "gpt": judge,
                        "people": {f"ann{k}": v for k, v in enumerate(votes)},
                    }
                )
    return records


RECORDED = """\
ranking: recorded
verdicts:
  path: battles.jsonl
  case: query
  system_a: a
  system_b: b
  sources:
    gpt: gpt
    human: {field: people, combine: majority}
bootstrap: {resamples: 60}
assert:
  - rank(good) <= 1
  - expr: good ranks <= 1
    source: human
    xfail: {ta: "annotators prefer the weaker system in ta (scripted)"}
  - good beats poor with win rate >= 0.7
  - agreement(gpt, human) >= 0.6
  - expr: kendall_tau(gpt, human) >= 0.5
    languages: [hi]
"""


def test_recorded_verdicts_rank_agree_and_correlate(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", battles="\n".join(json.dumps(r) for r in recorded_battles()) + "\n")
    pytester.makefile(".yaml", arena=RECORDED)
    junit = pytester.path / "r.xml"
    result = pytester.runpytest("--llmjudge", "-v", f"--junitxml={junit}", "--llmjudge-junit-properties")
    result.assert_outcomes(passed=11, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        [
            "*arena.yaml::leaderboard[[]gpt-hi[]] PASSED*",
            "*arena.yaml::leaderboard[[]human-ta[]] PASSED*",
            "*arena.yaml::rank(good)<=1[[]human-ta[]] XFAIL*",
            "*arena.yaml::agreement(gpt,human)>=0.6[[]ta[]] FAILED*",
            "*arena.yaml::kendall_tau(gpt,human)>=0.5[[]hi[]] PASSED*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*FAILED: agreement(gpt, human) >= 0.6 [[]ta[]]: 0.*, expected >= 0.6", "*battles agree*"]
    )
    props = _junit(junit)
    board = props["leaderboard[gpt-hi]"]
    assert board["rank_1"].startswith("good ") and board["rank_3"].startswith("poor ")
    assert board["n_cases"] == "30" and board["n_battles"] == "90"
    agreement = props["agreement(gpt,human)>=0.6[hi]"]
    assert 0.6 <= float(agreement["score"]) <= 1 and float(agreement["ci_low"]) < float(agreement["score"])
    assert "human_ceiling" in agreement
    win = props["win_rate(good,poor)>=0.7[gpt-hi]"]
    assert float(win["ci_low"]) <= float(win["score"]) <= float(win["ci_high"])


def test_invalid_ranking_is_one_located_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".jsonl", battles=json.dumps(recorded_battles()[0]) + "\n")
    pytester.makefile(".yaml", arena=RECORDED.replace("rank(good) <= 1", "rank(good) <= best"))
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*invalid ranking: *arena.yaml:12: assert[[]0[]]: can't read assertion*"])


# -- recorded position bias (reversed pairs) -------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "example_suites"


def _same_slot_rates(source: str) -> dict[str, tuple[int, int]]:
    """Independently of the plugin: per language, (pairs whose two verdicts named the same slot,
    pairs with both verdicts), from the shipped reversed_<code>.jsonl files."""
    counts: dict[str, tuple[int, int]] = {}
    for path in sorted((EXAMPLES / "data" / "pariksha").glob("reversed_*.jsonl")):
        pairs: dict[str, list[dict[str, object]]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            pairs.setdefault(record["reversed_pair"], []).append(record)
        same = n = 0
        for one, two in pairs.values():
            if source == "gpt4":
                first, second = one["gpt4"], two["gpt4"]
            else:  # strict majority of the annotators, as the arena's `combine: majority`
                first, second = (_majority(list(r["human"].values())) for r in (one, two))  # type: ignore[union-attr]
            if first is None or second is None:
                continue
            n += 1
            same += first == second and first != "tie"
        counts[path.stem.split("_")[1]] = (same, n)
    return counts


def _majority(votes: list[str]) -> str | None:
    for label in set(votes):
        if 2 * votes.count(label) > len(votes):
            return label
    return None


def test_arena_position_bias_equals_an_independent_count_of_the_shipped_reversed_pairs(
    pytester: pytest.Pytester,
) -> None:
    recorder = pytester.inline_run(
        "--llmjudge", str(EXAMPLES / "pariksha_arena.yaml"), "-k", "position_bias", "-p", "no:randomly"
    )
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    records = [record_from_wire(r.llmjudge) for r in reports]
    assert all(isinstance(r, RankingCheckRecord) for r in records)
    measured = {(r.expr, r.language): r for r in records if isinstance(r, RankingCheckRecord)}
    assert len(measured) == 16
    for source in ("gpt4", "human"):
        for language, (same, n) in _same_slot_rates(source).items():
            result = measured[(f"position_bias({source}) <= 0.15", language)]
            assert result.detail["battles_both_orders"] == n and n >= 40
            assert result.value == pytest.approx(same / n)
            assert result.detail["ci_low"] <= result.value < result.detail["ci_high"]
    hi = measured[("position_bias(gpt4) <= 0.15", "hi")]
    assert hi.value is not None
    assert (round(hi.value, 3), hi.detail["battles_both_orders"]) == (0.204, 108)  # the xfail reason's numbers


def test_a_reversed_pair_needs_both_presentations(pytester: pytest.Pytester) -> None:
    record = {"query": "q1", "language": "hi", "a": "good", "b": "poor", "gpt": "A", "pair": "p1", "people": {}}
    pytester.makefile(".jsonl", battles=json.dumps(record) + "\n")
    pytester.makefile(
        ".yaml",
        arena=RECORDED.replace("  case: query", "  case: query\n  reversed_pair: pair"),
    )
    result = pytester.runpytest("--llmjudge")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*reversed pair 'p1' needs exactly two records*(found 1)*"])


# -- live pairwise judge -------------------------------------------------------------------------


def live_ranking(base_url: str, order: str, *, extra: str = "") -> str:
    return f"""\
ranking: live
judge: {{model: loopback-judge, base_url: "{base_url}"}}
pairwise: {{order: {order}, seed: 3}}
systems: [poor, okay, good]
cases_file: cases.jsonl
bootstrap: {{resamples: 40}}
{extra}
assert:
  - rank(good) <= 1
  - good beats poor with win rate >= 0.6
  - position_bias <= 0.5
"""


def write_cases(pytester: pytest.Pytester, n: int = 20) -> None:
    lines = [
        json.dumps(
            {
                "id": f"q{i}",
                "language": "hi",
                "input": f"प्रश्न {i}",
                "outputs": {s: f"{s} answer {i}" + " detail" * QUALITY[s] for s in QUALITY},
            }
        )
        for i in range(n)
    ]
    pytester.makefile(".jsonl", cases="\n".join(lines) + "\n")


def quality(text: str) -> float:
    return QUALITY[text.split()[0]]


@pytest.fixture
def pairwise_server() -> Iterator[tuple[LoopbackServer, ScriptedPairwiseJudge]]:
    judge = ScriptedPairwiseJudge(quality=quality)
    with LoopbackServer(responder=judge) as server:
        yield server, judge


def _strengths(board: dict[str, str]) -> list[float]:
    return [float(v.split()[1]) for k, v in board.items() if k.startswith("rank_")]


def test_position_bias_is_exposed_by_random_order_and_cancels(
    pytester: pytest.Pytester, pairwise_server: tuple[LoopbackServer, ScriptedPairwiseJudge]
) -> None:
    """A judge that always says "A": a fixed order crowns whoever is listed first; a random one doesn't."""
    server, judge = pairwise_server
    judge.position_bias = 1.0
    write_cases(pytester)
    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "fixed"))
    fixed = pytester.runpytest("--llmjudge", "--junitxml=fixed.xml", "--llmjudge-junit-properties")
    fixed.assert_outcomes(passed=1, failed=3)
    board = _junit(pytester.path / "fixed.xml")["leaderboard[judge-hi]"]
    assert board["rank_1"].startswith("poor "), "listed first, so shown as A every time, so it 'wins' every time"
    assert max(_strengths(board)) - min(_strengths(board)) > 3

    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "random"))
    shuffled = pytester.runpytest("--llmjudge", "--junitxml=random.xml", "--llmjudge-junit-properties")
    board = _junit(pytester.path / "random.xml")["leaderboard[judge-hi]"]
    assert board["first_slot_rate"] == "1.0" and board["position_bias_rate"] == "1.0", "the bias is exposed"
    assert max(_strengths(board)) - min(_strengths(board)) < 1.5, "and cancels: no system gains from the slot"
    shuffled.stdout.fnmatch_lines(["*FAILED: position_bias <= 0.5 [[]hi[]]: 1.000, expected <= 0.5*"])


def test_random_order_recovers_the_ranking_under_partial_bias_and_is_cached(
    pytester: pytest.Pytester, pairwise_server: tuple[LoopbackServer, ScriptedPairwiseJudge]
) -> None:
    server, judge = pairwise_server
    judge.position_bias = 0.3
    write_cases(pytester)
    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "random"))
    result = pytester.runpytest(
        "--llmjudge", "--junitxml=r.xml", "-v", "--llmjudge-report=json:r.json", "--llmjudge-junit-properties"
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["llmjudge: 60 pairwise judge call(s) planned"])
    (record,) = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["rankings"]
    assert record["order"] == "random" and record["order_seed"] == 3 and len(record["battles"]) == 60
    battle = record["battles"][0]
    assert set(battle) >= {"case", "system_1", "system_2", "shown_first", "slot_verdicts", "outcome"}
    props = _junit(pytester.path / "r.xml")
    assert props["leaderboard[judge-hi]"]["rank_1"].startswith("good ")
    assert 0.1 <= float(props["position_bias<=0.5[hi]"]["score"]) <= 0.5
    assert server.stats()["requests"] == 60
    swapped = [q for q in judge.queries if q.answer_a.startswith("good") and "poor" in q.answer_b]
    assert 0 < len(swapped) < 20, "the order coin shows each system first in some battles, not all"
    again = pytester.runpytest("--llmjudge")
    again.assert_outcomes(passed=4)
    assert server.stats()["requests"] == 60, "a re-run is served from the cache"


def test_collect_only_sends_no_battle(
    pytester: pytest.Pytester, pairwise_server: tuple[LoopbackServer, ScriptedPairwiseJudge]
) -> None:
    """--collect-only runs no item, so it must pay for no judge call (it sent all 60 battles before)."""
    server, _ = pairwise_server
    write_cases(pytester)
    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "random"))
    result = pytester.runpytest("--llmjudge", "--collect-only")
    assert result.ret == 0
    assert "pairwise judge call(s) planned" not in result.stdout.str()
    assert server.stats()["requests"] == 0


def test_both_orders_turn_inconsistent_verdicts_into_ties(
    pytester: pytest.Pytester, pairwise_server: tuple[LoopbackServer, ScriptedPairwiseJudge]
) -> None:
    server, judge = pairwise_server
    judge.position_bias = 0.3
    write_cases(pytester)
    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "both"))
    result = pytester.runpytest("--llmjudge", "--junitxml=r.xml", "--llmjudge-junit-properties")
    result.assert_outcomes(passed=4)
    assert server.stats()["requests"] == 120
    board = _junit(pytester.path / "r.xml")["leaderboard[judge-hi]"]
    assert board["rank_1"].startswith("good ")
    # Measured directly: the share of battles whose two verdicts named the same slot.
    assert 0.1 <= float(board["position_bias_rate"]) <= 0.6


def test_unparseable_pairwise_replies_are_unjudged_never_ties(
    pytester: pytest.Pytester, pairwise_server: tuple[LoopbackServer, ScriptedPairwiseJudge]
) -> None:
    server, judge = pairwise_server
    judge.prefer = lambda q: "I like both." if "answer 0" in q.answer_a else ("A" if q.answer_a > q.answer_b else "B")
    write_cases(pytester, n=4)
    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "random"))
    result = pytester.runpytest("--llmjudge", "-k", "leaderboard")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(
        ["*UNJUDGED: * of 12 battles in hi have no verdict*", "*q0 *the judge reply contains no JSON*"]
    )


def test_live_ranking_without_credentials_is_skipped(pytester: pytest.Pytester) -> None:
    write_cases(pytester, n=3)
    pytester.makefile(".yaml", arena=live_ranking("", "random").replace(', base_url: ""', ""))
    result = pytester.runpytest("--llmjudge", "-rs")
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*pairwise judge openai:loopback-judge*OPENAI_API_KEY*"])


def test_batch_mode_sends_a_rankings_battles_in_the_batch(
    pytester: pytest.Pytester, pairwise_server: tuple[LoopbackServer, ScriptedPairwiseJudge]
) -> None:
    """One planner: --llmjudge-batch sees a ranking's pairwise calls as it sees rubric calls, so none goes
    online; the replies reach the items through the cache, and a rerun asks nothing."""
    server, _ = pairwise_server
    write_cases(pytester, n=6)
    pytester.makefile(".yaml", arena=live_ranking(server.openai_base_url, "both"))
    result = pytester.runpytest("--llmjudge", "--llmjudge-batch", "--llmjudge-batch-poll=0.05")
    result.assert_outcomes(passed=4)
    assert server.requests == [], "every battle went through the batch"
    battles = 6 * 3 * 2  # cases x system pairs x both orders
    assert server.stats()["batch"]["batch_requests"] == battles
    result.stdout.fnmatch_lines(
        [f"llmjudge: batch mode: {battles} uncached request(s), 0 cached; {battles} submitted*"]
    )
    rerun = pytester.runpytest("--llmjudge")
    rerun.assert_outcomes(passed=4)
    assert server.requests == [] and server.stats()["batch"]["batch_requests"] == battles


def test_two_in_process_runs_after_the_package_was_imported_share_one_state(pytester: pytest.Pytester) -> None:
    """A feature package imported by the outer process (as a unit test module does) keeps the
    attributes an in-process run left on it after pytester drops that run's modules; the Run must
    not pick up the stale feature module (its StashKey) while the items are imported afresh."""
    import pytest_llmjudge.pairwise  # noqa: F401  (what tests/unit/test_pairwise.py's imports do)

    for _ in range(2):
        result = pytester.runpytest("--llmjudge", str(EXAMPLES / "pariksha_arena.yaml"), "-k", "position_bias")
        assert result.ret == 0, result.stdout.str()[-2000:]
        result.assert_outcomes(passed=15, xfailed=1)
