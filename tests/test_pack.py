"""``pipe.pack(length)``: token lists end to end, cut into rows of ``length`` (QA finetune61:
no packing operator, and a scan packer lost each epoch's last partial row)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dload_arrow as dl
from dload_arrow.errors import ConfigError, SchemaError

TOKENS = pa.schema([("tokens", pa.list_(pa.int32()))])


def _docs(lengths: list[int]) -> list[tuple[str, dict[str, list[int]]]]:
    start = np.cumsum([0, *lengths])
    return [(f"d{i:04d}", {"tokens": list(range(int(start[i]) + 1, int(start[i + 1]) + 1))})
            for i in range(len(lengths))]


def _reference(docs: list[tuple[str, dict[str, list[int]]]], sep: int | None) -> np.ndarray:
    parts = [np.asarray(d["tokens"] + ([] if sep is None else [sep]), np.int32)
             for _, d in docs]
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dl.Repository:
    return dl.Repository.open(tmp_path_factory.mktemp("pack") / "root")


def test_rows_are_the_tokens_end_to_end_with_segments(repo: dl.Repository) -> None:
    docs = _docs([5, 3, 12, 1, 7])
    repo.commit("five", docs, schema=TOKENS, progress=False)
    rows = list(repo.dataset("five").pipeline().pack(8, separator=0))
    assert [len(r["tokens"]) for r in rows] == [8, 8, 8, 8, 1]  # 33 tokens: the last shorter
    assert np.array_equal(np.concatenate([r["tokens"] for r in rows]), _reference(docs, 0))
    assert rows[0]["tokens"].dtype == np.int32 and rows[0]["tokens_segment"].dtype == np.int32
    # [1..5, 0, 6, 7] [8, 0, 9..14] ...: documents numbered within each row from 0
    assert rows[0]["tokens_segment"].tolist() == [0, 0, 0, 0, 0, 0, 1, 1]
    assert rows[1]["tokens_segment"].tolist() == [0, 0, 1, 1, 1, 1, 1, 1]
    kept = list(repo.dataset("five").pipeline().pack(8, separator=0, drop_remainder=True))
    assert len(kept) == 4
    batch = next(iter(repo.dataset("five").pipeline().pack(8).batch(2)))
    assert batch["tokens"].shape == (2, 8) and batch["tokens_segment"].shape == (2, 8)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lengths=st.lists(st.integers(0, 30), min_size=1, max_size=25),
       length=st.integers(1, 40), sep=st.sampled_from([None, 0]), data=st.data())
def test_a_resume_at_any_row_continues_exactly(repo: dl.Repository, lengths: list[int],
                                               length: int, sep: int | None,
                                               data: st.DataObject) -> None:
    docs = _docs(lengths)
    repo.commit("prop", docs, schema=TOKENS, progress=False)
    pipe = repo.dataset("prop").pipeline().pack(length, separator=sep)
    rows = [r["tokens"] for r in pipe]
    ref = _reference(docs, sep)
    assert np.array_equal(np.concatenate(rows) if rows else np.zeros(0, np.int32), ref)
    assert all(len(r) == length for r in rows[:-1]) and len(rows) == -(-len(ref) // length)
    cut = data.draw(st.integers(0, len(rows)))
    it = iter(pipe)
    got = [next(it)["tokens"] for _ in range(cut)]
    state = json.loads(json.dumps(it.state_dict()))  # a JSON checkpoint
    again = repo.dataset("prop").pipeline().pack(length, separator=sep)
    again.load_state_dict(state)
    got += [r["tokens"] for r in again]
    assert len(got) == len(rows)
    assert all(np.array_equal(a, b) for a, b in zip(got, rows, strict=True))


def test_exactly_once_across_dataloader_workers(repo: dl.Repository) -> None:
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset

    docs = _docs([int(x) for x in np.random.default_rng(0).integers(1, 50, 120)])
    repo.commit("many", docs, schema=TOKENS, progress=False)
    pipe = repo.dataset("many").shuffle(seed=1).pack(32, separator=0)
    alone = [r["tokens"].tolist() for r in pipe]
    with_workers = [r["tokens"].tolist() for r in StatefulLoader(
        as_iterable_dataset(repo.dataset("many").shuffle(seed=1).pack(32, separator=0)),
        num_workers=2)]
    assert sorted(map(tuple, with_workers)) == sorted(map(tuple, alone))
    assert sorted(np.concatenate(alone).tolist()) == sorted(_reference(docs, 0).tolist())


def test_bad_input_is_refused_naming_it(repo: dl.Repository, tmp_path: Path) -> None:
    repo.commit("txt", [("a", {"text": "hello"}), ("b", {"text": "x"})], progress=False)
    with pytest.raises(SchemaError, match=r"pack\(column='tokens'\): the rows have no such"):
        repo.dataset("txt").pipeline().pack(8)
    with pytest.raises(SchemaError, match=r"column 'text' of row 'a' holds 'hello', not a list"):
        list(repo.dataset("txt").pipeline().pack(8, "text"))
    pipe = dl.from_iterable([{"tokens": [1, 2]}, {"ids": [3]}])
    with pytest.raises(SchemaError, match="a row has no column 'tokens'"):
        list(pipe.pack(2))
    for bad in ({"length": 0}, {"length": "8"}, {"length": 8, "separator": 1.5},
                {"length": 8, "drop_remainder": "no"}):
        with pytest.raises((ConfigError, TypeError)):
            repo.dataset("five").pipeline().pack(**bad)  # type: ignore[arg-type]


def test_empty_documents_take_no_segment_number(repo: dl.Repository) -> None:
    repo.commit("gaps", _docs([2, 0, 0, 3]), schema=TOKENS, progress=False)
    (row,) = list(repo.dataset("gaps").pipeline().pack(8))
    assert row["tokens"].tolist() == [1, 2, 3, 4, 5]
    assert row["tokens_segment"].tolist() == [0, 0, 1, 1, 1]


def test_the_state_is_a_cursor_not_tokens(repo: dl.Repository) -> None:
    repo.commit("long", _docs([3000, 5000, 100]), schema=TOKENS, progress=False)
    pipe = repo.dataset("long").pipeline().pack(4096)
    it = iter(pipe)
    first = next(it)["tokens"]
    state = json.dumps(it.state_dict())
    assert len(state) < 1000 and '"drop": 1096' in state  # row 2 starts 1,096 into doc 2
    again = repo.dataset("long").pipeline().pack(4096)
    again.load_state_dict(json.loads(state))
    rest = [r["tokens"] for r in again]
    assert np.array_equal(np.concatenate([first, *rest]), _reference(_docs([3000, 5000, 100]),
                                                                     None))


def test_uint64_ids_stay_exact_and_a_separator_must_fit(repo: dl.Repository) -> None:
    repo.commit("u64", [("a", {"tokens": [2**63, 2**64 - 1, 5]}), ("b", {"tokens": [1]})],
                schema=pa.schema([("tokens", pa.list_(pa.uint64()))]), progress=False)
    rows = [r["tokens"].tolist() for r in repo.dataset("u64").pipeline().pack(2)]
    assert rows == [[2**63, 2**64 - 1], [5, 1]]
    with pytest.raises(ConfigError, match="holds uint64 token ids, which cannot hold it"):
        repo.dataset("u64").pipeline().pack(2, separator=-1)
    with pytest.raises(ConfigError, match="holds int32 token ids"):
        repo.dataset("five").pipeline().pack(2, separator=2**40)
