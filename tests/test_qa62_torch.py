"""A ``len()`` asked before ``init_process_group`` is warned about once the group exists.

QA elastic61: under ``mp.spawn`` a dataset built and measured before the process group
counted the whole epoch for one process; a scheduler sized from it ran ``world_size`` times
too long, silently. The rank is taken from the group when it appears (test_qa54_dist.py); the
earlier ``len()`` is now named in a warning then. A single process never warns.
"""

from __future__ import annotations

import multiprocessing
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset  # noqa: E402


def _rank(pipe: Any, rank: int, path: str, early_len: bool, q: Any,
          len_first: bool = False) -> None:
    import gc
    import os

    import torch.distributed as dist

    gc.freeze()
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        os.environ.pop(name, None)  # as mp.spawn leaves them
    try:
        ds = as_iterable_dataset(pipe)
        before = len(ds) if early_len else None
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=2)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if len_first:  # asked again after the group: that count is right, no warning
                after = len(ds)
            n = sum(1 for _ in DataLoader(ds, batch_size=None, num_workers=0))
            if not len_first:
                after = len(ds)
        q.put((rank, before, after, n, [str(w.message) for w in seen]))
        dist.destroy_process_group()
    except BaseException as e:  # the parent reports it
        q.put((rank, None, None, 0, [repr(e)]))


@pytest.mark.parametrize(("early_len", "len_first"), [(True, False), (False, False),
                                                      (True, True)])
def test_a_len_before_the_group_is_warned_once_the_group_exists(
        tmp_path: Path, early_len: bool, len_first: bool) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", ((f"k{i:04d}", {"label": i}) for i in range(101)), progress=False)
    pipe = repo.dataset("d")
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(pipe, r, str(tmp_path / "pg"), early_len, q,
                                             len_first)) for r in range(2)]
    for p in procs:
        p.start()
    got = {r: rest for r, *rest in (q.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
    for r in range(2):
        before, after, n, said = got[r]
        assert after == n == 51, said  # 101 over 2 ranks, padded
        if not early_len or len_first:
            assert said == []
            assert before == (101 if early_len else None)
            continue
        assert before == 101
        assert said == [
            "len() of this dataset was 101 before torch.distributed.init_process_group (one "
            f"process, the whole epoch); it is now rank {r} of 2, each rank reading about 1/2 "
            "of it: ask len() again after init_process_group (a step count or scheduler "
            "sized from 101 is 2x too long)"]


def test_one_process_without_a_group_never_warns(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", ((f"k{i:04d}", {"label": i}) for i in range(10)), progress=False)
    ds = as_iterable_dataset(repo.dataset("d"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ds) == 10
        assert sum(1 for _ in DataLoader(ds, batch_size=None, num_workers=0)) == 10
        assert len(ds) == 10
