"""A scripted judge for the loopback server: answers pytest-llmjudge prompts with chosen scores.

Use it as the server's ``responder`` to test suites offline::

    judge = ScriptedJudge({"linguistic_acceptability": 2})
    with LoopbackServer(responder=judge) as server:
        ...  # point the suite's judge.base_url at server.openai_base_url

or, without HTTP, as the handler of an in-process provider: ``MockProvider(judge)``.

``scores`` maps a rubric name to a fixed score, or is a function of a :class:`JudgeQuery`
returning a score, ``None`` (use ``default``) or a ``str`` sent verbatim as the reply (to
script malformed replies). Compound prompts get one entry per rubric in one reply.

:func:`read_prompt` splits a received prompt the way a judge is told to read it: the
boundary named in the system prompt, the framed texts by section title, and the skeleton
(the prompt with every framed text removed), which is what a framed text must not change.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.testing.server import ReceivedRequest

_BOUNDARY = re.compile(r"<<<(data-[0-9a-f]{16})")
_LANGUAGE = re.compile(r"\(language code: (?P<code>[^)]+)\)")
_METRICS = re.compile(r"## Metrics\n(?P<json>.*?)\n\n## Reply format", re.DOTALL)
_TURN = re.compile(r"Conversation turn \d+ \((?P<role>user|assistant|system)\)")
FRAMED = "<<<framed text>>>"
"""What :func:`read_prompt` puts in the skeleton in place of each framed text."""


@dataclass(frozen=True)
class ReadPrompt:
    """A judge prompt as its reader sees it."""

    boundary: str | None
    texts: dict[str, str]
    """Framed text per section title, in prompt order."""
    skeleton: str
    """The prompt with each framed text (and its boundary lines) replaced by :data:`FRAMED`."""

    @property
    def headings(self) -> list[str]:
        """The section titles of the skeleton: the prompt's own structure."""
        return re.findall(r"^## (.+)$", self.skeleton, re.MULTILINE)


def read_prompt(system: str, user: str) -> ReadPrompt:
    """Split ``user`` by the boundary the ``system`` prompt names (see ``judges.prompts``)."""
    found = _BOUNDARY.search(system)
    if found is None:
        return ReadPrompt(None, {}, user)
    boundary = re.escape(found[1])
    frame = re.compile(
        rf"^## (?P<title>[^\n]*)\n<<<{boundary}\n(?P<body>.*?)\n{boundary}>>>$", re.DOTALL | re.MULTILINE
    )
    texts = {match["title"]: match["body"] for match in frame.finditer(user)}
    skeleton = frame.sub(lambda match: f"## {match['title']}\n{FRAMED}", user)
    return ReadPrompt(found[1], texts, skeleton)


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
    turns: tuple[tuple[str, str], ...] = ()
    """A conversation case's turns before the output, as (role, content), in order (empty: one turn)."""


@dataclass
class ScriptedJudge:
    scores: Mapping[str, int] | Callable[[JudgeQuery], int | str | None] = field(default_factory=dict)
    default: int | None = None
    justification: str = "scripted verdict"
    queries: list[JudgeQuery] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, request: ReceivedRequest | ProviderRequest) -> str:
        # A request as the loopback server received it, or as a MockProvider's handler gets it.
        user = request.user if isinstance(request, ProviderRequest) else request.last_user_text
        prompt = read_prompt(request.system, user)
        metrics_match = _METRICS.search(prompt.skeleton)
        if metrics_match is None:
            return json.dumps({"error": "not a pytest-llmjudge judge prompt"})
        metrics = [entry["name"] for entry in json.loads(metrics_match["json"])]
        language_match = _LANGUAGE.search(prompt.skeleton)
        turns = tuple(
            (match["role"], body) for title, body in prompt.texts.items() if (match := _TURN.fullmatch(title))
        )
        reply: dict[str, dict[str, object]] = {}
        for metric in metrics:
            query = JudgeQuery(
                metric=metric,
                language=language_match["code"] if language_match else "",
                output=prompt.texts.get("Output to evaluate", ""),
                input=prompt.texts.get("Input"),
                system=request.system,
                user=user,
                seed=request.seed,
                turns=turns,
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
