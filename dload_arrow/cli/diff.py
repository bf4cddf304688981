"""``dload diff``: two versions compared by their keys and shards.

The versions are ``NAME@VERSION`` (a tag, an id or an id prefix), or a bare version id (a
version id names its dataset too: ``dload diff 3f2a9c 81bd04``), or a bare name (its latest
version). A bare second argument after ``NAME@V1`` is first tried as a version of NAME
(``dload diff photos@v1 v2``).
"""

from __future__ import annotations

import click

from dload_arrow.cli.output import emit, escaped, json_option, open_repo, parse_spec, root_options

__all__ = ["COMMANDS", "diff"]


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
    d = repo.diff(old, new, values=values)
    cols, differ, both = d.columns, d.changed, d.in_both_unshared

    def text() -> None:
        marks = [" (pinned in dload.lock)" if s["pinned"] else "" for s in (d.old, d.new)]
        click.echo(f"{d.old['name']}@{d.old['version'][:12]}{marks[0]} -> "
                   f"{d.new['name']}@{d.new['version'][:12]}{marks[1]}")
        click.echo(f"  shards: {d.shards_shared} shared, {d.shards_only_old} only in old, "
                   f"{d.shards_only_new} only in new")
        if any(cols.values()):
            changed = [f"{c['name']} {c['old']} -> {c['new']}" for c in cols["changed"]]
            parts = [f"+ {', '.join(cols['added'])}" if cols["added"] else "",
                     f"- {', '.join(cols['removed'])}" if cols["removed"] else "",
                     f"~ {', '.join(changed)}" if changed else ""]
            click.echo(f"  columns: {'; '.join(p for p in parts if p)}")
        for sign, keys in (("+", d.added), ("-", d.removed)):
            click.echo(f"  {sign} {len(keys)} keys")
            for k in keys[:show_keys]:
                click.echo(f"    {sign} {escaped(k)}")
            if len(keys) > show_keys > 0:  # --keys 0: counts only
                click.echo(f"    ... {len(keys) - show_keys} more (--json lists all)")
        if differ is not None:
            click.echo(f"  ~ {len(differ)} keys changed (of {both} in both versions "
                       "whose shards differ)")
            for k in differ[:show_keys]:
                click.echo(f"    ~ {escaped(k)}")
            if len(differ) > show_keys > 0:
                click.echo(f"    ... {len(differ) - show_keys} more (--json lists all)")
        elif both:  # (QA user58: "+ 0 keys / - 0 keys" read as "the same")
            click.echo(f"  ? {both} keys in both versions lie in shards that differ: "
                       "their values may have changed (--values compares them)")

    emit(d.to_dict(), as_json, text)


COMMANDS = [diff]
