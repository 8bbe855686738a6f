"""Cases from tables: CSV, TSV, Parquet files and Hugging Face datasets as ``cases_file`` sources.

A table row becomes the same record a JSONL line is, so the suite builder validates,
filters (``where:``) and locates errors in both the same way. The mapping from columns to
case fields:

* a header that names case fields (``id``, ``language``, ``input``, ``output``,
  ``reference``, ``context``, ``tags``, ...) needs no mapping;
* ``columns: {id: qid, input: question}`` says which column holds which field, for
  headers that name them otherwise (a column can't feed two fields);
* a column named ``field.key`` fills a mapping field: ``metadata.source``,
  ``recorded.task_quality`` (a number, or ``2|1|2``: one judgment per repeat, the case's
  recorded ``samples``), ``human.task_quality`` (``2`` or ``2|1|2``, one
  label per annotator, when the case model has ``human``);
* every other column goes into ``metadata`` under its header name.

Cells are text. An empty cell is an absent value, except for ``input`` and ``output``,
where it is the empty string (an empty answer is an answer to judge). A list field
(``context``, ``tags``, ``assert``, ``messages``) takes a JSON list when the cell starts with ``[``,
else the cell as one entry (``tags`` splits on commas). A ``recorded.*`` or ``human.*``
cell must be a number (or numbers joined by ``|``).

Locations: a CSV/TSV record is located by the physical line it starts on (a quoted cell
may hold newlines, so the row number and the line differ) and its column's header name;
a Parquet record by its row number (1-based, the header is not a row). Errors name both.

Encodings: a UTF-8, UTF-16 or UTF-32 byte-order mark picks the codec; without one the
file is read as UTF-8 (``encoding:`` overrides, e.g. ``cp1252`` for an old spreadsheet
export). Rows stream: memory holds one row at a time, not the file.

Degenerate cases: a file with a header and no rows yields nothing (the suite then needs
other cases); a header with an empty or repeated name, or a row with more cells than the
header, is an error naming the line; a row with fewer cells leaves the missing columns
empty (spreadsheets drop trailing empty cells).
"""

from __future__ import annotations

import codecs
import csv
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import SuiteError
from .sniff import detect_encoding

TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
"""Delimited-text suffixes and their delimiters."""
PARQUET_SUFFIXES = frozenset({".parquet", ".pq"})

MAX_CELL = 16 * 1024 * 1024
"""Largest cell read (the JSONL line limit); the csv module's own default is 128 KiB."""

_LIST_FIELDS = frozenset({"context", "tags", "assert", "messages"})
_KEEP_EMPTY = frozenset({"input", "output"})
_NUMBER_MAPS = frozenset({"recorded", "human"})


def table_format(path: Path, declared: str | None) -> str | None:
    """``"csv"``, ``"tsv"`` or ``"parquet"`` for a table source, ``None`` for JSONL."""
    if declared is not None and declared != "jsonl":
        return declared
    if declared == "jsonl":
        return None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".tsv", ".tab"):
        return "tsv"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    return None


def _raise_field_limit() -> None:
    # The limit is process-wide; only ever raised, so nobody else's reader loses anything.
    if csv.field_size_limit() < MAX_CELL:
        csv.field_size_limit(MAX_CELL)


def _codec(path: Path, encoding: str | None) -> tuple[str, int]:
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise SuiteError(f"unknown encoding {encoding!r}", path=path, field="encoding") from None
        with path.open("rb") as handle:
            head = handle.read(4)
        codec, skip = detect_encoding(head)
        # A BOM of the declared family is skipped; the declared codec wins otherwise.
        return encoding, skip if codecs.lookup(codec).name == codecs.lookup(encoding).name else 0
    with path.open("rb") as handle:
        codec, skip = detect_encoding(handle.read(4))
    return codec, skip


def iter_delimited(
    path: Path, delimiter: str, encoding: str | None = None
) -> Iterator[tuple[int, list[str], dict[str, str]]]:
    """``(line, header, row)`` for each data row of a CSV/TSV file, streamed.

    ``line`` is the physical line the row starts on. Raises :class:`SuiteError` for an
    undecodable byte, a bad header, a row longer than the header or a cell over
    :data:`MAX_CELL`.
    """
    _raise_field_limit()
    codec, skip = _codec(path, encoding)
    try:
        handle = path.open("r", encoding=codec, newline="", errors="strict")
    except OSError as exc:
        raise SuiteError(f"can't read the file ({exc.strerror or exc})", path=path) from None
    with handle:
        if skip:
            handle.read(1)  # the BOM decodes to one U+FEFF
        reader = csv.reader(handle, delimiter=delimiter, strict=True)
        header: list[str] | None = None
        start = 1
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError as exc:
                raise SuiteError(
                    f"not valid {codec} ({exc.reason})",
                    path=path,
                    line=reader.line_num + 1,
                    hint="set 'encoding:' on the cases_file entry (e.g. cp1252 for an old spreadsheet export)",
                ) from None
            except csv.Error as exc:
                raise SuiteError(f"invalid {_kind(delimiter)}: {exc}", path=path, line=start) from None
            line, start = start, reader.line_num + 1
            if header is None:
                header = [name.strip() for name in cells]
                _check_header(header, path)
                continue
            if not any(cell.strip() for cell in cells):
                continue  # a blank line, or a spreadsheet's row of empty cells
            if len(cells) > len(header):
                raise SuiteError(
                    f"the row has {len(cells)} cells but the header names {len(header)} columns",
                    path=path,
                    line=line,
                    hint="quote cells that contain the delimiter",
                )
            yield line, header, dict(zip(header, cells, strict=False))


def _kind(delimiter: str) -> str:
    return "TSV" if delimiter == "\t" else "CSV"


def _check_header(header: list[str], path: Path) -> None:
    seen: set[str] = set()
    for index, name in enumerate(header, start=1):
        if not name:
            raise SuiteError(f"column {index} of the header has no name", path=path, line=1)
        if name in seen:
            raise SuiteError(f"the header names column {name!r} twice", path=path, line=1)
        seen.add(name)


def iter_parquet(path: Path) -> Iterator[tuple[int, list[str], dict[str, Any]]]:
    """``(row number, columns, row)`` for each row of a Parquet file, read in batches."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise SuiteError(
            "reading Parquet needs pyarrow",
            path=path,
            hint="pip install 'pytest-llmjudge[parquet]', or export the cases as CSV or JSONL",
        ) from None
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family
        raise SuiteError(f"not a readable Parquet file ({exc})", path=path) from None
    columns = [str(name) for name in parquet.schema_arrow.names]
    number = 0
    for batch in parquet.iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            number += 1
            yield number, columns, {str(key): value for key, value in row.items()}


HF_PREFIX = "hf://"


def is_hf_dataset(path: Path, spec: str, declared: str | None) -> bool:
    """Whether a ``cases_file`` names a Hugging Face dataset: ``hf://owner/name``, ``format: hf``,
    or a directory written by ``Dataset.save_to_disk`` (it holds ``dataset_info.json`` or
    ``dataset_dict.json``)."""
    if spec.startswith(HF_PREFIX) or declared == "hf":
        return True
    local = path.parent / path.name.partition("?")[0] if "?" in path.name else path
    return local.is_dir() and any((local / name).is_file() for name in ("dataset_info.json", "dataset_dict.json"))


def iter_hf(spec: str, base_dir: Path) -> Iterator[tuple[int, list[str], dict[str, Any]]]:
    """``(row number, columns, row)`` of a Hugging Face dataset, through the ``datasets`` library.

    ``hf://owner/name?split=test&config=xx`` loads from the hub cache (offline with
    ``HF_DATASETS_OFFLINE=1``: only what is cached is read; nothing here downloads in the
    tests); a local path (``data/my_set?split=test``) loads a ``save_to_disk`` directory.
    Rows are read from the memory-mapped Arrow table one at a time.
    """
    from urllib.parse import parse_qs

    location, _, query = spec.partition("?")
    options = {key: values[-1] for key, values in parse_qs(query).items()}
    unknown = sorted(set(options) - {"split", "config", "revision"})
    if unknown:
        raise SuiteError(f"unknown dataset option(s) {unknown} in {spec!r}; known: split, config, revision")
    try:
        import datasets  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise SuiteError(
            f"reading the dataset {location!r} needs the datasets library",
            hint="pip install 'pytest-llmjudge[datasets]', or export the cases as CSV or JSONL",
        ) from None
    split = options.get("split")
    try:
        if location.startswith(HF_PREFIX):
            name = location.removeprefix(HF_PREFIX).strip("/")
            loaded = datasets.load_dataset(
                name, options.get("config"), split=split or "test", revision=options.get("revision")
            )
        else:
            local = Path(location)
            loaded = datasets.load_from_disk(str(local if local.is_absolute() else base_dir / local))
            if isinstance(loaded, datasets.DatasetDict):
                if split is None:
                    raise SuiteError(
                        f"the dataset {location!r} has splits {sorted(loaded)}: name one",
                        hint=f"cases_file: {location}?split={sorted(loaded)[0]}",
                    )
                if split not in loaded:
                    raise SuiteError(f"the dataset {location!r} has no split {split!r}; it has {sorted(loaded)}")
                loaded = loaded[split]
    except SuiteError:
        raise
    except Exception as exc:  # the library's own errors: offline misses, bad names, bad directories
        offline = " (offline: only datasets already in the local cache can be read)" if _offline() else ""
        raise SuiteError(f"can't load the dataset {location!r}{offline}: {type(exc).__name__}: {exc}") from None
    columns = [str(name) for name in loaded.column_names]
    for number, row in enumerate(loaded, start=1):
        yield number, columns, {str(key): value for key, value in row.items()}


def _offline() -> bool:
    import os

    return any(
        os.environ.get(name, "").lower() in ("1", "true", "yes") for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")
    )


def _cell_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value if isinstance(value, str) else str(value)


def _list_value(name: str, text: str, where: str, path: Path, line: int) -> Any:
    if text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{where}: not a JSON list ({exc.msg})", path=path, line=line, field=name) from None
    if name == "tags":
        return [tag.strip() for tag in text.split(",") if tag.strip()]
    return [text] if name == "assert" else text


def _number(text: str, where: str, path: Path, line: int, field: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SuiteError(f"{where}: {text!r} is not a number", path=path, line=line, field=field) from None
    if not math.isfinite(value):
        raise SuiteError(f"{where}: {text!r} is not a finite number", path=path, line=line, field=field)
    return int(value) if value.is_integer() else value


def table_records(
    path: Path,
    fmt: str,
    *,
    columns: Mapping[str, str],
    case_fields: frozenset[str],
    encoding: str | None = None,
    source: str | None = None,
) -> Iterator[tuple[int, dict[str, Any], str]]:
    """``(location, record, where)`` for each row of a table, mapped to case fields.

    ``where`` reads "line 12" (CSV/TSV) or "row 12" (Parquet, datasets) for messages;
    ``location`` is the line or row number the suite builder reports. ``source`` is the
    ``cases_file`` text for a dataset (``hf://...``, ``dir?split=test``).
    """
    rows: Iterator[tuple[int, list[str], Mapping[str, Any]]]
    if fmt == "hf":
        rows = iter_hf(str(path) if source is None else source, path.parent)
        unit = "row"
    elif fmt == "parquet":
        rows = iter_parquet(path)
        unit = "row"
    else:
        rows = iter_delimited(path, "," if fmt == "csv" else "\t", encoding)
        unit = "line"
    fields_of: dict[str, str] | None = None
    for location, header, row in rows:
        if fields_of is None:
            fields_of = _column_fields(header, columns, case_fields, path)
        record: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        for column, field in fields_of.items():
            raw = row.get(column)
            if isinstance(raw, (list, dict)) and not field.startswith("metadata."):
                record[field] = raw  # a dataset's list or struct column needs no text form
                continue
            text = _cell_text(raw)
            where = f"{unit} {location}, column {column!r}"
            if field.startswith("metadata."):
                metadata[field.partition(".")[2]] = "" if text is None else text
                continue
            if text is None or (text.strip() == "" and field not in _KEEP_EMPTY):
                continue
            owner, dot, key = field.partition(".")
            if dot:
                slot = record.setdefault(owner, {})
                if owner == "human":
                    slot[key] = [_number(part.strip(), where, path, location, field) for part in text.split("|")]
                elif owner == "recorded" and "|" in text:
                    # One judgment per repeat: the case's recorded samples (pass_at_k, pass_hat_k).
                    slot[key] = {
                        "samples": [_number(part.strip(), where, path, location, field) for part in text.split("|")]
                    }
                elif owner in _NUMBER_MAPS:
                    slot[key] = _number(text.strip(), where, path, location, field)
                else:
                    slot[key] = text
            elif field in _LIST_FIELDS:
                record[field] = _list_value(field, text, where, path, location)
            else:
                record[field] = text
        if metadata:
            record["metadata"] = metadata
        yield location, record, unit


def _column_fields(
    header: list[str], columns: Mapping[str, str], case_fields: frozenset[str], path: Path
) -> dict[str, str]:
    """Which case field each column feeds (``metadata.<name>`` for the rest)."""
    present = set(header)
    mapped: dict[str, str] = {}
    for field, column in columns.items():
        if field not in case_fields and field.partition(".")[0] not in case_fields:
            raise SuiteError(
                f"columns maps unknown case field {field!r}",
                path=path,
                field="columns",
                hint=f"case fields: {', '.join(sorted(case_fields))}",
            )
        if column not in present:
            raise SuiteError(
                f"columns maps {field!r} to column {column!r}, which the header lacks",
                path=path,
                line=1,
                field="columns",
                hint=f"the header names: {', '.join(header)}",
            )
        if column in mapped:
            raise SuiteError(
                f"column {column!r} is mapped to both {mapped[column]!r} and {field!r}", path=path, field="columns"
            )
        mapped[column] = field
    taken = set(mapped.values())
    for column in header:
        if column in mapped:
            continue
        owner = column.partition(".")[0]
        if (column in case_fields or (owner in case_fields and "." in column)) and column not in taken:
            mapped[column] = column
        else:
            mapped[column] = f"metadata.{column}"
    return mapped
