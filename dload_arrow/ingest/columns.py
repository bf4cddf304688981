"""Column types chosen by file extension, and decoding of file bytes into column values.

The rules (also in docs/DESIGN.md, "Ingestion and the CLI"):

- text (``.txt``, ``.md``, ``.caption``, ``.html``, ...) -> ``string`` (UTF-8);
- ``.json`` -> ``string`` holding the JSON text verbatim. Per-sample JSON usually varies in
  structure, which one Arrow struct type could not hold; the text keeps every document intact
  and DuckDB's ``json_extract`` or ``json.loads`` reads it back;
- ``.cls``, ``.idx``, ``.index``, ``.label`` -> ``int64`` (the webdataset convention);
- ``.npy`` -> a tensor: fixed-size list of the array's dtype with the shape in the field
  metadata (every sample of the column must have the first sample's shape and dtype). Numbers
  and booleans only: an empty array (a 0 in its shape), text or bytes (``<U``, ``|S``),
  datetime64/timedelta64, complex and structured dtypes are refused, naming the file;
- everything else (images, audio, video, ``.bin``, ...) -> ``binary``, the file's bytes.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.errors import SchemaError
from dload_arrow.ingest.globs import exact_path
from dload_arrow.store.rows import SHAPE_META

__all__ = [
    "INT_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "column_kind",
    "decode_value",
    "field_for",
    "npy_field",
]

TEXT_EXTENSIONS = frozenset({
    "txt", "text", "md", "caption", "captions", "html", "htm", "xml", "yaml", "yml", "csv",
    "tsv", "srt", "vtt", "json", "jsonl", "toml", "ini", "log",
})
INT_EXTENSIONS = frozenset({"cls", "idx", "index", "label"})


def column_kind(column: str) -> str:
    """``"text"``, ``"int"``, ``"npy"`` or ``"binary"`` for a column named by its extension."""
    ext = column.rsplit(".", 1)[-1].lower()
    if ext in TEXT_EXTENSIONS:
        return "text"
    if ext in INT_EXTENSIONS:
        return "int"
    if ext == "npy":
        return "npy"
    return "binary"


_NPY_MAGIC = b"\x93NUMPY"


def _load_npy(data: bytes, where: str) -> np.ndarray:
    if not data.startswith(_NPY_MAGIC):
        # numpy would take it for a pickle and advise allow_pickle=True, which is never safe.
        raise SchemaError(
            f"{where}: not a .npy array (it does not start with the .npy magic "
            f"{_NPY_MAGIC!r}, but with {data[:8]!r}); write it with numpy.save, or rename it "
            "with another extension (e.g. .bin) to store its bytes as they are"
        )
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise SchemaError(f"{where}: not a readable .npy array ({e})") from e
    if not isinstance(arr, np.ndarray) or arr.dtype.hasobject:
        raise SchemaError(f"{where}: .npy holds an object array; save a numeric array instead")
    if not arr.dtype.isnative:  # saved on a big-endian machine: the same values, this order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _refuse_untensored(arr: np.ndarray, where: str) -> None:
    """Refuse what a tensor column cannot hold and give back as the same ``.npy``."""
    kind = arr.dtype.kind
    if kind in "US":
        what, fix = ("text", "a .txt or .json file") if kind == "U" else ("bytes", "a .bin file")
        raise SchemaError(
            f"{where}: a .npy of {what} (dtype {arr.dtype}) is not stored: tensors hold numbers "
            f"and booleans; store each sample's {what} as {fix} instead"
        )
    if kind in "mM":  # Arrow has timestamps, but no tensor of them that reads back as .npy
        raise SchemaError(
            f"{where}: dtype {arr.dtype} has no Arrow tensor type; save the array as integers "
            "(arr.view('int64'), the count of its unit since 1970) or as text in a .json file"
        )
    if arr.size == 0:  # a fixed-size list of size 0 is not storable (Arrow divides by it)
        raise SchemaError(
            f"{where}: the .npy array of shape {arr.shape} holds no element, and a tensor "
            "column of zero-size tensors cannot be stored; drop the file, or save a non-empty "
            "array"
        )


def _arrow_type(dtype: np.dtype) -> pa.DataType | None:
    try:
        return pa.from_numpy_dtype(dtype)
    except (pa.ArrowNotImplementedError, TypeError):
        return None  # complex, structured: not the column's type, whatever it is


def npy_field(column: str, data: bytes, where: str) -> pa.Field:
    """The tensor field for ``column`` from one sample's ``.npy`` bytes (SchemaError for what
    a tensor cannot hold: see the module docstring)."""
    arr = _load_npy(data, where)
    _refuse_untensored(arr, where)
    size = int(np.prod(arr.shape)) if arr.ndim else 1
    try:
        typ = pa.list_(pa.from_numpy_dtype(arr.dtype), size)
    except (pa.ArrowNotImplementedError, TypeError) as e:
        raise SchemaError(f"{where}: dtype {arr.dtype} has no Arrow type ({e})") from e
    return pa.field(column, typ, metadata={SHAPE_META: json.dumps(list(arr.shape)).encode()})


def field_for(column: str, sample_bytes: bytes | None, where: str) -> pa.Field:
    """The Arrow field of ``column``; ``sample_bytes`` (one value) is needed for ``.npy``."""
    kind = column_kind(column)
    if kind == "text":
        return pa.field(column, pa.string())
    if kind == "int":
        return pa.field(column, pa.int64())
    if kind == "npy":
        if sample_bytes is None:
            raise SchemaError(f"column {column!r}: no value to read the tensor shape from")
        return npy_field(column, sample_bytes, where)
    return pa.field(column, pa.binary())


_LABEL = re.compile(rb"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _decode_label(column: str, data: bytes, where: str, name: str) -> int:
    """A ``.cls``/``.idx``/``.index``/``.label`` file as an int64: plain digits with an optional
    sign and surrounding whitespace (not ``int()``'s ``1_000``, which no other reader takes)."""
    ext = column.rsplit(".", 1)[-1]
    fix = (  # (the file's own path: its bare name left out every folder's, QA ocr66)
        f"labels are stored as int64; fix the file, or rename its extension (e.g. .{ext} -> "
        f".txt or .bin) to store it as text or bytes, or leave it out with --exclude "
        f"{shlex.quote(exact_path(name))} (exclude= in Python; --exclude '*.{ext}' would "
        "drop every label)"
    )
    text = data.strip()
    if _LABEL.fullmatch(text) is None:
        raise SchemaError(
            f"{where}: expected an integer label (digits with an optional sign) in a .{ext} "
            f"file, got {data[:40]!r}{'...' if len(data) > 40 else ''}; {fix}"
        )
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        shown = text[:40].decode("ascii") + ("..." if len(text) > 40 else "")
        raise SchemaError(f"{where}: the label {shown} does not fit in int64; {fix}")
    return value


def decode_value(field: pa.Field, data: bytes, where: str, name: str) -> Any:
    """The column value of one file's bytes (``where`` names the file in errors, ``name`` is
    its path in the folder or archive: what ``--exclude`` leaves out).

    Text is ``str``, labels ``int``, ``.npy`` a numpy array (checked against the column's
    shape and dtype), anything else the ``bytes`` themselves.
    """
    kind = column_kind(field.name)
    if kind == "text":
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(  # (anchored, wildcards escaped: QA ocr66, '[draft]/x.json')
                f"{where}: not UTF-8 text ({e}); leave it out (--exclude "
                f"{shlex.quote(exact_path(name))}, "
                "exclude= in Python), convert it (iconv -f latin1 -t utf-8), or rename it to a "
                "binary extension such as .bin to keep its bytes"
            ) from e
    if kind == "int":
        return _decode_label(field.name, data, where, name)
    if kind == "npy":
        arr = _load_npy(data, where)
        shape = json.loads((field.metadata or {})[SHAPE_META])
        if list(arr.shape) != shape or _arrow_type(arr.dtype) != field.type.value_type:
            raise SchemaError(
                f"{where}: array of shape {list(arr.shape)} and dtype {arr.dtype} does not match "
                f"the column's shape {shape} and type {field.type.value_type}; every sample of "
                f"column {field.name!r} needs the same shape and dtype. "
                + ragged_npy_fix(field.name, arr.dtype)
            )
        return arr

    return data


def ragged_npy_fix(column: str, dtype: Any) -> str:
    """The ways to commit ``.npy`` arrays of varying shape (audio features ``(T, 80)``), which
    a tensor column cannot hold (QA audio59: no message said what to do)."""
    t = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32"}.get(
        str(dtype), "float32")
    return (f"For arrays of varying length: leave them out (--exclude '*.{column}') and commit "
            f"them from Python as lists (repo.commit(name, samples, schema=pa.schema([("
            f"{column!r}, pa.list_(pa.list_(pa.{t}())))])), a list of rows per sample), or "
            "keep the files' bytes under another extension (.bin) and np.load them in a map")
