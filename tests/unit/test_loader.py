"""Reading suite files with a line number for every value (``suite.loader``), and hostile input to it."""

from __future__ import annotations

import codecs
import re
import textwrap
from pathlib import Path

import pytest

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.suite.loader import (
    MAX_DEPTH,
    MAX_JSONL_LINE,
    MAX_YAML_BYTES,
    LocatedDocument,
    iter_jsonl,
    line_for,
    load_yaml,
)
from pytest_llmjudge.suite.sniff import SUITE_LIKE, sniff_kind

SUITE = """\
suite: demo
cases:
  - id: a
    language: hi
    assert:
      - la >= 1
      - chrf >= 2
  - id: b
    language: en
nested:
  deeper:
    key: [1, 2]
"""


def write(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- line numbers


def test_keys_and_list_items_have_their_lines(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, SUITE))

    assert doc.data == {
        "suite": "demo",
        "cases": [
            {"id": "a", "language": "hi", "assert": ["la >= 1", "chrf >= 2"]},
            {"id": "b", "language": "en"},
        ],
        "nested": {"deeper": {"key": [1, 2]}},
    }
    # Mapping keys: the line of the key.
    assert doc.lines[("suite",)] == 1
    assert doc.lines[("cases",)] == 2
    assert doc.lines[("nested",)] == 10
    # List items: the line where the item starts ("- id: a" is both item 0 and its 'id' key).
    assert doc.lines[("cases", 0)] == 3
    assert doc.lines[("cases", 0, "id")] == 3
    assert doc.lines[("cases", 0, "language")] == 4
    assert doc.lines[("cases", 0, "assert")] == 5
    assert doc.lines[("cases", 0, "assert", 0)] == 6
    assert doc.lines[("cases", 0, "assert", 1)] == 7
    assert doc.lines[("cases", 1)] == 8
    assert doc.lines[("cases", 1, "language")] == 9
    # Nested mappings and flow sequences.
    assert doc.lines[("nested", "deeper")] == 11
    assert doc.lines[("nested", "deeper", "key")] == 12
    assert doc.lines[("nested", "deeper", "key", 1)] == 12


def test_the_document_itself_is_the_root(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, SUITE))
    assert doc.lines[()] == 1
    assert doc.path == tmp_path / "suite.yaml"


def test_line_for_falls_back_to_the_closest_ancestor(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, SUITE))

    assert doc.line_for(("cases", 0, "assert", 1)) == 7  # exact
    assert doc.line_for(("cases", 0, "assert", 5)) == 5  # no item 5: the 'assert' key
    assert doc.line_for(("cases", 1, "output")) == 8  # missing field: the case
    assert doc.line_for(("cases", 7, "output")) == 2  # no case 7: the 'cases' key
    assert doc.line_for(("nope", "deeper")) == 1  # unknown top-level key: the document
    assert doc.line_for(()) == 1


def test_line_for_without_any_lines_is_none() -> None:
    assert line_for({}, ("cases", 0)) is None
    assert line_for({}, ()) is None
    assert line_for({(): 4}, ("a", "b")) == 4
    assert LocatedDocument(Path("x.yaml"), None).line_for(("a",)) is None


def test_top_level_list(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, "- 1\n- two\n"))
    assert doc.data == [1, "two"]
    assert doc.lines == {(): 1, (0,): 1, (1,): 2}


def test_scalars_keep_yaml_types(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, "n: 3\nf: 1.5\nb: true\nz: null\ns: '3'\n"))
    assert doc.data == {"n": 3, "f": 1.5, "b": True, "z": None, "s": "3"}


def test_text_argument_is_parsed_instead_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "never-written.yaml"
    doc = load_yaml(path, text="suite: x\n")
    assert doc.data == {"suite": "x"}
    assert doc.path == path


def test_anchors_and_aliases_resolve(tmp_path: Path) -> None:
    doc = load_yaml(
        write(
            tmp_path,
            """\
            base: &judge {provider: openai, model: m}
            copy: *judge
            merged:
              <<: *judge
              seed: 7
            """,
        )
    )
    assert doc.data["copy"] == {"provider": "openai", "model": "m"}
    assert doc.data["merged"] == {"provider": "openai", "model": "m", "seed": 7}
    assert doc.lines[("merged", "seed")] == 5
    # An aliased value reports where it was defined.
    assert doc.lines[("copy", "model")] == 1


def test_a_key_may_override_a_merged_key(tmp_path: Path) -> None:
    # YAML merge keys: explicit keys of the mapping win over merged ones. This is the usual
    # way to share a judge block and change one field; it is not a duplicate key.
    doc = load_yaml(
        write(
            tmp_path,
            """\
            base: &judge {provider: openai, model: m}
            judge:
              <<: *judge
              model: other
            """,
        )
    )
    assert doc.data["judge"] == {"provider": "openai", "model": "other"}


# --------------------------------------------------------------------------- errors


def test_duplicate_keys_name_the_second_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        suite: demo
        cases:
          - id: a
            language: hi
            language: en
        """,
    )
    with pytest.raises(SuiteError) as excinfo:
        load_yaml(path)

    error = excinfo.value
    assert error.line == 5
    assert error.path == path
    assert error.message == "duplicate key 'language'"
    assert error.hint is not None and "only the last value" in error.hint
    assert str(error).startswith(f"{path}:5: duplicate key 'language'")


def test_duplicate_top_level_keys(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as excinfo:
        load_yaml(write(tmp_path, "assert: [a > 1]\nsuite: x\nassert: [b > 1]\n"))
    assert excinfo.value.line == 3


def test_complex_keys_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="mapping keys must be plain scalars") as excinfo:
        load_yaml(write(tmp_path, "suite: x\n? [1, 2]\n: 3\n"))
    assert excinfo.value.line == 2


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("suite: x\ncases: [1, 2\n", 3),  # unclosed flow sequence: found at end of stream
        ("suite: x\nmodel: a: b\n", 2),  # ': ' inside a plain scalar
        ("suite: x\ncases:\n  - a\n - b\n", 4),  # bad indentation
        ("suite: x\n\tcases: 1\n", 2),  # tab
        ("suite: 'unterminated\n", 2),
    ],
)
def test_syntax_errors_report_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SuiteError) as excinfo:
        load_yaml(path)

    error = excinfo.value
    assert error.path == path
    assert error.line == line
    assert error.message.startswith("invalid YAML: ")
    assert error.hint is not None and "indentation" in error.hint
    assert str(error).startswith(f"{path}:{line}: invalid YAML: ")


def test_several_documents_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="invalid YAML") as excinfo:
        load_yaml(write(tmp_path, "suite: a\n---\nsuite: b\n"))
    assert excinfo.value.line == 2


@pytest.mark.parametrize("text", ["", "\n\n", "# just a comment\n"])
def test_an_empty_file_loads_as_none(tmp_path: Path, text: str) -> None:
    doc = load_yaml(write(tmp_path, text))
    assert doc.data is None
    assert doc.lines == {}


def test_an_explicit_empty_document_is_none(tmp_path: Path) -> None:
    assert load_yaml(write(tmp_path, "---\n")).data is None


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("suite: café\n".encode("latin-1"))

    with pytest.raises(SuiteError, match="not valid UTF-8") as excinfo:
        load_yaml(path)
    assert excinfo.value.path == path
    assert str(excinfo.value).startswith(f"{path}:1: not valid UTF-8")


def test_utf8_text_is_kept(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, "suite: हिन्दी\noutput: 日本語\n"))
    assert doc.data == {"suite": "हिन्दी", "output": "日本語"}


# --------------------------------------------------------------------------- iter_jsonl


def test_iter_jsonl_yields_line_numbers_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n\n   \n{"id": "b", "n": 2}\n{"id": "c"}', encoding="utf-8")

    assert list(iter_jsonl(path)) == [(1, {"id": "a"}), (4, {"id": "b", "n": 2}), (5, {"id": "c"})]


def test_iter_jsonl_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"output": "नमस्ते"}\n', encoding="utf-8")
    assert list(iter_jsonl(path)) == [(1, {"output": "नमस्ते"})]


def test_iter_jsonl_bad_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n\n{"id": "b",}\n{"id": "c"}\n', encoding="utf-8")

    records = iter_jsonl(path)
    assert next(records) == (1, {"id": "a"})  # lines before the error are still yielded
    with pytest.raises(SuiteError) as excinfo:
        next(records)
    error = excinfo.value
    assert (error.path, error.line) == (path, 3)
    assert error.message.startswith("invalid JSON: ")
    assert "(column " in error.message


@pytest.mark.parametrize("line", ["[1, 2]", '"text"', "3", "null"])
def test_iter_jsonl_rejects_non_objects(tmp_path: Path, line: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n' + line + "\n", encoding="utf-8")

    with pytest.raises(SuiteError, match="each JSONL line must be a JSON object") as excinfo:
        list(iter_jsonl(path))
    assert excinfo.value.line == 2


def test_iter_jsonl_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(SuiteError, match="file not found") as excinfo:
        list(iter_jsonl(path))
    assert excinfo.value.path == path


def test_iter_jsonl_non_utf8_is_a_suite_error(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes('{"id": "a"}\n{"output": "café"}\n'.encode("latin-1"))

    with pytest.raises(SuiteError, match="UTF-8") as excinfo:
        list(iter_jsonl(path))
    assert excinfo.value.path == path


# --------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize(
    ("codec", "bom"),
    [
        ("utf-8", codecs.BOM_UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-32-le", codecs.BOM_UTF32_LE),
        ("utf-32-be", codecs.BOM_UTF32_BE),
        ("utf-16-le", b""),
    ],
)
def test_byte_order_marks_pick_the_encoding(tmp_path: Path, codec: str, bom: bytes) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes(bom + "suite: हिन्दी\ncases: []\n".encode(codec))

    assert load_yaml(path).data == {"suite": "हिन्दी", "cases": []}
    assert sniff_kind(path) == "suite"


@pytest.mark.parametrize("key", ["suite", "calibration", "ranking"])
def test_the_sniffer_finds_a_key_after_a_long_prefix(tmp_path: Path, key: str) -> None:
    path = tmp_path / "late.yaml"
    path.write_text("# " + "x" * 3_000_000 + "\n" + "# c\n" * 20_000 + f"{key}: late\n", encoding="utf-8")
    assert sniff_kind(path) == key


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('"suite": quoted\n', "suite"),
        ("{suite: flow, cases: []}\n", "suite"),
        ("- suite: in-a-list\n", "suite"),
        ("suit: typo\ncases: []\nassert: []\n", SUITE_LIKE),
        ("suit: typo\ncases_file: c.jsonl\naggregate: []\n", SUITE_LIKE),
        ("name: ci\ncases: [1]\n", None),  # cases: alone is not enough to claim a file
        ("steps:\n  suite: nested\n", None),  # not at column 0
        ("suites: plural\n", None),
        ("", None),
    ],
)
def test_what_the_sniffer_calls_a_suite(tmp_path: Path, text: str, kind: str | None) -> None:
    path = tmp_path / "file.yaml"
    path.write_text(text, encoding="utf-8")
    assert sniff_kind(path) == kind


def test_the_sniffer_ignores_unreadable_paths(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    assert sniff_kind(tmp_path / "dir.yaml") is None
    assert sniff_kind(tmp_path / "loop.yaml") is None


def test_nesting_is_limited_without_recursion(tmp_path: Path) -> None:
    # 100,000 nested brackets crash libyaml's own composer (a segfault); ours stops at 100.
    path = write(tmp_path, "suite: x\ndescription: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(SuiteError, match=f"nesting deeper than {MAX_DEPTH} levels") as excinfo:
        load_yaml(path)
    assert excinfo.value.line == 2


def test_nesting_at_the_limit_loads(tmp_path: Path) -> None:
    depth = MAX_DEPTH - 1  # plus the top-level mapping
    doc = load_yaml(write(tmp_path, "suite: x\nd: " + "[" * depth + "]" * depth + "\n"))
    value = doc.data["d"]
    for _ in range(depth - 1):
        value = value[0]
    assert value == []


def test_an_alias_bomb_is_stopped_before_it_expands(tmp_path: Path) -> None:
    lines = ["suite: bomb", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 20)]
    with pytest.raises(SuiteError, match=r"expand to more than 1,000,000 values \(alias \*a4\)") as excinfo:
        load_yaml(write(tmp_path, "\n".join(lines) + "\n"))
    assert excinfo.value.line == 7


def test_aliases_within_the_cap_are_expanded(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, "suite: x\nbase: &b {k: [1, 2]}\nuse: [*b, *b]\n"))
    assert doc.data["use"] == [{"k": [1, 2]}, {"k": [1, 2]}]


def test_an_unknown_alias_names_its_line(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"alias \*nope refers to no anchor") as excinfo:
        load_yaml(write(tmp_path, "suite: x\nvalue: *nope\n"))
    assert excinfo.value.line == 2


@pytest.mark.parametrize(
    "value",
    [
        '!!python/object/apply:os.system ["touch MARKER"]',
        "!!python/object/apply:os.system {args: ['touch MARKER']}",
        '!!python/object/apply:builtins.open ["MARKER", "w"]',
        "!!python/name:os.system",
        "!custom {a: 1}",
        "!custom [1]",
        "!custom text",
        "!!binary aGVsbG8=",
        "!!set {a, b}",
    ],
)
def test_tags_are_rejected_and_never_constructed(tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SuiteError, match="YAML tag .* is not allowed") as excinfo:
        load_yaml(write(tmp_path, f"suite: x\ncases:\n  - {value}\n"))
    assert excinfo.value.line == 3
    assert not (tmp_path / "MARKER").exists()


def test_core_tags_are_allowed(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, "suite: !!str 12\nn: !!int '3'\nf: !!float '1.5'\nl: !!seq [1]\nm: !!map {a: 1}\n"))
    assert doc.data == {"suite": "12", "n": 3, "f": 1.5, "l": [1], "m": {"a": 1}}


def test_nul_characters_are_an_error_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "nul.yaml"
    path.write_bytes(b"suite: x\noutput: a\x00b\n")
    with pytest.raises(SuiteError, match="NUL character") as excinfo:
        load_yaml(path)
    assert excinfo.value.line == 2


def test_a_huge_yaml_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.write(b"suite: x\n")
        handle.truncate(MAX_YAML_BYTES + 1)
    with pytest.raises(SuiteError, match="YAML files are read up to 32 MiB"):
        load_yaml(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"score": Infinity}', "Infinity is not a finite number"),
        ('{"score": -Infinity}', "-Infinity is not a finite number"),
        ('{"score": NaN}', "NaN is not a finite number"),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", f"nesting deeper than {MAX_DEPTH} levels"),
        ('{"a": ' + "[" * 150 + "]" * 150 + "}", f"nesting deeper than {MAX_DEPTH} levels"),
        ('{"a": "x\u0000y"}', "NUL character"),
    ],
)
def test_iter_jsonl_rejects_hostile_lines(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=re.escape(message)) as excinfo:
        list(iter_jsonl(path))
    assert excinfo.value.line == 2


def test_iter_jsonl_bounds_a_huge_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"output": "' + b"x" * (MAX_JSONL_LINE + 10) + b'"}\n')
    with pytest.raises(SuiteError, match="line longer than 16 MiB") as excinfo:
        list(iter_jsonl(path))
    assert excinfo.value.line == 2


@pytest.mark.parametrize(("codec", "bom"), [("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE)])
def test_iter_jsonl_reads_byte_order_marks(tmp_path: Path, codec: str, bom: bytes) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(bom + '{"id": "a"}\n\n{"id": "ब"}\n'.encode(codec))
    assert list(iter_jsonl(path)) == [(1, {"id": "a"}), (3, {"id": "ब"})]


def test_iter_jsonl_of_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="is a directory"):
        list(iter_jsonl(tmp_path))
