"""QA finetune61: a fine-tuning team's token pipelines (mixes of batched and row inputs,
pad_collate over a mix of inputs with other columns, its arguments)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.errors import ConfigError, SchemaError

TOKENS = pa.list_(pa.int32())


@pytest.fixture()
def repo(tmp_path: Path) -> dl.Repository:
    r = dl.Repository.open(tmp_path / "root")
    sch = pa.schema([("tokens", TOKENS), ("n", pa.int32())])
    for name in ("a", "b"):
        r.commit(name, [(f"{name}{i:02d}", {"tokens": [i] * (i % 5 + 1), "n": i})
                        for i in range(40)], schema=sch, progress=False)
    r.commit("sft", [(f"s{i:03d}", {"tokens": [1, 2], "labels": [-100, 2]}) for i in range(200)],
             schema=pa.schema([("tokens", TOKENS), ("labels", TOKENS)]), progress=False)
    r.commit("pre", [(f"p{i:03d}", {"tokens": [1, 2, 3]}) for i in range(200)],
             schema=pa.schema([("tokens", TOKENS)]), progress=False)
    return r


@pytest.mark.parametrize("combine", [
    lambda a, b: dl.mix([a.batch(4), b], weights=[0.5, 0.5], seed=0),
    lambda a, b: dl.mix([b.filter(lambda x: True), a.map(lambda x: x).batch(4).repeat(2)],
                        weights=[0.5, 0.5]),
    lambda a, b: dl.concat([a.batch(4).shuffle(seed=0, buffer=8), b]),
    lambda a, b: dl.choice([a.batch(4), b], [0.5, 0.5]),
])
def test_a_batched_input_beside_a_row_input_is_refused(repo: dl.Repository, combine) -> None:
    a, b = repo.dataset("a").pipeline(), repo.dataset("b").pipeline()
    with pytest.raises(ConfigError, match=r"input \d yields batches .* input \d yields rows"):
        combine(a, b)


def test_batched_inputs_alike_and_side_by_side_pass(repo: dl.Repository) -> None:
    a, b = repo.dataset("a").pipeline(), repo.dataset("b").pipeline()
    both = list(dl.mix([a.batch(4), b.batch(4)], weights=[0.5, 0.5], seed=0, stop="all"))
    assert all(len(x["__key__"]) == 4 for x in both) and len(both) == 20
    again = list(dl.mix([a.batch(4).unbatch(), b], weights=[0.5, 0.5], seed=0).batch(2))
    assert all(isinstance(k, str) for x in again for k in x["__key__"])
    pairs = list(dl.zip_with([a.batch(4), b]))
    assert len(pairs) == 10 and len(pairs[0][0]["__key__"]) == 4


def test_pad_collate_over_a_mix_of_other_columns_is_refused_at_the_start(
        repo: dl.Repository) -> None:
    pipe = dl.mix([repo.dataset("pre").pipeline(), repo.dataset("sft").pipeline()],
                  weights=[0.999, 0.001], seed=0).batch(8, collate=dl.pad_collate())
    with pytest.raises(SchemaError, match=r"input 1 of mix.*same columns \(pad_collate") as e:
        next(iter(pipe))
    assert "pass collate=" not in str(e.value)


def test_pad_collate_names_itself_when_a_batch_meets_other_columns(repo: dl.Repository) -> None:
    pipe = dl.concat([repo.dataset("pre").pipeline().take(3), repo.dataset("sft").pipeline()])
    with pytest.raises(SchemaError, match=r"item 3 has columns .*\(pad_collate") as e:
        list(pipe.batch(8, collate=dl.pad_collate()))
    assert "pass collate=" not in str(e.value)


def test_the_class_itself_as_collate_is_refused_by_name(repo: dl.Repository) -> None:
    with pytest.raises(ConfigError, match=r"collate=pad_collate\(\)"):
        repo.dataset("a").pipeline().batch(2, collate=dl.pad_collate)


@pytest.mark.parametrize("kw", [{"mask": "false"}, {"lengths": 0}, {"mask": None}])
def test_pad_collate_flags_must_be_booleans(kw: dict[str, object]) -> None:
    with pytest.raises(TypeError, match=f"{next(iter(kw))} must be True or False"):
        dl.pad_collate(**kw)  # type: ignore[arg-type]


def test_pad_value_per_column(repo: dl.Repository) -> None:
    pipe = repo.dataset("sft").pipeline().take(4).map(
        lambda r: {**r, "labels": r["labels"][: 1 + int(r["__key__"][-1]) % 2]})
    b = next(iter(pipe.batch(4, collate=dl.pad_collate(pad_value={"labels": -100},
                                                       dtype="int32"))))
    assert b["labels"].tolist() == [[-100, -100], [-100, 2], [-100, -100], [-100, 2]]
    assert b["tokens"].tolist() == [[1, 2]] * 4 and b["labels"].dtype == np.int32
    c = next(iter(repo.dataset("a").pipeline().batch(3, collate=dl.pad_collate(
        pad_value={"tokens": -1}))))
    assert c["tokens"].tolist() == [[0, -1, -1], [1, 1, -1], [2, 2, 2]]
    with pytest.raises(ConfigError, match=r"names \['label'\], not columns of the batch"):
        next(iter(repo.dataset("sft").pipeline().batch(2, collate=dl.pad_collate(
            pad_value={"label": -100}))))
    for bad in ({"labels": True}, {1: 0}, "0"):
        with pytest.raises(ConfigError, match=r"give a number \(a bool column pads with 1 "
                           r".*\), or a dict"):
            dl.pad_collate(pad_value=bad)  # type: ignore[arg-type]


def test_a_map_after_batch_may_yield_rows(repo: dl.Repository) -> None:
    a, b = repo.dataset("a").pipeline(), repo.dataset("b").pipeline()
    firsts = a.batch(4).map(lambda batch: {k: v[0] for k, v in batch.items()})
    got = list(dl.concat([firsts, b]))
    assert len(got) == 50 and got[0]["__key__"] == "a00"


def test_a_pad_value_for_a_column_columns_leaves_out_is_refused(repo: dl.Repository) -> None:
    collate = dl.pad_collate(columns=["tokens"], pad_value={"labels": -100})
    with pytest.raises(ConfigError, match=r"names \['labels'\], which columns=\['tokens'\]"):
        next(iter(repo.dataset("sft").pipeline().batch(2, collate=collate)))


def test_pad_collate_as_a_torch_collate_fn_gives_tensors(repo: dl.Repository) -> None:
    import torch

    from dload_arrow.torch import as_iterable_dataset

    loader = torch.utils.data.DataLoader(as_iterable_dataset(repo.dataset("a").pipeline()),
                                         batch_size=4, collate_fn=dl.pad_collate(mask=True))
    b = next(iter(loader))
    assert b["tokens"].dtype == torch.int32 and b["tokens"].shape == (4, 4)
    assert b["n"].dtype == torch.int32 and b["n"].tolist() == [0, 1, 2, 3]
    assert b["tokens_mask"].dtype == torch.bool and b["__key__"] == ["a00", "a01", "a02", "a03"]


def test_a_pad_value_for_a_column_of_single_values_is_refused(repo: dl.Repository) -> None:
    with pytest.raises(ConfigError, match=r"names \['n'\], which holds single values"):
        next(iter(repo.dataset("a").pipeline().batch(2, collate=dl.pad_collate(
            pad_value={"n": -1}))))
