"""Suite texts for the tests: the one set of builders the test files share.

``tests/`` is on ``sys.path`` (pytest puts a rootdir conftest's directory there), so a test
module writes ``from builders import suite_text, judged, rows``.

- :func:`suite_text` renders a suite: its name, an optional judge block, the cases (one
  flow mapping per line), the per-case assertions and the aggregates, plus raw top-level
  YAML (``head``) for what the builder doesn't name (``metric_options``, ``regression``).
- :func:`judged` is the judge block of a suite judged by the loopback server (or any
  provider): ``{provider, model: loopback-judge, base_url, ...options}``.
- :data:`MOCK_PROVIDERS` hands the ``mock_judge`` fixture's provider to the conftest.py it
  writes for a pytester run.
- :func:`builtin_registry` is the name table of a run without plugins (the ``registry``
  fixture of ``tests/conftest.py``), for tests that build suites without pytest.
- :func:`rows` makes ``n`` judged cases (``id``, ``language``, ``input``, ``output`` from
  format strings of the index); :func:`recorded_rows` makes cases with recorded scores,
  per language.

Values are written as YAML flow scalars: plain when they are words YAML reads back as the
same string (``language: sw``), else through JSON (a JSON string is a YAML double-quoted
string), so a case text with quotes, colons or non-ASCII reads back as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_llmjudge import builtin_plugins
from pytest_llmjudge.registry import Registry

LOOPBACK_MODEL = "loopback-judge"

if TYPE_CHECKING:
    from pytest_llmjudge.testing import MockProvider

MOCK_PROVIDERS: dict[str, MockProvider] = {}
"""In-process providers by name for the current test's pytester runs (the ``mock_judge`` fixture's)."""

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_ .-]*(?<! )")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n"})


def flow(value: Any) -> str:
    """``value`` as a one-line YAML flow value (mappings keep their key order)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value  # a word or words YAML reads back as this string: written plain, as a person would
    return json.dumps(value, ensure_ascii=False)


def judged(
    base_url: str | None = None, *, provider: str | None = None, model: str = LOOPBACK_MODEL, **options: Any
) -> dict[str, Any]:
    """A judge block: ``provider`` (omitted: the default, openai), ``model``, ``base_url``, then ``options``."""
    block: dict[str, Any] = {}
    if provider is not None:
        block["provider"] = provider
    block["model"] = model
    if base_url is not None:
        block["base_url"] = base_url
    block.update(options)
    return block


def rows(
    n: int,
    *,
    languages: Sequence[str] = ("hi",),
    case_id: str = "c{i:02d}",
    input: str | None = "q {i}",
    output: str = "answer {i}",
) -> list[dict[str, Any]]:
    """``n`` cases; the language cycles through ``languages``, and ``case_id``, ``input`` and
    ``output`` are formatted with the index ``i`` and the case's ``language``."""
    made: list[dict[str, Any]] = []
    for i in range(n):
        language = languages[i % len(languages)]
        case: dict[str, Any] = {"id": case_id.format(i=i, language=language), "language": language}
        if input is not None:
            case["input"] = input.format(i=i, language=language)
        case["output"] = output.format(i=i, language=language)
        made.append(case)
    return made


def recorded_rows(
    scores: Mapping[str, Sequence[int | float]], metric: str, *, output: str = "x", drop: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """One case per score, id ``{language}-{index}``, with the score recorded under ``metric``;
    the ids in ``drop`` are left out."""
    dropped = set(drop)
    return [
        {"id": f"{language}-{index}", "language": language, "output": output, "recorded": {metric: value}}
        for language, values in scores.items()
        for index, value in enumerate(values)
        if f"{language}-{index}" not in dropped
    ]


def suite_text(
    name: str,
    cases: Iterable[Mapping[str, Any]],
    *,
    judge: Mapping[str, Any] | None = None,
    asserts: Sequence[str] = ("linguistic_acceptability >= 1",),
    aggregate: Sequence[str] | str = (),
    head: str = "",
) -> str:
    """A suite's YAML. ``asserts`` and ``aggregate`` entries are YAML as written (an expression,
    or a flow mapping such as ``{expr: ..., family: release}``); ``aggregate`` given as one
    string is the list's body as written (``"  - expr: ...\n    per_group: ..."``). ``head`` is
    raw top-level YAML placed after the judge block."""
    lines = [f"suite: {name}"]
    if judge is not None:
        lines.append(f"judge: {flow(judge)}")
    if head:
        lines.append(head.rstrip("\n"))
    lines.append("cases:")
    lines += [f"  - {flow(case)}" for case in cases]
    if asserts:
        lines += ["assert:", *(f"  - {entry}" for entry in asserts)]
    if isinstance(aggregate, str):
        lines += ["aggregate:", aggregate.rstrip("\n")]
    elif aggregate:
        lines += ["aggregate:", *(f"  - {entry}" for entry in aggregate)]
    return "\n".join(lines) + "\n"


def builtin_registry() -> Registry:
    """The names a run without plugins has: the built-in providers, rubrics and metrics."""
    return Registry(
        providers=dict(builtin_plugins.pytest_llmjudge_providers()),
        rubrics=dict(builtin_plugins.pytest_llmjudge_rubrics()),
        metrics=dict(builtin_plugins.pytest_llmjudge_metrics()),
    )
