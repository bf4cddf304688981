"""Commands that move refs or remove data: pin, unpin, tag, rm, gc."""

from __future__ import annotations

import re
import sys
import warnings
from typing import Any

import click

from dload_arrow.cli.output import (
    emit,
    escaped,
    json_option,
    open_repo,
    parse_spec,
    root_options,
)
from dload_arrow.errors import ConfigError, NotFoundError
from dload_arrow.sizes import format_bytes, plural

__all__ = ["COMMANDS", "gc", "pin", "rm", "tag", "unpin"]


def _pin_warning(repo: Any, name: str, version: str | None) -> str | None:
    """The warning for removing the version of ``name`` that dload.lock pins (or, with no
    ``version``, the whole pinned dataset); None when no pin is affected."""
    from dload_arrow.repository.lock import lock_path, read_lock

    path = lock_path()
    pinned = read_lock(path).get(name) if path is not None else None
    # (a pin written by hand may be a short id, of 4 digits or more: the version it starts)
    if not pinned or (version is not None and (len(pinned) < 4 or not repo.resolve(
            name, version).startswith(pinned.lower()))):
        return None
    return (f"warning: {path} pins {name} to {pinned[:12]}; once it is removed, reading {name} "
            f"without @VERSION fails: run `dload unpin {name}` (or `dload pin {name}` to pin "
            "latest)")


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@root_options
@json_option
def pin(spec: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
        as_json: bool) -> None:
    """Pin NAME to a version (default: latest) in ./dload.lock (or the nearest one up the tree).

    Code that opens NAME without a version then reads the pinned one.

    \b
    Example:
      dload pin photos@v1
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    vid = repo.pin(name, version)
    emit({"name": name, "version": vid}, as_json, lambda: click.echo(f"pinned {name}@{vid}"))


@click.command()
@click.argument("name")
@root_options
@json_option
def unpin(name: str, root: str | None, cache_dir: str | None, cache_budget: str | None,
          as_json: bool) -> None:
    """Remove NAME's pin from dload.lock.

    \b
    Example:
      dload unpin photos
    """
    if "@" in name:  # a pin is per dataset: whatever version it holds goes
        bare = name.partition("@")[0]
        raise ConfigError(f"unpin takes a dataset NAME, not NAME@VERSION ({name!r}): "
                          f"`dload unpin {bare}` removes its pin, whichever version it holds")
    # only dload.lock changes: a root that is gone must not keep a stale pin in place
    removed = open_repo(root, cache_dir, cache_budget, must_exist=False).unpin(name)
    emit({"name": name, "unpinned": removed}, as_json,
         lambda: click.echo(f"unpinned {name}" if removed else f"{name} was not pinned"))


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@click.argument("tag_name", metavar="TAG")
@click.option("--delete", is_flag=True, help="Delete TAG (the version stays).")
@root_options
@json_option
def tag(spec: str, tag_name: str, delete: bool, root: str | None, cache_dir: str | None,
        cache_budget: str | None, as_json: bool) -> None:
    """Point TAG of NAME at a version (default: the one dload.lock pins, else latest); NAME@TAG
    then resolves to it.

    \b
    Examples:
      dload tag photos@3f2a9c v1
      dload tag photos v1 --delete
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    if delete:
        if version is not None:
            raise ConfigError(f"--delete takes NAME TAG, not NAME@VERSION ({spec!r}): a tag "
                              "names one version already")
        was = repo.untag(name, tag_name)
        emit({"name": name, "tag": tag_name, "deleted": was}, as_json,
             lambda: click.echo(f"deleted tag {tag_name} of {name} (it pointed at {was[:12]})"))
        return
    lock = pin = None
    if version is None:  # NAME alone: the pinned version, as every command reads it (QA
        from dload_arrow.repository.lock import lock_path, pinned_version  # user58)

        path = lock_path()  # (looked up once)
        pin = None if path is None else pinned_version(name, path)
        lock = None if pin is None else str(path)
    vid, before = repo.tag_replacing(name, version or pin or "latest", tag_name)
    moved = before is not None and before != vid
    said = "" if lock is None else f" (the version {lock} pins)"

    def text() -> None:
        if moved:
            assert before is not None
            click.echo(f"moved tag {tag_name} of {name} from {before[:12]} to {vid[:12]}{said}")
        else:
            click.echo(f"tagged {name}@{vid[:12]}{said} as {tag_name}")

    emit({"name": name, "tag": tag_name, "version": vid, "previous": before, "pinned_by": lock},
         as_json, text)


@click.command()
@click.argument("name")
@click.option("--version", "version", default=None, help="Remove only this version.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@root_options
@json_option
def rm(name: str, version: str | None, yes: bool, root: str | None, cache_dir: str | None,
       cache_budget: str | None, as_json: bool) -> None:
    """Remove a dataset (or one version). Shards stay until `dload gc`.

    \b
    Examples:
      dload rm photos --version 3f2a9c --yes
      dload rm photos --yes
    """
    if "@" in name:
        bare, at = parse_spec(name)  # (NAME@, an empty version, is refused there)
        raise ConfigError(f"rm takes a dataset NAME, and the version apart ({name!r}): "
                          f"`dload rm {bare} --version {at}` removes that version, "
                          f"`dload rm {bare}` the whole dataset")
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    what = f"version {version} of {name!r}" if version else f"dataset {name!r} (every version)"
    with warnings.catch_warnings():  # a corrupt version is left out: rm is what removes it
        warnings.simplefilter("ignore")
        try:
            versions = repo.versions(name)  # unknown dataset: a clear error before asking
        except NotFoundError:
            if not repo.refs(name):  # refs on manifests that are gone: rm removes them
                raise
            versions = []
    warning = _pin_warning(repo, name, version)
    if warning:  # before the question, so the answer can take it into account
        click.echo(warning, err=True)
    before = repo.refs(name)
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError(f"refusing to remove {what} without --yes (stdin is not "
                                   "a terminal)")
        expected = ""
        if version is not None:
            vid = repo.resolve(name, version)
            # latest steps back as rm will move it: to where it pointed before (a rollback
            # counts), not merely to the newest remaining version
            rest = repo._fallback_order(name, [v for v in versions if v.version != vid])
            expected = _ref_text(before, _refs_after_rm(before, vid, rest), future=True)
        click.confirm(f"remove {what}?{f' ({expected})' if expected else ''}", abort=True,
                      err=as_json)  # --json: stdout holds only the JSON
    removed = repo.rm(name, version)
    try:
        after = repo.refs(name) if version is not None else {}
    except NotFoundError:  # it was the only version: the dataset went with it
        after = {}
    moved = {r: after[r] for r in before if r in after and after[r] != before[r]}
    deleted = sorted(r for r in before if r not in after)

    def text() -> None:
        click.echo(f"removed {plural(len(removed), 'version')} of {name}; run `dload gc` to "
                   "reclaim shard space")
        if version is not None and (moved or deleted):
            click.echo(_ref_text(before, after))

    emit({"name": name, "removed": removed, "refs_moved": moved, "refs_deleted": deleted},
         as_json, text)


def _refs_after_rm(refs: dict[str, str], vid: str, rest: list[str]) -> dict[str, str]:
    """The refs once ``vid`` is removed (as ``Repository.rm`` does): latest moves to the first
    of ``rest`` (rm's fallback order), other refs at ``vid`` are deleted."""
    out = {r: v for r, v in refs.items() if v != vid}
    if refs.get("latest") == vid and rest:
        out["latest"] = rest[0]
    return out


def _ref_text(before: dict[str, str], after: dict[str, str], future: bool = False) -> str:
    """``"latest moved from a to b; tag v1 deleted (it pointed at a)"`` for the refs that
    differ (``future``: "moves", "will be deleted", for the confirmation question)."""
    moved, deleted, points = (("moves", "will be deleted", "points") if future
                              else ("moved", "deleted", "pointed"))
    parts = [f"{r} {moved} from {before[r][:12]} to {after[r][:12]}"
             for r in sorted(before) if r in after and after[r] != before[r]]
    parts += [f"{'ref' if r == 'latest' else 'tag'} {r} {deleted} (it {points} at "
              f"{before[r][:12]})" for r in sorted(before) if r not in after]
    return "; ".join(parts)


@click.command()
@click.option("--grace", default="1h", show_default=True,
              help="Keep unreferenced shards younger than this (commits in progress, and "
                   "jobs reading a version rm removed: rm restarts its shards' grace).")
@click.option("--dry-run", is_flag=True, help="Report what would be deleted.")
@root_options
@json_option
def gc(grace: str, dry_run: bool, root: str | None, cache_dir: str | None,
       cache_budget: str | None, as_json: bool) -> None:
    """Delete shards no version references (older than --grace).

    \b
    Example:
      dload gc --dry-run
    """
    r = open_repo(root, cache_dir, cache_budget).gc(grace=grace, dry_run=dry_run)
    out = {"deleted": len(r.deleted), "bytes_reclaimed": r.bytes_reclaimed,
           "kept_referenced": r.kept_referenced, "kept_young": r.kept_young,
           "dry_run": r.dry_run, "digests": r.deleted,
           "temp_files": r.temp_files_removed, "temp_bytes": r.temp_bytes_reclaimed,
           "foreign": r.foreign_count, "foreign_paths": list(r.foreign),
           "uploads_aborted": r.uploads_aborted, "upload_bytes": r.upload_bytes_reclaimed}
    verb = "would delete" if dry_run else "deleted"
    temps = (f"; {verb} {r.temp_files_removed} temp files of interrupted writes "
             f"({format_bytes(r.temp_bytes_reclaimed)})" if r.temp_files_removed else "")
    if r.uploads_aborted:
        temps += (f"; {'would abort' if dry_run else 'aborted'} {r.uploads_aborted} multipart "
                  f"uploads of interrupted commits ({format_bytes(r.upload_bytes_reclaimed)})")
    if r.foreign_count:  # a user's files under shards/: never touched
        temps += (f"; left {r.foreign_count} files under shards/ that are not dload shards "
                  f"(e.g. {escaped(r.foreign[0])}): move them out of the root")
    young = ""
    if r.kept_young:  # (QA user58: rm's "run `dload gc`" then reclaimed nothing, unexplained)
        young = (" (unreferenced, kept for commits still running and for jobs still reading "
                 "a version rm removed, whose shards rm made young again: `--grace 0` deletes "
                 "them once neither runs)")
    emit(out, as_json, lambda: click.echo(
        f"{verb} {plural(len(r.deleted), 'shard')} ({format_bytes(r.bytes_reclaimed)}); kept "
        f"{r.kept_referenced} referenced, {r.kept_young} younger than "
        f"{f'{grace} s' if re.fullmatch(r'[0-9.]+', grace.strip()) else grace}{young}{temps}"))


COMMANDS = [pin, unpin, tag, rm, gc]
