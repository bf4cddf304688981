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
