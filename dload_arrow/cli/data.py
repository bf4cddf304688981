"""Commands that read sample data: pull, export, cache (verify: cli/verify.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from dload_arrow.cli.output import (
    emit,
    json_option,
    open_repo,
    parse_spec,
    print_table,
    progress_enabled,
    root_options,
    root_problem,
)
from dload_arrow.errors import MissingKeyError, NotFoundError, UnsafePathError, escaped
from dload_arrow.sizes import format_bytes
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["COMMANDS", "cache", "cache_text", "export", "pull", "pull_text"]



def _as_dict(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return obj if isinstance(obj, dict) else {"result": obj}


def cache_text(d: dict[str, Any], residency: bool = True) -> None:
    """Print a cache status dict (from ``repo.cache_status()``) for people."""
    if d.get("used_bytes") is None:  # unusable (a file, a folder this user cannot write)
        click.echo(f"cache: {d.get('cache_dir')}: cannot be used ({d.get('error', '?')})")
        return
    budget = d.get("budget_bytes")
    shown = "unlimited" if isinstance(budget, int) and budget >= 2**62 else (
        format_bytes(budget) if isinstance(budget, int) else "?")
    if isinstance(limit := d.get("limit_bytes"), int) and limit < min(
            budget if isinstance(budget, int) else 2**62, 2**62):  # the disk holds less
        shown += f" (its disk holds at most {format_bytes(limit)})"
    used = d.get("used_bytes")
    click.echo(f"cache: {d.get('cache_dir')}: {format_bytes(used or 0)} used of {shown}"
               f" ({d.get('shards', '?')} shards, {d.get('held_shards', 0)} held"
               + (f", {format_bytes(d['downloading_bytes'])} being downloaded"
                  if d.get("downloading_bytes") else "") + "); "
               f"{format_bytes(d.get('free_disk_bytes') or 0)} free disk"
               + (" (local root: shards read in place)" if d.get("in_place") else ""))
    if d.get("unwritable"):  # reads would fail: say it here (QA errors61)
        click.echo(f"  cannot be used: {d['unwritable']}")
    if isinstance(budget, int) and isinstance(used, int) and used > budget:
        click.echo(f"  over the budget by {format_bytes(used - budget)}: the next reader with "
                   "this budget evicts unheld shards down to it (`dload cache clear` now)")
    rows = d.get("datasets") or []
    if residency and rows:
        print_table([{"name": r["name"], "version": r["version"][:12],
                      "cached": f"{format_bytes(r['cached_bytes'])} / "
                                f"{format_bytes(r['total_bytes'])}",
                      "shards": f"{r['cached_shards']} / {r['total_shards']}"} for r in rows])


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@root_options
@json_option
def pull(spec: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
         as_json: bool) -> None:
    """Download a version's shards into the local cache (within its budget).

    \b
    Example:
      dload pull photos@v1
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    result = _as_dict(repo.pull(name, version, progress=progress_enabled()))
    if isinstance(result.get("seconds"), float):  # as commit's report: milliseconds
        result["seconds"] = round(result["seconds"], 3)
    emit(result, as_json, lambda: click.echo(pull_text(result)))


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def pull_text(r: dict[str, Any]) -> str:
    """One line for people from a pull report's dict (``--json`` prints the dict itself)."""
    label = f"{r['name']}@{r['version'][:12]}"
    whole = f"{_count(r['shards_total'], 'shard')}, {format_bytes(r['bytes_total'])}"
    if r["in_place"]:
        return f"{label}: a local root, read in place ({whole}); nothing to pull"
    resident = r.get("shards_resident")
    if resident is not None and resident < r["shards_total"]:
        return (f"{label}: only {resident} of {_count(r['shards_total'], 'shard')} in the "
                f"cache now (evicted since: other readers needed the room, or the cache was "
                f"cleared); downloaded "
                f"{_count(r['shards_fetched'], 'shard')}")
    if not r["shards_fetched"]:
        return f"{label}: already in the cache ({whole}); nothing downloaded"
    return (f"{label}: in the cache ({whole}); downloaded "
            f"{_count(r['shards_fetched'], 'shard')} ({format_bytes(r['bytes_fetched'])}) "
            f"in {r['seconds']:.2f}s")


def _check_export_key(key: str, where: str) -> None:
    """Refuse a key that is not a plain relative path before anything is written.

    The library's check speaks of archives (it is shared with ingestion); here the key of a
    stored sample is the problem, and the sample itself is fine to read.
    """
    from dload_arrow.ingest.grouping import check_entry_name

    try:
        plain = check_entry_name(key, "export") == key
    except UnsafePathError:
        plain = False
    if not plain:
        raise UnsafePathError(
            f"sample key {key!r} of {where} is not a plain relative path (absolute, '..', '.', "
            "a backslash or an empty part), so it cannot be written as DIR/<key>.<column>; "
            f"read the sample in Python instead: repo.dataset(...).get({key!r})"
        )


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@click.argument("key", required=False)
@click.option("--index", "index", type=click.IntRange(min=0), default=None,
              help="Sample by position instead (0 for the first).")
@click.option("--to", "dest", required=True, type=click.Path(file_okay=False),
              help="Directory to write the sample's files into.")
@root_options
@json_option
def export(spec: str, key: str | None, index: int | None, dest: str, root: str | None,
           cache_dir: str | None, cache_budget: str | None, as_json: bool) -> None:
    """Write one sample's fields as files DIR/<key>.<column> (never outside DIR).

    \b
    Examples:
      dload export photos a/x --to out/
      dload export photos --index 0 --to out/
    """
    from dload_arrow.ingest.export import write_sample_files
    from dload_arrow.repository.dataset import GET_DEFAULT_HINT

    if (key is None) == (index is None):
        raise click.UsageError("give either KEY or --index I")
    if not dest.strip():  # an unset variable: the files would land in the working directory
        raise click.BadParameter("is empty (an unset variable?): give a folder",
                                 param_hint="--to")
    name, version = parse_spec(spec)
    ds = open_repo(root, cache_dir, cache_budget, dataset=name).dataset(name, version)
    try:
        sample = dict(ds.get(key) if key is not None else ds[index])
    except IndexError as e:  # a position past the end is the user's mistake, not a bug
        raise NotFoundError(f"{e}; use --index 0..{len(ds) - 1} or a KEY") from e
    except MissingKeyError as e:  # (QA errors61: Python's default= advice)
        raise MissingKeyError(f"{str(e).removesuffix(GET_DEFAULT_HINT)}; `dload head "
                              f"{spec}` shows keys, or export by position with --index") from None
    _check_export_key(str(sample[KEY_COLUMN]), f"{name}@{ds.version[:12]}")
    written = write_sample_files(sample, dest, ds.schema)
    nulls = [c for c, v in sample.items() if v is None]  # no file: said (QA eng58)
    emit({"name": name, "version": ds.version, "files": written, "null_columns": nulls},
         as_json, lambda: click.echo("\n".join([*(escaped(w) for w in written), *(
             [f"(no file for null column(s): {', '.join(nulls)})"] if nulls else [])])))


@click.group()
def cache() -> None:
    """The local cache: `dload cache status`, `dload cache clear`."""


@cache.command("status")
@root_options
@json_option
def cache_status(root: str | None, cache_dir: str | None, cache_budget: str | None,
                 as_json: bool) -> None:
    """Show the cache directory, its budget and its usage.

    \b
    Example:
      dload cache status --json
    """
    repo = open_repo(root, cache_dir, cache_budget, must_exist=False)
    problem = root_problem(repo)  # the cache serves the machine: shown all the same
    if problem is not None:
        click.echo(f"warning: {str(problem).split(';')[0]}: no dataset is shown as cached",
                   err=True)
    from dload_arrow.cli.status import cache_summary

    result = cache_summary(repo)  # an unreachable root: the local cache is shown all the same
    if problem is not None and result["error"] is None:  # (a local root not made: in JSON too)
        result["error"] = str(problem).split(";")[0]
    elif problem is None and result.get("error"):
        click.echo(f"warning: {result['error']}: no dataset is shown as cached", err=True)
    emit(result, as_json, lambda: cache_text(result))


@cache.command("clear")
@root_options
@json_option
def cache_clear(root: str | None, cache_dir: str | None, cache_budget: str | None,
                as_json: bool) -> None:
    """Remove every cached shard not held by a running reader.

    \b
    Example:
      dload cache clear
    """
    repo = open_repo(root, cache_dir, cache_budget, must_exist=False)
    freed = repo.cache_clear()
    emit({"bytes_freed": freed}, as_json, lambda: click.echo(
        f"freed {format_bytes(freed)} in {repo.settings.cache_dir} (shards a running reader "
        "holds stay)"))


COMMANDS = [pull, export, cache]
