"""mix / choice / select: proportions, exact windows, stop modes, determinism."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dload_arrow as dl


def labelled(label: str) -> dl.Pipeline:
    return dl.from_iterable([label] * 50).repeat()


@pytest.mark.parametrize("weights", [[0.3, 0.7], [0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
def test_stochastic_mix_is_within_one_percent_of_its_weights_over_20000_draws(
    weights: list[float],
) -> None:
    labels = [str(i) for i in range(len(weights))]
    pipe = dl.mix([labelled(x) for x in labels], weights, seed=11).take(20_000)
    counts = Counter(pipe)
    assert sum(counts.values()) == 20_000
    for x, w in zip(labels, weights, strict=True):
        assert abs(counts[x] / 20_000 - w) < 0.01, (x, counts[x], w)


def test_exact_mix_hits_the_proportions_in_every_window() -> None:
    weights = [0.5, 0.3, 0.2]
    pipe = dl.mix([labelled(x) for x in "abc"], weights, seed=3, exact=True, window=10)
    out = list(pipe.take(2000))
    for start in range(0, 2000, 10):
        c = Counter(out[start:start + 10])
        assert (c["a"], c["b"], c["c"]) == (5, 3, 2), (start, c)
    assert out[:10] != out[10:20]  # windows are shuffled, not a fixed pattern


@settings(max_examples=25, deadline=None)
@given(w=st.lists(st.integers(1, 9), min_size=2, max_size=4), seed=st.integers(0, 1000))
def test_exact_mix_default_window_keeps_integer_proportions(w: list[int], seed: int) -> None:
    total = sum(w)
    pipe = dl.mix([labelled(str(i)) for i in range(len(w))], w, seed=seed, exact=True)
    out = list(pipe.take(total * 3))
    for k in range(3):
        c = Counter(out[k * total:(k + 1) * total])
        assert [c[str(i)] for i in range(len(w))] == w


def test_mix_stop_first_ends_with_the_first_exhausted_input() -> None:
    a = dl.from_iterable(list(range(10)))
    b = dl.from_iterable(list(range(100, 1000)))
    out = list(dl.mix([a, b], [0.5, 0.5], seed=1, stop="first"))
    assert sum(1 for x in out if x < 100) == 10
    assert len(out) < 100


def test_mix_stop_all_delivers_every_item_of_every_input_once() -> None:
    a = dl.from_iterable(list(range(30)))
    b = dl.from_iterable(list(range(100, 170)))
    c = dl.from_iterable(list(range(1000, 1005)))
    out = list(dl.mix([a, b, c], [0.2, 0.2, 0.6], seed=4, stop="all"))
    assert sorted(out) == list(range(30)) + list(range(100, 170)) + list(range(1000, 1005))
    # each input keeps its own order
    assert [x for x in out if x < 100] == list(range(30))


def test_exact_mix_stop_all_skips_the_slots_of_exhausted_inputs() -> None:
    a = dl.from_iterable(list(range(6)))
    b = dl.from_iterable(list(range(100, 200)))
    out = list(dl.mix([a, b], [0.5, 0.5], seed=2, exact=True, window=2, stop="all"))
    assert len(out) == 106
    assert sorted(x for x in out if x < 100) == list(range(6))


def test_mix_is_deterministic_per_seed_and_epoch() -> None:
    def make(seed: int) -> dl.Pipeline:
        return dl.mix([labelled("a"), labelled("b")], [0.5, 0.5], seed=seed).take(200)

    p = make(1)
    e0, e1 = list(p), list(p)
    assert list(make(1)) == e0
    assert e0 != e1
    assert list(make(2)) != e0


def test_choice_follows_a_probability_stream() -> None:
    # the probability of input 0 ramps from 1 to 0 over 4000 items
    ramp = dl.from_iterable(list(np.linspace(1.0, 0.0, 4000))).map(lambda p: [p, 1 - p])
    out = list(dl.choice([labelled("a"), labelled("b")], ramp, seed=5))
    assert len(out) == 4000
    first, last = Counter(out[:1000]), Counter(out[-1000:])
    assert first["a"] > 800 and last["b"] > 800


def test_choice_with_fixed_probabilities_matches_them() -> None:
    out = Counter(dl.choice([labelled("a"), labelled("b")], [0.25, 0.75], seed=9).take(20_000))
    assert abs(out["a"] / 20_000 - 0.25) < 0.01


def test_select_routes_by_an_index_stream() -> None:
    idx = dl.from_iterable([0, 1, 1, 0, 2, 2, 2])
    out = list(dl.select(idx, [dl.from_iterable(list("abc")), dl.from_iterable(list("xyz")),
                               dl.from_iterable(list("123"))]))
    assert out == ["a", "x", "y", "b", "1", "2", "3"]


def test_select_stop_all_skips_an_exhausted_input() -> None:
    idx = dl.from_iterable([0, 0, 0, 1, 0])
    ab, xyz = dl.from_iterable(list("ab")), dl.from_iterable(list("xyz"))
    out = list(dl.select(idx, [ab, xyz], stop="all"))
    assert out == ["a", "b", "x"]
    out = list(dl.select(idx, [ab, xyz]))
    assert out == ["a", "b"]


def test_mix_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match="weights"):
        dl.mix([labelled("a"), labelled("b")], [1.0, -1.0])
    with pytest.raises(ValueError, match="weights"):
        dl.mix([labelled("a"), labelled("b")], [1.0])
    with pytest.raises(ValueError, match="stop"):
        dl.mix([labelled("a")], [1.0], stop="never")


def reference_mix(inputs: list[list[int]], weights: list[int], seed: int, stop: str,
                  window: int | None) -> list[int]:
    """mix's rules slot by slot, written out: the specification the router's runs must meet."""
    from dload_arrow.plan.orders import MIX_BLOCK, apportion, exact_pattern, mix_uniforms

    w = np.asarray(weights, np.float64) / sum(weights)
    at, done, out, slot = [0] * len(inputs), [False] * len(inputs), [], 0
    patterns: dict[int, np.ndarray] = {}
    uniforms: dict[int, np.ndarray] = {}
    drawable = (w if window is None else apportion(w, window)) > 0
    while not all(d or not k for d, k in zip(done, drawable, strict=True)):
        if window is not None:
            win = slot // window
            if win not in patterns:
                patterns[win] = exact_pattern(w, window, seed, 0, win)
            k = int(patterns[win][slot % window])
        else:
            ww = np.where(done, 0.0, w) if stop == "all" and any(done) else w
            if ww.sum() <= 0:
                break
            block = slot // MIX_BLOCK
            if block not in uniforms:
                uniforms[block] = mix_uniforms(seed, 0, block)
            u = uniforms[block][slot % MIX_BLOCK]
            k = min(int(np.searchsorted(np.cumsum(ww / ww.sum()), u, side="right")), len(w) - 1)
        slot += 1
        if not done[k] and at[k] < len(inputs[k]):
            out.append(inputs[k][at[k]])
            at[k] += 1
            continue
        done[k] = True
        if stop == "first":
            break
    return out


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 300), min_size=2, max_size=4),
    chunks=st.lists(st.integers(1, 60), min_size=4, max_size=4),
    weights=st.lists(st.integers(1, 9), min_size=4, max_size=4),
    seed=st.integers(0, 10_000),
    stop=st.sampled_from(["first", "all"]),
    window=st.sampled_from([None, None, 1, 7, 20]),
    skip=st.integers(0, 200),
)
@example(sizes=[0, 0, 0, 0], chunks=[1, 1, 1, 1], weights=[3, 6, 1, 4], seed=0, stop="first",
         window=7, skip=0)  # (a tie of remainders, broken as mix's normalized weights break it)
def test_mix_in_runs_gives_the_slot_by_slot_output(
    sizes: list[int], chunks: list[int], weights: list[int], seed: int, stop: str,
    window: int | None, skip: int,
) -> None:
    """The router decides runs of slots at once (pipeline/routes.py); whatever the inputs'
    chunking, its output, its skips and its shards are those of the rules applied slot by slot."""
    inputs = [list(range(i * 1000, i * 1000 + n)) for i, n in enumerate(sizes)]
    w = weights[: len(sizes)]

    def make() -> dl.Pipeline:
        pipes = [dl.from_iterable(x, chunk=c) for x, c in zip(inputs, chunks, strict=False)]
        return dl.mix(pipes, w, seed=seed, stop=stop, exact=window is not None, window=window)

    from dload_arrow.plan.orders import apportion

    shares = np.asarray(w, np.float64) / sum(w)  # (as mix normalizes them: ties of the
    if window is not None and min(apportion(shares, window)) == 0:  # remainders, 3/14 1/14)
        with pytest.raises(ValueError, match="gets no slot"):  # an input would never be drawn
            make()
        return
    want = reference_mix(inputs, w, seed, stop, window)
    assert list(make()) == want
    assert list(make().skip(skip)) == want[skip:]
    blocks = [want[i:i + 16] for i in range(0, len(want), 16)]
    assert list(make().shard(1, 2, block=16)) == [x for b in blocks[1::2] for x in b]


def test_mix_of_datasets_interleaves_record_batches_in_runs(tmp_path: Path) -> None:
    """Chunks of Arrow rows from two datasets come out as one record batch per chunk, in the
    slot-by-slot order, row for row."""
    import pyarrow as pa

    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    for name, n, base in (("a", 700, 0), ("b", 500, 10_000)):
        repo.commit(name, [(f"{name}{i:05d}", {"x": base + i}) for i in range(n)],
                    row_group_size=600, progress=False)  # row groups of a few dozen rows
    a, b = repo.dataset("a"), repo.dataset("b")
    want = reference_mix([list(range(700)), list(range(10_000, 10_500))], [3, 1], 5, "all", None)

    def make() -> dl.Pipeline:  # a pipeline iterated again starts its next epoch
        return dl.mix([a.pipeline(), b.pipeline()], [3, 1], seed=5, stop="all")

    chunks = list(make().iter_chunks())
    assert all(isinstance(c, pa.RecordBatch) for c in chunks)
    assert [x for c in chunks for x in c.column("x").to_pylist()] == want
    assert [s["x"] for s in make()] == want


def test_exact_mix_stop_all_ends_when_the_inputs_its_windows_name_are_exhausted() -> None:
    """At weights 1:0 every slot is "a": "b" can never be drawn, so the mix ends with "a"
    instead of looking for a slot for "b" forever."""
    a = dl.from_iterable(list(range(7)))
    b = dl.from_iterable(list(range(100, 110)))
    pipe = dl.mix([a, b], [1, 0], seed=3, exact=True, window=2, stop="all")
    assert len(pipe) == 7
    assert list(pipe) == list(range(7))


def test_mix_starts_every_drawable_input_before_routing_its_first_slot(tmp_path: Path) -> None:
    """Each shuffled input begins making its first window as the mix starts, so their first
    reads overlap; an input no slot can name (weight 0) is never read."""
    from dload_arrow.pipeline.chunks import chunk_items
    from dload_arrow.pipeline.window_node import DatasetNode

    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    for name in "abc":
        repo.commit(name, [(f"{name}{i:04d}", {"x": i}) for i in range(300)],
                    row_group_size=600, progress=False)
    pipes = [repo.dataset(x).shuffle(100, seed=1) for x in "abc"]
    node = dl.mix(pipes, [1.0, 1e-6, 0.0], seed=2)._build(0)
    node.reset(None)
    first = chunk_items(node.next())
    kids = [c.child for c in node.cursors]  # type: ignore[attr-defined]
    assert all(isinstance(k, DatasetNode) for k in kids)
    assert all(s["__key__"].startswith("a") for s in first)  # "b" was not picked yet...
    assert kids[1]._ahead is not None or kids[1]._win is not None  # ...but started
    assert kids[2]._ahead is None and kids[2]._reader is None  # "c" cannot be drawn
    node.close()


def test_batching_a_mix_of_inputs_with_other_columns_names_them(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", [(f"a{i}", {"x": i}) for i in range(40)], progress=False)
    repo.commit("b", [(f"b{i}", {"y": i}) for i in range(40)], progress=False)
    mixed = dl.mix([repo.dataset("a").pipeline(), repo.dataset("b").pipeline()], [0.5, 0.5],
                   seed=0)
    with pytest.raises(dl.SchemaError, match=r"has columns \['__key__', 'y'\] and input 0 "
                                             r"\['__key__', 'x'\]"):  # before any batch
        list(mixed.batch(8))
    same = dl.mix([repo.dataset("a").pipeline().map(lambda s: {"v": s["x"]}),
                   repo.dataset("b").pipeline().map(lambda s: {"v": s["y"]})], [0.5, 0.5],
                  seed=0, stop="all")
    assert sum(len(b["v"]) for b in same.batch(8)) == 80  # mapped to one set: batches fine
    from dload_arrow.torch.tensors import collate

    with pytest.raises(dl.SchemaError, match="item 1 has columns"):
        collate([{"x": 1}, {"y": 2}])


def test_batching_a_mix_whose_column_is_int_in_one_input_and_str_in_the_other_is_refused(
    tmp_path: Path,
) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", [(f"a{i}", {"x": i}) for i in range(40)], progress=False)
    repo.commit("b", [(f"b{i}", {"x": f"s{i}"}) for i in range(40)], progress=False)
    mixed = dl.mix([repo.dataset("a").pipeline(), repo.dataset("b").pipeline()], [0.5, 0.5],
                   seed=0, stop="all")
    with pytest.raises(dl.SchemaError, match=r"column 'x' holds (int|str) in item \d+ .* and "
                                              r"(str|int) in item \d+"):
        list(mixed.batch(16))
    fixed = dl.mix([repo.dataset("a").pipeline().map(lambda s: {"x": str(s["x"])}),
                    repo.dataset("b").pipeline().map(lambda s: {"x": s["x"]})], [0.5, 0.5],
                   seed=0, stop="all")
    assert sum(len(b["x"]) for b in fixed.batch(16)) == 80
    assert next(iter(dl.from_iterable([{"x": 1}, {"x": None}]).batch(2)))["x"] == [1, None]
    from dload_arrow.torch.tensors import collate

    with pytest.raises(dl.SchemaError, match=r"column 'x' holds int in item 0 \(1\) and bytes"):
        collate([{"x": 1}, {"x": b"q"}])
    assert collate([{"x": "a"}, {"x": None}])["x"] == ["a", None]
