"""Which fields inside struct columns held no value in appended samples.

An appended table lacking a struct's field is warned of by its path (``type_walk.
missing_fields``); samples given as dicts lacking it just store nulls there, as a dict lacking
a column does (warned of by ``conform.warn_valueless``). :class:`FieldValues` counts, batch by
batch, the values of every field inside the struct columns (through lists of structs), so the
warning can name ``segments[].image`` when no appended segment had an image (QA review64b).
"""

from __future__ import annotations

import pyarrow as pa

from dload_arrow.type_walk import holds_type, is_list_type

__all__ = ["FieldValues"]


class FieldValues:
    """Value counts of the fields inside struct columns, over the batches given to it."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}  # path -> values (not null) seen there
        self.parents: dict[str, str] = {}  # path -> the path holding it

    def add(self, batch: pa.RecordBatch) -> None:
        for i, f in enumerate(batch.schema):
            col = batch.column(i)
            if holds_type(f.type, pa.types.is_struct):  # (a list of numbers: nothing inside)
                self._walk(col, f.name)

    def _walk(self, arr: pa.Array, path: str) -> None:
        t = arr.type
        if is_list_type(t):
            self._walk(arr.flatten(), f"{path}[]")
        elif pa.types.is_struct(t):
            for j, child in enumerate(arr.flatten()):  # (the struct's nulls merged in)
                if pa.types.is_null(child.type):
                    continue  # stored as null: it can hold no value (the commit warned)
                sub = f"{path}.{t.field(j).name}"
                self.parents[sub] = path
                self.values[sub] = self.values.get(sub, 0) + len(child) - child.null_count
                self._walk(child, sub)
        self.values[path] = self.values.get(path, 0) + len(arr) - arr.null_count

    def empty(self) -> list[str]:
        """Paths of fields that held no value where the struct holding them had one."""
        return [p for p, n in self.values.items() if p in self.parents and n == 0
                and self.values.get(self.parents[p], 0) > 0]
