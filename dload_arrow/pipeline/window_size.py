"""How many rows a windowed shuffle's window holds: a row count, a byte size, or the default.

A byte size (``shuffle("256MB")``) counts *decoded* bytes: the rows per window come from the
first, middle and last shards' footers (their row groups' uncompressed sizes, of the columns
read: a projection's default window of large rows is larger), not from the stored bytes,
which made a 4 MiB scan stored in 1.2 KB count as 1.2 KB and an "8MB" window of 6,552 scans
(25 GiB; QA video60). The default window (16,384 rows or 8
row groups) is capped at ``DEFAULT_WINDOW_BYTES`` decoded: 16,384 clips of 5 MB were 80 GB.
And since a windowed shuffle holds about three windows (the one consumed, the next one being
decoded, the chunk between), a window whose three copies would not fit the memory this
process has left (``read/memory.available_memory``, ``DLOAD_MEMORY_LIMIT``) is warned of,
and one that alone would not fit is refused with the numbers, as a full shuffle's is; the
default one too: a window is never sized by the memory left, since the epoch's order (the
same on every rank and machine) depends on it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError, DloadError, InfeasiblePlanError, user_stacklevel
from dload_arrow.read.memory import MEMORY_LIMIT_ENV, available_memory
from dload_arrow.sizes import format_bytes, parse_size
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["DEFAULT_BUFFER", "DEFAULT_WINDOW_BYTES", "MIN_WINDOW_UNITS", "row_bytes",
           "window_rows"]

DEFAULT_BUFFER = 16_384
# The default window spans at least this many row groups: small rows come in row groups of
# tens of thousands of rows, and a window of one row group mixes rows only within it.
MIN_WINDOW_UNITS = 8
DEFAULT_WINDOW_BYTES = 256 * 2**20
WINDOWS_HELD = 3  # the window consumed, the next one decoded meanwhile, a chunk between
ROWS_HELD = 3  # beside them: the row handed out, the decoder's (63 MB rows: QA volumes65)


def row_bytes(ds: Any, columns: Sequence[str] | None) -> float:
    """Decoded bytes per row of ``ds`` (only ``columns`` and the key, when given), from the
    footers of its first, middle and last shards (the last: a later append of larger rows).
    A footer that cannot be read raises: a fallback would size this rank's windows unlike
    another's (QA review60e: two ranks' epochs covered 237 of 320 rows)."""
    from dload_arrow.read.chunk_ranges import leaf_owners
    from dload_arrow.read.random_access import RowGroupReader, ShardRef

    m = ds.manifest
    if not m.shards:
        return 0.0
    reader = RowGroupReader(ds.context)
    wanted = None if columns is None else {*columns, KEY_COLUMN}
    raw = rows = 0
    for k in sorted({0, len(m.shards) // 2, len(m.shards) - 1}):
        try:
            meta = reader.metadata(ShardRef.of(m.shards[k]))
        except DloadError as e:  # the same error on every rank: never another window size
            raise type(e)(f"shuffle() of {ds.name!r} reads shard footers to size its "
                          f"window: {e}") from e
        owners = leaf_owners(meta)  # None: every column counted (a window on the safe side)
        rows += meta.num_rows
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            raw += sum(rg.column(j).total_uncompressed_size for j in range(rg.num_columns)
                       if wanted is None or owners is None or owners[j] in wanted)
    return raw / max(1, rows)


def window_rows(ds: Any, columns: Sequence[str] | None, buffer: int | str | None,
                unit_rows: Sequence[int] | np.ndarray) -> int:
    """The rows of a window for ``shuffle(buffer)`` of ``ds`` (module docstring)."""
    typical = int(np.median(unit_rows)) if len(unit_rows) else 0
    if buffer is None:  # (never sized by the memory left: the order would depend on it)
        per_row = row_bytes(ds, columns)
        rows = max(DEFAULT_BUFFER, MIN_WINDOW_UNITS * typical)
        rows = min(rows, max(1, typical, int(DEFAULT_WINDOW_BYTES / max(per_row, 1e-9))))
        _check_memory(ds.name, buffer, rows, per_row, ds.manifest.num_rows)
        return rows
    if isinstance(buffer, str):
        if re.fullmatch(r"\s*[0-9]+\s*", buffer):  # "64" from os.environ: rows or bytes?
            raise ConfigError(
                f"shuffle buffer {buffer!r} has no unit: pass {buffer.strip()} (an int) for "
                f"rows, or a size such as '{buffer.strip()}MB' for bytes")
        size = parse_size(buffer, "shuffle buffer")
        per_row = row_bytes(ds, columns)
        rows = max(1, math.ceil(size / max(per_row, 1e-9)))
    elif isinstance(buffer, bool) or not isinstance(buffer, int | np.integer):
        raise TypeError(f"shuffle buffer is a row count (an int) or a size such as "
                        f"'256MB', got {buffer!r}")
    elif buffer < 1:
        raise ConfigError(f"shuffle buffer must be >= 1 row, got {buffer}")
    else:
        rows, per_row = int(buffer), row_bytes(ds, columns)
    if rows < typical and len(unit_rows) > 1:
        warnings.warn(
            f"shuffle buffer of {rows:,} rows is smaller than the row groups of "
            f"{ds.name!r} (about {typical:,} rows each): every window is one row group, "
            f"so rows mix only within their row group. Pass a buffer of several row groups "
            f"(e.g. shuffle({MIN_WINDOW_UNITS * typical})), or none for the default.",
            UserWarning, stacklevel=user_stacklevel())
    _check_memory(ds.name, buffer, rows, per_row, ds.manifest.num_rows)
    return rows


def _check_memory(name: str, buffer: int | str | None, rows: int, per_row: float,
                  total: int) -> None:
    """Refuse a window that alone would not fit the memory left (a certain OOM kill), and
    warn of one whose three copies would not (module docstring); a window holds at most the
    ``total`` rows there are (QA dist60: 80 rows were priced as 16,384)."""
    free = available_memory()
    window = min(rows, total) * per_row
    need = WINDOWS_HELD * window + ROWS_HELD * per_row
    if free is None or need <= free:
        return
    call = "shuffle()" if buffer is None else f"shuffle({buffer!r})"
    fits = int((free * 0.8 - ROWS_HELD * per_row) / WINDOWS_HELD / per_row)  # whole rows (a
    smaller = (f"pass a smaller buffer, e.g. shuffle({fits}), or " if fits >= 1 else  # size
               "no buffer fits beside the rows held: ")  # rounds up: QA 65c; none: 65b)
    text = (f"{call} of {name!r}: a window of {min(rows, total):,} rows is about "
            f"{format_bytes(int(window))} decoded ({format_bytes(int(per_row))} a row, from "
            f"its shards' footers), and a windowed shuffle holds about {WINDOWS_HELD} windows "
            f"and {ROWS_HELD} rows ({format_bytes(int(need))}), against the "
            f"{format_bytes(free)} of memory this process has left; {smaller}"
            f"read fewer columns (ds.pipeline(columns=[...])); {MEMORY_LIMIT_ENV} sets the "
            "memory this check assumes")
    if window > free:
        raise InfeasiblePlanError(text)
    warnings.warn(text, UserWarning, stacklevel=user_stacklevel())
