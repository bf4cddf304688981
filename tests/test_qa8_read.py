"""QA pass 8 on the read path: a garbled page header under random access, the cache status of
a machine without a root, the fixes a full shuffle's infeasible plan offers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dload_arrow import IntegrityError, Repository
from dload_arrow.store.names import shard_path


@pytest.mark.parametrize("where", ["header", "data"])
def test_random_access_to_a_garbled_page_names_the_shard(tmp_path: Path, where: str) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [(f"k{i:03d}", {"blob": bytes([i]) * 200}) for i in range(50)],
                progress=False)
    entry = repo.manifest("d").shards[0]
    path = tmp_path / "root" / shard_path(entry.digest)
    data = bytearray(path.read_bytes())
    # the first page header of the row group (its type and sizes), or a byte inside a blob
    at = entry.rg_offsets[0] + (2 if where == "header" else entry.rg_bytes[0] // 2)
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=f"shard {entry.digest[:12]} of dataset 'd'"):
        repo.dataset("d")[0]


def test_cache_status_needs_no_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_run import runner

    run = runner(capsys)
    missing = str(tmp_path / "no-root")
    r = run("cache", "status", "--root", missing, "--cache-dir", str(tmp_path / "c"), "--json")
    assert r.json["used_bytes"] == 0 and r.json["datasets"] == []
    assert r.err.startswith(f"warning: root {missing} (from --root) does not exist")  # a typo?
    assert not Path(missing).exists()  # nothing made for it


def test_a_full_shuffle_over_budget_offers_only_fixes_that_help(memory_root: str,
                                                                 tmp_path: Path) -> None:
    from dload_arrow import InfeasiblePlanError

    repo = Repository.open(memory_root, cache_dir=tmp_path / "c", cache_budget="20KB")
    rng = np.random.default_rng(0)
    repo.commit("d", [(f"k{i:03d}", {"blob": rng.bytes(500)}) for i in range(200)],
                shard_size="16KiB", progress=False)
    assert len(repo.manifest("d").shards) > 2
    with pytest.raises(InfeasiblePlanError) as e:
        next(iter(repo.dataset("d").shuffle(full=True, seed=0)))
    fixes = str(e.value).split("Fixes: ")[1].split("\n")[0]
    assert "raise the cache budget" in fixes and "windowed shuffle" in fixes
    assert "prefetch" not in fixes and "shard_size" not in fixes
    with pytest.raises(InfeasiblePlanError) as e:  # streams: these fixes do help
        repo.dataset("d").plan(consumers=4).check()
    assert "run fewer consumers" in str(e.value) and "smaller shard_size" in str(e.value)
