"""``SampleSource``: the files of a directory or an archive, grouped into samples.

Subclasses say how to list entries and read bytes; this class applies the grouping rules,
builds the Arrow schema from the extensions, and yields samples or record batches holding one
sample's bytes at a time (plus one batch being built), so the RAM used is bounded however big
the source is.

Random-access sources (directories, zip) yield samples in sorted key order. Streaming sources
(tar, compressed or not) hold each file until its sample is complete, which gives key order
too where that holds at most 256 MiB at once; a larger tar comes in archive order
(:func:`~dload_arrow.ingest.order.stream_order`). The version id depends on the order, so a
tar whose samples then come out of key order gets another id than its folder:
:class:`UnsortedWarning` says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import typed_array
from dload_arrow.errors import ConfigError, EmptyInputError, NotFoundError
from dload_arrow.ingest.columns import column_kind, decode_value, field_for
from dload_arrow.ingest.globs import Globs, LeftOutError
from dload_arrow.ingest.grouping import (
    Entry,
    IngestReport,
    check_utf8,
    group_entries,
    split_name,
)
from dload_arrow.ingest.inner_kinds import archive_of_tables, archives_beside_files
from dload_arrow.ingest.order import UnsortedWarning, stream_order
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["BATCH_BYTES", "BATCH_ROWS", "SampleSource", "UnsortedWarning"]


def _shown(name: str) -> str:
    """A name as reports show it: bytes that are not UTF-8 as ``\\x`` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

BATCH_BYTES = 16 * 2**20
BATCH_ROWS = 1024


class SampleSource:
    """Samples grouped from the files of one location (see the module docstring)."""

    random_access = True
    #: An archive whose files are all tables is refused (``--as auto``: open_source sets it).
    tables_refused = False
    #: How to extract this kind of archive, for that refusal: ``{name}`` and ``{stem}``.
    extract_command = ""
    #: A counter on stderr during a slow listing pass (a tar is read through to be listed):
    #: None (the default) only where someone watches (a terminal, a notebook), or True/False.
    progress: bool | None = None

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        split: str = "last",
    ) -> None:
        self.location = os.fspath(location)
        self.globs = Globs(include, exclude)
        self.include, self.exclude = self.globs.include, self.globs.exclude
        if split not in ("first", "last"):  # refused now, not at the first read
            raise ConfigError(f"split must be 'first' or 'last', not {split!r}")
        self.split = split
        self._skipped: list[tuple[str, str]] = []
        self._excluded_dirs: list[str] = []  # folders an exclude pattern drops whole
        self._links: dict[int, Entry] = {}  # a hard link's position -> its target (tars)

    # --- what subclasses provide ------------------------------------------------------------

    def _list(self) -> list[Entry]:
        """Every regular file (safe, normalised names); links and others go to _skipped."""
        raise NotImplementedError

    def _read(self, entry: Entry) -> bytes:
        """The bytes of one entry (random-access sources)."""
        raise NotImplementedError

    def _stream(self) -> Iterator[tuple[Entry, bytes]]:
        """Every entry with its bytes in storage order (streaming sources)."""
        raise NotImplementedError

    def _first_bytes(self, entry: Entry) -> bytes:
        """One value's bytes for schema inference (``.npy`` shapes)."""
        return self._read(entry)

    @contextmanager
    def _counting(self) -> Iterator[Callable[[int], None]]:
        """``count(n)``, to call with the number of entries listed so far: drawn as
        ``listing NAME: 1,234 entries`` (tqdm throttles the redraws) when progress is wanted,
        a no-op otherwise."""
        from dload_arrow.config import progress_bar, progress_wanted

        if not progress_wanted(self.progress):
            yield lambda n: None
            return
        name = self.location.rstrip("/").rsplit("/", 1)[-1] or self.location
        bar = progress_bar()(desc=f"listing {name}",
                             bar_format="{desc}: {n:,} entries [{elapsed}]")
        try:
            yield lambda n: bar.update(n - bar.n)
        finally:
            bar.close()

    def close(self) -> None:
        """Release open files (sources also close when garbage collected)."""

    def __enter__(self) -> SampleSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the plan ---------------------------------------------------------------------------

    @cached_property
    def _plan(self) -> tuple[dict[str, dict[str, Entry]], IngestReport]:
        report = IngestReport()
        listed = self._list()
        entries = [e for e in listed if self.globs(e.name)]
        # hidden files (.DS_Store) are never read: not counted as the globs' doing
        report.excluded = sum(1 for e in listed if not self.globs(e.name)
                              and not any(p.startswith(".") for p in e.name.split("/")))
        report.excluded_dirs = sorted(self._excluded_dirs)
        if self.tables_refused and (tables := archive_of_tables(
                self.location, [e.name for e in entries], self.extract_command)):
            raise tables
        linked = [n for n, why in self._skipped if why.startswith("symbolic link")]
        if self.tables_refused and not self.extract_command and (mixed := archives_beside_files(
                self.location, [e.name for e in entries] + linked)):
            raise mixed  # (a folder: shards beside a checksum list, QA ingest61)
        for e in entries:  # names that make keys: hidden ones and no extension never do
            if split_name(e.name, self.split) is not None:
                check_utf8(e.name, self.location)
        # a skipped name is only shown: bytes that are not UTF-8 as \x escapes
        report.skipped = [(_shown(n), why) for n, why in self._skipped]
        for n, _ in self._skipped:
            self.globs.note_skipped(n)
        report.unused_globs = self.globs.describe_unused(self.location)
        report.unused_patterns = self.globs.unused_patterns()
        # grouped first: an entry stored twice (`tar -rf`) is named as such, not as a stray
        groups = group_entries(entries, self.split, self.location, report)
        report.unmatched = [_shown(n) for n in report.unmatched]
        if self.random_access:
            groups = dict(sorted(groups.items()))
        else:  # warned once: the plan is cached
            groups = stream_order(entries, groups, self.split, self.location, self._links)
        if not groups:
            raise self._nothing_left(report, listed)
        self.globs.warn_unused(self.location)
        return groups, report

    def _nothing_left(self, report: IngestReport, listed: list[Entry]) -> NotFoundError:
        """The error of a source with no file to ingest: what left each file out."""
        unused = self.globs.unused_text()
        visible = [e for e in listed if not any(p.startswith(".") for p in e.name.split("/"))]
        if report.excluded == len(visible) and report.excluded_text():
            globs = " ".join(f"--{o} {p!r}" for o, ps in (("include", self.include),
                                                          ("exclude", self.exclude)) for p in ps)
            skipped = f" ({report.skipped_text()})" if report.skipped else ""
            return LeftOutError(
                f"{self.location}: no files to ingest: {globs} (include=/exclude= in Python) "
                f"left out every file there ({report.excluded_text()}){skipped};{unused} "
                "loosen the globs (a pattern matches a file's path, its name or a directory "
                "on its path; '*' matches every file)"
            )
        if not visible and not report.skipped:  # an empty folder or archive (a quiet day)
            hidden = f" (only {len(listed)} hidden)" if listed else ""
            return EmptyInputError(f"{self.location}: no files in it{hidden}")
        left_out = (f"{report.excluded_text()} left out by --include/--exclude, "
                    if report.excluded_text() else "")
        return NotFoundError(
            f"{self.location}: no files to ingest ({left_out}{len(report.unmatched)} without "
            f"an extension or hidden, {report.skipped_text()});{unused} check the path and "
            "the --include/--exclude globs")

    @property
    def report(self) -> IngestReport:
        """Sample count, per-column counts, and the files that did not fit the grouping."""
        return self._plan[1]

    def keys(self) -> list[str]:
        """Sample keys in iteration order."""
        return list(self._plan[0])

    def __len__(self) -> int:
        return len(self._plan[0])

    @cached_property
    def schema(self) -> pa.Schema:
        """``__key__`` then one column per extension, sorted by name."""
        groups, report = self._plan
        fields = [pa.field(KEY_COLUMN, pa.string(), nullable=False)]
        for column in report.columns:
            data = None
            if column_kind(column) == "npy":
                entry = next(g[column] for g in groups.values() if column in g)
                data = self._first_bytes(entry)
                where = f"{self.location}: {entry.name}"
            else:
                where = self.location
            fields.append(field_for(column, data, where))
        return pa.schema(fields)

    # --- reading ----------------------------------------------------------------------------

    def _decode(self, key: str, files: dict[str, tuple[Entry, bytes]]) -> dict[str, Any]:
        out: dict[str, Any] = {KEY_COLUMN: key}
        for f in self.schema:
            if f.name == KEY_COLUMN:
                continue
            got = files.get(f.name)
            out[f.name] = None if got is None else decode_value(
                f, got[1], f"{self.location}: {got[0].name}", got[0].name
            )
        return out

    def get(self, key: str) -> dict[str, Any]:
        """One sample by key, read directly (directories and zip archives)."""
        if not self.random_access:
            raise TypeError(
                f"{self.location} is a tar stream without random access; iterate it, or use a "
                "zip or a directory for .get()"
            )
        group = self._plan[0].get(key)
        if group is None:
            raise NotFoundError(f"{self.location} has no sample {key!r}")
        return self._decode(key, {c: (e, self._read(e)) for c, e in group.items()})

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Samples as dicts (``__key__`` plus one value per column, None where absent)."""
        groups = self._plan[0]
        if self.random_access:
            for key, group in groups.items():
                yield self._decode(key, {c: (e, self._read(e)) for c, e in group.items()})
            return
        # a stream: each file held until its sample is complete and every sample before it
        # is out (order.stream_order chose an order whose files fit in memory)
        order = list(groups)
        nxt = 0
        pending: dict[str, dict[str, tuple[Entry, bytes]]] = {}
        complete: set[str] = set()
        for entry, data in self._stream():
            parsed = split_name(entry.name, self.split)
            if parsed is None or groups.get(parsed[0], {}).get(parsed[1]) != entry:
                continue
            files = pending.setdefault(parsed[0], {})
            files[parsed[1]] = (entry, data)
            if len(files) == len(groups[parsed[0]]):
                complete.add(parsed[0])
                while nxt < len(order) and order[nxt] in complete:
                    complete.discard(order[nxt])
                    yield self._decode(order[nxt], pending.pop(order[nxt]))
                    nxt += 1

    def batches(
        self, max_rows: int = BATCH_ROWS, max_bytes: int = BATCH_BYTES
    ) -> Iterator[pa.RecordBatch]:
        """Record batches of the samples (``__key__`` first), cut by rows and bytes."""
        schema = self.schema
        rows: list[dict[str, Any]] = []
        size = 0
        for sample in self:
            rows.append(sample)
            size += sum(len(v) if isinstance(v, (bytes, str)) else getattr(v, "nbytes", 8)
                        for v in sample.values() if v is not None)
            if len(rows) >= max_rows or size >= max_bytes:
                yield _to_batch(rows, schema)
                rows, size = [], 0
        if rows:
            yield _to_batch(rows, schema)

    def reader(self) -> pa.RecordBatchReader:
        """A RecordBatchReader over :meth:`batches`, what ``repo.commit`` accepts."""
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())


def _to_batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    arrays = []
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_fixed_size_list(f.type):
            values = [None if v is None else np.asarray(v).reshape(-1) for v in values]
        arrays.append(typed_array(values, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
