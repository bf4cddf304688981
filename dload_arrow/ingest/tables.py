"""Tables: Parquet, CSV (and tab-separated ``.tsv``), JSON Lines and Arrow IPC (``.arrow``,
``.feather``: HuggingFace ``save_to_disk`` folders too) files, or folders of them, as one
RecordBatchReader (one file's reading: :mod:`dload_arrow.ingest.table_files`).

Files are read in sorted path order, one after the other, batch by batch (JSON Lines files
are read whole, one file at a time). The table's schema unifies every file's schema: a column
missing from some files is null there, and a column whose type widens between files (int64
then double, null then string) takes the wider type. Types that cannot be combined (int64 in
one file, string in another) raise SchemaError naming the file and the column.

CSV and JSON Lines text is typed by pyarrow's inference with the rules of
:mod:`dload_arrow.ingest.table_text` (only an empty CSV cell is missing, keys are text as
written, a column without values is text, integers that float64 would round are refused). A
folder holds one format: CSV and JSON Lines infer types differently, so a mix is refused.

In a folder, the markers that Spark, Hive and dbt write beside their tables (``_SUCCESS``,
``_committed_*``, any ``_`` or ``.`` file or directory, ``*.crc``) and README/LICENSE files
are not read; :func:`table_listing` reports them.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence

import pyarrow as pa

from dload_arrow.args import check_path
from dload_arrow.errors import EmptyInputError, SchemaError
from dload_arrow.ingest.empty_columns import blank_text, fill_empty_text, text_nulls
from dload_arrow.ingest.globs import Globs
from dload_arrow.ingest.kinds import (
    TABLE_FORMATS,
    archive_named_table,
    is_marker,
    mixed_formats,
    no_tables,
    table_format,
)
from dload_arrow.ingest.location import is_remote, local_path, own_dirs, refuse_own_data
from dload_arrow.ingest.partitions import Partitions
from dload_arrow.ingest.read_errors import CSV_INFER_BYTES, read_error
from dload_arrow.ingest.stores import is_store, refuse_inside_store
from dload_arrow.ingest.table_files import file_batches, file_schema
from dload_arrow.ingest.table_text import decoded_dictionaries, null_key, text_column_list
from dload_arrow.sizes import plural
from dload_arrow.store.conform import ColumnMismatch, fit_batch

__all__ = ["CSV_INFER_BYTES", "TABLE_FORMATS", "is_marker", "open_table", "table_files",
           "table_format", "table_listing"]

def table_listing(path: str | os.PathLike[str], include: Sequence[str] = (),
                  exclude: Sequence[str] = (), *, globs: Globs | None = None,
                  skip: Collection[str] = frozenset()) -> tuple[list[str], list[str]]:
    """``(table files, other files)`` of a file or a folder, recursive and sorted.

    Table files are paths to open; other files are named relative to the folder.
    ``include``/``exclude`` globs (or ``globs``, which then remembers the patterns that
    matched nothing) match as :class:`~dload_arrow.ingest.globs.Globs` says: the path in the
    folder, the file name or a directory on the path; files they leave out are in neither
    list. Hidden and ``_`` directories, and those in ``skip`` (real paths of dload's own
    folders), are listed as ``"name/"`` among the others, and not entered.
    """
    path = local_path(os.fspath(path))
    select = globs if globs is not None else Globs(include, exclude)
    if is_remote(path) or os.path.isfile(path):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if not select(name):
            return [], []
        return ([path], []) if table_format(path) else ([], [path])
    tables: list[str] = []
    others: list[str] = []
    spark = os.path.isfile(os.path.join(path, "_SUCCESS"))  # its .json files are JSON Lines
    for dirpath, dirnames, filenames in os.walk(path):
        rel = os.path.relpath(dirpath, path).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        for d in sorted(dirnames):
            if d.startswith((".", "_")) or (skip and os.path.realpath(
                    os.path.join(dirpath, d)) in skip) or is_store(os.path.join(dirpath, d)):
                others.append(rel + d + "/")
                select.note_skipped(rel + d + "/")  # --exclude .cache is no mistake
                dirnames.remove(d)
        for f in filenames:
            if not select(rel + f):
                continue
            if is_marker(f) or not table_format(f, spark):
                others.append(rel + f)
            else:
                tables.append(os.path.join(dirpath, f))
    return sorted(tables), sorted(others)


def table_files(path: str, include: Sequence[str] = (), exclude: Sequence[str] = ()
                ) -> list[str]:
    """The table files of a file or a folder (recursive, sorted); empty if it holds none."""
    return table_listing(path, include, exclude)[0]


def _unify(first: pa.Schema, files: list[str], fmt: str, endpoint_url: str | None,
           text_columns: Sequence[str] = (), key: str | None = None) -> pa.Schema:
    """The schema every file fits: columns of all files, types widened where they differ."""
    schema = first
    everywhere = set(first.names)
    for f in files[1:]:
        try:
            other = file_schema(f, fmt, endpoint_url, text_columns, key)
        except (pa.ArrowInvalid, OSError) as e:
            raise read_error(f, fmt, e, endpoint_url) from e
        everywhere &= set(other.names)
        schema, other = decoded_dictionaries(schema, other), decoded_dictionaries(other, schema)
        try:
            schema = pa.unify_schemas([schema, other], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            col = next((n for n in other.names if n in schema.names
                        and schema.field(n).type != other.field(n).type), "?")
            got = other.field(col).type if col in other.names else "?"
            was = schema.field(col).type if col in schema.names else "?"
            raise SchemaError(
                f"column {col!r} is {was} in the files before {f!r} and {got} there, which "
                f"cannot be combined ({e}); give the column one type in every file, or commit "
                "the files separately"
            ) from e
    # A column some files lack is null in their rows.
    return pa.schema([f if f.name in everywhere else f.with_nullable(True) for f in schema])


def open_table(path: str | os.PathLike[str], *, include: Sequence[str] = (),
               exclude: Sequence[str] = (), endpoint_url: str | None = None,
               text_columns: Sequence[str] = (), key: str | None = None,
               stored: pa.Schema | None = None,
               store_dirs: Sequence[str | os.PathLike[str]] = ()) -> pa.RecordBatchReader:
    """A RecordBatchReader over a table file or folder of them (see the module docstring).

    Args:
        path: a .parquet/.csv/.tsv/.jsonl/.arrow/.feather file (a local path: str,
            pathlib.Path or bytes; or a URL) or a local folder of them; another kind is a
            TypeError.
        include: globs of files to read, matched against the path in the folder, the file
            name and the directories on the path (:class:`~dload_arrow.ingest.globs.Globs`);
            a glob that matches no file warns (GlobWarning).
        exclude: globs of files not to read (``"2023"`` skips the folder ``2023/``).
        endpoint_url: S3 endpoint for remote files.
        text_columns: CSV columns read as text, not inferred (an append into a dataset that
            stores them as text: ``007`` would be read as the number 7, then stored "7").
        key: the key column that ``repo.commit`` will be given (``key=``): a CSV reads it as
            text, as written (``007`` stays ``'007'``; an empty cell is refused). A
            ``__key__`` column is always read so.
        stored: the schema of the dataset the rows will be appended to: partition folders
            (``month=01``) take its column types.
        store_dirs: dload's own folders (a local root's, the cache), never read (location.py).
    """
    path = local_path(check_path("open_table", "path", path))
    text_columns = text_column_list(text_columns)
    globs = Globs(include, exclude)
    skip = own_dirs(store_dirs)
    if skip and not is_remote(path):
        refuse_own_data(path, path, skip)
    if not is_remote(path) and os.path.isdir(path):  # another root, or a folder in it (66)
        refuse_inside_store(path, path, skip, itself=True)
    if not is_remote(path) and os.path.isfile(os.path.join(path, "dataset_dict.json")) and \
            not (include or exclude):
        raise split_folders(path)
    files, others = table_listing(path, globs=globs, skip=skip)
    if not files:  # own_only: only skipped folders there (dload's own data, hidden ones)
        own_only = bool(skip and others) and os.path.isdir(path) and all(
            o.endswith("/") for o in others)
        raise no_tables(path, globs.unused_text(), table_files(path) if globs else [],
                        endpoint_url, own_only)
    globs.warn_unused(path)
    if files == [path] and (named := archive_named_table(path, endpoint_url=endpoint_url)):
        raise named
    formats = {table_format(f, json_lines=True) for f in files}  # .json: listed if Spark's
    if len(formats) > 1:
        raise mixed_formats(path, files)
    fmt = str(formats.pop())
    parts = Partitions.of(path, files, stored)
    first, at, warned = None, 0, set[str]()  # warned: CSV code columns, once a table
    while at < len(files):  # the first file with rows (Spark writes empty part files)
        first_iter = file_batches(files[at], fmt, endpoint_url, text_columns, key, warned)
        try:
            first = next(first_iter)
            break
        except StopIteration:
            at += 1
        except (pa.ArrowInvalid, OSError) as e:
            raise read_error(files[at], fmt, e, endpoint_url) from e
    if first is None:
        raise EmptyInputError(f"{path!r}: no rows in its {plural(len(files), 'table file')} "
                              "(a header alone, or empty files)")
    files = [files[at], *files[at + 1:], *files[:at]]  # the empty ones last: no rows to read
    schema = first.schema.remove_metadata()
    if fmt == "csv":
        schema = blank_text(schema, first, text_columns, key)
    if len(files) > 1:
        schema = _unify(schema, files, fmt, endpoint_url, text_columns, key)
    # a column with no value in any file: text (nulls) that appends can fill, or that an
    # append casts to the type its dataset stores
    empty = {f.name for f in schema if pa.types.is_null(f.type)}
    if fmt not in ("parquet", "arrow"):  # (typed formats keep a null column's type)
        schema = text_nulls(schema)
    full = schema if parts is None else parts.extend(schema)

    def batches() -> Iterator[pa.RecordBatch]:
        yield from _rest(iter([first]), files[0])
        yield from _rest(first_iter, files[0])
        for f in files[1:]:
            yield from _rest(file_batches(f, fmt, endpoint_url, text_columns, key, warned), f)

    seen: dict[str, int] = {}  # rows read of each file

    def _rest(it: Iterator[pa.RecordBatch], f: str) -> Iterator[pa.RecordBatch]:
        try:
            for b in it:
                b = _conform(b, schema, f, fmt, empty)
                if key is not None and key in b.schema.names and b.column(key).null_count:
                    raise null_key(f, key, seen.get(f, 0), b.column(key))
                seen[f] = seen.get(f, 0) + b.num_rows
                yield b if parts is None else parts.add(b, f)
        except (pa.ArrowInvalid, OSError) as e:
            raise read_error(f, fmt, e, endpoint_url) from e

    return pa.RecordBatchReader.from_batches(full, batches())


def _conform(batch: pa.RecordBatch, schema: pa.Schema, where: str, fmt: str,
             empty: set[str]) -> pa.RecordBatch:
    """``batch`` in ``schema``: columns in its order, missing ones null, types widened
    (``empty``: the columns with no value in any file, which stay null)."""
    batch = batch.replace_schema_metadata(None)
    if fmt == "csv":
        batch = fill_empty_text(batch, schema, empty)
    if batch.schema.equals(schema):
        return batch
    try:
        return fit_batch(batch, schema)
    except (ColumnMismatch, ValueError) as e:
        raise SchemaError(
            f"{where!r} does not fit the table's schema ({schema}): {e} ({e.__cause__})"
        ) from e


def split_folders(path: str) -> SchemaError:
    """The refusal of a HuggingFace ``DatasetDict.save_to_disk`` folder: its splits are
    datasets of their own, and one commit of the folder mixed test rows into train without a
    column saying which (QA review59b)."""
    splits = sorted(e.name for e in os.scandir(path) if e.is_dir() and not e.name.startswith("."))
    shown = ", ".join(splits) or "none found"
    name = os.path.basename(os.path.normpath(path)) or "data"
    first = splits[0] if splits else "SPLIT"
    return SchemaError(
        f"{path!r} is a HuggingFace DatasetDict (dataset_dict.json; splits: {shown}): each split "
        f"is a dataset of its own; commit them apart (`dload commit {name}-{first} --from "
        f"{os.path.join(path, first)}`, and so on), or one split with --include {first}")
