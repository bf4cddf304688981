"""views=True: binary and string columns as view types, the same rows in the same order,
large values not copied, and every pipeline step that handles batches works on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import dload_arrow as dl
from dload_arrow import Repository

ROWS = 300


def _rows(n: int, key: str = "r") -> list[tuple[str, dict[str, Any]]]:
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        img = None if i % 17 == 5 else rng.bytes(1500 + i % 300)  # large values, some null
        out.append((f"{key}{i:04d}", {"img": img, "label": i,
                                      "name": None if i % 11 == 3 else f"n{i}",
                                      "tok": np.full(3, i, np.int32)}))
    return out


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("views")
    repo = Repository.open(str(path))
    repo.commit("imgs", _rows(ROWS), row_group_size="64KB", shard_size="200KB")
    repo.commit("more", _rows(120, key="m"), row_group_size="64KB", shard_size="200KB")
    return path


def _ds(root: Path, name: str = "imgs") -> Any:
    return Repository.open(str(root)).dataset(name)


def _plain(t: pa.Table) -> pa.Table:
    """``t`` with view columns cast back (to compare values)."""
    fields = []
    for f in t.schema:
        if pa.types.is_binary_view(f.type):
            fields.append(f.with_type(pa.binary()))
        elif pa.types.is_string_view(f.type):
            fields.append(f.with_type(pa.string()))
        else:
            fields.append(f)
    return t.cast(pa.schema(fields))


def _table(pipe: dl.Pipeline) -> pa.Table:
    return pa.Table.from_batches(list(pipe.iter_chunks()))


ORDERS = {
    "sequential": lambda ds, v: ds.pipeline(views=v),
    "windowed": lambda ds, v: ds.shuffle(100, seed=4, views=v),
    "full": lambda ds, v: ds.shuffle(full=True, seed=4, views=v),
    "sharded": lambda ds, v: ds.shuffle(100, seed=4, views=v).shard(1, 3),
}


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_same_rows_same_order_as_views(root: Path, order: str) -> None:
    ds = _ds(root)
    plain = _table(ORDERS[order](ds, False))
    viewed = _table(ORDERS[order](ds, True))
    pipe = ORDERS[order](ds, True)
    assert viewed.schema == pipe.schema
    assert viewed.schema.field("img").type == pa.binary_view()
    assert viewed.schema.field("name").type == pa.string_view()
    assert viewed.schema.field("__key__").type == pa.string_view()
    assert viewed.schema.field("tok").type == plain.schema.field("tok").type
    assert _plain(viewed).equals(plain)
    assert viewed.column("img").null_count == plain.column("img").null_count > 0


def test_shuffled_views_share_the_decoded_bytes(root: Path) -> None:
    """A shuffled chunk's views point into the buffers of the units its rows were decoded
    into, one per unit (a copy, even cast to views after, would be one fresh buffer)."""
    chunk = next(iter(_ds(root).shuffle(100, seed=4, views=True).iter_chunks()))
    units = len(list(_ds(root).batches()))
    assert 1 < len(chunk.column("img").buffers()[2:]) <= units


def test_batches_views(root: Path) -> None:
    ds = _ds(root)
    plain = pa.Table.from_batches(list(ds.batches()))
    viewed = pa.Table.from_batches(list(ds.batches(views=True)))
    assert viewed.schema.field("img").type == pa.binary_view()
    assert _plain(viewed).equals(plain)


STEPS = {
    "buffered shuffle": lambda p: p.map_batches(lambda b: b).shuffle(50, seed=1),
    "expression filter": lambda p: p.filter(pc.field("label") >= 150),
    "function filter": lambda p: p.filter(lambda r: r["label"] % 3 == 0),
    "map_batches": lambda p: p.map_batches(lambda b: b.slice(1), rows_preserved=False),
    "take and skip": lambda p: p.skip(7).take(100),
    "shard": lambda p: p.shard(1, 2, block=16),
    "batch": lambda p: p.batch(32),
    "unbatch": lambda p: p.batch(32).unbatch(),
}


def _norm(x: Any) -> Any:
    if isinstance(x, pa.RecordBatch):
        return _plain(pa.Table.from_batches([x])).to_pylist()
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, list):
        return [_norm(v) for v in x]
    return x


@pytest.mark.parametrize("step", sorted(STEPS))
def test_steps_on_views(root: Path, step: str) -> None:
    ds = _ds(root)
    want = [_norm(x) for x in STEPS[step](ds.shuffle(100, seed=2))]
    got = [_norm(x) for x in STEPS[step](ds.shuffle(100, seed=2, views=True))]
    assert got == want and len(got) > 3


def test_mix_of_view_pipelines(root: Path) -> None:
    a, b = _ds(root), _ds(root, "more")
    want = [_norm(x) for x in dl.mix([a.shuffle(60, seed=1), b.pipeline()], [0.7, 0.3],
                                     seed=5).batch(16)]
    got = [_norm(x) for x in dl.mix([a.shuffle(60, seed=1, views=True),
                                     b.pipeline(views=True)], [0.7, 0.3], seed=5).batch(16)]
    assert got == want and len(got) > 3


def test_where_view_with_views(root: Path) -> None:
    ds = _ds(root).where("label >= 100")
    plain = _table(ds.shuffle(100, seed=4))
    viewed = _table(ds.shuffle(100, seed=4, views=True))
    assert viewed.schema.field("img").type == pa.binary_view()
    assert _plain(viewed).equals(plain) and viewed.num_rows == ROWS - 100


def test_resume_with_views(root: Path) -> None:
    pipe = _ds(root).shuffle(100, seed=4, views=True)
    it = iter(pipe)
    first = [next(it)["__key__"] for _ in range(77)]
    state = it.state_dict()
    again = _ds(root).shuffle(100, seed=4, views=True)
    again.load_state_dict(state)
    rest = [r["__key__"] for r in again]
    whole = [r["__key__"] for r in _ds(root).shuffle(100, seed=4)]
    assert first + rest == whole


def test_derive_from_views_stores_plain_types(root: Path, tmp_path: Path) -> None:
    repo = Repository.open(str(tmp_path))
    src = _ds(root)
    repo.commit("src", [(r["__key__"], {k: v for k, v in r.items() if k != "__key__"})
                        for r in src.samples()])
    v = repo.derive("copy", repo.dataset("src").shuffle(100, seed=1, views=True))
    out = repo.dataset("copy", version=v.id) if hasattr(v, "id") else repo.dataset("copy")
    assert out.schema.field("img").type == pa.binary()
    assert out.schema.field("name").type == pa.string()
    assert sorted(out.to_arrow().column("__key__").to_pylist()) == sorted(
        src.to_arrow().column("__key__").to_pylist())


def test_torch_batches_of_views(root: Path) -> None:
    torch = pytest.importorskip("torch")
    from dload_arrow.torch import as_iterable_dataset

    ds = _ds(root)
    loader = torch.utils.data.DataLoader(
        as_iterable_dataset(ds.shuffle(100, seed=4, views=True).batch(50)), batch_size=None,
        num_workers=2)
    got = [b for b in loader]
    want = list(as_iterable_dataset(ds.shuffle(100, seed=4).batch(50)))
    assert sum(len(b["label"]) for b in got) == ROWS
    assert sorted(k for b in got for k in b["__key__"]) == sorted(
        k for b in want for k in b["__key__"])
    assert all(isinstance(x, (bytes, type(None))) for b in got for x in b["img"])


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_views_must_be_bool(root: Path, bad: Any) -> None:
    with pytest.raises(TypeError, match="views"):
        _ds(root).pipeline(views=bad)
    with pytest.raises(TypeError, match="views"):
        _ds(root).batches(views=bad)


def test_commit_with_a_view_schema_stores_plain_types(tmp_path: Path) -> None:
    """schema= with view types (as a views pipeline reports) commits pairs as binary and
    string (it raised Arrow's 'min_max has no kernel for string_view')."""
    repo = Repository.open(str(tmp_path))
    schema = pa.schema([("__key__", pa.string_view()), ("s", pa.string_view()),
                        ("b", pa.binary_view())])
    repo.commit("t", [("a", {"s": "x", "b": b"1"}), ("b", {"s": None, "b": b"2"})],
                schema=schema)
    ds = repo.dataset("t")
    assert ds.schema.field("s").type == pa.string()
    assert ds.schema.field("b").type == pa.binary()
    assert ds.to_arrow().column("s").to_pylist() == ["x", None]


def test_take_and_filter_rows_of_view_columns() -> None:
    from dload_arrow.pipeline.views import as_views, filter_rows, take_rows

    plain = pa.record_batch({"b": pa.array([b"x" * 40, None, b"yy", b"z" * 30]),
                             "n": pa.array([1, 2, 3, 4])})
    viewed = as_views(plain)
    assert viewed.schema.field("b").type == pa.binary_view()
    got = take_rows(viewed, np.array([3, 1, 0]))
    assert got.column("b").to_pylist() == [b"z" * 30, None, b"x" * 40]
    assert got.column("n").to_pylist() == [4, 2, 1]
    mask = pa.array([True, None, False, True])  # a null slot drops its row, as Arrow's filter
    assert filter_rows(viewed, mask).column("n").to_pylist() == [1, 4]
    assert filter_rows(viewed, np.array([False, True, True, False])).column(
        "b").to_pylist() == [None, b"yy"]
    assert filter_rows(viewed, pc.field("n") > 2).column("b").to_pylist() == [b"yy", b"z" * 30]
    assert filter_rows(viewed, pc.field("n") > 2).schema == viewed.schema


def _pointed_at(col: pa.Array) -> set[int]:
    """The data buffers (by index) the out-of-line views of ``col`` point into."""
    v = np.frombuffer(col.buffers()[1], np.int32).reshape(-1, 4)[col.offset:col.offset + len(col)]
    return set(v[v[:, 0] > 12, 2].tolist())


@pytest.mark.parametrize("order", ["windowed", "full"])
def test_a_view_batch_holds_only_the_buffers_it_points_into(root: Path, order: str) -> None:
    """A batch of a few rows keeps (and pickles) the units its values are in, not every unit
    of the window."""
    ds = _ds(root)
    pipe = ORDERS[order](ds, True)._replace(chunk_rows=4)
    chunks = list(pipe.iter_chunks())
    assert len(chunks) > 10
    for chunk in chunks:
        img = chunk.column("img")
        assert _pointed_at(img) == set(range(len(img.buffers()) - 2))
        assert len(img.buffers()) - 2 <= 4
    plain = pa.Table.from_batches(list(ORDERS[order](ds, False)._replace(chunk_rows=4)
                                       .iter_chunks()))
    assert _plain(pa.Table.from_batches(chunks)).equals(plain)


def test_take_rows_drops_the_buffers_no_row_points_into() -> None:
    from dload_arrow.pipeline.views import take_rows

    parts = [pa.array([b"a" * 20, b"b" * 30]), pa.array([b"c" * 40, b"short"])]
    col = pa.concat_arrays([p.cast(pa.binary_view()) for p in parts])
    batch = pa.record_batch({"b": col})
    assert len(col.buffers()) - 2 == 2
    got = take_rows(batch, np.array([3, 2])).column("b")  # rows of the second part only
    assert got.to_pylist() == [b"short", b"c" * 40]
    assert len(got.buffers()) - 2 == 1 and _pointed_at(got) == {0}
    got.validate(full=True)
    both = take_rows(batch, np.array([2, 0])).column("b")
    assert both.to_pylist() == [b"c" * 40, b"a" * 20] and len(both.buffers()) - 2 == 2


def test_repr_shows_views(root: Path) -> None:
    ds = _ds(root)
    assert "views=True" in repr(ds.shuffle(100, seed=1, views=True))
    assert "views" not in repr(ds.shuffle(100, seed=1))
    assert ds.shuffle(100, seed=1, views=True).fingerprint() == \
        ds.shuffle(100, seed=1).fingerprint()  # the same values: derive memoizes across


@pytest.mark.parametrize("how", ["concat", "mix"])
def test_views_and_plain_inputs_combine_into_view_batches(root: Path, how: str) -> None:
    """A combinator over inputs with and without views keeps batches (one view schema)
    instead of alternating types or falling back to Python items."""
    a, b = _ds(root), _ds(root, "more")

    def build(views: bool) -> dl.Pipeline:
        ins = [a.shuffle(60, seed=1, views=views), b.pipeline()]
        return dl.concat(ins) if how == "concat" else dl.mix(ins, [0.7, 0.3], seed=5)

    pipe = build(True)
    chunks = list(pipe.iter_chunks())
    assert pipe.schema is not None and pipe.schema.field("img").type == pa.binary_view()
    assert all(isinstance(c, pa.RecordBatch) and c.schema == pipe.schema for c in chunks)
    want = pa.Table.from_batches(list(build(False).iter_chunks()))
    assert _plain(pa.Table.from_batches(chunks)).equals(want)
    assert [_norm(x) for x in build(True)] == [_norm(x) for x in build(False)]
