"""``cases_file`` tables (suite/tabular.py): CSV, TSV and Parquet rows become the cases the
same records inline would, and bad rows are errors naming file, line and column."""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest

from pytest_llmjudge.errors import SuiteError
from pytest_llmjudge.registry import Registry
from pytest_llmjudge.suite.build import build_suite
from pytest_llmjudge.suite.model import Case
from pytest_llmjudge.testing import LoopbackServer, ScriptedJudge

# Three scripts, and the cells a spreadsheet export quotes: commas, quotes, newlines.
CASES = [
    {
        "id": "hi-1",
        "language": "hi",
        "input": "भारत की राजधानी क्या है?",
        "output": 'राजधानी, "नई दिल्ली" है।\nदूसरी पंक्ति',
        "reference": "नई दिल्ली",
    },
    {
        "id": "ru-1",
        "language": "ru",
        "input": "Столица России?",
        "output": "Москва, конечно.",
        "reference": "Москва",
    },
    {"id": "ja-1", "language": "ja", "input": "日本の首都は？", "output": "東京です。\n\n以上。", "reference": "東京"},
]


def table_text(rows: list[dict[str, str]], delimiter: str = ",", header: list[str] | None = None) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header or list(rows[0]), delimiter=delimiter, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def suite_text(cases_file: str, extra: str = "") -> str:
    return f"suite: s\ncases_file: {cases_file}\n{extra}assert:\n  - chrf >= 0\n"


def inline_suite_text() -> str:
    return "suite: s\ncases: " + json.dumps(CASES, ensure_ascii=False) + "\nassert:\n  - chrf >= 0\n"


def comparable(cases: tuple[Case, ...] | list[Case]) -> list[tuple[object, ...]]:
    return [(c.id, c.language, c.input, c.output, c.reference, dict(c.metadata)) for c in cases]


def build(tmp_path: Path, registry: Registry, suite: str, name: str = "suite.yaml") -> list[Case]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(suite), encoding="utf-8")
    return list(build_suite(path, registry).cases)


@pytest.mark.parametrize(("suffix", "delimiter", "encoding"), [(".csv", ",", "utf-8"), (".tsv", "\t", "utf-8-sig")])
def test_a_table_whose_header_names_the_fields_gives_the_inline_cases(
    tmp_path: Path, registry: Registry, suffix: str, delimiter: str, encoding: str
) -> None:
    (tmp_path / f"cases{suffix}").write_bytes(table_text(CASES, delimiter).encode(encoding))
    from_table = build(tmp_path, registry, suite_text(f"cases{suffix}"))
    inline = build(tmp_path, registry, inline_suite_text(), "inline.yaml")
    assert comparable(from_table) == comparable(inline)
    assert [case.line for case in from_table] == [2, 4, 5]  # the Hindi output's cell spans two lines


def test_other_columns_become_metadata_and_a_mapping_names_the_rest(tmp_path: Path, registry: Registry) -> None:
    rows = [
        {"qid": c["id"], "lang": c["language"], "question": c["input"], "answer": c["output"], "split": "test"}
        for c in CASES
    ]
    (tmp_path / "export.csv").write_text(table_text(rows), encoding="utf-8")
    mapping = "  columns: {id: qid, language: lang, input: question, output: answer}\n"
    cases = build(tmp_path, registry, suite_text(f"\n  path: export.csv\n{mapping}"))
    assert [(c.id, c.language, c.input, c.output) for c in cases] == [
        (c["id"], c["language"], c["input"], c["output"]) for c in CASES
    ]
    assert all(dict(c.metadata) == {"split": "test"} for c in cases)


def test_where_filters_rows_on_fields_and_metadata_columns(tmp_path: Path, registry: Registry) -> None:
    rows = [{**c, "year": "2024" if c["language"] != "ru" else "2023"} for c in CASES]
    (tmp_path / "cases.csv").write_text(table_text(rows), encoding="utf-8")
    cases = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  where: {year: 2024}\n"))
    assert [c.id for c in cases] == ["hi-1", "ja-1"]
    cases = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  where: {language: ru}\n"))
    assert [c.id for c in cases] == ["ru-1"]


def test_dotted_columns_fill_recorded_scores_and_lists(tmp_path: Path, registry: Registry) -> None:
    text = (
        "id,language,output,recorded.task_quality,tags,context\n"
        'a,hi,x,2,"smoke, math","[""c1"", ""c2""]"\n'
        "b,hi,y,,,one passage\n"
    )
    (tmp_path / "cases.csv").write_text(text, encoding="utf-8")
    a, b = build(tmp_path, registry, "suite: s\ncases_file: cases.csv\n")
    assert a.recorded["task_quality"].score == 2.0
    assert "smoke" in a.tags and "math" in a.tags
    assert a.context == ("c1", "c2")
    assert not b.recorded  # an empty cell is an absent value
    assert b.context == ("one passage",)


def test_an_empty_output_cell_is_an_empty_answer_not_a_missing_one(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "cases.csv").write_text('id,language,output,reference\na,hi,"",\n', encoding="utf-8")
    (case,) = build(tmp_path, registry, suite_text("cases.csv"))
    assert case.output == ""
    assert case.reference is None


def test_a_legacy_encoding_is_read_when_declared(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "cases.csv").write_bytes("id,language,output\na,fr,café crème\n".encode("cp1252"))
    with pytest.raises(SuiteError, match=r"not valid utf-8") as excinfo:
        build(tmp_path, registry, suite_text("cases.csv"))
    assert excinfo.value.hint is not None and "encoding" in excinfo.value.hint
    (case,) = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  encoding: cp1252\n"))
    assert case.output == "café crème"


@pytest.mark.parametrize(
    ("text", "extra", "message", "line"),
    [
        ("id,language,output\na,hi,x,extra\n", "", "the row has 4 cells but the header names 3 columns", 2),
        ("id,language,output\na,,x\n", "", "missing required field 'language'", 2),
        ("id,id,output\na,b,x\n", "", "the header names column 'id' twice", 1),
        ('id,language,output\na,hi,x\nb,hi,"unterminated\n', "", "invalid CSV", 3),
        ("id,language,output,recorded.task_quality\na,hi,x,good\n", "", "column 'recorded.task_quality'", 2),
        ("id,language,output\na,hi,x\n", "  columns: {input: question}\n", "which the header lacks", 1),
    ],
)
def test_bad_rows_name_file_line_and_column(
    tmp_path: Path, registry: Registry, text: str, extra: str, message: str, line: int
) -> None:
    (tmp_path / "cases.csv").write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError, match=message) as excinfo:
        build(tmp_path, registry, suite_text(f"\n  path: cases.csv\n{extra}"))
    assert excinfo.value.path == tmp_path / "cases.csv"
    assert excinfo.value.line == line


def test_columns_on_a_jsonl_file_is_an_error(tmp_path: Path, registry: Registry) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[0]) + "\n", encoding="utf-8")
    with pytest.raises(SuiteError, match="apply to CSV, TSV and Parquet"):
        build(tmp_path, registry, suite_text("\n  path: cases.jsonl\n  columns: {id: qid}\n"))


def test_a_parquet_file_gives_the_inline_cases(tmp_path: Path, registry: Registry) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_pylist(CASES), tmp_path / "cases.parquet")
    from_table = build(tmp_path, registry, suite_text("cases.parquet"))
    inline = build(tmp_path, registry, inline_suite_text(), "inline.yaml")
    assert comparable(from_table) == comparable(inline)
    assert [case.line for case in from_table] == [1, 2, 3]


def test_a_csv_suite_is_judged_case_for_case_like_the_inline_suite(pytester: pytest.Pytester) -> None:
    # The judge's score depends on the output it reads, so a cell read wrongly changes a verdict.
    judge = ScriptedJudge(lambda query: 2 if ("दिल्ली" in query.output or "Москва" in query.output) else 0)
    with LoopbackServer(responder=judge) as server:
        head = f"judge: {{provider: openai, model: m, base_url: '{server.openai_base_url}'}}\n"
        checks = "assert:\n  - task_quality >= 1\n"
        (pytester.path / "cases.csv").write_text(table_text(CASES), encoding="utf-8")
        pytester.makefile(".yaml", from_csv=f"suite: from-csv\n{head}cases_file: cases.csv\n{checks}")
        pytester.makefile(
            ".yaml", inline=f"suite: inline\n{head}cases: {json.dumps(CASES, ensure_ascii=False)}\n{checks}"
        )
        result = pytester.runpytest("--llmjudge", "-rA")
    verdicts: dict[str, dict[str, str]] = {"from_csv": {}, "inline": {}}
    for line in result.outlines:
        outcome, _, node = line.partition(" ")
        if outcome in ("PASSED", "FAILED") and ".yaml::" in node:
            file, _, item = node.split(" ", 1)[0].partition(".yaml::")
            verdicts[file][item] = outcome
    assert verdicts["inline"] == {
        "hi-1[task_quality]": "PASSED",
        "ru-1[task_quality]": "PASSED",
        "ja-1[task_quality]": "FAILED",
    }
    assert verdicts["from_csv"] == verdicts["inline"]


def test_a_saved_hugging_face_dataset_gives_the_inline_cases(tmp_path: Path, registry: Registry) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [{**case, "extra": {"topic": "geo"}} for case in CASES]
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "data" / "qa"))
    from_dataset = build(tmp_path, registry, suite_text("data/qa?split=test"))
    inline = build(tmp_path, registry, inline_suite_text(), "inline.yaml")
    assert [c[:5] for c in comparable(from_dataset)] == [c[:5] for c in comparable(inline)]
    assert dict(from_dataset[0].metadata) == {"extra": "{'topic': 'geo'}"}
    assert [case.line for case in from_dataset] == [1, 2, 3]
    with pytest.raises(SuiteError, match=r"has splits \['test'\]: name one"):
        build(tmp_path, registry, suite_text("data/qa"))
    with pytest.raises(SuiteError, match="no split 'train'"):
        build(tmp_path, registry, suite_text("data/qa?split=train"))


def test_a_hub_dataset_offline_and_not_cached_is_a_clear_error(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    hub = pytest.importorskip("huggingface_hub.constants")
    # The library reads these variables when imported (an earlier test imported it): set both.
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # an empty cache: nothing may download
    with pytest.raises(SuiteError, match=r"can't load the dataset 'hf://acme/qa' \(offline: only datasets"):
        build(tmp_path, registry, suite_text("hf://acme/qa?split=test&config=hi"))
    with pytest.raises(SuiteError, match=r"unknown dataset option\(s\) \['spilt'\]"):
        build(tmp_path, registry, suite_text("hf://acme/qa?spilt=test"))


def test_a_sample_is_stratified_by_language_seeded_and_stable(tmp_path: Path, registry: Registry) -> None:
    rows = [
        {"id": f"{lang}-{i}", "language": lang, "output": "x"}
        for lang, n in (("hi", 60), ("sw", 30), ("ja", 10))
        for i in range(n)
    ]
    (tmp_path / "cases.csv").write_text(table_text(rows), encoding="utf-8")
    picked = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  sample: 20\n  seed: 1\n"))
    counts = {lang: sum(c.language == lang for c in picked) for lang in ("hi", "sw", "ja")}
    assert counts == {"hi": 12, "sw": 6, "ja": 2}
    again = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  sample: 20\n  seed: 1\n"))
    assert [c.id for c in again] == [c.id for c in picked]
    other = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  sample: 20\n  seed: 2\n"))
    assert [c.id for c in other] != [c.id for c in picked]
    # More Japanese cases leave the Hindi and Swahili draws as they were (per-language generators).
    more = rows + [{"id": f"ja-x{i}", "language": "ja", "output": "x"} for i in range(3)]
    (tmp_path / "cases.csv").write_text(table_text(more), encoding="utf-8")
    grown = build(tmp_path, registry, suite_text("\n  path: cases.csv\n  sample: 20\n  seed: 1\n"))
    assert [c.id for c in grown if c.language == "hi"] == [c.id for c in picked if c.language == "hi"]


def test_a_second_threshold_on_one_metric_is_named_as_written(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases.jsonl").write_text(
        json.dumps(
            {
                "id": "de-01",
                "language": "de",
                "output": "x",
                "assert": ["task_quality >= 2.0"],
                "recorded": {"task_quality": 2},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    pytester.makefile(".yaml", s="suite: s\ncases_file: cases.jsonl\nassert:\n  - task_quality >= 1\n")
    result = pytester.runpytest("--llmjudge", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["s.yaml::de-01[[]task_quality[]]", "s.yaml::de-01[[]task_quality >= 2[]]"])
