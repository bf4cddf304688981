"""An iteration dropped while its next window waits for cache room gives up that wait (QA
longrun54).

Every epoch of a long run left after a few batches, on a remote root with a budget of a few
shards: the close of an abandoned epoch waited for the window being made ahead, which waited
for room that the shards of other abandoned epochs kept taken (their closes waited the same
way), and the loop hung until the cache's wait timed out (600 s). Now the close tells the
reader's waits to give up (read/abandon.py) and returns at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from dload_arrow import Repository
from dload_arrow.read.abandon import Abandoned
from dload_arrow.read.cache import Hold
from dload_arrow.read.fetcher import ShardFetcher


def _rows(n: int, seed: int) -> Iterator[tuple[str, dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    for i in range(n):
        yield f"k{i:05d}", {"x": rng.integers(0, 256, 512, dtype=np.uint8), "label": i}


@pytest.fixture
def full_cache(s3_root: str, cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Dataset ``a`` (8 shards) and a cache whose whole budget is held by dataset ``b``'s
    shards, held until the test lets go: every download of ``a`` waits for room."""
    monkeypatch.setenv("DLOAD_CACHE_WAIT", "300")  # a wait that would outlast the test
    writer = Repository.open(s3_root, cache_dir=cache_dir + "-w", cache_budget="unlimited")
    writer.commit("a", _rows(400, 0), shard_size="24KiB", row_group_size="8KiB", progress=False)
    writer.commit("b", _rows(200, 1), shard_size="24KiB", row_group_size="8KiB", progress=False)
    b_shards = writer.dataset("b").manifest.shards
    budget = sum(s.bytes for s in b_shards)
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget=budget)
    ctx = repo.dataset("b").context
    holds: list[Hold] = [ctx.cache().acquire(ctx.storage, s.digest, s.bytes) for s in b_shards]
    yield repo
    for h in holds:
        h.release()


def _finishes(fn: Any) -> tuple[bool, BaseException | None]:
    """Run ``fn`` on a thread: whether it ended within 60 s, and what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:
            raised.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=60)
    return not t.is_alive(), (raised[0] if raised else None)


def test_a_fetch_waiting_for_room_gives_up_when_its_reader_is_abandoned(full_cache: Any) -> None:
    ds = full_cache.dataset("a")
    fetcher = ShardFetcher(ds.context, ds.manifest, [0, 1], window=1)
    started = threading.Event()

    def get() -> None:
        started.set()
        fetcher.get(0)  # waits for room that b's holds keep taken

    waiting = threading.Thread(target=lambda: _finishes(get), daemon=True)
    waiting.start()
    started.wait(10)
    fetcher.abort.set()
    waiting.join(timeout=60)
    assert not waiting.is_alive()
    fetcher.close()
    done, raised = _finishes(lambda: ShardFetcher(ds.context, ds.manifest, [0], window=1))
    assert done and raised is None  # other readers are unaffected


def test_closing_an_epoch_whose_next_window_waits_for_room_returns(full_cache: Any) -> None:
    pipe = full_cache.dataset("a").shuffle(60, seed=3)
    node = pipe._build(0)  # the epoch's source node, as an iteration drives it
    node.start_ahead()  # its first window is made in the background: it waits for room
    done, raised = _finishes(node.close)  # what leaving the epoch early runs
    assert done, "the close waited for cache room held by others"
    assert raised is None


def test_the_abandoned_wait_names_what_it_waited_for(full_cache: Any) -> None:
    ds = full_cache.dataset("a")
    fetcher = ShardFetcher(ds.context, ds.manifest, [0], window=1)
    fetcher.abort.set()
    done, raised = _finishes(lambda: fetcher.get(0))
    assert done and isinstance(raised, Abandoned)
    assert str(raised) == (f"room in the cache for shard {ds.manifest.shards[0].digest[:12]}: "
                           "the reader that asked for it was closed")
