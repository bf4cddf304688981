"""Pipeline and torch adapter edges found by review: each sample once whatever the process,
epochs that advance across loaders, batch types that do not depend on neighbouring rows, and
values that keep their exact number."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch.utils.data as tud

import dload_arrow as dl
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, collate


def test_a_set_source_is_read_sorted_so_every_process_agrees() -> None:
    words = {f"w{i}" for i in range(300)}
    assert list(dl.from_iterable(words)) == sorted(words)
    # spawned workers salt string hashes anew: a set's own order would differ per worker
    ds = as_iterable_dataset(dl.from_iterable(words).batch(10))
    got = [w for b in tud.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context="spawn") for w in b]
    assert sorted(got) == sorted(words)
    with pytest.raises(dl.ConfigError, match="do not sort"):
        dl.from_iterable({1, "a"})


def test_an_epoch_in_the_main_process_is_followed_by_the_next_in_workers(
        repo: dl.Repository) -> None:
    repo.commit("small", ((f"k{i:03d}", {"i": i}) for i in range(200)), progress=False)
    ds = as_iterable_dataset(repo.dataset("small").shuffle(50, seed=0).batch(20))
    ref = as_iterable_dataset(repo.dataset("small").shuffle(50, seed=0).batch(20))
    epochs = []
    for ref_epoch in range(3):
        ref.set_epoch(ref_epoch)
        epochs.append([k for b in ref for k in b["__key__"]])
    keys = [[k for b in tud.DataLoader(ds, batch_size=None, num_workers=w) for k in b["__key__"]]
            for w in (0, 2, 0)]
    assert keys == epochs  # epochs 0, 1, 2: not 0, 0, 1


def test_a_tensor_batch_is_stacked_whatever_its_row_groups_other_rows_hold(
        repo: dl.Repository) -> None:
    repo.commit("t", [(f"n{i}", {"x": None if i == 1 else np.full((2, 2), i, np.float32)})
                      for i in range(4)], progress=False)
    batches = list(repo.dataset("t").pipeline().batch(2))
    assert isinstance(batches[0]["x"], list)  # it holds a null
    assert isinstance(batches[1]["x"], np.ndarray) and batches[1]["x"].shape == (2, 2, 2)
    tensors = list(as_iterable_dataset(repo.dataset("t").pipeline().batch(2)))
    assert tuple(tensors[1]["x"].shape) == (2, 2, 2)


def test_to_tensors_false_hands_items_through_a_stateful_loader_unchanged(
        repo: dl.Repository) -> None:
    repo.commit("n", [(f"k{i}", {"i": i, "v": np.arange(3) + i}) for i in range(8)],
                progress=False)
    for workers in (0, 2):
        ds = as_iterable_dataset(repo.dataset("n").pipeline().batch(4), to_tensors=False)
        batch = next(iter(StatefulLoader(ds, num_workers=workers)))
        assert isinstance(batch["i"], np.ndarray) and isinstance(batch["v"], np.ndarray)


def test_choice_until_all_end_gives_one_item_per_probability_item() -> None:
    a = dl.from_iterable(range(100)).map(lambda i: ("A", i))
    b = dl.from_iterable(range(2)).map(lambda i: ("B", i))
    probs = dl.from_iterable([[0.5, 0.5]] * 20)
    out = list(dl.choice([a, b], probs, seed=0, stop="all"))
    assert len(out) == 20
    assert sum(1 for s, _ in out if s == "B") == 2
    # resumable at every point, the redraw included
    for cut in range(21):
        pipe = dl.choice([a, b], probs, seed=0, stop="all")
        it = iter(pipe)
        head = [next(it) for _ in range(cut)]
        state = pipe.state_dict()
        again = dl.choice([a, b], probs, seed=0, stop="all")
        again.load_state_dict(state)
        assert head + list(again) == out


@pytest.mark.parametrize(("values", "want"), [
    ([2**63 + 1, 1], np.array([2**63 + 1, 1], dtype=np.uint64)),
    ([2**63 + 1, -1], [2**63 + 1, -1]),
    ([2**60 + 1, 0.5], [2**60 + 1, 0.5]),
    ([2**64, 1], [2**64, 1]),
    ([1, 2], np.array([1, 2])),
    ([1.5, 2], np.array([1.5, 2.0])),
])
def test_batched_python_ints_keep_their_value(values: list[Any], want: Any) -> None:
    got = next(iter(dl.from_iterable([{"x": v} for v in values]).batch(2)))["x"]
    assert type(got) is type(want)
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype
    assert [int(v) if float(v).is_integer() else v for v in got] == [
        int(v) if float(v).is_integer() else v for v in want]


def test_collate_keeps_ints_no_torch_dtype_holds() -> None:
    out = collate([{"u": 2**63 + 5, "i": 1}, {"u": 1, "i": 2}])
    assert out["u"] == [2**63 + 5, 1]
    assert out["i"].tolist() == [1, 2]


def test_a_filter_expression_on_a_missing_column_names_the_columns(repo: dl.Repository) -> None:
    import pyarrow.compute as pc

    repo.commit("n", [(f"k{i}", {"label": i}) for i in range(5)], progress=False)
    with pytest.raises(dl.SchemaError, match=r"which have columns \['__key__', 'label'\]"):
        list(repo.dataset("n").pipeline().filter(pc.field("lable") == 3))


def test_an_endless_stream_is_dealt_to_ranks_without_padding(repo: dl.Repository) -> None:
    import itertools

    repo.commit("n", [(f"k{i:03d}", {"i": i}) for i in range(50)], progress=False)
    pipe = repo.dataset("n").pipeline().repeat()  # uneven="pad", the default, needs no length
    got = [[s["i"] for s in itertools.islice(iter(as_iterable_dataset(pipe, rank=r,
                                                                        world_size=2)), 75)]
           for r in (0, 1)]
    merged = [x for pair in zip(*got, strict=True) for x in pair]
    assert merged == [i % 50 for i in range(150)]  # each pass once, dealt in turn


def test_a_choice_item_weighting_only_exhausted_inputs_gives_no_item() -> None:
    a = dl.from_iterable(range(3)).map(lambda i: f"a{i}")
    b = dl.from_iterable(range(10)).map(lambda i: f"b{i}")
    probs = dl.from_iterable([[1.0, 0.0], [0.0, 1.0]] * 20)
    out = list(dl.choice([a, b], probs, seed=0, stop="all"))
    assert out == ["a0", "b0", "a1", "b1", "a2", "b2", *(f"b{i}" for i in range(3, 10))]


def test_state_after_workers_ran_past_a_main_process_epoch_is_refused(
        repo: dl.Repository) -> None:
    repo.commit("e", [(f"k{i:02d}", {"x": i}) for i in range(20)], progress=False)
    ds = as_iterable_dataset(repo.dataset("e").shuffle(8, seed=1), to_tensors=False)
    assert len(list(ds)) == 20  # epoch 0 in this process: its state is exact
    assert ds.state_dict()["epoch"] == 1
    assert len(list(tud.DataLoader(ds, batch_size=None, num_workers=2))) == 20  # epoch 1
    with pytest.raises(dl.ConfigError, match="cannot tell what the loop consumed"):
        ds.state_dict()


def test_len_says_why_it_is_unknown() -> None:
    with pytest.raises(TypeError, match="never ends"):
        len(dl.from_iterable(range(5)).repeat())
    with pytest.raises(TypeError, match=r"map_batches\(fn, rows_preserved=True\)"):
        len(dl.from_iterable(range(5)).map_batches(lambda b: b))
    assert len(dl.from_iterable(range(5)).map_batches(lambda b: b, rows_preserved=True)) == 5


def test_shuffle_quality_aligns_its_longest_metric() -> None:
    from dload_arrow.stats import shuffle_quality

    text = str(shuffle_quality(np.random.default_rng(0).permutation(1000),
                               shard_of=np.arange(1000) // 100)).splitlines()
    starts = {line.index(line.split()[1]) for line in text[2:]}  # where each value begins
    assert len(starts) == 1 and "same_shard_adjacent" in text[3]
