"""Read-only commands: ls, info, versions, recipe, log, head, diff."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from dload_arrow.cli.ls_rows import ls_rows, pin_text
from dload_arrow.cli.output import (
    emit,
    empty_root_hint,
    escaped,
    json_option,
    open_repo,
    parse_spec,
    print_table,
    root_options,
    root_problem,
)
from dload_arrow.errors import ConfigError, NotFoundError
from dload_arrow.sizes import format_bytes, plural

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["COMMANDS", "head", "info", "log", "ls", "recipe", "versions"]


def _when(t: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t)) if t else None


def _iso(t: float | None) -> str | None:
    """ISO 8601 in UTC, for ``--json``: the form (and the microsecond, truncated as the
    catalog's timestamps are) ``log --json`` gives its times in."""
    if not t:
        return None
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (epoch + dt.timedelta(microseconds=int(t * 1_000_000))).isoformat()


def _tensor(f: pa.Field) -> tuple[Any, list[int]] | None:
    """``(value type, shape)`` of a tensor column (a list with dload's shape, or an
    ``arrow.fixed_shape_tensor``), else None."""
    from dload_arrow.store.rows import field_shape
    from dload_arrow.tensor_arrays import is_fixed_shape_tensor

    if is_fixed_shape_tensor(f.type):
        return f.type.value_type, list(f.type.shape)
    shape = field_shape(f)
    return None if shape is None else (f.type.value_type, list(shape))


def _field(f: pa.Field) -> dict[str, Any]:
    tensor = _tensor(f)
    if tensor is None:
        return {"name": f.name, "type": str(f.type), "shape": None}
    ext = getattr(f.type, "extension_name", None)  # (pyarrow is not imported at top here)
    extension = {"extension": ext} if ext else {}
    return {"name": f.name, "type": str(tensor[0]), "shape": tensor[1], **extension}


@click.command()
@root_options
@json_option
def ls(root: str | None, cache_dir: str | None, cache_budget: str | None, as_json: bool) -> None:
    """List the datasets under the root with their latest version; a pin in dload.lock shows
    in a `pinned` column, marked "(gone)" if the root lacks it.

    \b
    Example:
      dload ls --root s3://my-bucket/datasets
    """
    from dload_arrow.repository.lock import listed_pins, lock_path

    repo = open_repo(root, cache_dir, cache_budget, must_exist=False)
    if (problem := root_problem(repo)) is not None and \
            repo.settings.sources.get("root") != "default":  # (not mistyped: empty at first)
        raise problem
    pins = listed_pins(path := lock_path())  # {} when there is no dload.lock
    from dload_arrow.repository.missing import published_names
    from dload_arrow.storage import redact_url

    # repo.datasets(), and its listing's manifests exist now: no HEAD each (QA scale62)
    names = published_names(repo.storage, redact_url(repo.storage.url),
                            repo.manifests.mark_stored)
    rows = ls_rows(repo, [*names, *sorted(set(pins) - set(names))], pins,
                   str(path) if path else None)
    pinned = [r["pinned"] for r in rows if r["pinned"]]

    def text() -> None:
        cols = ["name", "version", "rows", "bytes", "shards"] + (["pinned"] if pinned else [])
        print_table([{**r, "version": (r["version"] or "")[:12], "pinned": pin_text(
                      r["pinned"]), "bytes": None if r["bytes"] is None else format_bytes(
                      r["bytes"])} for r in rows], cols)
        if not rows:  # a mistyped root lists as empty too: say what empty means
            click.echo(empty_root_hint(repo), err=True)
        if pinned:
            gone = any(not p["exists"] and p["full_id"] for p in pinned)
            short = any(not p["full_id"] for p in pinned)
            click.echo(f"pinned by {path}: NAME without @VERSION reads the pinned version"
                       + ("; (gone): this root lacks it" if gone else "")
                       + ("; (not a full id): pin the 64-digit id, `dload pin NAME@VERSION`"
                          if short else "")
                       + "; `dload unpin NAME` follows latest")

    emit(rows, as_json, text)


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@root_options
@json_option
def info(spec: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
         as_json: bool) -> None:
    """Show a version: size, schema, metadata, parents and refs.

    \b
    Example:
      dload info photos@v1
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    m = repo.manifest(name, version)
    refs = sorted(r for r, v in repo.refs(name).items() if v == m.version)
    out = {
        "name": name, "version": m.version, "rows": m.num_rows, "bytes": m.num_bytes,
        "shards": len(m.shards), "refs": refs, "keys_sorted": m.keys_sorted,
        "schema": [_field(f) for f in m.schema], "meta": m.meta, "parents": m.parents,
        "has_recipe": m.recipe is not None,
    }

    def text() -> None:
        click.echo(f"{name}@{m.version}")
        click.echo(f"  {plural(m.num_rows, 'row')}, {plural(len(m.shards), 'shard')}, "
                   f"{format_bytes(m.num_bytes)}; refs: {', '.join(refs) or '-'}")
        click.echo("  columns:")
        for f in out["schema"]:
            click.echo(f"    {escaped(f['name'])}: {escaped(str(f['type']))}"
                       + (f" shape {f['shape']}" if f["shape"] is not None else "")
                       + (f" ({f['extension']})" if "extension" in f else ""))
        if m.meta:
            click.echo(f"  meta: {json.dumps(m.meta, default=str)}")
        for p in m.parents:
            click.echo(f"  parent: {escaped(str(p.get('name')))}@{str(p.get('version'))[:12]} "
                       f"({escaped(str(p.get('relation', 'derived')))})")

    emit(out, as_json, text)


@click.command()
@click.argument("name")
@root_options
@json_option
def versions(name: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
             as_json: bool) -> None:
    """List every version of NAME, newest first.

    \b
    Example:
      dload versions photos
    """
    if "@" in name:
        bare = parse_spec(name)[0]  # (NAME@, an empty version, is refused there)
        raise ConfigError(f"versions takes a dataset NAME, not NAME@VERSION ({name!r}): "
                          f"`dload versions {bare}` lists every version, `dload info {name}` "
                          "shows that one")
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    vs = repo.versions(name)
    rows = [{"version": v.version, "time": _iso(v.time), "user": v.user, "rows": v.num_rows,
             "bytes": v.num_bytes, "shards": v.num_shards, "refs": list(v.refs),
             "parents": list(v.parents)} for v in vs]
    emit(rows, as_json, lambda: print_table([
        {**r, "version": r["version"][:12], "time": _when(v.time),
         "bytes": format_bytes(r["bytes"]),
         "refs": ",".join(r["refs"]), "parents": ",".join(p[:12] for p in r["parents"])}
        for r, v in zip(rows, vs, strict=True)]))


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@root_options
@json_option
def recipe(spec: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
           as_json: bool) -> None:
    """Print the recipe (the script that produced a version), verbatim. Never executed.

    \b
    Example:
      dload recipe photos > make_photos.py
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    m = repo.manifest(name, version)
    if m.recipe is None and not as_json:
        how = "derive with recipe=" if "derived" in m.meta else "commit with --recipe FILE"
        raise NotFoundError(f"{name}@{m.version[:12]} has no recipe; {how}")
    # verbatim into a file or a pipe (`> make.py` gives back the text committed: no newline
    # added, and color=True keeps escape characters click would strip); on a terminal a last
    # newline is added so the prompt starts on a line of its own
    emit({"name": name, "version": m.version, "recipe": m.recipe}, as_json,
         lambda: click.echo(m.recipe, color=True,
                            nl=_on_terminal() and not str(m.recipe).endswith("\n")))


def _on_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@root_options
@json_option
def log(spec: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
        as_json: bool) -> None:
    """Show the lineage of NAME[@VERSION]: parents, derived children, ref moves, shared shards.

    \b
    Examples:
      dload log photos
      dload log photos@v1 --json
    """
    name, version = parse_spec(spec)  # (NAME@, an empty version, is refused there)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    lineage = repo.lineage(name, version)
    emit(lineage.to_dict(), as_json, lambda: click.echo(str(lineage)))


def _head_table(ds: Any, n: int) -> pa.Table:
    import pyarrow as pa

    got = ds.head(n)
    return got if isinstance(got, pa.Table) else pa.Table.from_pylist(list(got))


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@click.option("-n", "n", type=click.IntRange(1, 2**63 - 1), default=5, show_default=True,
              help="Number of samples (1 or more).")
@root_options
@json_option
def head(spec: str, n: int, root: str | None, cache_dir: str | None, cache_budget: str | None,
         as_json: bool) -> None:
    """Show the first samples (blobs as their size, tensors as dtype and shape).

    With --json, blobs are "<N bytes>" and tensors their values as one flat list in row-major
    order (`dload info` gives the shape to reshape them with).

    \b
    Example:
      dload head photos -n 3 --json
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    ds = repo.dataset(name, version)
    from dload_arrow.row_values import table_rows

    table = _head_table(ds, n)
    if as_json:
        emit(table_rows(table), True)
    else:  # (tensors' values never made Python objects: seconds and GBs for volumes, QA
        print_table(table_rows(_tensors_as_shapes(table, ds.schema)))  # volumes65)


def _tensors_as_shapes(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with each non-null tensor value as its dtype and shape, e.g. uint8[8, 8]."""
    import pyarrow as pa

    for f in schema:
        tensor = _tensor(f)
        i = table.schema.get_field_index(f.name)
        if tensor is not None and i >= 0:
            valid = table.column(i).is_valid().to_pylist()
            table = table.set_column(i, f.name, pa.array(
                [f"{tensor[0]}{tensor[1]}" if v else None for v in valid], pa.string()))
    return table


COMMANDS = [ls, info, versions, recipe, log, head]
