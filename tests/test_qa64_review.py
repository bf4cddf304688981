"""QA review64: rows of frames (list<list<float32>>) in a batch holding no frame had no
`_length`/`_mask` keys (the tutorial's loop failed with KeyError mid-epoch), or were padded at
rank 2 where every other batch is rank 3."""

from __future__ import annotations

import pyarrow as pa
import pytest

import dload_arrow as dl


@pytest.fixture
def frames(repo: dl.Repository) -> dl.Dataset:
    repo.commit("ep", pa.table({"__key__": list("abcdefgh"), "frames": pa.array(
        [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]], None, [], [None, None], [None],
         [[7.0, 8.0]], [None, [9.0, 1.0]]], pa.list_(pa.list_(pa.float32())))}))
    return repo.dataset("ep")


@pytest.mark.parametrize("collate", [dl.pad_collate(mask=True),
                                     dl.pad_collate(mask=True, columns=["frames"]),
                                     dl.pad_collate(mask=True, dtype={"frames": "float32"})])
def test_every_batch_of_frames_has_its_keys_and_rank(frames: dl.Dataset,
                                                     collate: dl.pad_collate) -> None:
    got = list(frames.pipeline().batch(2, collate=collate))
    shapes = [b["frames"].shape for b in got]
    assert shapes == [(2, 2, 2), (2, 0, 0), (2, 2, 0), (2, 2, 2)], shapes
    assert [b["frames_length"].tolist() for b in got] == [[2, 1], [0, 0], [2, 1], [1, 2]]
    assert [b["frames_mask"].tolist() for b in got][1:3] == [
        [[], []], [[False, False], [False, False]]]
    assert all(b["frames"].dtype.name == "float32" for b in got)
    assert got[3]["frames"][1].tolist() == [[0.0, 0.0], [9.0, 1.0]]


def test_an_append_repeating_a_stored_key_names_the_repeat(repo: dl.Repository) -> None:
    repo.commit("ev", pa.table({"id": ["a0", "a1"], "v": [0, 1]}), key="id")
    twice = pa.table({"id": ["a1", "a1"], "v": [1, 1]})
    with pytest.raises(dl.SchemaError, match=r"1 more of its rows repeat a key it holds "
                                             r"already: leave out the rows already stored "
                                             r"\(drop the repeated rows\)") as e:
        repo.append("ev", pa.RecordBatchReader.from_batches(twice.schema, twice.to_batches()),
                    key="id")
    assert not isinstance(e.value, dl.KeysStoredError) and "others are new" not in str(e.value)


_DIRECT = """
import _thread, time
import torch
import dload_arrow as dl
before = _thread._count()
_thread.start_new_thread(dl.pad_collate(), ([{"x": [1, 2]}, {"x": [3]}],))
deadline = time.monotonic() + 30
while _thread._count() > before and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.5)  # (the thread's error is printed as it ends)
print("done", _thread._count() == before)
"""


def test_pad_collate_on_a_thread_started_on_it_directly() -> None:
    """With torch imported, a thread started on the collate itself has no frame above it:
    sys._getframe(2) raised ValueError there (QA review64 F4: the guard had no test)."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", _DIRECT], capture_output=True, text=True,
                       timeout=120)
    assert p.stdout.strip() == "done True" and "Error" not in p.stderr, p.stderr
