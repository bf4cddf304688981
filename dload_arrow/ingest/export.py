"""The reverse of ingestion: write one sample's fields as files, never outside the target.

Sample ``a/x`` with columns ``jpg`` and ``label`` becomes ``DIR/a/x.jpg`` and ``DIR/a/x.label``,
so ingesting ``DIR`` again gives the same sample. Blobs are written as their bytes, text as
UTF-8, tensors as ``.npy``, numbers as text, anything else (lists, structs) as JSON.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import errno
import json
import math
import os
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.errors import InvalidNameError, SchemaError, StorageError, UnsafePathError
from dload_arrow.ingest.grouping import check_entry_name
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.rows import field_shape

__all__ = ["write_sample_files"]


def _npy_dtype(t: pa.DataType) -> Any:
    """The numpy dtype a tensor of ``t`` is saved with: text and bytes (tensors committed
    from a .npy before such files were refused) as unicode and bytes, not objects, which
    np.save cannot write without pickle."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return np.str_
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return np.bytes_
    return t.to_pandas_dtype()


class _Missing(Exception):
    """A tensor holds a missing element (None), which a .npy file of its type cannot hold."""


def _encode(value: Any, field: pa.Field | None) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    shape = field_shape(field) if field is not None else None
    if isinstance(value, np.ndarray) or shape is not None:
        arr = np.asarray(value)
        if arr.dtype == object and any(v is None for v in arr.flat):
            raise _Missing(str(arr.dtype if field is None else field.type.value_type))
        if shape is not None and field is not None:
            arr = arr.astype(_npy_dtype(field.type.value_type), copy=False).reshape(shape)
        import io

        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        return buf.getvalue()
    if isinstance(value, (bool, np.bool_)):  # JSON's, as inside lists: not Python's True
        return b"true" if value else b"false"
    if isinstance(value, (int, float, np.generic)):
        return str(value).encode()
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, decimal.Decimal)):
        return _text(value).encode()  # bare, as text is (QA eng58)
    return json.dumps(_strict(value), default=_text, allow_nan=False).encode()


def _text(value: Any) -> str:
    """A value JSON has no type for, as text: times in ISO 8601 (``T``), durations in
    seconds, decimals without an exponent (QA review58c)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return f"{value.total_seconds():g}"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    return str(value)


def _strict(value: Any) -> Any:
    """``value`` as strict JSON takes it (QA roundtrip55: ``NaN``, ``Infinity`` and Python's
    ``b'..'`` reprs were written): NaN and infinities as null, as ``dload head --json`` has
    them, and bytes as base64 text (the one encoding every JSON reader can undo)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, np.ndarray):
        return _strict(value.tolist())
    return value


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _name_max(root: str) -> int:
    """The longest file name (bytes) the filesystem under ``root`` (or its nearest existing
    parent) takes; 255, the common limit, where it cannot say."""
    probe = root
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        return os.pathconf(probe, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _check_length(key: str, column: str, root: str, limit: int) -> None:
    for part in f"{key}.{column}".split("/"):
        size = len(os.fsencode(part))
        if size > limit:
            raise InvalidNameError(
                f"sample {key!r} column {column!r}: the file name {part[:40]!r}... is {size} "
                f"bytes, longer than the filesystem under {root} allows ({limit}); nothing was "
                "written. Read this sample with ds.get() or ds.to_arrow() instead")


def _write(path: str, data: bytes, dest: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)  # the umask decides, as open() does
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{path} is a symbolic link, which export does not write through (it could "
                f"lead outside {dest}): remove it, or export to an empty folder") from None
        raise StorageError(f"cannot write {path}: {e.strerror or e}") from e
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_sample_files(
    sample: dict[str, Any], dest: str | os.PathLike[str], schema: pa.Schema | None = None
) -> list[str]:
    """Write each non-null column of ``sample`` as ``DEST/<key>.<column>``; return the paths.

    Raises:
        UnsafePathError: the key or a column name would place a file outside ``dest`` (an
            absolute key, ``..``, a separator in a column name, or a symlink inside ``dest``
            pointing out of it), or the file to write is a symbolic link. Nothing is written
            in the first cases.
        InvalidNameError: a file name longer than the filesystem allows (nothing written).
        StorageError: a file or folder cannot be written (permissions, space, a file where
            a folder must go), naming it.
    """
    key = str(sample[KEY_COLUMN])
    rel_key = check_entry_name(key, f"sample {key!r}")
    if rel_key != key:
        raise UnsafePathError(f"sample key {key!r} is not a plain relative path; cannot export it")
    root = os.path.realpath(os.fspath(dest))
    plan: list[tuple[str, bytes]] = []
    limit = _name_max(root)  # one filesystem query per sample, not per column
    for column, value in sample.items():
        if column == KEY_COLUMN or value is None:
            continue
        if "/" in column or "\\" in column or column in (".", "..") or "\x00" in column:
            raise UnsafePathError(
                f"column name {column!r} cannot be a file extension (a file is written as "
                "KEY.COLUMN); read that sample in Python instead (ds.get(key)), or derive a "
                "copy with the column renamed")
        field = schema.field(column) if schema is not None and column in schema.names else None
        _check_length(key, column, root, limit)
        path = os.path.join(root, *f"{key}.{column}".split("/"))
        if not _inside(os.path.abspath(path), root):
            raise UnsafePathError(f"sample {key!r} column {column!r} would be written outside "
                                  f"{dest}")
        try:
            plan.append((path, _encode(value, field)))
        except _Missing as e:
            raise SchemaError(
                f"sample {key!r} column {column!r}: its {e} tensor holds a missing element, "
                "which a .npy file cannot hold (no missing value for integers or booleans); "
                "nothing was written for this sample. Fill it before exporting (e.g. repo."
                "derive with a map that replaces None), or read it with ds.get() / ds.to_arrow()"
            ) from None
    written = []
    for path, data in plan:
        parent = os.path.dirname(path)
        existing = parent
        while not os.path.lexists(existing) and existing != root:
            existing = os.path.dirname(existing)
        if not _inside(os.path.realpath(existing), root):  # before making any folder
            raise UnsafePathError(f"{existing} leads outside {dest} through a symbolic link")
        try:
            os.makedirs(parent, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as e:
            raise StorageError(f"cannot create the folder {parent}: a file is in the way "
                               f"({e.filename}); remove it, or export to an empty folder") from e
        except OSError as e:  # no space, read-only, ...
            raise StorageError(f"cannot create the folder {parent}: {e.strerror or e}") from e
        if not _inside(os.path.realpath(parent), root):
            raise UnsafePathError(f"{parent} leads outside {dest} through a symbolic link")
        _write(path, data, os.fspath(dest))
        written.append(path)
    return written
