"""A batch whose column holds booleans beside numbers is refused (QA mix56: a concat of an
int8 label and a bool label collated ``[8, 9, True, False]`` as ``[8, 9, 1, 0]``, and later
batches were bool: the dtype changed mid-epoch without a word)."""

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
