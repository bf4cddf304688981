"""Invariant 1: a commit killed (SIGKILL) at any step leaves refs on complete data, and the
rerun uploads exactly the shards that are missing.

The committing process is a real subprocess; ``DLOAD_CRASH_AT`` makes store/commit.py kill
itself at a named step: after the first or second shard upload completes (``shard1``,
``shard2``), after all shards (``shards``), after the manifest (``manifest``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from readback import missing_shards, read_back, shard_paths

from dload_arrow import Repository
from dload_arrow.store.refs import list_refs

SCRIPT = r"""
import sys
import numpy as np
from dload_arrow import Repository

root, start, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
repo = Repository.open(root)
v = repo.commit("crashy", rows(start, n), shard_size=3000, row_group_size=1000, progress=False)
print(v.version)
"""

ROWS = r"""
def rows(start, n):
    return [
        (f"k{i:05d}", {"x": i, "pad": np.random.default_rng(i).bytes(200)})
        for i in range(start, start + n)
    ]
"""

STEPS = ["shard1", "shard2", "shards", "manifest"]


def rows(start: int, n: int) -> list[tuple[str, dict[str, object]]]:
    import numpy as np

    return [
        (f"k{i:05d}", {"x": i, "pad": np.random.default_rng(i).bytes(200)})
        for i in range(start, start + n)
    ]


def run_commit(root: str, start: int, n: int, crash_at: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DLOAD_CRASH_AT", None)
    if crash_at:
        env["DLOAD_CRASH_AT"] = crash_at
    code = SCRIPT.replace("from dload_arrow import Repository\n",
                          "from dload_arrow import Repository\n" + ROWS)
    return subprocess.run(
        [sys.executable, "-c", code, root, str(start), str(n)],
        env=env, capture_output=True, text=True, timeout=120,
    )


def assert_refs_complete(repo: Repository) -> None:
    """Every ref of every dataset points at a manifest whose shards are all stored."""
    for name in repo.datasets():
        for ref, value in list_refs(repo.storage, name).items():
            assert missing_shards(repo, name, value.version) == [], f"{name}:{ref}"


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_root"))


@pytest.mark.parametrize("step", STEPS)
def test_sigkill_at_each_step_keeps_refs_complete_and_rerun_uploads_only_missing(
    root: str, step: str, cache_dir: str
) -> None:
    repo = Repository.open(root, cache_dir=cache_dir)
    base = repo.commit("crashy", rows(0, 20), shard_size=3000, row_group_size=1000,
                       progress=False)

    crashed = run_commit(root, 0, 150, step)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert_refs_complete(repo)
    assert repo.refs("crashy") == {"latest": base.version}

    present = {o.path for o in repo.storage.list("shards/")}
    rerun = repo.commit("crashy", rows(0, 150), shard_size=3000, row_group_size=1000,
                        progress=False)
    wanted = shard_paths(repo, "crashy", rerun.version)
    missing = [p for p in wanted if p not in present]
    assert rerun.shards_total == len(wanted) >= 8
    assert rerun.shards_uploaded == len(missing)
    if step.startswith("shard") and step != "shards":
        # Killed mid-upload: at least the shards not yet encoded were missing.
        assert missing
    else:
        assert missing == [] and rerun.shards_uploaded == 0
    if step == "manifest":
        assert rerun.bytes_uploaded == 0  # the manifest was stored before the kill
    assert repo.refs("crashy") == {"latest": rerun.version}
    assert_refs_complete(repo)
    assert read_back(repo, "crashy").column("x").to_pylist() == list(range(150))


def test_crash_before_the_first_ref_leaves_no_dataset_visible_as_latest(
    local_root: str, cache_dir: str
) -> None:
    crashed = run_commit(local_root, 0, 150, "shards")
    assert crashed.returncode == -signal.SIGKILL
    repo = Repository.open(local_root, cache_dir=cache_dir)
    assert repo.datasets() == []  # no manifest: nothing to list
    with pytest.raises(KeyError):
        repo.dataset("crashy")


def test_uninterrupted_subprocess_commit_matches_in_process_commit(
    local_root: str, cache_dir: str
) -> None:
    done = run_commit(local_root, 0, 40, None)
    assert done.returncode == 0, done.stderr
    repo = Repository.open(local_root, cache_dir=cache_dir)
    v = repo.commit("crashy", rows(0, 40), shard_size=3000, row_group_size=1000,
                    progress=False)
    assert done.stdout.strip() == v.version and v.shards_uploaded == 0
