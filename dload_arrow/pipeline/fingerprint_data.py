"""The content of data objects a derive's functions read, for their fingerprint.

A compiled regex, an Arrow array or table, a pandas or polars Series or frame, a torch tensor
read by a filter was named by its type alone, so a derive after it changed returned the memo
of the old one: a tightened spam regex kept the rows it now drops, a new dedup keep-list from
``repo.sql()`` kept the old keys (QA curation66). Each is hashed by its content here: its
pattern and flags, or its type and every buffer byte (a sha256 pass, as for a numpy array).
"""

from __future__ import annotations

import hashlib
import re
import sys
from typing import Any

import pyarrow as pa

__all__ = ["data_content"]


def data_content(v: Any) -> Any:
    """``v``'s content as a JSON value when it is one of the objects above; else None."""
    if isinstance(v, re.Pattern):
        return [v.pattern if isinstance(v.pattern, str) else v.pattern.hex(), int(v.flags)]
    if isinstance(v, pa.Array | pa.ChunkedArray | pa.Table | pa.RecordBatch):
        return _arrow(v)
    module = type(v).__module__.split(".")[0]
    if module == "pandas" and hasattr(v, "to_numpy"):
        return _pandas(v)
    if module == "polars" and hasattr(v, "to_arrow"):
        return _arrow(v.to_arrow())
    if module == "torch" and isinstance(v, sys.modules["torch"].Tensor):
        t = v.detach().cpu().contiguous()
        raw = t.reshape(-1).view(sys.modules["torch"].uint8).numpy() if t.numel() else b""
        return {"dtype": str(t.dtype), "shape": list(t.shape), "sha256": _sha([raw])}
    return None


def _arrow(v: Any) -> dict[str, Any]:
    """An Arrow object by its Arrow IPC stream: its type (schema), the values of its slice
    only, dictionaries included (QA review66c: buffers alone missed a categorical's)."""
    if isinstance(v, pa.Array | pa.ChunkedArray):
        v = pa.table({"v": v})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, v.schema) as w:
        w.write(v)
    return {"type": v.schema.to_string(truncate_metadata=False), "rows": v.num_rows,
            "sha256": _sha([sink.getvalue()])}


def _pandas(v: Any) -> Any:
    """A pandas Series, Index or DataFrame by its Arrow form, else (mixed object columns,
    repeated column names: QA review66c) by pandas' own row hashes, names and dtypes."""
    import pandas as pd

    frame = v.to_frame() if isinstance(v, pd.Series | pd.Index) else v
    if not isinstance(frame, pd.DataFrame):
        return None
    try:
        return _arrow(pa.Table.from_pandas(frame, preserve_index=True))
    except (pa.ArrowException, ValueError, TypeError):
        pass
    try:
        rows = pd.util.hash_pandas_object(frame, index=True).to_numpy()
    except (TypeError, ValueError):  # (lists beside scalars: by type, as a pickle is not
        return None  # stable across processes: a set's order, QA review66e)
    return {"columns": [str(c) for c in frame.columns], "dtypes": [str(d) for d in
            frame.dtypes], "sha256": _sha([rows])}


def _sha(parts: list[Any]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(memoryview(p).cast("B") if not isinstance(p, pa.Buffer) else p)
    return h.hexdigest()
