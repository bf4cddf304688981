"""Ranks from a torch.distributed group that appears after the dataset was built (QA dist54).

With ``mp.spawn`` no RANK / WORLD_SIZE is set; a dataset built before
``init_process_group`` fixed rank 0 of 1 and never looked again: at 2 ranks every sample
was read twice, silently. It now takes the group's rank when first used. And
``world_size=`` without ``rank=`` under a group of another size was accepted (each rank read
a share of a world that does not exist: a third of the data was never read): refused.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset  # noqa: E402


def _keys(items: Any) -> list[str]:
    return [k for item in items for k in (item["__key__"] if isinstance(item["__key__"], list)
                                          else [item["__key__"]])]


def _rank(pipe: Any, rank: int, world: int, path: str, workers: int, q: Any) -> None:
    import gc
    import os

    import torch.distributed as dist

    gc.freeze()  # forked from the threaded test process: never walk what it was changing
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        os.environ.pop(name, None)  # as mp.spawn leaves them
    try:
        ds = as_iterable_dataset(pipe)  # built before the group, as in many mp.spawn scripts
        early = (ds.rank, ds.world_size)  # (the group does not exist yet)
        # `world_size=int(os.environ.get("WORLD_SIZE", 1))`: 1 under mp.spawn (review54b)
        alone = as_iterable_dataset(pipe, world_size=1)
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank,
                                world_size=world)
        try:
            _ = alone.rank
            alone_said = "read as rank 0 of 1"
        except ConfigError as e:
            alone_said = str(e)
        if workers:
            keys = _keys(StatefulLoader(ds, num_workers=workers))
        else:
            keys = _keys(DataLoader(ds, batch_size=None, num_workers=0))
        try:
            as_iterable_dataset(pipe, world_size=world + 1)
            refused = ""
        except ConfigError as e:
            refused = str(e)
        q.put((rank, early, (ds.rank, ds.world_size), keys, refused + "|" + alone_said))
        dist.destroy_process_group()
    except BaseException as e:  # the parent reports it
        q.put((rank, None, None, [], repr(e)))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_built_before_the_group_takes_the_groups_rank(
        tmp_path: Path, workers: int) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", ((f"k{i:04d}", {"label": i}) for i in range(101)), progress=False)
    pipe = repo.dataset("d").shuffle(32, seed=1)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(pipe, r, 2, str(tmp_path / "pg"), workers, q))
             for r in range(2)]
    for p in procs:
        p.start()
    got = {r: rest for r, *rest in (q.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
    for r in range(2):
        early, late, _, said = got[r]
        assert early == (0, 1), said
        assert late == (r, 2)
        assert said.split("|") == [(
            f"world_size={n} without rank=, but the torch.distributed process group has 2 "
            f"processes (this one is rank {r}): pass rank= too, or neither (the group's are "
            "used)") for n in (3, 1)]
    both = got[0][2] + got[1][2]
    assert len(both) == 102  # 101 over 2 ranks, padded by one (uneven="pad")
    assert set(both) == {f"k{i:04d}" for i in range(101)}
    assert len(set(got[0][2]) & set(got[1][2])) <= 1  # disjoint, but for the one padding
