"""The fetcher: background threads that bring shards into the cache ahead of the consumer.

A schedule is a sequence of *visits* (runs of units from one shard). The fetcher keeps at most
``window`` visits in flight or held: the one being read plus ``window - 1`` ahead. When the
consumer moves to the next visit, the previous visit's hold is released (so that shard becomes
evictable) and the next visit beyond the window is submitted. With ``head_first`` the first
visit downloads alone before the others start (a shuffled first window waits for nearly all of
its shard). Local roots need no fetching: a visit resolves to the file in the root.

Only the visit being read is held. Visits ahead are prefetched (``Cache.prefetch``): into room
that is free right now, and evictable until the consumer reaches them and holds them. Held
look-ahead shards used to deadlock processes sharing a small budget: each held finished
look-ahead shards while its current shard waited for room that only they could free.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from dload_arrow.read.abandon import abort_scope
from dload_arrow.read.cache import Hold
from dload_arrow.read.context import ReadContext
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import shard_path
from dload_arrow.waits import future_result

__all__ = ["MAX_FETCH_THREADS", "ShardFetcher", "shuffled_head", "visits_of"]

MAX_FETCH_THREADS = 8


def visits_of(units: Sequence[tuple[int, int]]) -> list[int]:
    """The shard of each run of consecutive units from one shard."""
    out: list[int] = []
    for shard, _rg in units:
        if not out or out[-1] != shard:
            out.append(shard)
    return out


def shuffled_head(units: Sequence[tuple[int, int]]) -> bool:
    """Whether the first visit reads its row groups out of storage order (a shuffled window:
    it needs nearly all of its shard before its last unit, so that download goes first)."""
    rgs = [rg for _, rg in itertools.takewhile(lambda u: u[0] == units[0][0], units)]
    return any(b < a for a, b in itertools.pairwise(rgs))


def _release_when_done(fut: Future[Hold | None]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        hold = fut.result()
        if hold is not None:
            hold.release()


class ShardFetcher:
    """Fetch the shards of ``visits`` ahead of the consumer, holding at most ``window``.

    Args:
        ctx: root and cache.
        manifest: the version whose shards are read.
        visits: shard indices in the order they will be read (repeats allowed).
        window: visits held or in flight at once (at least 1).
        threads: download threads (default: the window, at most 8 and at most the cores).
        head_first: the first visit downloads alone, the visits ahead of it start when it is
            there. For a reader that needs nearly all of its first shard before it can yield
            (a shuffled window draws its row groups from the whole shard), downloads ahead
            would only share the bandwidth with the one it waits for: two mixed inputs with
            two streams each had their first shards after 1.3-1.9 s, alone after 0.6-0.8 s.
        abort: an event whose setting makes this fetcher's waits on the cache give up
            (read/abandon.py); its own by default.
    """

    def __init__(self, ctx: ReadContext, manifest: Manifest, visits: Sequence[int], window: int,
                 threads: int | None = None, head_first: bool = False,
                 abort: threading.Event | None = None) -> None:
        self.ctx = ctx
        #: Set when the reader is abandoned mid-stream: its waits on the cache give up.
        self.abort = abort or threading.Event()
        self.manifest = manifest
        self.visits = list(visits)
        self.window = max(1, window)
        # A visit's download: a Hold for the head, None for a visit prefetched ahead (held
        # in _holds once the consumer reaches it).
        self._futures: dict[int, Future[Hold | None]] = {}
        self._holds: dict[int, Hold] = {}
        self._submitted = 0
        self._pool: ThreadPoolExecutor | None = None
        # The head's download submits the rest from its thread (or from this one, re-entered,
        # when it is already done).
        self._lock = threading.RLock()
        self._head_first = head_first
        self._head: Future[Hold | None] | None = None
        if not ctx.in_place:
            # Downloads cost CPU here too (receiving, sha256): more streams than cores slow
            # the first shard down without adding throughput on a small machine.
            cores = max(2, os.cpu_count() or 2)
            n = threads or min(self.window, MAX_FETCH_THREADS, cores)
            self._pool = ThreadPoolExecutor(max(1, n), thread_name_prefix="dload-fetch")

    def _fetch(self, visit: int) -> Hold:
        entry = self.manifest.shards[self.visits[visit]]
        with abort_scope(self.abort):  # waits give up once the reader is abandoned
            return self.ctx.cache().acquire(self.ctx.storage, entry.digest, entry.bytes,
                                            dataset=self._label(),
                                            keep=self._ahead(entry.digest))

    def _prefetch(self, visit: int) -> None:
        entry = self.manifest.shards[self.visits[visit]]
        with abort_scope(self.abort):
            self.ctx.cache().prefetch(self.ctx.storage, entry.digest, entry.bytes,
                                      dataset=self._label(), keep=self._ahead(entry.digest))

    def _ahead(self, digest: str) -> frozenset[str]:
        """The other shards of the visits submitted and not yet released: the look-ahead
        that making room for ``digest`` must not evict (it would be fetched twice)."""
        with self._lock:
            visits = [*self._futures, *self._holds]
        return frozenset(self.manifest.shards[self.visits[j]].digest for j in visits) - {digest}

    def _label(self) -> str:
        return f"{self.manifest.name}@{self.manifest.version[:12]}"

    def get(self, visit: int) -> str:
        """The local file of visit ``visit``, waiting for its download; earlier visits released."""
        if self._pool is None:
            digest = self.manifest.shards[self.visits[visit]].digest
            path = self.ctx.storage.local_path(shard_path(digest))
            assert path is not None  # in_place roots always have one
            return path
        self._submit_through(visit)
        held = self._holds.get(visit)
        if held is not None:
            return held.path
        fut = self._futures[visit]
        hold = future_result(fut)  # a prefetch's errors (a corrupt shard) are raised here too
        if hold is None:
            # Prefetched (cached, unheld) or skipped for want of room: hold it now, fetching
            # it if it was skipped or evicted since. Nothing of this reader's is held while
            # it waits for room: earlier visits are released, later ones only prefetched.
            hold = self._fetch(visit)
            with self._lock:
                if self._futures.get(visit) is not fut:  # closed meanwhile
                    hold.release()
                    raise RuntimeError("the shard fetcher was closed")
                self._holds[visit] = hold
        return hold.path

    def refetch(self, visit: int) -> str:
        """Visit ``visit``'s shard fetched anew (its cached copy was found bad and removed);
        its old hold released."""
        if self.ctx.in_place:
            return self.get(visit)
        with self._lock:
            if self._pool is None:
                raise RuntimeError("the shard fetcher was closed")
            self._release(visit)
        hold = self._fetch(visit)
        done: Future[Hold | None] = Future()
        done.set_result(None)  # released with the visit, like a prefetched one's hold
        with self._lock:
            if self._pool is None:  # closed meanwhile
                hold.release()
                raise RuntimeError("the shard fetcher was closed")
            self._futures[visit], self._holds[visit] = done, hold
        return hold.path

    def ready(self, visit: int) -> bool:
        """Start fetching up to ``visit``'s window; True when its file is there (no waiting)."""
        if self._pool is None:
            return True
        self._submit_through(visit)
        return self._futures[visit].done()

    def _submit_through(self, visit: int) -> None:
        with self._lock:
            if self._pool is None:
                return  # closed (a head's callback after close)
            for j in [j for j in self._futures if j < visit]:
                self._release(j)
            end = min(visit + self.window, len(self.visits))
            self._submitted = max(self._submitted, visit)
            if self._head_first:  # the head alone; the rest when it is there
                if self._head is None and self._submitted < end:
                    self._head = self._submit(self._submitted, visit)
                    self._head.add_done_callback(lambda _: self._submit_through(visit))
                if self._head is not None and not self._head.done():
                    return
            while self._submitted < end:
                self._submit(self._submitted, visit)

    def _submit(self, j: int, visit: int) -> Future[Hold | None]:
        """Start visit ``j``'s download: held if the consumer is at it, else a prefetch."""
        assert self._pool is not None
        fn = self._fetch if j == visit else self._prefetch
        fut: Future[Hold | None] = self._pool.submit(fn, j)
        self._futures[j] = fut
        self._submitted = j + 1
        return fut

    def _release(self, visit: int) -> None:
        hold = self._holds.pop(visit, None)
        if hold is not None:
            hold.release()
        fut = self._futures.pop(visit, None)
        if fut is None:
            return
        if not fut.cancel():
            fut.add_done_callback(_release_when_done)

    def close(self) -> None:
        """Release every hold and stop fetching (downloads in flight finish in the background)."""
        with self._lock:
            for j in list(self._futures):
                self._release(j)
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None

    def __enter__(self) -> ShardFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
