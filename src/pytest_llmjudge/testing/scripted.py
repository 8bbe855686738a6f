"""A scripted judge for the loopback server: answers pytest-llmjudge prompts with chosen scores.

Use it as the server's ``responder`` to test suites offline::

    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(responder=judge) as server:
        ...  # point the suite's judge.base_url at server.openai_base_url

``scores`` maps a rubric name to a fixed score, or is a function of a :class:`JudgeQuery`
returning a score, ``None`` (use ``default``) or a ``str`` sent verbatim as the reply (to
script malformed replies). Compound prompts get one entry per rubric in one reply.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pytest_llmjudge.testing.server import ReceivedRequest

_SECTION = r"## {title}\n<<<\n(?P<body>.*?)\n>>>"
_LANGUAGE = re.compile(r"\(language code: (?P<code>[^)]+)\)")
_METRICS = re.compile(r"## Metrics\n(?P<json>.*?)\n\n## Reply format", re.DOTALL)


@dataclass(frozen=True)
class JudgeQuery:
    """What a judge prompt asks about, recovered from the prompt text."""

    metric: str
    language: str
    output: str
    input: str | None
    system: str
    user: str
    seed: int | None = None


def _section(text: str, title: str) -> str | None:
    match = re.search(_SECTION.format(title=re.escape(title)), text, re.DOTALL)
    return match["body"] if match else None


@dataclass
class ScriptedJudge:
    scores: Mapping[str, int] | Callable[[JudgeQuery], int | str | None] = field(default_factory=dict)
    default: int | None = None
    justification: str = "scripted verdict"
    queries: list[JudgeQuery] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, request: ReceivedRequest) -> str:
        user = request.last_user_text
        metrics_match = _METRICS.search(user)
        if metrics_match is None:
            return json.dumps({"error": "not a pytest-llmjudge judge prompt"})
        metrics = [entry["name"] for entry in json.loads(metrics_match["json"])]
        language_match = _LANGUAGE.search(user)
        reply: dict[str, dict[str, object]] = {}
        for metric in metrics:
            query = JudgeQuery(
                metric=metric,
                language=language_match["code"] if language_match else "",
                output=_section(user, "Output to evaluate") or "",
                input=_section(user, "Input"),
                system=request.system,
                user=user,
                seed=request.seed,
            )
            with self._lock:
                self.queries.append(query)
            if callable(self.scores):
                score = self.scores(query)
            else:
                score = self.scores.get(metric)
            if isinstance(score, str):
                return score
            if score is None:
                score = self.default
            if score is None:
                raise KeyError(f"ScriptedJudge has no score for metric {metric!r}")
            reply[metric] = {
                "justification": f"{self.justification} ({metric})",
                "score": score,
            }
        return json.dumps(reply, ensure_ascii=False)
