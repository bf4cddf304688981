"""`dload verify`: re-hash a version's objects in the root against their digests."""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

import click

from dload_arrow.cli.output import (
    emit,
    json_option,
    open_repo,
    parse_spec,
    progress_enabled,
    root_options,
)
from dload_arrow.errors import (
    DloadError,
    IntegrityError,
    NotAFileError,
    NotFoundError,
    StorageError,
)
from dload_arrow.sizes import plural
from dload_arrow.store.names import shard_path

__all__ = ["COMMANDS", "verify"]

_CHUNK = 8 << 20


def _sha256(storage: Any, digest: str, bar: Any, cache_dir: str) -> tuple[str, int]:
    """The sha256 of the whole object of ``digest`` and its size (whatever a manifest lists:
    QA hostile65, an intact shard was deleted for a manifest's wrong size)."""
    h = hashlib.sha256()
    path = shard_path(digest)
    local = storage.local_path(path)
    if local:
        from dload_arrow.read.verified import file_stamp, mark_verified, unmark

        stamp = file_stamp(local)  # before the read: a file changed meanwhile is not marked
        try:
            with storage.open_regular(path) as f:  # (a FIFO, a device: refused, QA hostile65)
                size = os.fstat(f.fileno()).st_size
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
        except FileNotFoundError as e:  # said as the storage's own read says it
            raise NotFoundError(f"no object {path!r} under {storage.url}") from e
        got = h.hexdigest()
        if got != digest:  # bit rot since a read marked it: reads check its pages again
            unmark(cache_dir, digest)
        elif stamp is not None:  # reads skip its page checks from now on
            mark_verified(cache_dir, local, got, stamp)
        return got, size
    size = storage.info(path).size
    for start in range(0, size, _CHUNK):
        chunk = storage.read_range(path, start, min(size, start + _CHUNK))
        h.update(chunk)
        if bar is not None:
            bar.update(len(chunk))
    return h.hexdigest(), size


@click.command()
@click.argument("spec", metavar="NAME[@VERSION]")
@click.option("--delete-bad", is_flag=True,
              help="Delete the corrupt objects found, so that committing the data again "
                   "uploads them (a commit skips a shard whose object exists).")
@root_options
@json_option
def verify(spec: str, delete_bad: bool, root: str | None, cache_dir: str | None,
           cache_budget: str | None, as_json: bool) -> None:
    """Re-hash every shard of a version (and its key index parts) in the root against its digest.

    On a local root, a shard that passes is marked in the cache dir as checked, so that
    later reads skip its Parquet page checks (reads check a local shard until it has been
    read whole once on the machine).

    Exits 1 if any shard is missing or corrupt (also after --delete-bad removed it). A
    missing shard is restored by committing the same data again; a corrupt one once its bad
    copy is gone (--delete-bad). That commit makes the version latest again.

    \b
    Examples:
      dload verify photos
      dload verify photos --delete-bad || dload commit photos --from ./photos
    """
    name, version = parse_spec(spec)
    repo = open_repo(root, cache_dir, cache_budget, dataset=name)
    m = repo.manifest(name, version)
    objects = [(s.digest, s.bytes) for s in m.shards]
    objects.extend((p["digest"], int(p["bytes"])) for p in m.key_index_parts)
    bar = None
    if progress_enabled():
        from dload_arrow.config import progress_bar

        bar = progress_bar()(total=sum(b for _, b in objects), unit="B", unit_scale=True,
                             desc=f"verify {name}", leave=False)
    bad = []
    for digest, size in objects:
        try:
            got, held = _sha256(repo.storage, digest, bar, repo.settings.cache_dir)
        except NotFoundError:
            bad.append({"digest": digest, "problem": "missing"})
            continue
        except NotAFileError as e:  # (a FIFO, a directory): as corrupt as a copy can be
            bad.append({"digest": digest, "problem": "bytes hash to nothing: it is "
                        f"{e.what}, not a regular file"})
            continue
        if got != digest:
            bad.append({"digest": digest, "problem": f"bytes hash to {got}"})
        elif held != size:  # intact: never deleted
            bad.append({"digest": digest, "problem": f"the manifest lists {size:,} bytes for "
                        f"an intact object of {held:,} (its bytes hash to its name): the "
                        "manifest is wrong, not the shard"})
    if bar is not None:
        bar.close()
    corrupt = [b for b in bad if b["problem"].startswith("bytes hash to")]
    refused: list[str] = []  # deletes the root refused: the report still comes first
    if delete_bad:
        for b in corrupt:  # content-addressed: a copy that fails its hash is of no use
            try:
                repo.storage.delete(shard_path(b["digest"]))
            except (OSError, DloadError) as e:
                b["delete_error"] = str(e)
                refused.append(str(e))
                continue
            b["deleted"] = True
    out = {"name": name, "version": m.version, "checked": len(objects), "bad": bad,
           "ok": not bad}
    def text() -> None:
        click.echo(f"{name}@{m.version[:12]}: {plural(len(objects), 'object')} checked, "
                   + ("all ok" if not bad else f"{len(bad)} BAD")
                   + (f", {len(corrupt) - len(refused)} corrupt deleted" if delete_bad and corrupt
                      else ""))
        for b in bad[:_LISTED]:  # which ones (--json lists every one)
            click.echo(f"  BAD {b['digest']}  {_short(b['problem'])}"
                       + ("  (deleted)" if b.get("deleted") else ""))
        if len(bad) > _LISTED:
            click.echo(f"  ... {len(bad) - _LISTED} more (--json lists them all)")

    emit(out, as_json, text)
    if refused:  # (QA readonly55: the first refusal was all that was printed)
        fix = ("remove them by hand" if all("is a directory" in r for r in refused) else
               f"delete them with credentials that may, or run `dload verify {spec} "
               "--delete-bad` again there")
        raise StorageError(f"{len(refused)} corrupt object(s) could not be deleted (first: "
                           f"{refused[0]}); {fix}")
    if bad and all(b["problem"].startswith("the manifest lists") for b in bad):
        raise IntegrityError(  # (QA hostile65)
            f"the manifest of {name}@{m.version[:12]} is wrong: it lists {len(bad)} intact "
            f"shard(s) with another size (first: {bad[0]['digest'][:12]}), kept; this version "
            "cannot be read: commit its data again")
    if bad:
        fix = ("commit the same data again to restore them" if delete_bad or not corrupt
               else f"run `dload verify {spec} --delete-bad` to remove the corrupt copies, "
                    "then commit the same data again to upload them (a commit skips a shard "
                    "whose object exists)")
        raise IntegrityError(
            f"{len(bad)} of {len(objects)} objects of {name}@{m.version[:12]} are missing or "
            f"corrupt (first: {bad[0]['digest'][:12]} {_short(bad[0]['problem'])}); {fix}"
        )


_LISTED = 20  # bad objects verify names in its text output


COMMANDS = [verify]


def _short(problem: str) -> str:
    """A problem as the text output shows it: digests cut to 12 digits, nothing else cut
    (QA review66b: "a FIFO, a d" was all that was left of a reason)."""
    return re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1", problem)
