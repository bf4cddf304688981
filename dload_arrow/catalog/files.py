"""Local Parquet files for a version's shards, for readers that want paths (DuckDB, polars).

A local root is read in place. A remote root goes through the read path's cache: the plan is
checked first as a full read (DuckDB and polars open every file of a query together, so all of
them must be resident at once), then the shards are fetched into the cache and held: a held
shard is never evicted. Release the holds when the files are no longer read.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from dload_arrow.errors import InfeasiblePlanError, IntegrityError
from dload_arrow.read.cache import Cache, Hold, sha256_file
from dload_arrow.read.context import ReadContext
from dload_arrow.read.locks import acquire_while
from dload_arrow.read.planner import ReadPlan, plan_read
from dload_arrow.read.planner_fit import fmt_budget, fmt_need
from dload_arrow.read.shard_errors import corrupt_shard, missing_shard
from dload_arrow.sizes import BUDGET_WAYS, format_bytes
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import shard_path
from dload_arrow.waits import future_result

__all__ = ["ShardFiles", "corrupt_copies", "query_files", "shard_files"]

_FETCH_THREADS = 8


class ShardFiles:
    """Local paths of some shards, in manifest order, held in the cache until released."""

    def __init__(self, paths: list[str], holds: list[Hold], plan: ReadPlan,
                 shards: dict[str, int] | None = None) -> None:
        self.paths = paths
        self.plan = plan
        self.shards = shards or {}  # digest: bytes of the shards held (a remote root's)
        self._holds = holds

    def __reduce__(self) -> tuple[Any, ...]:
        # Holds belong to this process; a copy elsewhere holds nothing.
        return (ShardFiles, (self.paths, [], self.plan))

    def release(self) -> None:
        """Let the cache evict the files again (a no-op for a local root)."""
        for h in self._holds:
            h.release()
        self._holds = []

    def park(self) -> ShardFiles:
        """Mark the holds as kept until the owner is dropped (a dataset's to_polars()
        frames): a read of this process that needs their room is refused, not left waiting
        (read/parked.py)."""
        for h in self._holds:
            h.park()
        return self

    def __enter__(self) -> ShardFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        # At interpreter shutdown this may fail; the kernel drops the locks anyway.
        with contextlib.suppress(Exception):
            self.release()


def shard_files(
    context: ReadContext, manifest: Manifest, shards: Sequence[int] | None = None,
    purpose: str = "sql", held: Sequence[ShardFiles] = (),
) -> ShardFiles:
    """Local files of ``shards`` (indices; default all) of ``manifest``, feasibility checked,
    together with the files ``held`` already for the same query.

    Raises:
        InfeasiblePlanError: before any download, when the shards cannot all be resident.
    """
    together = [files.shards for files in held]
    chosen, plan = _planned(context, manifest, shards, purpose, together)
    if context.in_place:
        return _local(context, manifest, chosen, plan)
    with _gathering(context.cache(), chosen):
        return _fetch(context, manifest, chosen, plan)


def query_files(context: ReadContext, manifests: Sequence[Manifest]) -> list[ShardFiles]:
    """The files of every ``samples()`` source of one query, all or none: every plan is
    checked (alone and together) before a download, and one gathering fetches them all. Two
    processes whose queries each held one source's shards and waited for room the other held
    gave up after the wait timeout (review 41)."""
    planned = []
    together: list[dict[str, int]] = []
    for manifest in manifests:
        chosen, plan = _planned(context, manifest, None, "sql", together)
        together.append({e.digest: e.bytes for e in chosen})
        planned.append((manifest, chosen, plan))
    if context.in_place:
        return [_local(context, *each) for each in planned]
    out: list[ShardFiles] = []
    with _gathering(context.cache(), [e for _m, chosen, _p in planned for e in chosen]):
        try:
            for each in planned:
                out.append(_fetch(context, *each))
        except BaseException:
            for files in out:
                files.release()
            raise
    return out


def _planned(context: ReadContext, manifest: Manifest, shards: Sequence[int] | None,
             purpose: str, together: Sequence[dict[str, int]]) -> tuple[list[Any], ReadPlan]:
    """The chosen shard entries and their checked plan; ``together``: the shards of the
    sources the same query reads beside them (digest: bytes), which must fit with them."""
    entries = manifest.shards
    chosen = [entries[i] for i in (range(len(entries)) if shards is None else shards)]
    units = [(e.index, 0) for e in chosen if e.rg_rows]
    plan = plan_read(context, manifest, units, full_shuffle=True, purpose=purpose)
    if together and not context.in_place and plan.resident_bytes <= plan.budget_bytes:
        # Fits the cache alone: a disk short of room is the earlier sources' held shards.
        _check_together(plan, {e.digest: e.bytes for e in chosen}, together)
    plan.check()
    return chosen, plan


def _local(context: ReadContext, manifest: Manifest, chosen: Sequence[Any],
           plan: ReadPlan) -> ShardFiles:
    local = [context.storage.local_path(shard_path(e.digest)) for e in chosen]
    for e, path in zip(chosen, local, strict=True):
        if path is not None and not os.path.exists(path):  # else polars' or DuckDB's error
            raise missing_shard(context.storage, e.digest, manifest.name, manifest.version)
        if path is not None and not stat.S_ISREG(os.stat(path).st_mode):  # (a FIFO hung
            raise corrupt_shard(context, e.digest, manifest.name, "it is no regular file (a "
                                "FIFO, a device, or a link to one)")  # DuckDB: QA hostile65)
    return ShardFiles([p for p in local if p is not None], [], plan)


def _fetch(context: ReadContext, manifest: Manifest, chosen: Sequence[Any],
           plan: ReadPlan) -> ShardFiles:
    cache = context.cache()
    label = f"{manifest.name}@{manifest.version[:12]}"
    holds: list[Hold] = []
    pool = ThreadPoolExecutor(min(_FETCH_THREADS, max(1, len(chosen))))
    futures = [
        pool.submit(cache.acquire, context.storage, e.digest, e.bytes, dataset=label)
        for e in chosen
    ]
    try:
        for f in futures:
            holds.append(future_result(f))
    except BaseException:
        # Not waited for (a Ctrl-C must not wait for downloads or for cache room): what
        # finishes later is let go as it finishes.
        pool.shutdown(wait=False, cancel_futures=True)
        for f in futures:
            f.add_done_callback(_release_when_done)
        raise
    pool.shutdown()
    return ShardFiles([h.path for h in holds], holds, plan, {e.digest: e.bytes for e in chosen})


@contextlib.contextmanager
def _gathering(cache: Cache, chosen: Sequence[Any]) -> Iterator[None]:
    """One query of the machine gathers shards it lacks at a time: two that each held half
    their shards and waited for room the other held both gave up after the wait timeout (QA
    shared 40). A query whose shards are all cached waits for nobody; a waiter waits as long
    as the gatherer's downloads progress (their digests are in the lock file)."""
    if all(cache.is_cached(e.digest, e.bytes) for e in chosen):
        yield
        return
    path = os.path.join(cache.dir, "gather.lock")
    with acquire_while(path, lambda: cache.download_progress(*_digests_in(path)),
                       cache.wait_timeout) as lock:
        fd = lock.fd
        assert fd is not None
        with contextlib.suppress(OSError):  # (a cache this user may only read: no matter)
            os.ftruncate(fd, 0)
            os.pwrite(fd, " ".join(e.digest for e in chosen).encode(), 0)
        yield


def _digests_in(path: str) -> list[str]:
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def _check_together(plan: ReadPlan, shards: dict[str, int],
                    held: Sequence[dict[str, int]]) -> None:
    """Refuse a query whose ``samples()`` sources fit the cache one by one but not together
    (``held``: the earlier sources' shards): the files of one query are all open at once, so
    the next source would wait for room the query itself holds (until the wait timeout)."""
    union = dict(shards)
    for each in held:
        union.update(each)
    need = sum(union.values())
    budget, setting = plan.budget_bytes, plan.budget_setting_bytes
    if need <= budget:
        return
    room = (f"the cache's {fmt_budget(budget)}" if budget >= setting else
            f"the {format_bytes(budget)} its disk can hold (budget {fmt_budget(setting)})")
    fixes = []
    if need > setting:
        fixes.append(f"raise the cache budget to at least {fmt_need(need)} ({BUDGET_WAYS}; "
                     "or 'unlimited')")
    if setting >= need > budget:  # the disk, not the budget (planner_fit.disk_short)
        fixes.append(f"free disk space under {plan.cache_dir} or point cache_dir at a bigger "
                     "disk")
    raise InfeasiblePlanError(
        f"this query reads {len(held) + 1} samples() sources whose shards need "
        f"{format_bytes(need)} in the cache at once (a query opens all its files together), "
        f"more than {room}; each fits alone. Fixes: {'; '.join(fixes)}; or query the "
        "sources one at a time")


# DuckDB's errors for a file it could not read (the others: the query's own mistakes).
_READ_ERRORS = ("IOException", "InvalidInputException", "InternalException",
                "OSError")  # OSError: a footer catalog/packed.py reads


def corrupt_copies(held: Sequence[ShardFiles], error: BaseException | None,
                   root: str = "") -> IntegrityError | None:
    """After a query over ``held`` failed reading a file (DuckDB's ``error``): the cached
    copies whose bytes no longer match their digest (bit rot, another program's write; a
    cached file is trusted by size and mark, not hashed on each read) are deleted, so the
    next read fetches them again, and the error names them. A local root's own file that
    the error names (read in place) is named with its dataset and the fix, as a stream's
    read says it. None when ``error`` is not a read error (a typo is not worth hashing the
    cache) or every file is intact."""
    if type(error).__name__ not in _READ_ERRORS and "Out of buffer" not in str(error):
        return None
    said = str(error)
    for files in held:
        for path in files.paths if not files._holds else []:
            digest = os.path.basename(path).split(".")[0]
            with contextlib.suppress(OSError):
                if path in said and sha256_file(path) != digest:
                    name = files.plan.dataset
                    return IntegrityError(
                        f"shard {digest[:12]} of dataset {name!r} under {root} is corrupt "
                        f"({said.splitlines()[0]}): restore it from a copy, or run `dload "
                        f"verify {name} --delete-bad` (it checks every shard and deletes the "
                        "corrupt ones) and commit the data again")
    bad = []
    for files in held:
        for h in files._holds:
            with contextlib.suppress(OSError):  # unreadable: the query's error stands
                if sha256_file(h.path) != h.digest:
                    os.unlink(h.path)
                    bad.append(h.digest[:12])
    if not bad:
        return None
    return IntegrityError(
        f"the cached copy of shard(s) {', '.join(bad)} did not match its digest (damaged on "
        "the local disk after it was verified) and was deleted: run the query again to "
        "fetch it anew from the root")


def _release_when_done(fut: Future[Hold]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().release()
