"""How the text of CSV and JSON Lines tables becomes typed columns (Parquet has its types).

Column types are pyarrow's inference, with these rules on top, so that no value changes
silently:

- CSV: only an empty cell is a missing value: null in a number, boolean or date/time column,
  the empty string in a text column. Any other cell is read as written: ``nan``/``NaN`` in a
  float column is NaN, and a column holding ``NA``, ``N/A`` or ``NULL`` beside numbers is text.
- CSV: the key column (``key=``, ``--key-column``) and ``__key__`` are text as written
  (``007`` stays ``'007'``), as are the columns an append's dataset stores as text.
- A date/time column whose every value names its zone (``2024-01-01T10:00:00+02:00``) is a
  UTC timestamp column (the instant kept), one where some values name a zone and others do not
  is text as written, in JSON Lines as in CSV (pyarrow's JSON reader drops the zones).
- A column without a value in any row is text holding nulls, which later files and appends
  can fill (and which an append casts to the type its dataset stores); where another file
  gives it a type, it takes that type (:mod:`dload_arrow.ingest.empty_columns`).
- An integer that float64 cannot hold exactly (beyond 2**53: ``9007199254740993``, or beyond
  int64, where pyarrow infers float64 for the column; in JSON Lines also an int next to a
  float, in a column or inside its objects and lists) is refused with the file, column (as
  ``meta.scores[]`` inside one) and value, rather than stored rounded. A CSV number beyond
  float64's range (``1e400``), which pyarrow reads as inf, is refused so too (``inf`` as
  written stays inf); pyarrow's JSON reader refuses one itself.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.args import column_names
from dload_arrow.errors import SchemaError
from dload_arrow.ingest.csv_codes import warn_codes
from dload_arrow.ingest.table_stream import csv_parse, open_table_file
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["checked_batches", "csv_convert", "decoded_dictionaries", "null_key", "text_column_list",
           "values_at"]

_EXACT = 2.0 ** 53  # every integer of smaller magnitude is a float64 exactly
_LONG_INT = r"^\s*[+-]?[0-9]{16,}\s*$"  # integers of 15 digits or fewer are all below 2**53
# A number that may be beyond float64's range (1.8e308): a 3-digit exponent, or 300 digits.
# Candidates for a number beyond float64 (each is then read): a 3-digit exponent, or 200 digits
# and a 1-2 digit one, or 290 digits (10**308 is the largest power float64 holds).
_HUGE = r"^\s*[+-]?([0-9.]+[eE]\+?[0-9]{3,}|[0-9.]{200,}[eE]\+?[0-9]{1,2}|[0-9.]{290,})\s*$"
# A JSON integer literal of 16 digits or more (not the digits of a float such as 1.5e+19).
_LONG_LITERAL = re.compile(rb"(?<![0-9.])[0-9]{16,}(?![0-9.eE])")


def text_column_list(value: Sequence[str] | str | None) -> list[str]:
    """``text_columns=`` as a list: one name given as a str is one column (QA api55: its
    characters were taken as names, so ``"zip"`` lost its leading zeros)."""
    return column_names(value, "open_table", "text_columns") or []


def csv_convert(text_columns: Sequence[str] = (), key: str | None = None,
                include: Sequence[str] = ()) -> Any:
    """CSV conversion options: the module's rules, ``text_columns`` and the keys as text."""
    import pyarrow.csv as pcsv

    text = {c: pa.string() for c in (*text_columns, KEY_COLUMN, *([key] if key else []))}
    return pcsv.ConvertOptions(column_types=text, null_values=[""], strings_can_be_null=False,
                               include_columns=list(include))


def _refuse_empty_keys(batch: pa.RecordBatch, key: str | None, path: str, at: int) -> None:
    """Refuse an empty cell in a CSV key column (read as text, it would be the key '')."""
    for name in sorted({key or KEY_COLUMN, KEY_COLUMN}):
        if name in batch.schema.names:
            col = batch.column(name)
            if pa.types.is_string(col.type) and pc.any(pc.equal(col, "")).as_py():
                row = at + pc.index(col, "").as_py() + 1
                raise SchemaError(
                    f"{path!r}: key column {name!r} is empty in data row {row}; every sample "
                    "needs a key: fill the cell, or drop the row"
                )


ValuePath = tuple[str | None, ...]  # a column, then struct fields by name and None for list items


def _suspects(batch: pa.RecordBatch) -> list[ValuePath]:
    """The float64 values of ``batch`` holding a value of 2**53 or more (maybe an integer
    rounded: no smaller one is), as paths: a column, or a float inside its structs and lists."""
    out = []
    for f, col in zip(batch.schema, batch.columns, strict=True):
        for path, values in _float_leaves((f.name,), col):
            if values.null_count == len(values):
                continue
            low, high = pc.min_max(values).values()  # one pass; the exact test past 2**53
            if max(-low.as_py(), high.as_py()) < _EXACT:
                continue
            # inf too: an integer beyond float64's range (1e309 and up) reads as inf
            big = pc.greater_equal(pc.abs(values), _EXACT)
            if pc.any(big).as_py():
                out.append(path)
    return out


def _float_leaves(path: ValuePath, col: pa.Array) -> Iterator[tuple[ValuePath, pa.Array]]:
    """The float64 arrays at and inside ``col`` (struct fields, list items), with their paths."""
    t = col.type
    if pa.types.is_float64(t):
        yield path, col
    elif pa.types.is_struct(t):
        for i, child in enumerate(col.flatten()):  # the struct's offset and nulls applied
            yield from _float_leaves((*path, t.field(i).name), child)
    elif (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
          or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        yield from _float_leaves((*path, None), col.flatten())


def _label(path: ValuePath) -> str:
    """``path`` as written in messages: ``meta.scores[]``."""
    return str(path[0]) + "".join("[]" if s is None else f".{s}" for s in path[1:])


def values_at(value: Any, steps: ValuePath) -> Iterator[Any]:
    """The JSON values at ``steps`` inside ``value`` (field names, None: each list item)."""
    if not steps:
        yield value
    elif steps[0] is None:
        if isinstance(value, list):
            for item in value:
                yield from values_at(item, steps[1:])
    elif isinstance(value, dict) and steps[0] in value:
        yield from values_at(value[steps[0]], steps[1:])


def _inexact(text: str) -> bool:
    """Whether float64 rounds the integer ``text``."""
    try:
        return float(text) != int(text)
    except ValueError:  # more digits than int() reads (4,300): far beyond float64
        return True


def _csv_inexact(path: str, columns: list[str], endpoint_url: str | None,
                 read_options: Any) -> tuple[str, str] | None:
    import pyarrow.csv as pcsv

    f, _ = open_table_file(path, endpoint_url)
    with f:
        reader = pcsv.open_csv(f, read_options=read_options,
                               parse_options=csv_parse(path, endpoint_url),
                               convert_options=csv_convert(columns, include=columns))
        for batch in reader:
            for name in columns:
                col = batch.column(name)
                for text in col.filter(pc.match_substring_regex(col, _LONG_INT)).to_pylist():
                    if _inexact(text.strip()):
                        return name, text.strip()
                for text in col.filter(pc.match_substring_regex(col, _HUGE)).to_pylist():
                    if math.isinf(float(text)):  # 1e400: pyarrow reads inf
                        return name, text.strip()
    return None


def _jsonl_inexact(path: str, suspects: list[ValuePath], endpoint_url: str | None
                   ) -> tuple[str, str] | None:
    f, _ = open_table_file(path, endpoint_url)
    with f:
        for line in f:
            if not _LONG_LITERAL.search(line):
                continue
            try:
                row = json.loads(line)
            except ValueError:  # pyarrow read it: an integer of more than 4,300 digits
                continue
            for steps in suspects:
                for v in values_at(row, steps):
                    if type(v) is int and _inexact(str(v)):
                        return _label(steps), str(v)
    return None


def _inexact_error(path: str, fmt: str, column: str, text: str) -> SchemaError:
    if math.isinf(float(text)) and not text.lstrip("+-").isdigit():
        shown = text if len(text) < 40 else text[:30] + "..."
        return SchemaError(
            f"{path!r}, column {column!r}: the number {shown} "
            "is beyond float64's range (about 1.8e308) and would be stored as inf; write inf "
            "(or -inf) if that is what it means, or "
            "convert the file to Parquet with the column as text (pyarrow.parquet.write_table("
            "pyarrow.csv.read_csv(path, convert_options=pyarrow.csv.ConvertOptions("
            f"column_types={{{column!r}: pyarrow.string()}})), 'table.parquet')) and commit that"
        )
    if fmt == "csv":
        fix = (f"convert the file to Parquet with the types you want (pyarrow.parquet."
               f"write_table(pyarrow.csv.read_csv(path, convert_options=pyarrow.csv."
               f"ConvertOptions(column_types={{{column!r}: pyarrow.string()}})), "
               "'table.parquet'), or decimal128(38, 0) for numbers) and commit that")
    else:
        fix = ("write the numbers as JSON strings (\"" + text + "\") so they are read as text, "
               "or convert the file to Parquet with the types you want and commit that")
    return SchemaError(
        f"{path!r}, column {column!r}: the integer {text} would be stored as "
        f"{float(text)!r} (the column is read as float64, which "
        "holds integers exactly only up to 2**53; pyarrow infers float64 for integers beyond "
        f"int64 and for integers beside decimals); {fix}"
    )


def checked_batches(batches: Iterator[pa.RecordBatch], path: str, fmt: str,
                    endpoint_url: str | None, read_options: Any = None, key: str | None = None,
                    warned: set[str] | None = None) -> Iterator[pa.RecordBatch]:
    """``batches`` of the CSV or JSON Lines file ``path``; SchemaError at the first with an
    empty CSV key cell, or whose float64 columns hold an integer written in the file that
    float64 rounds (the file's text is read again only for such columns)."""
    checked: set[ValuePath] = set()
    at = 0
    for batch in batches:
        if fmt == "csv":
            _refuse_empty_keys(batch, key, path, at)
            if not at:  # the block whose text decided the types
                warn_codes(path, batch, endpoint_url, warned)
        at += batch.num_rows
        suspects = [c for c in _suspects(batch) if c not in checked]
        if suspects:  # CSV columns are flat: each path is a column's name
            found = (_csv_inexact(path, [str(c[0]) for c in suspects], endpoint_url,
                                  read_options) if fmt == "csv"
                     else _jsonl_inexact(path, suspects, endpoint_url))
            if found is not None:
                raise _inexact_error(path, fmt, *found)
            checked.update(suspects)  # the whole file's text is fine for these columns
        yield batch


def decoded_dictionaries(schema: pa.Schema, other: pa.Schema) -> pa.Schema:
    """``schema`` with a dictionary column decoded where ``other`` stores it another way
    (categorical in one file, plain strings in the next)."""
    return pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type)
                      and f.name in other.names and other.field(f.name).type != f.type
                      else f for f in schema])


def null_key(path: str, key: str, before: int, col: pa.Array) -> SchemaError:
    """The error for a key cell with no value in file ``path`` (``before`` rows read)."""
    row = before + 1 + int(pc.index(col.is_null(), True).as_py())
    return SchemaError(f"{path!r}: key column {key!r} has no value in data row {row}; every "
                       "sample needs a key: fill it in, or pick another --key-column (key=)")
