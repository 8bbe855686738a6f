"""Reading suite files with a line number for every value (``suite.loader``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.suite.loader import LocatedDocument, iter_jsonl, line_for, load_yaml

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
