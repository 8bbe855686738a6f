"""Test helpers shipped with pytest-llmjudge.

``MockProvider(handler)``: an in-process judge provider whose replies come from a function
(no HTTP); ``LoopbackServer``: a real HTTP server speaking the providers' wire formats, with
latency and faults; ``ScriptedJudge``: answers the plugin's judge prompts with chosen scores,
as the handler of either.
"""

from pytest_llmjudge.testing.mock import MockProvider
from pytest_llmjudge.testing.pairwise import PairwiseQuery, ScriptedPairwiseJudge
from pytest_llmjudge.testing.scripted import JudgeQuery, ScriptedJudge
from pytest_llmjudge.testing.server import Fault, LoopbackServer, ReceivedRequest, Reply

__all__ = [
    "Fault",
    "JudgeQuery",
    "LoopbackServer",
    "MockProvider",
    "PairwiseQuery",
    "ReceivedRequest",
    "Reply",
    "ScriptedJudge",
    "ScriptedPairwiseJudge",
]
