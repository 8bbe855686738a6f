"""Reading suite files: YAML (and JSONL side files) with line numbers for every value.

PyYAML's ``safe_load`` throws positions away, so this module composes the node tree and
converts it itself, recording the 1-based line of every mapping key and sequence item
under its path (``("cases", 3, "output")``). Validation errors from the pydantic schema
carry such a path in ``loc``; :func:`line_for` maps it back to the nearest recorded line so
every error can be reported as ``file:line: field: message``.

Degenerate cases: an empty file loads as ``None`` (the schema then says what is missing);
duplicate keys in one mapping are an error (YAML would silently keep the last one, which
hides typos in threshold lists); anchors and aliases are resolved normally.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_llmjudge.errors import SuiteError

PathKey = tuple[str | int, ...]


@dataclass
class LocatedDocument:
    """A parsed document plus the line of each value, keyed by its path."""

    path: Path
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)

    def line_for(self, loc: tuple[Any, ...]) -> int | None:
        return line_for(self.lines, loc)


def line_for(lines: Mapping[PathKey, int], loc: tuple[Any, ...]) -> int | None:
    """The line of ``loc`` or of its closest recorded ancestor."""
    key: tuple[Any, ...] = tuple(loc)
    while True:
        if key in lines:
            return lines[key]
        if not key:
            return None
        key = key[:-1]


# libyaml's parser (when PyYAML was built with it) keeps marks too and is much faster.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Converter:
    def __init__(self, path: Path, loader: yaml.SafeLoader) -> None:
        self.path = path
        self.loader = loader
        self.lines: dict[PathKey, int] = {}

    def convert(self, node: yaml.Node, at: PathKey) -> Any:
        self.lines.setdefault(at, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            explicit = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
            self.loader.flatten_mapping(node)
            # flatten_mapping puts the merged (<<) pairs first, then the explicit ones.
            merged = len(node.value) - explicit
            result: dict[Any, Any] = {}
            explicit_keys: set[Any] = set()
            for position, (key_node, value_node) in enumerate(node.value):
                key = self.loader.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)):
                    raise SuiteError(
                        "mapping keys must be plain scalars",
                        path=self.path,
                        line=key_node.start_mark.line + 1,
                    )
                # Only repeats among explicit keys are errors: merged (<<) values may be overridden.
                if position >= merged:
                    if key in explicit_keys:
                        raise SuiteError(
                            f"duplicate key {key!r}",
                            path=self.path,
                            line=key_node.start_mark.line + 1,
                            hint="YAML keeps only the last value of a repeated key; merge the two entries",
                        )
                    explicit_keys.add(key)
                child: PathKey = (*at, key if isinstance(key, (str, int)) else str(key))
                self.lines[child] = key_node.start_mark.line + 1
                result[key] = self.convert(value_node, child)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(item, (*at, index)) for index, item in enumerate(node.value)]
        return self.loader.construct_object(node, deep=True)


def load_yaml(path: Path, text: str | None = None) -> LocatedDocument:
    """Parse one YAML document, raising :class:`SuiteError` with the line of a syntax error."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SuiteError(f"not valid UTF-8 ({exc.reason})", path=path) from exc
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return LocatedDocument(path=path, data=None)
        converter = _Converter(path, loader)
        data = converter.convert(node, ())
        return LocatedDocument(path=path, data=data, lines=converter.lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        raise SuiteError(
            f"invalid YAML: {problem}{context}",
            path=path,
            line=line,
            hint="check indentation and quoting; strings containing ': ' or starting with '>' need quotes",
        ) from exc
    except yaml.YAMLError as exc:
        raise SuiteError(f"invalid YAML: {exc}", path=path) from exc
    finally:
        loader.dispose()


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSONL file."""
    if not path.is_file():
        raise SuiteError(f"file not found: {path}", path=path)
    with path.open("rb") as handle:
        for number, raw_bytes in enumerate(handle, start=1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SuiteError(f"not valid UTF-8 ({exc.reason})", path=path, line=number) from None
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise SuiteError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number) from exc
            if not isinstance(record, dict):
                raise SuiteError("each JSONL line must be a JSON object", path=path, line=number)
            yield number, record
