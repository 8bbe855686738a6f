"""Test helpers shipped with pytest-llmjudge (loopback provider server)."""

from pytest_llmjudge.testing.pairwise import PairwiseQuery, ScriptedPairwiseJudge
from pytest_llmjudge.testing.scripted import JudgeQuery, ScriptedJudge
from pytest_llmjudge.testing.server import Fault, LoopbackServer, ReceivedRequest, Reply

__all__ = [
    "Fault",
    "JudgeQuery",
    "LoopbackServer",
    "PairwiseQuery",
    "ReceivedRequest",
    "Reply",
    "ScriptedJudge",
    "ScriptedPairwiseJudge",
]
