"""One shard's download into the cache: fetch into a reserved temp file, verify, rename.

A download writes a temp file under ``shards/`` (reserved by the budget) and renames it into
place once its sha256 passed. When someone deletes the cache directory meanwhile (``rm -rf``
of the cache while a reader runs), the temp file vanishes under the download: the bytes still
land in the unlinked file, then the rename fails. No data is lost, the root still has the
shard: :func:`fetch_into` says so with :class:`CacheRemoved`, the cache recreates the
directory (:func:`reclaim`) and downloads again. Deleted again and again, the reader stops
with :func:`cache_removed_error`, which names the directory and the safe way to empty it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os

from dload_arrow.errors import ConflictError, IntegrityError, NotFoundError
from dload_arrow.read.cache_space import VERIFIED_NS, claim_cache_dir
from dload_arrow.read.locks import make_dirs
from dload_arrow.storage import Storage, redact_url
from dload_arrow.store.names import shard_path

__all__ = ["REMOVED_TRIES", "CacheRemoved", "cache_removed_error", "fetch_into", "reclaim"]

#: Downloads of one shard whose temp file was deleted under them before the reader gives up.
REMOVED_TRIES = 4


class CacheRemoved(Exception):
    """A download's temp file was deleted under it (``__cause__``: the error that showed it)."""


def fetch_into(tmp: str, final: str, storage: Storage, digest: str, nbytes: int,
               dataset: str | None) -> None:
    """Download shard ``digest`` into its reserved ``tmp``, verify it, rename it to ``final``.

    Raises:
        NotFoundError: the root has no such object.
        IntegrityError: the root's bytes do not hash to ``digest`` (twice: a torn transfer
            is tried once more).
        CacheRemoved: ``tmp`` was deleted meanwhile (the cache directory removed).
    """
    try:
        got = ""
        for _attempt in range(2):  # one retry: a torn transfer is not a corrupt root
            # The sha256 is fed as the bytes are written (no second read of the file), so
            # a shard is usable as soon as its last byte has arrived.
            hasher = hashlib.sha256()
            try:
                size = storage.download(shard_path(digest), tmp, hasher)
            except NotFoundError as e:
                if not os.path.exists(tmp):
                    raise  # our file went, not the root's object: CacheRemoved below
                from dload_arrow.read.shard_errors import missing_shard

                raise missing_shard(storage, digest, dataset or "") from e
            got = (f"its bytes hash to {hasher.hexdigest()}" if size == nbytes else
                   f"it holds {size:,} bytes, where the manifest lists {nbytes:,}")
            if size == nbytes and hasher.hexdigest() == digest:
                break
        else:
            if hasher.hexdigest() == digest:  # (QA hostile65: the advice deleted a sound one)
                raise IntegrityError(
                    f"the manifest of dataset {dataset or '?'} in {redact_url(storage.url)} "
                    f"is wrong: shard {digest[:12]} is intact (its bytes hash to its name) and "
                    f"holds {size:,} bytes, where the manifest lists {nbytes:,}; this version "
                    "cannot be read: commit its data again (the shard is kept)")
            raise IntegrityError(
                f"shard {digest} of dataset {dataset or '?'} in {redact_url(storage.url)} "
                f"is corrupt: {got}. Restore the object from a copy, or "
                f"run `dload verify {dataset or 'NAME'} --delete-bad` and commit the data "
                "again (a commit skips a shard whose object exists)"
            )
        os.utime(tmp, ns=(VERIFIED_NS, VERIFIED_NS))
        os.replace(tmp, final)
    except BaseException as e:
        removed = isinstance(e, OSError | NotFoundError) and not os.path.exists(tmp)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if removed:
            raise CacheRemoved(tmp) from e
        raise


def reclaim(cache_dir: str) -> None:
    """Recreate ``cache_dir`` as a cache (marker and ``shards/``) after it was deleted.

    Other threads' downloads may have put files in ``shards/`` already. ``cache.lock`` (the
    admission lock every download takes) says the directory is a cache, as it does for caches
    older than the marker, so the marker is written even then; a root (``datasets/``) stays
    refused."""
    make_dirs(os.path.join(cache_dir, "shards"))
    if not os.path.isdir(os.path.join(cache_dir, "datasets")):
        with open(os.path.join(cache_dir, "cache.lock"), "a"):
            pass
    claim_cache_dir(cache_dir)


def cache_removed_error(cache_dir: str, digest: str, dataset: str | None) -> ConflictError:
    """The error for shard ``digest`` whose download lost its file every time it ran."""
    return ConflictError(
        f"the cache directory {cache_dir} was removed while reading shard {digest[:12]} of "
        f"{dataset or 'a dataset'}, {REMOVED_TRIES} times in a row (the download's file was "
        "deleted under it each time). Do not delete the cache directory while readers run: "
        "`dload cache clear` (repo.cache_clear()) empties it safely, leaving only the shards "
        "being read; or give this reader a cache_dir of its own (DLOAD_CACHE_DIR, --cache-dir)"
    )
