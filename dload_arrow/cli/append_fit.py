"""An append's input fitted to the dataset it goes into: read as the stored columns read
(text stays text), zoned times into columns stored without a zone, then conformed."""

from __future__ import annotations

from typing import Any

from dload_arrow.errors import NotFoundError

__all__ = ["fit_to", "latest_schema", "text_columns"]


def latest_schema(repo: Any, name: str) -> Any:
    """The schema of ``name``'s latest version, for an append (None: nothing to append to,
    which the append itself says)."""
    try:
        return repo.manifest(name, "latest").schema
    except NotFoundError:
        return None


def text_columns(schema: Any) -> list[str]:
    """The columns ``schema`` stores as text: a CSV appended to them reads them as written
    (inferred, ``007`` would become 7 and then be stored as "7")."""
    import pyarrow as pa

    return [] if schema is None else [
        f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]


def fit_to(schema: Any, name: str, source: str, samples: Any, key: str | None,
            kind: str) -> Any:
    """``samples`` fitted to the columns of ``name``'s latest version, for an append."""
    from dload_arrow.store.conform import conform_to

    if schema is None:
        return samples
    if kind == "table":
        samples = _utc_wall_times(samples, schema)
    # A table without keys gets row numbers continuing the stored rows' (store/rows.py).
    return conform_to(samples, schema, key, where=source, dataset=name, files=kind != "table")


def _utc_wall_times(reader: Any, schema: Any) -> Any:
    """A table's zoned times appended to a column stored without a zone, as UTC wall times:
    as JSON Lines were read before 2 Dec 2026 (so datasets made then take appends)."""
    import pyarrow as pa

    def naive(name: str) -> bool:
        return (name in schema.names and pa.types.is_timestamp(schema.field(name).type)
                and schema.field(name).type.tz is None)

    fields = [f.with_type(pa.timestamp(f.type.unit)) if pa.types.is_timestamp(f.type)
              and f.type.tz is not None and naive(f.name) else f for f in reader.schema]
    target = pa.schema(fields, metadata=reader.schema.metadata)
    if target == reader.schema:
        return reader
    return pa.RecordBatchReader.from_batches(target, (b.cast(target) for b in reader))
