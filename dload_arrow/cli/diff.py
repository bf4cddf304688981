"""``dload diff``: two versions compared by their keys and shards.

The versions are ``NAME@VERSION`` (a tag, an id or an id prefix), or a bare version id (a
version id names its dataset too: ``dload diff 3f2a9c 81bd04``), or a bare name (its latest
version). A bare second argument after ``NAME@V1`` is first tried as a version of NAME
(``dload diff photos@v1 v2``).
"""

from __future__ import annotations

import decimal
import string
from typing import Any

import click

from dload_arrow.cli.output import emit, escaped, json_option, open_repo, parse_spec, root_options
from dload_arrow.errors import DloadError, NotFoundError
from dload_arrow.store.names import KEY_COLUMN, shard_path

__all__ = ["COMMANDS", "diff"]


def _shard(repo: Any, digest: str, columns: list[str]) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = shard_path(digest)
    local = repo.storage.local_path(path)
    src = local if local else pa.py_buffer(repo.storage.read(path))
    with pq.ParquetFile(src) as pf:  # read_table would import pyarrow.dataset and pandas
        return pf.read(columns=columns)


def _shard_keys(repo: Any, digest: str) -> set[str]:
    return set(_shard(repo, digest, [KEY_COLUMN]).column(0).to_pylist())


def _row_hashes(repo: Any, digests: list[str], keys: set[str], columns: list[str]
                ) -> dict[str, bytes]:
    """A hash of each row's ``columns`` values, for the rows of ``keys`` in those shards (one
    shard read whole at a time)."""
    import hashlib

    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(sorted(keys), pa.string())
    out: dict[str, bytes] = {}
    for d in digests:
        t = _shard(repo, d, [KEY_COLUMN, *columns])
        keys_of = t.column(KEY_COLUMN)
        t = t.filter(pc.is_in(keys_of, value_set=wanted.cast(keys_of.type)))
        for row in t.to_pylist():
            key = row.pop(KEY_COLUMN)
            out[key] = hashlib.sha256(repr(_canon(sorted(row.items()))).encode()).digest()
    return out


def _canon(v: Any) -> Any:
    """``v`` with numbers compared by value: a column widened from int to float (1 -> 1.0)
    changes its type (shown under columns), not its rows' values (QA review58b)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, decimal.Decimal) and v.is_finite():  # int -> decimal too (1 == 1.00)
        return int(v) if v == v.to_integral_value() else (
            float(v) if decimal.Decimal(float(v)) == v else v.normalize())
    if isinstance(v, list | tuple):
        return [_canon(x) for x in v]
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    return v


def _could_be_id(spec: str) -> bool:
    """Whether ``spec`` has the form of a version id or id prefix (4 to 64 hex digits)."""
    return 4 <= len(spec) <= 64 and all(c in string.hexdigits for c in spec)


def _resolve(repo: Any, spec: str, other: str | None) -> tuple[str, str | None]:
    """``(name, version)`` of one argument; ``other`` is the other argument's name, if it
    gave one (``NAME@...``)."""
    if "@" in spec:
        return parse_spec(spec)
    first = None  # why it is no version of the other argument's dataset
    if other is not None:
        try:
            repo.resolve(other, spec)
            return other, spec
        except DloadError as e:
            first = e
    names = repo.datasets()
    if spec in names:
        return spec, None
    if not _could_be_id(spec):  # only a dataset name: say so, with the closest names
        from dload_arrow.repository.missing import unknown_dataset  # (dload --help stays light)
        from dload_arrow.storage import redact_url

        raise NotFoundError(unknown_dataset(spec, names, redact_url(repo.storage.url))
                            + " A tag needs its dataset: NAME@TAG.")
    try:
        name, vid = repo.find_version(spec)
        return str(name), str(vid)
    except DloadError as e:
        if first is not None and " was removed " in str(first):  # a removed version of it
            raise first from None
        raise NotFoundError(
            f"{spec!r} is neither a dataset nor a version id of this root ({e}); give "
            "NAME@VERSION, a version id, or a dataset name (its pinned or latest version)") from e


@click.command()
@click.argument("old", metavar="V1")
@click.argument("new", metavar="V2")
@click.option("--keys", "show_keys", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many added/removed keys to list (JSON lists them all).")
@click.option("--values", "values", is_flag=True,
              help="Also compare the values of the keys in both versions whose shards differ "
                   "(reads those shards whole; the columns both versions have).")
@root_options
@json_option
def diff(old: str, new: str, show_keys: int, values: bool, root: str | None,
         cache_dir: str | None, cache_budget: str | None, as_json: bool) -> None:
    """Compare two versions: keys added, removed and (--values) changed, shards shared,
    columns changed.

    Each version is NAME@VERSION (a tag, an id or an id prefix), a bare version id (it names
    its dataset too), or a dataset name (the version dload.lock pins, else its latest).
    Without --values only the key columns of shards that are not shared are read, and the
    keys in both versions whose rows lie in such shards are counted as ones whose values
    may have changed.

    \b
    Examples:
      dload diff photos@v1 photos@latest
      dload diff 3f2a9c 81bd04
    """
    named = [parse_spec(s)[0] if "@" in s else None for s in (old, new)]
    repo = open_repo(root, cache_dir, cache_budget, dataset=named[0] or named[1])
    # A bare argument is tried as a version of the other's NAME only when that one was
    # written NAME@...: each bare token means one thing whichever side it is on.
    n1, v1 = _resolve(repo, old, named[1])
    n2, v2 = _resolve(repo, new, named[0])
    a, b = repo.manifest(n1, v1), repo.manifest(n2, v2)
    from dload_arrow.repository.lock import pinned_version  # (dload --help stays light)

    # a bare NAME reads its dload.lock pin, as everywhere: the header says so
    pins = [v is None and pinned_version(n) is not None for n, v in ((n1, v1), (n2, v2))]
    da, db = set(a.digests()), set(b.digests())
    idx = {p["digest"] for m in (a, b) for p in m.key_index_parts}
    shared = (da & db) - idx
    only_a = [s.digest for s in a.shards if s.digest not in shared]
    only_b = [s.digest for s in b.shards if s.digest not in shared]
    keys_a = set().union(*(_shard_keys(repo, d) for d in only_a))
    keys_b = set().union(*(_shard_keys(repo, d) for d in only_b))
    added, removed = sorted(keys_b - keys_a), sorted(keys_a - keys_b)
    both = keys_a & keys_b  # rows of these may differ; a shared shard's rows cannot
    differ: list[str] | None = [] if values else None
    if values and both:
        common = [f.name for f in b.schema if f.name in a.schema.names and f.name != KEY_COLUMN]
        ha, hb = (_row_hashes(repo, only, both, common) for only in (only_a, only_b))
        differ = sorted(k for k in both if ha.get(k) != hb.get(k))
    out = {
        "old": {"name": n1, "version": a.version, "rows": a.num_rows, "shards": len(a.shards),
                "pinned": pins[0]},
        "new": {"name": n2, "version": b.version, "rows": b.num_rows, "shards": len(b.shards),
                "pinned": pins[1]},
        "shards_shared": len(shared), "shards_only_old": len(only_a),
        "shards_only_new": len(only_b), "added": added, "removed": removed,
        "in_both_unshared": len(both), "changed": differ,
        "columns": (cols := _columns(a.schema, b.schema)),
    }

    def text() -> None:
        marks = [" (pinned in dload.lock)" if p else "" for p in pins]
        click.echo(f"{n1}@{a.version[:12]}{marks[0]} -> {n2}@{b.version[:12]}{marks[1]}")
        click.echo(f"  shards: {len(shared)} shared, {len(only_a)} only in old, "
                   f"{len(only_b)} only in new")
        if any(cols.values()):
            changed = [f"{c['name']} {c['old']} -> {c['new']}" for c in cols["changed"]]
            parts = [f"+ {', '.join(cols['added'])}" if cols["added"] else "",
                     f"- {', '.join(cols['removed'])}" if cols["removed"] else "",
                     f"~ {', '.join(changed)}" if changed else ""]
            click.echo(f"  columns: {'; '.join(p for p in parts if p)}")
        for sign, keys in (("+", added), ("-", removed)):
            click.echo(f"  {sign} {len(keys)} keys")
            for k in keys[:show_keys]:
                click.echo(f"    {sign} {escaped(k)}")
            if len(keys) > show_keys:
                click.echo(f"    ... {len(keys) - show_keys} more (--json lists all)")
        if differ is not None:
            click.echo(f"  ~ {len(differ)} keys changed (of {len(both)} in both versions "
                       "whose shards differ)")
            for k in differ[:show_keys]:
                click.echo(f"    ~ {escaped(k)}")
            if len(differ) > show_keys:
                click.echo(f"    ... {len(differ) - show_keys} more (--json lists all)")
        elif both:  # (QA user58: "+ 0 keys / - 0 keys" read as "the same")
            click.echo(f"  ? {len(both)} keys in both versions lie in shards that differ: "
                       "their values may have changed (--values compares them)")

    emit(out, as_json, text)


def _columns(a: Any, b: Any) -> dict[str, list[Any]]:
    """Columns added, removed and retyped from schema ``a`` to ``b`` (their order aside)."""
    from dload_arrow.store.rows import field_shape

    def shown(f: Any) -> str:  # a tensor's shape too: (2, 3) and (3, 2) share their type
        shape = field_shape(f)
        return str(f.type) + ("" if shape is None else f" {shape}")

    old, new = {f.name: shown(f) for f in a}, {f.name: shown(f) for f in b}
    return {"added": [n for n in new if n not in old],
            "removed": [n for n in old if n not in new],
            "changed": [{"name": n, "old": old[n], "new": new[n]}
                        for n in new if n in old and new[n] != old[n]]}


COMMANDS = [diff]
