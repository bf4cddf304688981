"""Batches of combinators (QA mix56): a column holding booleans beside numbers is refused (a
concat of an int8 and a bool label collated ``[8, 9, True, False]`` as ``[8, 9, 1, 0]``, and
later batches were bool: the dtype changed mid-epoch without a word); a mix of mixes whose
inputs have other columns is refused when iteration starts."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError
from dload_arrow.pipeline import concat, from_iterable


def test_bools_beside_ints_in_one_batch_are_refused(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    repo.commit("a", pa.table({"label": pa.array(range(10), pa.int8())}), progress=False)
    repo.commit("b", pa.table({"label": pa.array([True, False] * 5)}), progress=False)
    pipe = concat([repo.dataset("a").pipeline(), repo.dataset("b").pipeline()]).batch(4)
    with pytest.raises(SchemaError, match=r"column 'label' holds .* and bool in item 2"):
        list(pipe)


def test_python_values_too_and_one_kind_still_collates() -> None:
    with pytest.raises(SchemaError, match="holds int in item 0"):
        list(from_iterable([{"x": 1}, {"x": True}]).batch(2))
    got = list(from_iterable([{"x": True}, {"x": False}, {"x": 2}, {"x": 3.5}]).batch(2))
    assert got[0]["x"].dtype == bool and got[1]["x"].tolist() == [2.0, 3.5]


def test_a_mix_of_mixes_with_unlike_columns_is_refused_when_iteration_starts(
        tmp_path: Path) -> None:
    """QA mix56: the up-front refusal looked only at the mix right under the batch; a mix of
    a mix failed at the first batch that met both of the inner mix's inputs."""
    from dload_arrow.pipeline import mix

    repo = Repository.open(tmp_path / "root")
    repo.commit("a", [(f"a{i}", {"label": i, "x": 1.0}) for i in range(105)], progress=False)
    repo.commit("b", [(f"b{i}", {"label": i, "t": "t"}) for i in range(105)], progress=False)
    a, b = repo.dataset("a").pipeline(), repo.dataset("b").pipeline()
    pipe = mix([mix([a, b], seed=0).shuffle(10, seed=2), a], seed=1).batch(10)
    with pytest.raises(SchemaError, match=r"batch: input 1 of mix\(.* has columns"):
        next(iter(pipe))
    assert sum(1 for _ in mix([mix([a, a], seed=0), a], seed=1).batch(10)) == 20
