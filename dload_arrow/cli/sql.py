"""``dload sql``: DuckDB SQL over the catalog and samples, printed as a table, CSV or JSON."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import click

from dload_arrow.cli.output import emit, emit_csv, json_option, open_repo, print_table, root_options
from dload_arrow.errors import ConfigError

__all__ = ["COMMANDS", "parse_params", "sql", "unique_names"]


def unique_names(names: list[str]) -> list[str]:
    """Column names made unique: a repeated ``n`` becomes ``n_1``, ``n_2``, ... (in order)."""
    taken = set(names)
    seen: set[str] = set()
    out = []
    for n in names:
        if n in seen:
            i = 1
            while f"{n}_{i}" in taken:
                i += 1
            n = f"{n}_{i}"
            taken.add(n)
        seen.add(n)
        out.append(n)
    return out


def parse_params(items: tuple[str, ...]) -> dict[str, Any]:
    """``--param K=V`` values: text, except a JSON list, object or "quoted string".

    Text is what a name, a tag or a date is; DuckDB converts it where the query compares it
    with a number, a bool or a time (``num_rows > $n``), so ``--param n=2024`` matches a
    dataset named 2024 and a count of 2024 alike.
    """
    out: dict[str, Any] = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise click.BadParameter(f"{item!r} is not K=V", param_hint="--param")
        if k in out:  # (QA sql60: the last one was kept, silently)
            raise click.BadParameter(f"{k!r} is given twice ({k}={out[k]} and {item}); give "
                                     "each $name once", param_hint="--param")
        out[k] = v
        if v.startswith(("[", "{", '"')):
            with contextlib.suppress(ValueError):
                out[k] = json.loads(v)
    return out


class _SqlCommand(click.Command):
    """``dload sql``: an argument opening with a ``--`` comment (the sql/queries files) is the
    query, not an option (QA sql60: "No such option: -- rows per dataset ..."): an option's
    name holds no whitespace, so such an argument goes last, after ``--``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = {o for p in self.params for o in getattr(p, "opts", ())}
        if "--" not in args:
            for i, a in enumerate(args):
                if (a.startswith("--") and any(c.isspace() for c in a)
                        and a.split(maxsplit=1)[0].split("=")[0] not in options):  # --k=a b
                    args = [*args[:i], *args[i + 1:], "--", a]  # options stay options
                    break
        return super().parse_args(ctx, args)


@click.command(cls=_SqlCommand)
@click.argument("query")
@click.option("--param", "params", multiple=True, metavar="K=V",
              help="Bind $K to V (repeatable). V is text, which DuckDB converts where the "
                   "query compares it with a number, bool or time ($n::INT for arithmetic); "
                   "a JSON list binds a list: --param names='[\"a\", \"b\"]'.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="Rows to print as a table; 0 prints every row (--json and --csv always do).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV with a header row.")
@root_options
@json_option
def sql(query: str, params: tuple[str, ...], limit: int, as_csv: bool, root: str | None,
        cache_dir: str | None, cache_budget: str | None, as_json: bool) -> None:
    """Run DuckDB SQL over the catalog (datasets, versions, shards) and samples.

    Columns with the same name (from a join) are printed as NAME, NAME_1, ...; alias them
    in the query to choose names.

    \b
    Examples:
      dload sql "select name, num_rows from versions where name = \\$name" --param name=photos
      dload sql "select * from samples('photos') where label = \\$l" --param l=3 --csv
    """
    if as_json and as_csv:
        raise click.UsageError("choose one of --json and --csv")
    bound = parse_params(params)
    table = open_repo(root, cache_dir, cache_budget).sql(query, **bound)
    from dload_arrow.row_values import table_rows

    names = unique_names(table.column_names)
    if names != table.column_names:
        table = table.rename_columns(names)
    if as_json:
        emit(_json_embedded(table_rows(table), table), True)
        return
    if as_csv:
        emit_csv(table_rows(table), names)
        return
    # only the rows shown become Python values (a result of millions printed 5 of them)
    shown = table_rows(table.slice(0, limit) if limit else table)
    print_table(shown, names)
    if table.num_rows > len(shown):
        click.echo(f"... {table.num_rows - len(shown)} more rows (--limit 0 prints all; --json, "
                   "--csv)")
    if not names:
        raise ConfigError("the query returned no columns")


def _json_embedded(rows: list[dict[str, Any]], table: Any) -> list[dict[str, Any]]:
    """``rows`` with the values of DuckDB JSON columns (``meta``) as the JSON they hold."""
    from dload_arrow.catalog.sql_types import is_json

    marked = [f.name for f in table.schema if is_json(f)]
    for r in rows:
        for name in marked:
            if isinstance(r[name], str):
                with contextlib.suppress(ValueError):  # not JSON after all: as text
                    r[name] = json.loads(r[name])
    return rows


COMMANDS = [sql]
