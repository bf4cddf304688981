"""Hive-style partition folders: ``year=2024/month=01/part-0.parquet``, as Spark, Hive and
``pyarrow.parquet.write_to_dataset`` write a table. The partition values live only in the
folder names, so they become columns of the rows below them (after the files' own columns),
as pyarrow's and polars' readers make them: without them the 2023 and 2024 rows could not be
told apart. A column is int64 when every value is a plain integer (``2024``, not ``007``),
else a string; ``__HIVE_DEFAULT_PARTITION__`` (what Hive writes for a null) is null. An append
takes the types its dataset stores: ``month=01`` into an int64 ``month`` (first committed from
``month=10``, ``month=11``) is 1, and ``month=10`` into a string ``month`` is ``'10'``.
"""

from __future__ import annotations

import os
import re
import urllib.parse

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import SchemaError

__all__ = ["Partitions"]

_SEGMENT = re.compile(r"\A([^=]+)=(.*)\Z")
_INT = re.compile(r"\A-?(0|[1-9][0-9]{0,18})\Z")
_DIGITS = re.compile(r"\A-?[0-9]{1,19}\Z")  # into a stored integer column: 01 is 1
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


class Partitions:
    """The partition columns of the table files under ``root`` (none: :meth:`of` gives None)."""

    def __init__(self, names: list[str], values: dict[str, list[str | None]],
                 stored: pa.Schema | None = None) -> None:
        self.names = names
        self.values = values  # file path -> its value per partition column
        self.fields = [pa.field(n, _type([v[i] for v in values.values()], _stored(stored, n)))
                       for i, n in enumerate(names)]

    @classmethod
    def of(cls, root: str, files: list[str],
           stored: pa.Schema | None = None) -> Partitions | None:
        """The partitions of ``files`` in the local folder ``root``; None when no file is in a
        ``name=value`` folder. Files in folders of other partition columns are refused.
        ``stored``: the schema of the dataset the rows are appended to."""
        if not os.path.isdir(root):
            return None
        layouts: dict[tuple[str, ...], str] = {}
        values: dict[str, list[str | None]] = {}
        for f in files:
            rel = os.path.relpath(os.path.dirname(f), root).replace(os.sep, "/")
            found = [_SEGMENT.match(s) for s in ([] if rel == "." else rel.split("/"))]
            pairs = [(m[1], urllib.parse.unquote(m[2])) for m in found if m is not None]
            layouts.setdefault(tuple(k for k, _ in pairs), f)
            values[f] = [None if v == _HIVE_NULL else v for _, v in pairs]
        if list(layouts) == [()]:
            return None
        if len(layouts) > 1:
            (a, fa), (b, fb) = list(layouts.items())[:2]
            raise SchemaError(
                f"{root!r} mixes partition folders: {fa!r} is under {_shown(a)} and {fb!r} "
                f"under {_shown(b)}, so their partition columns differ; commit each layout "
                "separately (--include), or move the files into one layout"
            )
        return cls(list(next(iter(layouts))), values, stored)

    def extend(self, schema: pa.Schema) -> pa.Schema:
        """``schema`` with the partition columns after the files' own."""
        clash = [n for n in self.names if n in schema.names]
        if clash:
            raise SchemaError(
                f"column {clash[0]!r} is both a partition folder ({clash[0]}=...) and a column "
                "in the files; rename one of them"
            )
        return pa.schema([*schema, *self.fields])

    def add(self, batch: pa.RecordBatch, path: str) -> pa.RecordBatch:
        """The rows of file ``path`` with its partition values as columns."""
        n = batch.num_rows
        cols = [*batch.columns]
        for field, value in zip(self.fields, self.values[path], strict=True):
            typed = None if value is None else (int(value) if pa.types.is_integer(field.type)
                                                else value)
            cols.append(pc.fill_null(pa.nulls(n, field.type), typed) if typed is not None
                        else pa.nulls(n, field.type))
        return pa.RecordBatch.from_arrays(cols, schema=self.extend(batch.schema))


def _type(values: list[str | None], stored: pa.DataType | None = None) -> pa.DataType:
    present = [v for v in values if v is not None]
    if stored is not None and (pa.types.is_string(stored) or pa.types.is_large_string(stored)):
        return pa.string()
    form = _DIGITS if stored is not None and pa.types.is_integer(stored) else _INT
    ints = bool(present) and all(form.match(v) and -(2**63) <= int(v) < 2**63 for v in present)
    return pa.int64() if ints else pa.string()


def _stored(schema: pa.Schema | None, name: str) -> pa.DataType | None:
    return None if schema is None or name not in schema.names else schema.field(name).type


def _shown(names: tuple[str, ...]) -> str:
    return "/".join(f"{n}=..." for n in names) if names else "no partition folder"
