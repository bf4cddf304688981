"""The errors of a shard that cannot be read: missing from the root, or bytes that do not decode.

Each says what happened and what to do: a shard gone with a dataset removed and collected
while a reader held it, a shard deleted outside dload (``dload verify``), a cached copy that
went bad since its download (removed; a stream fetches it anew at once, other reads next
time), a root's copy that is corrupt (``dload verify --delete-bad``), or an intact shard this
pyarrow is too old to decode.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from dload_arrow.errors import DloadError, IntegrityError, NotFoundError, StorageError
from dload_arrow.read.context import ReadContext
from dload_arrow.storage import Storage, redact_url
from dload_arrow.store.names import shard_path

__all__ = ["corrupt_shard", "missing_shard", "open_shard", "remote_damage"]


def missing_shard(storage: Storage, digest: str, dataset: str,
                  version: str | None = None) -> NotFoundError:
    """The error for a shard that is not in the root: removed with its dataset (``rm``, then
    ``gc``) while a reader held it, or deleted outside dload. ``dataset`` is the name or the
    cache's label (``name@version prefix``); ``version``, the version read, when the label
    lacks it (a local root's shards are opened in place, not through the cache)."""
    where = redact_url(storage.url)
    name, _, label_version = dataset.partition("@")
    version = (version or label_version)[:12]
    top = storage.local_path("datasets")
    if top is not None and not os.path.isdir(os.path.dirname(top)):  # (QA perms66: `mv`)
        return NotFoundError(
            f"shard {digest[:12]} of dataset {name!r} is gone: the root {where} no longer "
            "exists (moved or deleted while this reader read it); point the root at its new "
            "path and run again")
    try:
        prefix = f"datasets/{name}/manifests/"
        stored = [o.path[len(prefix):] for o in storage.list(prefix)] if name else [""]
    except DloadError:
        stored = [""]
    if not any(v.startswith(version) for v in stored):
        what = f"version {version} of {name!r}" if version and stored else repr(name)
        return NotFoundError(
            f"shard {digest[:12]} of dataset {name!r} is gone from {where}: {what} was "
            "removed (rm) and gc collected its shards after this reader opened it; open a "
            "version that exists (repo.versions(name), repo.datasets() list them)"
        )
    return NotFoundError(
        f"shard {digest[:12]} of dataset {name!r} is missing under {where} (removed by "
        f"gc, or deleted outside dload?): `dload verify {name}` lists what is missing; "
        "restore it or commit the data again"
    )


def corrupt_shard(ctx: ReadContext, digest: str, dataset: str, why: str,
                  path: str | None = None) -> IntegrityError:
    """The error for a shard whose bytes do not read back (``why``: what failed).

    ``path``, a copy in this machine's cache (not a local root's file), is removed: the root's
    copy was verified by sha256 when it was downloaded, so the cached one went bad since, and
    the next read fetches it anew."""
    of = f" of dataset {dataset!r}" if dataset else ""
    if path is not None and _intact(path, digest):  # the bytes are right: the reader is not
        return IntegrityError(
            f"shard {digest[:12]}{of} is intact (its bytes hash to its name), but pyarrow "
            f"{pa.__version__} cannot decode it as the manifest lists it ({why}): it was "
            "written by a newer pyarrow (upgrade pyarrow: pip install -U pyarrow), or the "
            "manifest was changed outside dload (its row groups or schema: a root from "
            "someone else?)"
        )
    if path is not None and not ctx.in_place:
        with contextlib.suppress(OSError):
            os.unlink(path)
        return IntegrityError(
            f"the cached copy of shard {digest[:12]}{of} in {os.path.dirname(path)} went bad "
            f"after it was downloaded ({why}); it was removed from the cache: read again to "
            "fetch it anew from the root"
        )
    return IntegrityError(
        f"shard {digest[:12]}{of} under {redact_url(ctx.storage.url)} is corrupt ({why}): "
        f"restore it from a copy, or run `dload verify {dataset or 'NAME'} --delete-bad` "
        "(it checks every shard and deletes the corrupt ones) and commit the data again"
    )


def _intact(path: str, digest: str) -> bool:
    """Whether the file at ``path`` hashes to ``digest`` (False when it cannot be read)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError:
        return False
    return h.hexdigest() == digest


def open_shard(ctx: ReadContext, path: str, digest: str, dataset: str,
               metadata: pq.FileMetaData | None = None, verify: bool = False,
               version: str | None = None,
               rg_rows: Sequence[int] | None = None, size: int | None = None
               ) -> pq.ParquetFile:
    """The shard file at local ``path``, memory-mapped (``verify``: pages checked against
    their CRCs); a missing file is NotFoundError and an unreadable footer IntegrityError,
    both naming the shard and the dataset (``version``: the version read, for the message of
    a shard gone with it; ``rg_rows``: the row counts the manifest lists, which a footer
    parsed here must give: a garbled count silently dropped rows, QA review57b; ``size``:
    its bytes the manifest lists: another shard of the same row counts copied over it was
    read as its rows, QA security64)."""
    try:
        if not stat.S_ISREG((st := os.stat(path)).st_mode):  # a FIFO hung, /dev/zero spun
            raise corrupt_shard(ctx, digest, dataset, "it is no regular file (a FIFO, a "
                                "device, or a link to one)")  # (QA hostile65)
        if size is not None and (got := st.st_size) != size:
            raise corrupt_shard(ctx, digest, dataset, f"it holds {got:,} bytes, where the "
                                f"manifest lists {size:,}", path)
        # pre_buffer (Arrow's default) reads each column chunk on its IO thread pool: for a
        # memory-mapped file that is only a hand-off, 20% of a row group's decode
        pf = pq.ParquetFile(path, memory_map=True, metadata=metadata, pre_buffer=False,
                            page_checksum_verification=verify)
        meta = pf.metadata
        if metadata is None and rg_rows is not None and list(rg_rows) != [
                meta.row_group(i).num_rows for i in range(meta.num_row_groups)]:
            pf.close()
            raise corrupt_shard(ctx, digest, dataset, "its footer's row counts are not the "
                                "manifest's", path)
        return pf
    except FileNotFoundError as e:
        raise missing_shard(ctx.storage, digest, dataset, version) from e
    except PermissionError as e:  # intact, not this user's to read (QA perms66: "corrupt")
        raise StorageError(
            f"shard {digest[:12]} of dataset {dataset!r} ({path}) cannot be read by this user "
            f"({os.strerror(e.errno or 13)}): `ls -l` shows its owner and mode; make the root "
            "readable to everyone who reads it (chmod -R g+rX, umask 002 for writers)") from e
    # (NotImplemented: a footer whose type is garbled into one no reader has)
    except (OSError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise corrupt_shard(ctx, digest, dataset, f"its footer does not parse: {e}",
                            path) from e


def remote_damage(ctx: ReadContext, digest: str, size: int, dataset: str,
                  e: Exception) -> DloadError:
    """The error of a ranged read of a remote shard that failed (QA security64: a raw
    ArrowInvalid, or the store's "range not satisfiable"): an object of another size than the
    manifest's, or a footer that does not parse, is corrupt; else the store's own error."""
    try:
        got = ctx.storage.info(shard_path(digest)).size
    except DloadError:
        got = None
    if got is not None and got != size:
        return corrupt_shard(ctx, digest, dataset, f"it holds {got:,} bytes, where the manifest "
                             f"lists {size:,}; or the manifest is wrong: verify tells which")
    if isinstance(e, DloadError):
        return e
    return corrupt_shard(ctx, digest, dataset, f"its footer does not parse: {e}")
