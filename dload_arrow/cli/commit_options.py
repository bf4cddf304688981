"""The options ``dload commit`` and ``dload append`` share: where the data is, how to read
it, and how to store it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from dload_arrow.errors import ConfigError
from dload_arrow.sizes import parse_size

__all__ = ["input_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A size option as bytes; zero or negative sizes are refused here, before any reading."""
    if value is None:
        return None
    try:
        n = parse_size(value)
    except ConfigError as e:
        raise click.BadParameter(f"{value!r} is not a size; use a number with an optional "
                                 "unit, e.g. 128MiB or 2MB") from e
    if n <= 0:
        raise click.BadParameter(f"{value!r} is {n} bytes; give a size above 0, e.g. 128MiB")
    return n


def input_options(f: F) -> F:
    """Add the input and storage options to a command."""
    for opt in reversed([
        click.option("--from", "source", required=True, multiple=True,
                     help="A directory, an archive (.zip .tar .tar.gz .tar.zst, local or "
                          "s3://), or a table (.parquet .csv .tsv .jsonl .arrow .feather, "
                          "file or folder). Several archives: repeat --from, give a folder "
                          "of archives, or "
                          "a quoted pattern ('wds-*.tar', 'wds-{000000..000099}.tar')."),
        click.option("--as", "kind", type=click.Choice(["auto", "files", "archive", "table"]),
                     default="auto", show_default=True, help="How to read --from."),
        click.option("--include", multiple=True,
                     help="Only files matching this glob: their path, their name or a "
                          "directory on the path (cats, cats/); extensions case-insensitive "
                          "(files, archives and table folders)."),
        click.option("--exclude", multiple=True,
                     help="Skip files matching this glob (as --include: --exclude cats skips "
                          "everything under cats/). A glob that matches no file is warned of."),
        click.option("--split", type=click.Choice(["last", "first"]), default=None,
                     help="Files and archives: the extension starts at the last dot (x.v2.jpg "
                          "-> x.v2 + jpg; the default) or the first (webdataset: x.seg.png -> "
                          "x + seg.png)."),
        click.option("--key-column", default=None, help="Tables: the column holding keys; "
                     "its values become __key__ (as text) and it is not kept as a column "
                     "(default: __key__ if present, else generated row numbers)."),
        click.option("--text-column", multiple=True,
                     help="Tables (CSV): read this column as text, as written (codes such as "
                          "ZIP 01234 or +4930123 that a number would change; repeatable)."),
        click.option("--recipe", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="The script that produced the data (stored verbatim)."),
        click.option("--meta", multiple=True, help="Metadata K=V (repeatable; JSON values)."),
        click.option("--shard-size", default=None, callback=_size,
                     help="Target shard size, e.g. 128MiB."),
        click.option("--row-group-size", default=None, callback=_size,
                     help="Target row-group size, e.g. 2MiB."),
    ]):
        f = opt(f)
    return f
