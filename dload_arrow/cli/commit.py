"""``dload commit`` and ``dload append``: directories, archives and tables into versions."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import click

from dload_arrow.cli.append_fit import fit_to, latest_schema, text_columns
from dload_arrow.cli.archive_input import read_archives, remote_pattern_hint, source_paths
from dload_arrow.cli.commit_options import input_options
from dload_arrow.cli.commit_warnings import warn_lines
from dload_arrow.cli.output import (
    emit,
    json_option,
    open_repo,
    parse_assignments,
    progress_enabled,
    root_options,
)
from dload_arrow.errors import ConfigError, EmptyInputError, SchemaError
from dload_arrow.sizes import format_bytes, plural

__all__ = ["COMMANDS", "append", "commit", "read_input"]

def read_input(source: str, kind: str, include: Sequence[str], exclude: Sequence[str],
               split: str | None, key_column: str | None, endpoint_url: str | None,
               stored: Any = None, store_dirs: Sequence[str] = (), text: Sequence[str] = ()
               ) -> tuple[Any, str | None, dict[str, Any]]:
    """``(samples, key, report)`` for ``repo.commit`` from a ``--from`` location.

    ``split`` is None when ``--split`` was not given (``"last"`` for files and archives).
    ``stored``: the schema of an append's dataset (CSV columns it stores as text are read
    as text, partition folders take its types). ``store_dirs``: the repository's own local
    folders, never read as samples. ``text``: CSV columns read as text (``--text-column``).
    """
    from dload_arrow.ingest import Globs, GlobWarning, detect_kind, open_source, open_table
    from dload_arrow.ingest.archive_set import ArchiveSet
    from dload_arrow.ingest.location import is_remote, local_path, own_dirs, refuse_own_data
    from dload_arrow.ingest.tables import table_listing

    if not is_remote(source):
        refuse_own_data(source, local_path(source), own_dirs(store_dirs))
    auto = kind == "auto"
    if auto:
        kind = detect_kind(source, endpoint_url=endpoint_url, include=include, exclude=exclude,
                           store_dirs=store_dirs)
    with warnings.catch_warnings():
        # Patterns that matched no file are in the report, printed as one line each.
        warnings.simplefilter("ignore", GlobWarning)
        if kind == "table":
            if split is not None:
                raise ConfigError(
                    f"--split is for files and archives (where a file name's extension "
                    f"starts); {source!r} is read as a table, whose columns come from the "
                    "table itself: drop --split"
                )
            reader = open_table(source, include=include, exclude=exclude, key=key_column,
                                endpoint_url=endpoint_url,
                                text_columns=[*text_columns(stored), *text],
                                stored=stored, store_dirs=store_dirs)
            _check_text(text, reader.schema, source)
            globs = Globs(include, exclude)
            ignored = table_listing(source, globs=globs, skip=own_dirs(store_dirs))[1]
            return reader, key_column, {"kind": "table", "ignored": ignored,
                                        **globs.unused_report(source)}
        if key_column or text:
            raise ConfigError(
                f"--key-column and --text-column are for tables; {source!r} is read as "
                f"{kind} whose keys are file paths. If it is a table (Parquet, CSV or JSON "
                "Lines files), add --as table"
            )
        src = open_source(source, kind="auto" if auto and kind == "files" else kind,
                          include=include, exclude=exclude, split=split or "last",
                          endpoint_url=endpoint_url, store_dirs=store_dirs)  # (auto: a
        # folder of archives is their set; an archive is not sniffed again)
        src.progress = progress_enabled()  # the CLI's rule: a terminal (a listing pass counter)
        src.tables_refused = auto  # an archive of tables: its rows are not read (kinds.py)
        more = {"kind": "archives", "archives": len(src.sources)} if isinstance(
            src, ArchiveSet) else {"kind": kind}
        return src.reader(), None, {**more, **src.report.to_dict()}


def _check_text(text: Sequence[str], schema: Any, source: str) -> None:
    """Refuse a ``--text-column`` the table has not read as text: no such column (a typo,
    another case), or a Parquet file's typed one (QA review58c: ignored without a word)."""
    import pyarrow as pa

    for c in text:
        if c not in schema.names:
            raise ConfigError(f"--text-column {c!r}: {source!r} has no such column (names "
                              f"compare as written; its columns: {', '.join(schema.names)})")
        if not (pa.types.is_string(t := schema.field(c).type) or pa.types.is_large_string(t)):
            raise ConfigError(f"--text-column {c!r}: {source!r} stores it as {t} (only CSV "
                              "and JSON Lines text is read as text: Parquet keeps its types)")


def _run(append_mode: bool, name: str, source: tuple[str, ...], kind: str,
         include: Sequence[str],
         exclude: Sequence[str], split: str | None, key_column: str | None,
         text_column: Sequence[str],
         recipe: str | None, meta: Sequence[str], shard_size: int | None,
         row_group_size: int | None, root: str | None, cache_dir: str | None,
         cache_budget: str | None, as_json: bool, if_latest: str | None = None) -> None:
    # The options are checked before the input is read (which may be a long remote listing).
    kwargs: dict[str, Any] = {"progress": progress_enabled()}
    if if_latest is not None:  # "" (an unset $V) is refused, never read as no check
        kwargs["if_latest"] = if_latest
    if meta:
        kwargs["meta"] = parse_assignments(meta, "--meta")
    if recipe:
        kwargs["recipe"] = _read_recipe(recipe)
    repo = open_repo(root, cache_dir, cache_budget, must_exist=False, keeps=True)
    stored = latest_schema(repo, name) if append_mode else None
    own = [repo.settings.cache_dir] + ([os.path.join(repo.storage.root, d) for d in (
        "datasets", "shards")] if repo.storage.is_local else [])  # (a root may hold the data)
    paths, where = source_paths(source)
    if not repo.storage.is_local:
        from dload_arrow.ingest.location import refuse_own_remote

        refuse_own_remote(paths, repo.storage.url)
    with remote_pattern_hint(source):
        if len(paths) > 1:
            samples, key, report = read_archives(paths, where, kind, include, exclude, split,
                                                 key_column, text_column,
                                                 repo.settings.endpoint_url, progress_enabled())
        else:
            samples, key, report = read_input(paths[0], kind, include, exclude, split,
                                              key_column, repo.settings.endpoint_url, stored,
                                              own, text_column)
    kwargs["key"] = key
    if append_mode:
        samples = fit_to(stored, name, where, samples, key, report["kind"])
    if shard_size:
        kwargs["shard_size"] = shard_size
    if row_group_size:
        kwargs["row_group_size"] = row_group_size
    try:
        v = (repo.append if append_mode else repo.commit)(name, samples, **kwargs)
    except SchemaError as e:
        if report["kind"] == "table" and "duplicate keys" in str(e):
            raise SchemaError(_duplicate_keys_hint(str(e), key)) from e
        raise
    shard_bytes, manifest_bytes = _uploaded_split(v)
    repeated = None
    if append_mode and report["kind"] == "table" and key is None:
        from dload_arrow.cli.repeats import repeated_rows

        repeated = repeated_rows(repo, v)
    out = {
        "name": v.name, "version": v.version, "rows": v.num_rows,
        "shards": v.shards_total, "shards_uploaded": v.shards_uploaded,
        "bytes": v.bytes_total, "bytes_uploaded": v.bytes_uploaded,
        "shard_bytes_uploaded": shard_bytes, "manifest_bytes_uploaded": manifest_bytes,
        "seconds": round(v.seconds, 3), "source": report, "repeats_rows_before": repeated,
    }

    def text() -> None:
        click.echo(f"{'appended to' if append_mode else 'committed'} {v.name}@{v.version[:12]}: "
                   f"{plural(v.num_rows, 'row')} in {plural(v.shards_total, 'shard')} "
                   f"({format_bytes(v.bytes_total)}); "
                   f"{_upload_text(v, shard_bytes, manifest_bytes)} in {v.seconds:.1f}s")
        click.echo(v.version)

    # On stderr with --json too (QA shell59: a CI job's log lost them, the repeated append's
    # undo command with them); --json has each as a field as well.
    warn_lines(report, repeated, v)
    emit(out, as_json, text)


def _read_recipe(path: str) -> str:
    """The ``--recipe`` script's text; the recipe is stored as text, so it must be UTF-8."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"--recipe {path!r} is not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); "
            "a recipe is stored as text: give the script that produced the data, saved as "
            "UTF-8"
        ) from e


def _duplicate_keys_hint(text: str, key: str | None) -> str:
    """A table's duplicate-key error in the CLI's terms: where its keys came from, and
    --key-column (the library's message speaks of ``key=``)."""
    text = text.replace("key='column'", "--key-column COLUMN")
    came_from = f"--key-column {key!r}" if key else "the table's __key__ column"
    return (f"{text}. Here the keys came from {came_from}: give --key-column another column "
            "whose values are unique, or fix the duplicated rows")


def _uploaded_split(v: Any) -> tuple[int, int]:
    """``(shard bytes, manifest bytes)`` of a commit's ``bytes_uploaded``: shards (and the key
    index, stored as a shard) and the manifest, written once per new version id."""
    manifest = v.manifest_bytes_uploaded
    return v.bytes_uploaded - manifest, manifest


def _upload_text(v: Any, shard_bytes: int, manifest_bytes: int) -> str:
    if not v.bytes_uploaded:
        return "uploaded 0 shards and 0 bytes (this version was already stored)"
    index = " with the key index" if getattr(v.manifest, "key_index_parts", None) else ""
    shards = f"uploaded {plural(v.shards_uploaded, 'shard')} ({format_bytes(shard_bytes)}{index})"
    if v.shards_uploaded == 0:
        shards = f"uploaded 0 shards (all {v.shards_total} already stored)" + (
            f", a {format_bytes(shard_bytes)} key index" if shard_bytes else "")
    return shards + (f" and the {format_bytes(manifest_bytes)} manifest" if manifest_bytes else "")


@click.command()
@click.argument("name")
@input_options
@click.option("--if-latest", "if_latest", default=None, metavar="VERSION",
              help="Publish only while NAME's latest is still VERSION (an id, prefix or tag; "
                   "e.g. the version the input was exported from), else exit 1 with nothing "
                   "published: an append made meanwhile is not dropped from latest.")
@root_options
@json_option
def commit(name: str, **kwargs: Any) -> None:
    """Commit a directory, archive or table as the new latest version of NAME.

    Files are grouped by path without extension: a/x.jpg + a/x.json make sample a/x with
    columns jpg and json. Archives are read in place, never extracted. The same input gives
    the same version id, and shards already in the root are not uploaded again.

    \b
    Examples:
      dload commit photos --from ./photos --exclude '*.tmp' --meta source=camera
      dload commit speech --from s3://bucket/speech.tar.zst
      dload commit laion --from 'shards/wds-{000000..000099}.tar' --split first
      dload commit events --from events/ --key-column id
    """
    try:
        _run(False, name, **kwargs)
    except EmptyInputError as e:
        if "nothing to commit" in str(e):
            raise
        raise EmptyInputError(f"{e}: nothing to commit to {name!r}") from e


@click.command()
@click.argument("name")
@input_options
@click.option("--allow-empty", is_flag=True,
              help="An input holding no samples (an empty folder or archive, a CSV with a "
                   "header alone) appends nothing and exits 0, printing the latest version id; "
                   "without it that is an error of kind empty_input.")
@root_options
@json_option
def append(name: str, allow_empty: bool, **kwargs: Any) -> None:
    """Add samples to NAME: a new version reusing every shard of the latest one.

    \b
    Example:
      dload append photos --from ./more-photos
      dload append events --from "exports/$(date +%F).csv" --key-column id --allow-empty
    """
    from dload_arrow.cli.empty_append import nothing_to_append

    try:
        _run(True, name, **kwargs)
    except EmptyInputError as e:
        nothing_to_append(name, e, allow_empty, kwargs, kwargs["as_json"])


COMMANDS = [commit, append]
