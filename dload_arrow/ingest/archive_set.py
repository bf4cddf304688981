"""Several archives read as one input: WebDataset-style shards (``wds-000000.tar``, ...).

A folder whose files are all archives, several ``--from``, or a pattern (``'wds-*.tar'``,
``'wds-{000000..000099}.tar'``) name a set of archives; their samples are committed together,
archive after archive in name order (a folder, a pattern) or in the order given. Each archive
is read as ``--from ARCHIVE`` reads it; a column is the union of theirs (null where an archive
has none), and a key in two archives is refused before anything is stored.

Before, a folder of tar shards was refused as "an archive of archives" and the Python route
committed each tar as one sample's bytes, and a repeated ``--from`` kept only the last one,
silently (QA migrate59).
"""

from __future__ import annotations

import glob
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from functools import cached_property

import pyarrow as pa

from dload_arrow.errors import EmptyInputError, NotFoundError, SchemaError
from dload_arrow.ingest.columns import ragged_npy_fix
from dload_arrow.ingest.globs import Globs, GlobWarning, LeftOutError
from dload_arrow.ingest.grouping import IngestReport
from dload_arrow.ingest.inner_kinds import is_archive_name
from dload_arrow.ingest.kinds import is_marker
from dload_arrow.ingest.location import is_remote, local_path
from dload_arrow.ingest.source import SampleSource
from dload_arrow.sizes import plural
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.rows import SHAPE_META

__all__ = ["ArchiveSet", "archive_folder", "archives_of", "expand_pattern"]

_BRACE = re.compile(r"\{([^{}]*)\}")
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")


def _braces(text: str) -> list[str]:
    """``text`` with its first ``{a..b}`` (numbers, zero padding kept) or ``{x,y}`` expanded,
    then the rest: as a shell expands them."""
    m = _BRACE.search(text)
    if m is None:
        return [text]
    body, head, tail = m.group(1), text[:m.start()], text[m.end():]
    if r := _RANGE.match(body):
        a, b = int(r.group(1)), int(r.group(2))
        width = len(r.group(1)) if r.group(1).lstrip("-").startswith("0") else 0
        step = 1 if b >= a else -1
        parts = [f"{i:0{width}d}" for i in range(a, b + step, step)]
    elif "," in body:
        parts = body.split(",")
    else:
        return [head + "{" + body + "}" + t for t in _braces(tail)]
    return [head + p + t for p in parts for t in _braces(tail)]


def expand_pattern(location: str) -> list[str]:
    """The paths a ``--from`` names: itself, or, for a local pattern (``*``, ``?``, ``[..]``,
    ``{a..b}``, ``{x,y}``) that is no existing path, the files it matches, sorted per brace
    alternative (each brace alternative must match)."""
    if not re.search(r"[*?\[{]", location) or os.path.exists(local_path(location)):
        return [location]
    if is_remote(location):  # (an object's name may hold these: it is looked up as it is)
        return [location]
    out: list[str] = []
    for alternative in _braces(location):
        path = local_path(alternative)
        found = sorted(glob.glob(path)) if re.search(r"[*?\[]", path) else (
            [path] if os.path.exists(path) else [])
        if not found:
            raise NotFoundError(f"--from {location!r}: {alternative!r} matches no file; check "
                                "the pattern (quote it so that the shell leaves it to dload)")
        out += found
    return out


def archive_folder(path: str) -> list[str] | None:
    """The archives of local folder ``path`` in name order, when its files are all archives
    (beside markers such as README or ``_SUCCESS``) and it has no subfolder; else None. A
    symbolic link to an archive counts as one (and is read); a dangling one is an error."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return None
    names = [e.name for e in entries if not e.name.startswith(".")]
    if any(_is_dir(e) for e in entries if not e.name.startswith(".")):
        return None
    archives = [n for n in names if is_archive_name(n)]
    if not archives or not all(is_archive_name(n) or is_marker(n) for n in names):
        return None
    for n in archives:  # a link to an archive is read (a DVC or git-annex checkout's shards)
        full = os.path.join(path, n)
        if os.path.islink(full) and not os.path.exists(full):  # dangling, or a loop
            raise NotFoundError(
                f"{full!r} is a symbolic link to {os.readlink(full)!r}, which does not exist "
                "(or links back to itself): "
                "fetch it (a DVC or git-annex checkout not fully fetched?) or move the link "
                "out of the folder")
    return [os.path.join(path, n) for n in archives]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether a folder entry is a folder (a link to one too); a link that loops is not."""
    try:
        return entry.is_dir()
    except OSError:  # ELOOP: read as a file, and refused with its name where it is read
        return False


def _base(location: str) -> str:
    return location.rstrip("/").rsplit("/", 1)[-1]


def _shown(location: str, sources: Sequence[SampleSource]) -> str:
    """An archive as messages name it: its name, or its path where two share a name."""
    name = _base(location)
    return location if sum(_base(s.location) == name for s in sources) > 1 else name


def _typed(f: pa.Field) -> str:
    """A column's type as a message shows it: a tensor's with its shape (kept in metadata)."""
    shape = (f.metadata or {}).get(SHAPE_META)
    return f"{f.type} of shape {shape.decode()}" if shape else str(f.type)


def archives_of(location: str) -> list[str]:
    """A local folder of archives' archives (:func:`archive_folder`); any other location
    itself."""
    if is_remote(location) or not os.path.isdir(path := local_path(location)):
        return [location]
    return archive_folder(path) or [location]


class ArchiveSet:
    """The samples of several archives as one source: each archive's in turn.

    Args:
        sources: the archives' sample sources, in the order to read them.
        where: what the set is called in messages (a folder, a pattern, "3 archives").
    """

    def __init__(self, sources: Sequence[SampleSource], where: str) -> None:
        if not sources:
            raise NotFoundError(f"{where}: no archives to read")
        self.sources = list(sources)
        self.where = where
        self.globs = Globs(sources[0].include, sources[0].exclude)
        for s in self.sources:  # one pattern is unused only when no archive used it
            s.globs = self.globs
        self.progress: bool | None = None

    @property
    def tables_refused(self) -> bool:
        """Whether an archive of tables is refused (``--as auto``), for every archive."""
        return all(s.tables_refused for s in self.sources)

    @tables_refused.setter
    def tables_refused(self, value: bool) -> None:
        for s in self.sources:
            s.tables_refused = value

    def keys(self) -> list[str]:
        """Sample keys in reading order."""
        out: list[str] = []
        for s in self.sources:
            out += s.keys()
        return out

    @cached_property
    def _plan(self) -> tuple[pa.Schema, IngestReport]:
        report = IngestReport()
        owner: dict[str, str] = {}
        fields: dict[str, tuple[pa.Field, str]] = {}
        empty: list[SampleSource] = []
        left: list[Exception] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", GlobWarning)  # said once, for the whole set
            for s in self.sources:
                s.progress = self.progress
                name = _base(s.location)
                if sum(_base(o.location) == name for o in self.sources) > 1:
                    name = s.location  # (train/a.tar, val/a.tar: the whole path)
                try:
                    keys = s.keys()  # (listed: a tar is read through once)
                except (EmptyInputError, LeftOutError) as e:  # no samples: the others' are
                    report.skipped.append((name, "empty archive" if isinstance(  # read
                        e, EmptyInputError) else "left out whole by --include/--exclude"))
                    empty.append(s)
                    left.append(e)
                    continue
                for key in keys:
                    if (other := owner.setdefault(key, s.location)) != s.location:
                        raise SchemaError(
                            f"key {key!r} is in two archives, {_shown(other, self.sources)!r} "
                            f"and {name!r}, "
                            f"of {self.where}: a key names one sample; commit them as two "
                            "datasets, or leave one archive out")
                for f in s.schema:
                    seen = fields.setdefault(f.name, (f, name))
                    if not seen[0].equals(f, check_metadata=True):
                        tensor = (f.metadata or {}).get(SHAPE_META) is not None
                        raise SchemaError(
                            f"column {f.name!r} is {_typed(seen[0])} in {seen[1]!r} but "
                            f"{_typed(f)} in {name!r} ({self.where}); one column holds one "
                            "type: " + (ragged_npy_fix(f.name, f.type.value_type) if tensor
                                        else "make the files of that extension alike"))
                r = s.report
                s.close()  # reopened to be read: 1,000 zips held 1,000 files (QA review59)
                report.samples += r.samples
                for c, n in r.columns.items():
                    report.columns[c] = report.columns.get(c, 0) + n
                report.unmatched += [f"{name}: {u}" for u in r.unmatched]
                report.skipped += [(f"{name}: {n}", why) for n, why in r.skipped]
                report.excluded += r.excluded
                report.excluded_dirs += [f"{name}: {d}" for d in r.excluded_dirs]
        if len(empty) == len(self.sources):  # (QA review64b: --allow-empty dropped the rest)
            first = next((e for e in left if isinstance(e, LeftOutError)), None)
            if first is not None:  # (every archive named, not the first: QA review64d)
                n = sum(isinstance(e, LeftOutError) for e in left)  # (the others: empty)
                raise LeftOutError(f"{self.where}: --include/--exclude left out every file of "
                                   f"{n} of its {plural(len(empty), 'archive')}"
                                   f"{_others(len(empty) - n)}; "
                                   f"loosen the globs (the first: {first})")
            raise EmptyInputError(f"{self.where}: no files in any of its "
                                  f"{plural(len(empty), 'archive')}")
        self.sources = [x for x in self.sources if x not in empty]
        report.unused_globs = self.globs.describe_unused(self.where)
        report.unused_patterns = self.globs.unused_patterns()
        self.globs.warn_unused(self.where)
        ordered = [fields.pop(KEY_COLUMN)[0], *(fields[n][0] for n in sorted(fields))]
        return pa.schema(ordered), report

    @property
    def schema(self) -> pa.Schema:
        """``__key__``, then every archive's columns, sorted by name."""
        return self._plan[0]

    @property
    def report(self) -> IngestReport:
        """The archives' reports together (names prefixed with their archive's)."""
        return self._plan[1]

    def __len__(self) -> int:
        return self.report.samples

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Each archive's record batches in turn, with every column of the set."""
        schema = self.schema
        for s in self.sources:
            try:
                for b in s.batches():
                    yield pa.RecordBatch.from_arrays(
                        [b.column(f.name) if f.name in b.schema.names else pa.nulls(
                            b.num_rows, f.type) for f in schema], schema=schema)
            finally:
                s.close()  # one archive open at a time

    def reader(self) -> pa.RecordBatchReader:
        """A RecordBatchReader over :meth:`batches`, what ``repo.commit`` accepts."""
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())

    def close(self) -> None:
        for s in self.sources:
            s.close()


def _others(n: int) -> str:
    return "" if n <= 0 else ", the other is empty" if n == 1 else f", the other {n} are empty"
