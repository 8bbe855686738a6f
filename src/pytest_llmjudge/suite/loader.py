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
from pytest_llmjudge.suite.text import decode, detect_encoding, read_text, require_regular

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

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists (a suite needs about 6)."""
MAX_NODES = 1_000_000
"""Most values one YAML file may expand to, counting every use of an alias in full."""
MAX_YAML_BYTES = 32 * 1024 * 1024
"""Largest YAML file read; large case sets belong in a ``cases_file`` JSONL."""
MAX_JSONL_LINE = 16 * 1024 * 1024
"""Longest JSONL line read."""

_LIBYAML_DEPTH_PROBLEM = "exceeded maximum nesting depth"
"""The problem text of libyaml's own nesting limit (libyaml 0.2.6+, PyYAML 6.0.4+)."""

_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {
    yaml.ScalarNode: {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null", "timestamp", "merge")},
    yaml.SequenceNode: {f"{_CORE}seq"},
    yaml.MappingNode: {f"{_CORE}map"},
}
_START_EVENTS: dict[type[yaml.Event], type[yaml.Node]] = {
    yaml.SequenceStartEvent: yaml.SequenceNode,
    yaml.MappingStartEvent: yaml.MappingNode,
}


def _line(event: yaml.Event) -> int | None:
    return None if event.start_mark is None else event.start_mark.line + 1


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


class _Composer:
    """Builds the node tree from parser events without recursion, within the limits above.

    PyYAML's composer recurses (libyaml's crashes the process on 100,000 nested ``[``), and
    an alias is a pointer to its anchor's node, so a few hundred bytes of nested aliases
    ("billion laughs") expand to billions of values in whoever walks the tree. Here every
    node carries its expanded size, so an alias costs what it expands to, and the total is
    capped before anything is converted. Only the YAML core tags are accepted: a
    ``!!python/...`` or ``!custom`` tag is an error, never constructed.
    """

    def __init__(self, path: Path, loader: yaml.SafeLoader) -> None:
        self.path = path
        self.loader: Any = loader  # PyYAML's parser and resolver methods are untyped
        self.anchors: dict[str, tuple[yaml.Node, int]] = {}
        self.expanded = 0

    def _error(self, message: str, event: yaml.Event, hint: str | None = None) -> SuiteError:
        return SuiteError(message, path=self.path, line=_line(event), hint=hint)

    def _count(self, size: int, event: yaml.Event, alias: str | None = None) -> None:
        self.expanded += size
        if self.expanded > MAX_NODES:
            if alias is not None:
                raise self._error(
                    f"YAML aliases expand to more than {MAX_NODES:,} values (alias *{alias})",
                    event,
                    hint="an anchor used inside anchors used many times multiplies; write the values out",
                )
            raise self._error(
                f"the file holds more than {MAX_NODES:,} values", event, hint="put the cases in a cases_file JSONL"
            )

    def _tag(self, kind: type[yaml.Node], event: Any, value: str | None) -> str:
        tag = event.tag
        if tag is None or tag == "!":
            resolved: str = self.loader.resolve(kind, value, event.implicit)
            return resolved
        if tag not in _ALLOWED_TAGS[kind]:
            raise self._error(
                f"YAML tag {_short_tag(tag)!r} is not allowed",
                event,
                hint="suite files take plain YAML: mappings, lists, strings, numbers, booleans and null",
            )
        return str(tag)

    def single_document(self) -> yaml.Node | None:
        loader = self.loader
        loader.get_event()  # StreamStart
        if loader.check_event(yaml.StreamEndEvent):
            return None
        loader.get_event()  # DocumentStart
        root = self._node()
        loader.get_event()  # DocumentEnd
        if not loader.check_event(yaml.StreamEndEvent):
            event = loader.peek_event()
            raise SuiteError(
                "invalid YAML: expected a single document in the file, found another one",
                path=self.path,
                line=_line(event),
                hint="remove the '---' line: one suite per file",
            )
        return root

    def _node(self) -> yaml.Node:
        loader = self.loader
        # Each open collection: [node, children, expanded size, anchor].
        stack: list[list[Any]] = []
        while True:
            event = loader.get_event()
            node: yaml.Node
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in self.anchors:
                    raise self._error(f"alias *{event.anchor} refers to no anchor defined before it", event)
                node, size = self.anchors[event.anchor]
                self._count(size, event, alias=event.anchor)
            elif isinstance(event, yaml.ScalarEvent):
                tag = self._tag(yaml.ScalarNode, event, event.value)
                start: Any = event.start_mark  # libyaml's Mark is not yaml.Mark to mypy
                end: Any = event.end_mark
                node = yaml.ScalarNode(tag, event.value, start, end, style=event.style)
                size = 1
                self._count(1, event)
                if event.anchor is not None:
                    self.anchors[event.anchor] = (node, 1)
            elif type(event) in _START_EVENTS:
                kind: Any = _START_EVENTS[type(event)]
                if len(stack) >= MAX_DEPTH:
                    raise self._error(
                        f"nesting deeper than {MAX_DEPTH} levels", event, hint="a suite needs only a few levels"
                    )
                tag = self._tag(kind, event, None)
                node = kind(tag, [], event.start_mark, event.end_mark, flow_style=event.flow_style)
                self._count(1, event)
                stack.append([node, [], 1, event.anchor])
                continue
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                node, children, size, anchor = stack.pop()
                node.end_mark = event.end_mark
                if isinstance(node, yaml.MappingNode):
                    node.value = list(zip(children[::2], children[1::2], strict=True))
                else:
                    node.value = children
                if anchor is not None:
                    self.anchors[anchor] = (node, size)
            else:  # the parser only emits the events above inside a document
                raise self._error(f"invalid YAML: unexpected {type(event).__name__}", event)
            if not stack:
                return node
            stack[-1][1].append(node)
            stack[-1][2] += size


class _Converter:
    def __init__(self, path: Path, loader: yaml.SafeLoader) -> None:
        self.path = path
        self.loader = loader
        self.lines: dict[PathKey, int] = {}

    def convert(self, node: yaml.Node, at: PathKey) -> Any:
        # Depth is bounded by _Composer (MAX_DEPTH), so this recursion is too.
        self.lines.setdefault(at, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            explicit = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
            self.loader.flatten_mapping(node)
            # flatten_mapping puts the merged (<<) pairs first, then the explicit ones.
            merged = len(node.value) - explicit
            result: dict[Any, Any] = {}
            explicit_keys: set[Any] = set()
            for position, (key_node, value_node) in enumerate(node.value):
                if not isinstance(key_node, yaml.ScalarNode):
                    raise SuiteError(
                        "mapping keys must be plain scalars",
                        path=self.path,
                        line=key_node.start_mark.line + 1,
                    )
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


def read_yaml_text(path: Path) -> str:
    """The decoded text of a YAML file, refusing files over :data:`MAX_YAML_BYTES`."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SuiteError(f"can't read the file ({exc.strerror or exc})", path=path) from None
    if size > MAX_YAML_BYTES:
        raise SuiteError(
            f"the file is {size / 2**20:.1f} MiB; YAML files are read up to {MAX_YAML_BYTES // 2**20} MiB",
            path=path,
            hint="put large case sets in a cases_file JSONL",
        )
    return read_text(path)


def load_yaml(path: Path, text: str | None = None) -> LocatedDocument:
    """Parse one YAML document, raising :class:`SuiteError` with the line of a syntax error."""
    if text is None:
        text = read_yaml_text(path)
    loader = _Loader(text)
    try:
        node = _Composer(path, loader).single_document()
        if node is None:
            return LocatedDocument(path=path, data=None)
        converter = _Converter(path, loader)
        data = converter.convert(node, ())
        return LocatedDocument(path=path, data=data, lines=converter.lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or "invalid YAML"
        if _LIBYAML_DEPTH_PROBLEM in problem:
            # libyaml >= 0.2.6 (bundled from PyYAML 6.0.4) has a nesting limit of its own, above ours,
            # whose scanner can fire first because it reads flow collections ahead of the parser.
            # Either way the file nests deeper than MAX_DEPTH: one message whatever the PyYAML release.
            raise SuiteError(
                f"nesting deeper than {MAX_DEPTH} levels", path=path, line=line, hint="a suite needs only a few levels"
            ) from None
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


def _json_depth_exceeds(record: Any, limit: int) -> bool:
    """Whether ``record`` nests containers more than ``limit`` deep (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(record, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values() if isinstance(child, (dict, list)))
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value if isinstance(child, (dict, list)))
    return False


def _jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` of a JSONL file, each line read up to :data:`MAX_JSONL_LINE` bytes."""
    require_regular(path)
    try:
        handle = path.open("rb")
    except IsADirectoryError:
        raise SuiteError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise SuiteError(f"can't read the file ({exc.strerror or exc})", path=path) from None
    with handle:
        codec, skip = detect_encoding(handle.read(4))
        handle.seek(skip)
        if codec != "utf-8":  # UTF-16/32 lines can't be split on b"\n": decode the file whole
            if path.stat().st_size > MAX_YAML_BYTES:
                raise SuiteError(f"a {codec.upper()} JSONL file is read up to {MAX_YAML_BYTES // 2**20} MiB", path=path)
            yield from enumerate(decode(path.read_bytes(), path).split("\n"), start=1)
            return
        number = 0
        while raw_bytes := handle.readline(MAX_JSONL_LINE + 1):
            number += 1
            if len(raw_bytes) > MAX_JSONL_LINE:
                raise SuiteError(f"line longer than {MAX_JSONL_LINE // 2**20} MiB", path=path, line=number)
            try:
                yield number, raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SuiteError(f"not valid UTF-8 ({exc.reason})", path=path, line=number) from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSONL file.

    A byte-order mark picks the encoding as for YAML files; a NUL character, a line over
    :data:`MAX_JSONL_LINE` bytes, nesting deeper than :data:`MAX_DEPTH` and a non-finite
    number (JSON's ``NaN``/``Infinity`` extension) are errors naming the line.
    """
    if not path.exists():
        raise SuiteError(f"file not found: {path}", path=path)
    for number, raw in _jsonl_lines(path):
        if not raw.strip():
            continue
        if "\0" in raw:
            raise SuiteError("the line contains a NUL character", path=path, line=number, hint="is it binary?")
        try:
            record = _JSONL_DECODER.decode(raw)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number) from exc
        except _NonFiniteError as exc:
            raise SuiteError(f"{exc} is not a finite number", path=path, line=number) from None
        except RecursionError:
            raise SuiteError(f"nesting deeper than {MAX_DEPTH} levels", path=path, line=number) from None
        if not isinstance(record, dict):
            raise SuiteError("each JSONL line must be a JSON object", path=path, line=number)
        # Every container opens with "{" or "[", so a line with at most MAX_DEPTH of them can't nest
        # deeper: counting them (in C) spares the walk for almost every line.
        if raw.count("{") + raw.count("[") > MAX_DEPTH and _json_depth_exceeds(record, MAX_DEPTH):
            raise SuiteError(f"nesting deeper than {MAX_DEPTH} levels", path=path, line=number)
        yield number, record


class _NonFiniteError(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFiniteError(name)


# One decoder for every line: ``json.loads`` with an argument builds a new one per call.
_JSONL_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
