"""A padded column's null items: the rows with a placeholder where each was, and where."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_lists", "fill_nulls", "null_items", "row_keys"]


def fill_nulls(cells: list[Any], inner: tuple[int, ...], empty: tuple[int, ...] = ()
               ) -> tuple[list[Any], list[np.ndarray | None]]:
    """Rows holding None (a stored list's null items; of rows of frames, a null frame or one
    holding a null) with 0 in their place (the pad goes there once the type is known), and
    where each row had one (None: nowhere); the mask leaves them out. ``empty``: a null
    item's shape where neither ``inner`` nor a frame of the batch gives it."""
    rows: list[Any] = []
    holes: list[np.ndarray | None] = []
    found = [null_items(c) for c in cells]
    frame = next((x for c, gaps in zip(cells, found, strict=True)  # the batch's frames'
                  if isinstance(c, list | tuple)  # (a row whose frames are all null: QA
                  for i, x in enumerate(c) if isinstance(x, list | tuple)  # review60d)
                  and not (gaps[i] if gaps else x is None)), None)
    try:  # (frames of frames: their 2-D shape, QA review64d)
        shape = inner or (np.shape(frame) if frame is not None else empty)
    except ValueError:  # a ragged frame: the padding refuses it
        shape = (len(frame),)  # type: ignore[arg-type]
    for c, gaps in zip(cells, found, strict=True):
        if gaps is None:
            holes.append(None)
            rows.append(c)
            continue
        holes.append(np.asarray(gaps))
        pad = np.zeros(shape, np.int8)  # (as an array past one axis: [] has no (0, 0) form)
        rows.append([(pad if pad.ndim > 1 else pad.tolist()) if gap else x for x, gap in zip(
            c, gaps, strict=True)])
    return rows, holes


def null_items(c: Any) -> list[bool] | None:
    """Which items of a row are null (or frames holding one); None when none is (C speed)."""
    if not isinstance(c, list | tuple) or not c:
        return None
    first = next((x for x in c if x is not None), None)
    if isinstance(first, list | tuple):  # rows of frames
        gaps = [x is None or (isinstance(x, list | tuple) and None in x) for x in c]
        return gaps if any(gaps) else None
    if hasattr(first, "__array__"):  # frames as arrays (`in` would compare their items)
        gaps = [x is None for x in c]
        return gaps if any(gaps) else None
    return [x is None for x in c] if None in c else None


def row_keys(name: str, cells: list[Any], max_length: int | None, lengths: bool,
             mask: bool) -> dict[str, np.ndarray]:
    """``{name}_length`` and ``{name}_mask`` of a batch whose rows stay lists (frames of two
    widths): every batch has the same keys (a loop reading ``_length`` failed mid-epoch)."""
    n = [min(len(c), max_length or len(c)) if c is not None else 0 for c in cells]
    width = max_length or max(n, default=0)
    out: dict[str, np.ndarray] = {}
    if lengths:
        out[f"{name}_length"] = np.asarray(n, dtype=np.int64)
    if mask:
        m = np.arange(width)[None, :] < np.asarray(n)[:, None]
        for i, c in enumerate(cells):
            gaps = null_items(c)
            if gaps is not None:
                m[i, :n[i]] &= ~np.asarray(gaps)[:n[i]]
        out[f"{name}_mask"] = m
    return out


def as_lists(name: str, cells: list[Any], max_length: int | None, lengths: bool,
             mask: bool) -> dict[str, Any]:
    """A batch's column given as lists (cut at ``max_length``) with its ``_length`` and
    ``_mask``: every batch of a stored list column has the same keys (QA docs64)."""
    cut = [c if c is None or not max_length else list(c[:max_length]) for c in cells]
    return {name: cut, **row_keys(name, cut, max_length, lengths, mask)}
