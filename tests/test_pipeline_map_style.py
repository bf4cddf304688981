"""from_iterable of a map-style object (``__len__`` and ``__getitem__`` without ``__iter__``,
such as a torch map-style Dataset): read by index, resumed by index."""

from __future__ import annotations

from typing import Any

import pytest

import dload_arrow as dl


class _Squares:
    """Map-style: len and getitem only; records which indices were read."""

    def __init__(self, n: int) -> None:
        self.n, self.read = n, []  # type: ignore[var-annotated]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, int]:
        if not 0 <= i < self.n:
            raise IndexError(i)
        self.read.append(i)
        return {"i": i, "sq": i * i}


def test_a_map_style_object_is_read_by_index_in_order() -> None:
    src = _Squares(1000)
    p = dl.from_iterable(src, name="squares")
    assert len(p) == 1000
    assert list(p) == [{"i": i, "sq": i * i} for i in range(1000)]
    assert list(p.map(lambda r: r["i"]).batch(400, collate=list)) == [
        list(range(400)), list(range(400, 800)), list(range(800, 1000))]


def test_a_map_style_object_resumes_by_index_without_reading_the_items_before() -> None:
    src = _Squares(1000)
    p = dl.from_iterable(src, name="squares").map(lambda r: r["i"])
    it = iter(p)
    head = [next(it) for _ in range(700)]
    state = p.state_dict()
    src.read.clear()
    q = dl.from_iterable(src, name="squares").map(lambda r: r["i"])
    q.load_state_dict(state)
    assert head + list(q) == list(range(1000))
    assert min(src.read) >= 512  # the chunk holding item 700 at most: no replay from 0
    src.read.clear()
    assert list(dl.from_iterable(src, name="squares").skip(990)) == [
        {"i": i, "sq": i * i} for i in range(990, 1000)]
    assert sorted(src.read) == list(range(990, 1000))


def test_a_torch_map_style_dataset_is_accepted() -> None:
    torch_data = pytest.importorskip("torch.utils.data")

    class Ds(torch_data.Dataset):  # type: ignore[misc, name-defined]
        def __len__(self) -> int:
            return 10

        def __getitem__(self, i: int) -> Any:
            return i * 10

    p = dl.from_iterable(Ds(), name="ds")
    assert list(p) == list(range(0, 100, 10))
    assert list(p.shard(1, 2)) == [10, 30, 50, 70, 90]


def test_an_object_without_len_or_items_is_still_refused() -> None:
    class NoLen:
        def __getitem__(self, i: int) -> int:
            return i

    for bad in (NoLen(), 3):
        with pytest.raises(TypeError, match="map-style"):
            dl.from_iterable(bad)
