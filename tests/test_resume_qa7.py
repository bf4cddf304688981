"""Pipeline and torch states as they travel (QA pass 7): through JSON, edited or damaged."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError


@pytest.mark.parametrize("bad", [17.9, "17", True, None, -1])
def test_a_torch_cursor_that_is_not_a_whole_number_is_refused(bad: Any) -> None:
    from dload_arrow.torch import as_iterable_dataset

    ds = as_iterable_dataset(dl.from_iterable(list(range(50))), to_tensors=False)
    state = ds.state_dict()
    ds.load_state_dict({**state, "position": np.int64(7)})  # a numpy integer is whole
    with pytest.raises(ConfigError, match="not a dload_arrow torch state"):
        ds.load_state_dict({**state, "position": bad})


def test_a_json_round_trip_of_a_torch_cursor_resumes_it() -> None:
    from dload_arrow.torch import as_iterable_dataset

    ds = as_iterable_dataset(dl.from_iterable(list(range(50))), to_tensors=False)
    ds.load_state_dict(json.loads(json.dumps({**ds.state_dict(), "position": 45})))
    assert [int(x) for x in ds] == list(range(45, 50))


def _count_by_residue(acc: dict[int, int], r: int) -> tuple[dict[int, int], tuple[int, int]]:
    acc = dict(acc)
    acc[r % 3] = acc.get(r % 3, 0) + 1
    return acc, (r, acc[r % 3])


def test_a_scan_accumulator_keyed_by_ints_survives_a_json_round_trip() -> None:
    def make() -> dl.Pipeline:
        return dl.from_iterable(list(range(600))).scan(_count_by_residue, {})

    full = list(make())
    p = make()
    it = iter(p)
    head = [next(it) for _ in range(300)]
    state = json.loads(json.dumps(p.state_dict()))
    q = make()
    q.load_state_dict(state)
    assert head + list(q) == full


def test_take_and_zip_of_an_iterator_factory_do_not_claim_a_length() -> None:
    from dload_arrow.torch import as_iterable_dataset

    def gen(epoch: int) -> Any:
        for i in range(37):
            yield {"x": i}

    pipe = dl.from_iterable(gen).take(40)
    with pytest.raises(TypeError, match="only known by reading it"):
        len(pipe)
    assert len(dl.random_stream(0).take(40)) == 40  # endless: take(n) has n
    assert len(dl.from_iterable(gen, finite=False).take(7)) == 7  # declared endless
    got: list[int] = []
    for rank in range(2):
        ds = as_iterable_dataset(pipe, rank=rank, world_size=2, uneven="none",
                                 to_tensors=False)
        got += [int(x["x"]) for x in ds]
    assert sorted(got) == list(range(37))
    zipped = dl.zip_with([dl.from_iterable(list(range(10))),
                          dl.from_iterable(lambda e: iter(range(5)))])
    with pytest.raises(TypeError):
        len(zipped)
    assert len(dl.zip_with([dl.from_iterable(list(range(10))), dl.random_stream(1)])) == 10


def test_map_batches_never_gets_a_batch_without_columns() -> None:
    import pyarrow.compute as pc

    seen: list[int] = []

    def add_y(b: Any) -> Any:
        seen.append(b.num_rows)
        return b.append_column("y", pc.multiply(b.column("x"), 2))

    src = dl.from_iterable([{"x": i} for i in range(6)], chunk=3)
    assert list(src.filter(lambda r: r["x"] > 100).map_batches(add_y)) == []
    assert [r["y"] for r in src.filter(lambda r: r["x"] >= 3).map_batches(add_y)] == [6, 8, 10]
    assert 0 not in seen


@pytest.mark.parametrize(("make", "edit"), [
    (lambda: dl.from_iterable(list(range(100))), lambda c: {**c, "position": -3}),
    (lambda: dl.from_iterable(list(range(100))), lambda c: {**c, "position": 2.5}),
    (lambda: dl.from_iterable(list(range(100))).take(50),
     lambda c: {**c, "position": -10}),
    (lambda: dl.concat([dl.from_iterable([1, 2, 3]), dl.from_iterable([4, 5])]),
     lambda c: {**c, "index": -1}),
])
def test_an_edited_pipeline_state_with_a_negative_counter_is_refused(make: Any, edit: Any
                                                                      ) -> None:
    p = make()
    it = iter(p)
    next(it)
    state = p.state_dict()
    cursor = state["cursor"]
    path: list[Any] = []
    while isinstance(cursor, dict) and not ({"position", "index"} & cursor.keys()):
        key = next(k for k, v in cursor.items() if isinstance(v, dict))
        path.append(key)
        cursor = cursor[key]
    edited = edit(cursor)
    for key in reversed(path):
        edited = {key: edited}
    bad = {**state, "cursor": _merge(state["cursor"], edited)}
    with pytest.raises(ValueError, match="counters are integers >= 0"):
        make().load_state_dict(bad)
    with pytest.raises(ValueError, match=r"\['epoch'\] is -1"):
        make().load_state_dict({**state, "epoch": -1})
    q = make()
    q.load_state_dict(json.loads(json.dumps(state)))  # the state as saved loads
    assert list(q) == list(make())[1:]


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a[k], b[k]) if k in b else a[k] for k in a} | {
            k: v for k, v in b.items() if k not in a}
    return b


def test_a_pipeline_fingerprint_tells_dates_and_decimals_apart(repo: Any) -> None:
    import datetime as dt
    from decimal import Decimal
    from pathlib import PurePosixPath

    def cutoff(when: Any) -> dl.Pipeline:
        return dl.from_iterable(list(range(5))).filter(lambda r: r >= when.day)

    prints = {cutoff(dt.datetime(2024, m, 1)).fingerprint() for m in (5, 11)}
    assert len(prints) == 2
    for a, b in [(Decimal("1.1"), Decimal("2.2")), (dt.timedelta(1), dt.timedelta(2)),
                 (PurePosixPath("a"), PurePosixPath("b"))]:
        fa = dl.from_iterable([{"v": a}]).fingerprint()
        assert fa != dl.from_iterable([{"v": b}]).fingerprint()
        assert fa == dl.from_iterable([{"v": a}]).fingerprint()
    rows = [(k, {"when": dt.datetime(2024, m, 1)}) for k, m in (("a", 1), ("b", 6), ("c", 12))]
    repo.commit("d", rows, progress=False)
    ds = repo.dataset("d")

    def recent(when: dt.datetime) -> dl.Pipeline:
        return ds.pipeline().filter(lambda r: r["when"] >= when)

    repo.derive("recent", recent(dt.datetime(2024, 5, 1)), progress=False)
    repo.derive("recent", recent(dt.datetime(2024, 11, 1)), progress=False)
    assert [s["__key__"] for s in repo.dataset("recent").samples()] == ["c"]


def _bump_positions(state: Any, by: int) -> Any:
    if isinstance(state, dict):
        return {k: (v + by if k == "position" else _bump_positions(v, by))
                for k, v in state.items()}
    return state


@pytest.mark.parametrize("make", [
    lambda repo: repo.dataset("a").pipeline(),
    lambda repo: repo.dataset("a").shuffle(seed=1),
    lambda repo: dl.from_iterable(list(range(50))),
    lambda repo: dl.from_iterable(lambda: iter(range(50))),
])
def test_a_position_past_the_epochs_end_is_refused(tmp_path: Any, make: Any) -> None:
    repo = dl.Repository.open(tmp_path / "root")
    repo.commit("a", [(f"k{i:03d}", {"x": i}) for i in range(100)])
    pipe = make(repo)
    it = iter(pipe)
    next(it)
    state = pipe.state_dict()
    at_end = make(repo)  # the end itself is a position a state can hold
    at_end.load_state_dict(_bump_positions(state, len(list(make(repo))) - 1))
    assert list(at_end) == []
    pipe.load_state_dict(_bump_positions(state, 1000))
    with pytest.raises(ValueError, match=r"past the end of the epoch \((100 rows|50 items)"):
        list(pipe)


def test_a_torch_position_past_the_epochs_end_is_refused() -> None:
    from dload_arrow.torch import as_iterable_dataset

    ds = as_iterable_dataset(dl.from_iterable(list(range(50))), to_tensors=False)
    state = ds.state_dict()
    ds.load_state_dict({**state, "position": 50})
    assert list(ds) == []
    with pytest.raises(ConfigError, match=r"position 51 is past the end of epoch 0 \(50 items"):
        ds.load_state_dict({**state, "position": 51})
