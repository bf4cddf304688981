"""QA llm59: a map over (or under) a mix ran on every row in every DataLoader worker and rank,
and workers made the epoch slower. The shard now sits right above the operator that stops
it, under the maps and batches above: their functions run on the consumer's own items."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dload_arrow as dl


def _pipes(calls: list[str], size: int, drop_last: bool) -> Any:
    def tokenize(r: dict[str, Any]) -> dict[str, Any]:
        calls.append(r["k"])
        return {"k": r["k"], "n": len(r["k"])}

    a = dl.from_iterable([{"k": f"a{i}"} for i in range(23)])
    b = dl.from_iterable([{"k": f"b{i}"} for i in range(17)])
    mixed = dl.mix([a, b], [0.6, 0.4], seed=3, stop="all")
    return mixed.map(tokenize).select(["k", "n"]).batch(size, drop_last=drop_last)


@settings(max_examples=25, deadline=None)
@given(count=st.integers(1, 4), block=st.integers(1, 3), size=st.integers(1, 5),
       drop_last=st.booleans())
def test_a_sharded_map_over_a_mix_is_exact_and_runs_on_own_items(
        count: int, block: int, size: int, drop_last: bool) -> None:
    calls: list[str] = []
    whole = [list(b["k"]) for b in _pipes(calls, size, drop_last)]
    mine = [i for i in range(len(whole)) if (i // block) % count == 0]
    calls.clear()
    got = [list(b["k"]) for b in _pipes(calls, size, drop_last).shard(0, count, block)]
    assert got == [whole[i] for i in mine]  # exactly this consumer's batches
    own = sum(len(whole[i]) for i in mine)
    # the function ran on this consumer's rows only (a dropped last batch's rows may be
    # mapped before the batch is dropped)
    assert own <= len(calls) <= own + (size if drop_last else 0)


def test_through_a_loader_with_workers_each_row_is_mapped_once(local_root: str,
                                                               tmp_path: Any) -> None:
    import os

    import dload_arrow.torch as dt

    repo = dl.Repository.open(local_root)
    for name in ("web", "code"):
        repo.commit(name, [(f"{name}{i:03d}", {"t": list(range(i % 5 + 1))}) for i in range(60)],
                    progress=False)
    log = str(tmp_path / "calls")

    def tokenize(r: dict[str, Any]) -> dict[str, Any]:
        with open(f"{log}.{os.getpid()}", "a") as f:
            f.write(r["__key__"] + "\n")
        return {"__key__": r["__key__"], "t": np.asarray(r["t"], np.int32)}

    pipe = dl.mix([repo.dataset("web").pipeline(), repo.dataset("code").pipeline()],
                  [0.5, 0.5], seed=0, stop="all").map(tokenize).batch(
        8, collate=dl.pad_collate(columns=["t"]))
    keys = [k for b in dt.StatefulLoader(dt.as_iterable_dataset(pipe), num_workers=2)
            for k in b["__key__"]]
    assert sorted(keys) == sorted(f"{n}{i:03d}" for n in ("web", "code") for i in range(60))
    mapped = [line for p in tmp_path.glob("calls.*") for line in p.read_text().split()]
    assert sorted(mapped) == sorted(keys)  # once each, over the two workers
