"""QA review63f, of the last fixes: keys_stored only when every key of an append is stored
(some new keys among them: schema, the new rows named); pad_collate as a DataLoader's own
collate_fn gives tensors for a batch of null rows; a forked child forgets its parent's frames
once dropped; an append holding a stored key twice is no rerun (review63g)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow import Repository


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_an_append_with_some_new_keys_is_no_rerun(tmp_path: Path, run: RunFn) -> None:
    (tmp_path / "day1.csv").write_text("id,v\n" + "".join(f"a{i},{i}\n" for i in range(5)))
    (tmp_path / "day2.csv").write_text("id,v\na4,4\n" + "".join(f"b{i},{i}\n" for i in range(3)))
    run("commit", "ev", "--from", str(tmp_path / "day1.csv"), "--key-column", "id")
    err = run("append", "ev", "--from", str(tmp_path / "day2.csv"), "--key-column", "id",
              "--json", rc=1).err
    error = json.loads(err.strip().splitlines()[-1])["error"]
    assert error["kind"] == "schema" and "1 of its 4 key(s)" in error["message"]
    assert "nothing to do" not in error["message"]
    (tmp_path / "twice.csv").write_text("id,v\na1,1\na1,1\n")  # (could never have published)
    err = run("append", "ev", "--from", str(tmp_path / "twice.csv"), "--key-column", "id",
              "--json", rc=1).err
    assert json.loads(err.strip().splitlines()[-1])["error"]["kind"] == "schema"


def test_a_collate_fn_gives_tensors_for_a_batch_of_nulls(repo: Repository) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from dload_arrow.torch import as_iterable_dataset

    repo.commit("t", pa.table({"__key__": list("abcd"), "ids": pa.array(
        [[1, 2], [3], [None], None], pa.list_(pa.int32()))}), progress=False)
    got = list(DataLoader(as_iterable_dataset(repo.dataset("t").pipeline()), batch_size=2,
                          collate_fn=dl.pad_collate(dtype={"ids": "int32"})))
    assert all(isinstance(b["ids"], torch.Tensor) for b in got)
    assert [b["ids_length"].tolist() for b in got] == [[2, 1], [1, 0]]

    def mine(rows: list) -> dict:  # a user's collate wrapping it: numpy, as anywhere
        return dl.pad_collate(dtype={"ids": "int32"})(rows)

    wrapped = list(DataLoader(as_iterable_dataset(repo.dataset("t").pipeline()), batch_size=2,
                              collate_fn=mine))
    assert not isinstance(wrapped[1]["ids"], torch.Tensor)


def test_a_forked_child_forgets_its_parents_frames_once_dropped(tmp_path: Path) -> None:
    import fcntl

    from dload_arrow.read import locks

    path = str(tmp_path / "hold")
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH)  # the parent's hold (its lock, not in this registry)
    locks._PARENTS_PARKED.add(path)  # as a child's registry is after a fork: its parent's
    try:
        assert path in locks.parked_paths()  # held: the parent's frame keeps it
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        assert path not in locks.parked_paths() and path not in locks._PARENTS_PARKED
    finally:
        locks._PARENTS_PARKED.discard(path)
        if os.path.exists(path):
            os.unlink(path)
