"""A scripted pairwise judge for the loopback server, with an optional position bias.

Use it as the server's ``responder`` to test rankings offline::

    judge = ScriptedPairwiseJudge(quality={"good answer": 2, "bad answer": 0}, position_bias=0.5)
    with LoopbackServer(responder=judge) as server:
        ...  # point the ranking's judge.base_url at server.openai_base_url

It reads the two answers back from a pytest-llmjudge pairwise prompt (``pairwise.prompts``)
and answers ``{"justification", "verdict"}``:

* with probability ``position_bias`` (decided by a hash of the prompt, so deterministic and
  identical on a re-run) it names ``favoured_slot`` whatever the answers say -- a judge
  that follows the position;
* otherwise the answer of higher ``quality`` wins (``quality`` maps an answer text to a
  number, or is a function of the text; equal quality is a tie), or ``prefer(query)``
  decides when given (it may return a raw string to script malformed replies).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pytest_llmjudge.testing.scripted import read_prompt
from pytest_llmjudge.testing.server import ReceivedRequest

_LANGUAGE = re.compile(r"\(language code: (?P<code>[^)]+)\)")


@dataclass(frozen=True)
class PairwiseQuery:
    """What a pairwise prompt shows, recovered from its text."""

    language: str
    answer_a: str
    answer_b: str
    input: str | None
    user: str


@dataclass
class ScriptedPairwiseJudge:
    quality: Mapping[str, float] | Callable[[str], float] = field(default_factory=dict)
    prefer: Callable[[PairwiseQuery], str | None] | None = None
    position_bias: float = 0.0
    favoured_slot: Literal["A", "B"] = "A"
    queries: list[PairwiseQuery] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _quality(self, text: str) -> float:
        if callable(self.quality):
            return float(self.quality(text))
        return float(self.quality.get(text, 0.0))

    def __call__(self, request: ReceivedRequest) -> str:
        user = request.last_user_text
        prompt = read_prompt(request.system, user)
        answer_a, answer_b = prompt.texts.get("Answer A"), prompt.texts.get("Answer B")
        if answer_a is None or answer_b is None:
            return json.dumps({"error": "not a pytest-llmjudge pairwise prompt"})
        language = _LANGUAGE.search(prompt.skeleton)
        query = PairwiseQuery(language["code"] if language else "", answer_a, answer_b, prompt.texts.get("Input"), user)
        with self._lock:
            self.queries.append(query)
        coin = int.from_bytes(hashlib.sha256(user.encode("utf-8")).digest()[:8], "big") / 2**64
        if coin < self.position_bias:
            verdict: str = self.favoured_slot
            why = f"answer {verdict} reads better"
        elif self.prefer is not None:
            chosen = self.prefer(query)
            if chosen is not None and chosen not in ("A", "B", "tie"):
                return chosen
            verdict, why = chosen or "tie", "scripted preference"
        else:
            a, b = self._quality(answer_a), self._quality(answer_b)
            verdict = "A" if a > b else "B" if b > a else "tie"
            why = f"quality {a:g} vs {b:g}"
        return json.dumps({"justification": why, "verdict": verdict}, ensure_ascii=False)
