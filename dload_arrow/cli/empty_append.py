"""``dload append --allow-empty``: an input holding no samples is nothing to append.

A daily job appends each day's export; on a quiet day the export is a header-only CSV, an
empty folder or an empty archive. Without the flag that is an error of its own kind,
``empty_input`` (a missing file stays ``not_found``), whose message names the flag; with it
the append publishes nothing, exits 0 and prints the dataset's latest version id on the last
line, as an append that published would (``VID=$(dload append ... | tail -1)``).
"""

from __future__ import annotations

from typing import Any

import click

from dload_arrow.cli.output import emit, open_repo
from dload_arrow.errors import EmptyInputError
from dload_arrow.sizes import format_bytes, plural

__all__ = ["nothing_to_append"]


def nothing_to_append(name: str, error: EmptyInputError, allow: bool, options: dict[str, Any],
                      as_json: bool) -> None:
    """Report an empty append's input as nothing appended (``allow``), or raise ``error``
    with the flag's advice. ``options``: the command's root options."""
    repo = open_repo(options.get("root"), options.get("cache_dir"), options.get("cache_budget"),
                     must_exist=allow, dataset=name)
    # No such dataset: not_found, as any append says, whether or not the flag is given (its
    # advice would only lead to that error: QA review64b)
    m = repo.manifest(name, "latest")
    if not allow:
        raise EmptyInputError(
            f"{error}: nothing to append to {name!r}; for an input that may be empty some "
            "days (a daily job's export), `dload append --allow-empty` takes it as nothing to "
            "append: exit 0, the latest version id printed") from error
    out = {
        "name": m.name, "version": m.version, "rows": m.num_rows, "shards": len(m.shards),
        "shards_uploaded": 0, "bytes": m.num_bytes, "bytes_uploaded": 0,
        "shard_bytes_uploaded": 0, "manifest_bytes_uploaded": 0, "seconds": 0.0,
        "source": None, "repeats_rows_before": None, "empty_input": str(error),
    }

    def text() -> None:
        click.echo(f"nothing appended to {m.name}@{m.version[:12]}: {error}; it keeps "
                   f"{plural(m.num_rows, 'row')} in {plural(len(m.shards), 'shard')} "
                   f"({format_bytes(m.num_bytes)})")
        click.echo(m.version)

    emit(out, as_json, text)
