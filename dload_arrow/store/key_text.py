"""A table's key column as the strings keys are: integers as text, bytes and unchecked
strings decoded as UTF-8 (refused, naming the row, when they are not)."""

from __future__ import annotations

import pyarrow as pa

from dload_arrow.errors import SchemaError

__all__ = ["key_text"]


def key_text(col: pa.Array, key: str, at: int) -> pa.Array:
    """Key column ``key`` (rows from ``at``) as strings; bytes that are not UTF-8 refused
    (string keys a writer never checked too, as bytes)."""
    col = col.dictionary_decode() if pa.types.is_dictionary(col.type) else col
    text = col.type in (pa.string(), pa.large_string(), pa.string_view())
    try:
        return (col.cast(pa.large_binary()) if text else col).cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        if not (pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)
                or text):
            raise SchemaError(f"key column {key!r} ({col.type}) does not convert to "
                              f"strings: {e}; keys are strings or integers") from e
        for i, v in enumerate(col.cast(pa.large_binary()).to_pylist()):
            try:
                (v or b"").decode()
            except UnicodeDecodeError:
                raise SchemaError(
                    f"key column {key!r}, row {at + i}: key {v!r} is not UTF-8 text; keys "
                    "are strings: decode the column first (e.g. with errors='replace'), or "
                    "use another key column"
                ) from e
        raise SchemaError(f"key column {key!r} does not convert to strings: {e}") from e
