"""Judge failures put into words: what a failed call's cause was, and one headline per dead judge.

Three things a user needs when judge calls fail, none of them per case:

* **which endpoint**: :func:`endpoint_label` is ``provider:model at base_url`` with the
  URL's credentials removed (``judges.base.public_url``, then ``redaction.redact``), or
  ``(default endpoint)`` when the suite names none;
* **why**: ``judges.base.connection_cause`` digs the operating system's reason out of an SDK's
  connection error (``APIConnectionError`` -> ``httpx.ConnectError`` -> ... ->
  ``ConnectionRefusedError(111)`` becomes ``connection refused``), and
  :func:`classify` sorts a failed call into ``rejected`` (HTTP 401/403: the key or its
  permissions), ``unreachable`` (connection failures, timeouts) or ``failing`` (anything
  else that survived the retries: 5xx, 429, malformed bodies);
* **how much**: :class:`EndpointTally` counts, per endpoint, the judge calls a process
  finished and the ones that failed, by cause; tallies of xdist workers merge by adding
  (:meth:`EndpointTally.merge`). :func:`headlines` turns them into one line per endpoint
  with failures, the worst cause first:
  ``llmjudge: judge openai:gpt-4o-mini at http://127.0.0.1:8000/v1 unreachable: 200 of
  200 calls failed (connection refused)``.

Unparseable replies are not provider failures (the judge answered): they stay per case,
with the raw reply shown by :func:`reply_excerpt` (control characters escaped, one line,
truncated).

Degenerate cases: an endpoint without failures has no headline; a failure without a
recognisable cause is ``failing`` with its message's first words as the cause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_llmjudge.judges.base import public_url
from pytest_llmjudge.util.escaping import ONE_LINE, escape_controls
from pytest_llmjudge.util.redaction import redact

PROVIDER_FAILED = "provider failed: "
"""How a case's unscored reason starts when its judge call failed (not when its reply didn't parse)."""
REPLY_EXCERPT_CHARS = 300

Kind = Literal["rejected", "unreachable", "failing"]
_VERDICT: dict[Kind, str] = {
    "rejected": "rejected the credentials",
    "unreachable": "unreachable",
    "failing": "failing",
}
_SEVERITY: dict[Kind, int] = {"rejected": 0, "unreachable": 1, "failing": 2}


def endpoint_label(provider: str, model: str, base_url: str | None, secrets: Iterable[str] = ()) -> str:
    """``provider:model at URL`` without credentials, or ``provider:model (default endpoint)``."""
    if not base_url:
        return f"{provider}:{model} (default endpoint)"
    return f"{provider}:{model} at {redact(public_url(base_url) or '', list(secrets))}"


def classify(status: int | None, message: str) -> tuple[Kind, str]:
    """``(kind, cause)`` of a provider call that failed after its retries (module docstring).

    ``message`` holds the provider's failure text (``judges.base.post_through_sdk``), maybe
    after the endpoint: ``HTTP 401: ...``, ``connection failed (connection refused)``,
    ``request timed out``.
    """
    if status in (401, 403):
        return "rejected", f"HTTP {status}"
    if status is not None:
        return "failing", f"HTTP {status}"
    _, marker, rest = message.partition("connection failed (")
    if marker:
        return "unreachable", rest.partition(")")[0]
    if "timed out" in message:
        return "unreachable", "timed out"
    return "failing", " ".join(message.split()[:8])


@dataclass
class EndpointTally:
    """Judge calls per endpoint label: how many finished, and the failures by ``(kind, cause)``."""

    calls: Counter[str] = field(default_factory=Counter)
    failures: dict[str, Counter[tuple[Kind, str]]] = field(default_factory=dict)

    def succeeded(self, endpoint: str) -> None:
        self.calls[endpoint] += 1

    def failed(self, endpoint: str, kind: Kind, cause: str) -> None:
        self.calls[endpoint] += 1
        self.failures.setdefault(endpoint, Counter())[(kind, cause)] += 1

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for xdist's ``workeroutput``): ``{endpoint: {"calls": n, "failures": [[kind, cause, n]]}}``."""
        return {
            endpoint: {
                "calls": calls,
                "failures": [[kind, cause, n] for (kind, cause), n in sorted(self.failures.get(endpoint, {}).items())],
            }
            for endpoint, calls in sorted(self.calls.items())
        }

    def merge(self, data: Mapping[str, Any]) -> None:
        """Add another process's :meth:`as_dict`."""
        for endpoint, entry in data.items():
            self.calls[endpoint] += int(entry.get("calls", 0))
            for kind, cause, n in entry.get("failures", ()):
                if kind in _VERDICT:
                    self.failures.setdefault(endpoint, Counter())[(kind, str(cause))] += int(n)


def headlines(tally: EndpointTally) -> list[str]:
    """One line per endpoint with failed calls, the most severe cause first (module docstring)."""
    lines = []
    for endpoint in sorted(tally.failures):
        causes = tally.failures[endpoint]
        failed = sum(causes.values())
        ranked = sorted(causes.items(), key=lambda item: (_SEVERITY[item[0][0]], -item[1], item[0][1]))
        kind = ranked[0][0][0]
        reasons = ", ".join(cause if n == failed else f"{cause}: {n}" for (_, cause), n in ranked)
        lines.append(
            f"llmjudge: judge {endpoint} {_VERDICT[kind]}: {failed} of {tally.calls[endpoint]} calls failed ({reasons})"
        )
    return lines


def reply_excerpt(text: str, limit: int = REPLY_EXCERPT_CHARS) -> str:
    """A judge reply on one line: control characters (newlines too) escaped, cut at ``limit`` characters."""
    shown = escape_controls(text[:limit], ONE_LINE)
    rest = len(text) - limit
    return shown + (f" … ({rest} more characters)" if rest > 0 else "")
