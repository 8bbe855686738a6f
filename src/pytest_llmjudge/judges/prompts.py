"""Judge prompts: rubric(s) + case -> one provider request.

The prompt shape follows Hada et al. 2024 (sec. 3.2.1, fig. 2): English instructions, the
case's language named explicitly, the metrics described as JSON (name, description,
scoring), and a JSON reply format given by a schema, with the justification asked for
before the score. METAL (sec. 4.2-4.3) uses the same shape with simple and detailed metric
descriptions. Two request modes:

* single call: one rubric per request (the papers' default and most reliable variant);
* compound call: all rubrics of a case in one request (cheaper, one reply to parse).

Repeats (``repeats: k``) differ by seed: sample ``i`` uses ``seed + i`` (``i`` when no seed
is set), so each repeat is its own cache entry even for providers that ignore seeds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_llmjudge.judges.base import ProviderRequest
from pytest_llmjudge.judges.languages import language_name
from pytest_llmjudge.judges.rubrics import InstructionForm, Rubric

DEFAULT_TASK = (
    "A model under test was given the input below and produced the output below. "
    "Evaluate the output on each listed metric."
)

_JSON_SCHEMA_MODELS = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4")


@dataclass(frozen=True)
class JudgedText:
    """The parts of a case a judge sees."""

    language: str
    output: str
    input: str | None = None
    reference: str | None = None
    context: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeSettings:
    """Provider-facing settings of one judge, after defaults are resolved."""

    provider: str
    model: str
    base_url: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = None
    instructions: InstructionForm = "detailed"
    structured_output: str = "auto"

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


def resolve_structured_output(settings: JudgeSettings) -> str:
    """Pick the JSON mechanism for ``structured_output: auto``."""
    if settings.structured_output != "auto":
        return settings.structured_output
    if settings.provider != "openai" or settings.base_url is not None:
        return "none"
    if settings.model.startswith(_JSON_SCHEMA_MODELS):
        return "json_schema"
    return "json_object"


def reply_schema(rubrics: Sequence[Rubric]) -> dict[str, Any]:
    """JSON schema of a reply: one ``{justification, score}`` object per rubric."""
    return {
        "type": "object",
        "properties": {
            rubric.name: {
                "type": "object",
                "properties": {
                    "justification": {"type": "string"},
                    "score": {"type": "integer", "enum": list(rubric.scale)},
                },
                "required": ["justification", "score"],
                "additionalProperties": False,
            }
            for rubric in rubrics
        },
        "required": [rubric.name for rubric in rubrics],
        "additionalProperties": False,
    }


def prompt_section(title: str, body: str) -> str:
    """One fenced section of a judge prompt (the shape every prompt of the plugin uses)."""
    return f"## {title}\n<<<\n{body}\n>>>"


_METRICS_SECTIONS: dict[tuple[tuple[int, ...], str, str], tuple[tuple[Rubric, ...], str]] = {}
_METRICS_SECTIONS_MAX = 4096


def _metrics_section(rubrics: Sequence[Rubric], form: InstructionForm, language: str) -> str:
    """The prompt's "Metrics" section: the rubrics' entries as indented JSON.

    The same few (rubrics, form, language) come back for every case of a suite, and
    ``json.dumps`` with ``indent`` runs the pure-Python encoder (a fifth of planning 10,000
    cached cases), so sections are remembered. Rubrics aren't hashable (mappings inside):
    the key is their identities, and an entry keeps its rubrics alive, so an id in a key
    can't be reused by another object while the entry exists.
    """
    key = (tuple(map(id, rubrics)), form, language)
    found = _METRICS_SECTIONS.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], rubrics, strict=True)):
        return found[1]
    metrics = [rubric.prompt_entry(form, language) for rubric in rubrics]
    section = "## Metrics\n" + json.dumps(metrics, ensure_ascii=False, indent=1)
    if len(_METRICS_SECTIONS) >= _METRICS_SECTIONS_MAX:
        _METRICS_SECTIONS.clear()
    _METRICS_SECTIONS[key] = (tuple(rubrics), section)
    return section


def build_request(
    rubrics: Sequence[Rubric],
    text: JudgedText,
    settings: JudgeSettings,
    *,
    task: str | None = None,
    sample: int = 0,
) -> ProviderRequest:
    """The provider request that asks ``settings``' judge to rate ``text`` on ``rubrics``."""
    if not rubrics:
        raise ValueError("a judge request needs at least one rubric")
    language = language_name(text.language)
    system = (
        f"You are a meticulous evaluator of text written in {language}. Read every text as a "
        f"fluent native speaker of {language} would, and rate it on each metric you are given, "
        "using only the scores that metric's scale allows. For each metric, write a short "
        "justification first and then give the score. Reply with one JSON object and nothing else."
    )
    parts = [
        prompt_section(
            "Task", (task or DEFAULT_TASK) + f"\nThe texts are in {language} (language code: {text.language})."
        ),
    ]
    if text.input:
        parts.append(prompt_section("Input", text.input))
    if text.reference:
        parts.append(prompt_section("Reference", text.reference))
    if text.context:
        parts.append(prompt_section("Context", "\n\n".join(text.context)))
    parts.append(prompt_section("Output to evaluate", text.output))
    parts.append(_metrics_section(rubrics, settings.instructions, text.language))
    schema = reply_schema(rubrics)
    # The shape only, no example score: a fixed example value would nudge the judge toward it.
    shape = ", ".join(
        f'"{rubric.name}": {{"justification": "<why>", "score": <one of {", ".join(map(str, rubric.scale))}>}}'
        for rubric in rubrics
    )
    parts.append(
        "## Reply format\nOne JSON object with a key per metric name, each holding a "
        "justification and an integer score from that metric's scale:\n{" + shape + "}"
    )
    seed = settings.seed + sample if settings.seed is not None else (sample if sample else None)
    return ProviderRequest(
        provider=settings.provider,
        model=settings.model,
        system=system,
        user="\n\n".join(parts),
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=seed,
        json_schema=schema,
        structured_output=resolve_structured_output(settings),
        base_url=settings.base_url,
    )


def rubric_names_in(request: ProviderRequest) -> list[str]:
    """The rubric names a request asks for (from its schema), in order."""
    schema: Mapping[str, Any] = request.json_schema or {}
    return list(schema.get("required", []))
