"""QA mutation62: mutants of the design brief's invariants that no test caught.

- Invariant 1 (a crash leaves refs on complete data): a manifest write cut off part-way must
  leave nothing at the final path, or a rerun trusts the torn object and the dataset never
  opens again.
- Invariant 6 (each epoch a new shuffle): a windowed shuffle's shard order, each window's
  permutation and a mix's draws per block must each depend on their index.
- gc keeps every dataset's shards, not only the last manifest it read.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dload_arrow as dl
from dload_arrow.plan.orders import MIX_BLOCK, SamplePlan

CODE = """
import dload_arrow as dl
repo = dl.Repository.open({root!r}, cache_dir={cache!r})
repo.commit("d", [(f"k{{i}}", {{"x": i}}) for i in range(50)], recipe="#" * (2 << 20),
            progress=False)
print("rows", repo.dataset("d").to_arrow().num_rows)
"""


def _limited() -> None:  # the file size limit a full disk or a cut-off write gives
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def test_a_manifest_write_cut_off_leaves_nothing_a_rerun_trusts(tmp_path: Path) -> None:
    code = CODE.format(root=str(tmp_path / "root"), cache=str(tmp_path / "cache"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cut = subprocess.run([sys.executable, "-c", code], preexec_fn=_limited, env=env,
                         capture_output=True, text=True, timeout=120)
    assert cut.returncode == 1 and "cannot write 'datasets/d/manifests/" in cut.stderr
    left = [str(p) for p in (tmp_path / "root").rglob("*") if p.is_file()]
    assert not [p for p in left if "/manifests/" in p or "/refs/" in p], left
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0 and "rows 50" in again.stdout, again.stderr


def test_a_windowed_shuffle_visits_the_shards_in_another_order_each_epoch(
        tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [(f"k{i:04d}", {"x": i}) for i in range(800)], shard_size="1KB",
                row_group_size="1KB", progress=False)
    pipe = repo.dataset("d").shuffle(100, seed=3)
    shard_of = pipe.shard_ids()
    assert len(set(shard_of.tolist())) >= 4

    def visits(epoch: int) -> tuple[int, ...]:
        seen = dict.fromkeys(shard_of[pipe.order_array(epoch)].tolist())
        return tuple(seen)

    assert len({visits(e) for e in range(4)}) > 1


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), epoch=st.integers(0, 100))
def test_the_windows_of_an_epoch_are_permuted_independently(seed: int, epoch: int) -> None:
    plan = SamplePlan.build(np.arange(8), np.full(8, 100), "windowed", seed=seed, epoch=epoch,
                            buffer=100)
    perms = {tuple(plan.perm(w).tolist()) for w in range(plan.num_windows)}
    assert plan.num_windows == 8 and len(perms) == 8


def test_a_mix_draws_each_block_of_slots_anew() -> None:
    a = dl.from_iterable(lambda: iter([0] * (3 * MIX_BLOCK)), finite=True)
    b = dl.from_iterable(lambda: iter([1] * (3 * MIX_BLOCK)), finite=True)
    out = list(dl.mix([a, b], [0.5, 0.5], seed=7).take(2 * MIX_BLOCK))
    assert len(out) == 2 * MIX_BLOCK
    assert out[:MIX_BLOCK] != out[MIX_BLOCK:]


def test_gc_keeps_the_shards_of_every_dataset(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    first = [repo.commit(f"d{n}", [(f"k{i}", {"x": i * 100 + n}) for i in range(50)],
                         progress=False) for n in range(4)]
    repo.commit("d0", [("only", {"x": -1})], progress=False)
    repo.rm("d0", first[0].version)  # d0's first shards: garbage
    report = repo.gc(grace="0s")
    assert len(report.deleted) >= 1
    fresh = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache2")
    assert [fresh.dataset(f"d{n}").to_arrow()["x"].to_pylist()[:1] for n in range(4)] == [
        [-1], [1], [2], [3]]
    assert sum(fresh.dataset(f"d{n}").num_rows for n in range(4)) == 151
