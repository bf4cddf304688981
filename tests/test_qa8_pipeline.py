"""QA round 8 (pipelines): exact mixes draw every input of positive weight, a dataset pipeline
is shuffled once, shuffle after shard() says where it belongs, numpy integers are counts, and
flat_map / scan / choice name the operator when a function or stream gives the wrong thing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pipeline_cases
import pytest

import dload_arrow as dl


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("qa8")
    pipeline_cases.make_datasets(str(path))
    return str(path)


def tagged(tag: str, n: int) -> dl.Pipeline:
    return dl.from_iterable([tag] * n, chunk=16)


# --- 1. mix(exact=True): an input of positive weight is never left without a slot ------------


@pytest.mark.parametrize(("weights", "window"), [([0.0004, 0.9996], 2500), ([1, 2999], 3000),
                                                 ([1e-4, 1 - 1e-4], 10_000)])
def test_exact_mix_default_window_gives_every_input_of_positive_weight_a_slot(
        weights: list[float], window: int) -> None:
    """The default window used to stay at 1000 slots, where the rare input got 0 of them: its
    rows were never drawn and len() left them out."""
    pipe = dl.mix([tagged("b", 600), tagged("c", 300)], weights, seed=0, exact=True, stop="all")
    assert pipe.window == window
    assert Counter(pipe) == {"b": 600, "c": 300}
    assert len(pipe) == 900


def test_exact_mix_of_datasets_with_stop_all_delivers_every_row(root: str) -> None:
    nums, letters = pipeline_cases.ds(root), pipeline_cases.ds(root, "letters")
    pipe = dl.mix([nums, letters], [0.0004, 0.9996], seed=1, exact=True, stop="all")
    xs = [r["x"] for r in pipe]
    assert len(pipe) == len(xs) == 420
    assert sorted(xs) == list(range(300)) + list(range(10_000, 10_120))


def test_exact_mix_refuses_a_window_that_gives_an_input_no_slot() -> None:
    b, c = tagged("b", 6), tagged("c", 3)
    with pytest.raises(ValueError, match=r"window=10\): input 0 \(weight 0\.001\) gets no slot.*"
                                         r"smallest window.* is 1,000: pass window=1000"):
        dl.mix([b, c], [0.001, 0.999], exact=True, window=10, stop="all")
    with pytest.raises(ValueError, match=r"input 0 \(weight 1, 0\.000333333 of the total\).*"
                                         r"is 3,000"):
        dl.mix([b, c], [1, 2999], exact=True, window=10)
    with pytest.raises(ValueError, match=r"input 2 \(weight 0\.333333\) gets no slot in a window "
                                         "of 2.* is 3"):
        dl.mix([b, c, tagged("d", 1)], exact=True, window=2)
    assert dl.mix([b, c], [0.001, 0.999], exact=True, window=1000).window == 1000
    assert list(dl.mix([b, c], [1, 0], exact=True, window=1, stop="all")) == ["b"] * 6


@pytest.mark.parametrize("weights", [[1e-7, 1.0], [1e-12, 1.0], [1e-320, 1.0]])
def test_exact_mix_refuses_weights_that_need_a_window_over_a_million_slots(
        weights: list[float]) -> None:
    with pytest.raises(ValueError, match=r"mix\(exact=True\): input 0 .* more than the "
                                         r"1,000,000 a window may hold.*exact=False"):
        dl.mix([tagged("b", 6), tagged("c", 3)], weights, exact=True, stop="all")
    assert len(dl.mix([tagged("b", 6), tagged("c", 3)], weights, stop="all")) == 9


# --- 2. a dataset pipeline is shuffled once ----------------------------------------------------


@pytest.mark.parametrize(("first", "said"), [
    (lambda ds: ds.shuffle(full=True, seed=1), r"shuffle\(full=True, seed=1\)"),
    (lambda ds: ds.shuffle(100, seed=1), r"shuffle\(100, seed=1\)"),
])
@pytest.mark.parametrize("second", [lambda p: p.shuffle(100, seed=2),
                                    lambda p: p.shuffle(full=True, seed=5),
                                    lambda p: p.shuffle()])
def test_a_second_shuffle_of_a_dataset_pipeline_is_refused(
        root: str, first: Callable[[Any], dl.Pipeline], said: str,
        second: Callable[[dl.Pipeline], dl.Pipeline]) -> None:
    """It used to replace the first: a.shuffle(full=True).shuffle(100) was a windowed shuffle."""
    shuffled = first(pipeline_cases.ds(root))
    with pytest.raises(ValueError, match=rf"'nums' is already shuffled \({said}\): a second "
                                         r"shuffle would replace.*call shuffle once"):
        second(shuffled)


def test_shuffles_that_compose_still_work(root: str) -> None:
    ds = pipeline_cases.ds(root)
    on_items = ds.shuffle(full=True, seed=1).map(pipeline_cases.xs).shuffle(50, seed=2)
    assert sorted(on_items) == list(range(300))
    sharded = ds.shuffle(64, seed=1).shard(0, 2).shuffle(50, seed=2)
    assert sorted(r["x"] for r in sharded) == sorted(r["x"] for r in
                                                     ds.shuffle(64, seed=1).shard(0, 2))
    assert sorted(r["x"] for r in ds.pipeline().shuffle(64, seed=3)) == list(range(300))


# --- 3. shuffle after shard() -------------------------------------------------------------------


def test_a_byte_size_shuffle_after_shard_is_refused(root: str) -> None:
    """It used to become a buffer of 16,384 items without a word."""
    ds = pipeline_cases.ds(root)
    with pytest.raises(ValueError, match=r"shuffle\('1KB'\) after shard\(0, 2\).*number of "
                                         r"items.*before shard\(\): ds\.shuffle\('1KB', seed="):
        ds.pipeline().shard(0, 2).shuffle("1KB", seed=0)
    items = ds.pipeline().shard(0, 2).shuffle(50, seed=0)  # a number of items still works
    assert sorted(r["x"] for r in items) == list(range(0, 300, 2))


def test_a_full_shuffle_after_shard_says_it_goes_before_shard(root: str) -> None:
    ds = pipeline_cases.ds(root)
    with pytest.raises(ValueError, match=r"after shard\(0, 2\).*before shard\(\): "
                                         r"ds\.shuffle\(full=True, seed=\.\.\.\)\.shard\(0, 2\)"):
        ds.pipeline().shard(0, 2).shuffle(full=True, seed=0)
    with pytest.raises(ValueError, match=r"before shard\(\)$"):  # a view: shard stays above
        pipeline_cases.view(root).pipeline().shard(1, 3).shuffle(full=True)
    with pytest.raises(ValueError, match=r"before map\(\)/batch\(\)$"):
        ds.map(pipeline_cases.double).batch(4).shuffle(full=True)


# --- 4. numpy integers are ints ------------------------------------------------------------------


class Three:
    """Any integer type (``__index__``) counts, as for take/skip/repeat."""

    def __index__(self) -> int:
        return 3


@pytest.mark.parametrize("n", [np.int64(3), np.uint8(3), Three()])
def test_numpy_integers_are_counts_everywhere_and_stored_as_ints(root: str, n: Any) -> None:
    """batch, pipe.shuffle, mix(window=), random_stream(high=, size=) and from_iterable(chunk=)
    refused np.int64(3); each now gives the pipeline an int 3 gives (same fingerprint)."""
    items = dl.from_iterable(list(range(10)))
    a, b = tagged("a", 5), tagged("b", 5)
    pairs = [
        (items.batch(n), items.batch(3)),
        (items.shuffle(n, seed=1), items.shuffle(3, seed=1)),
        (dl.mix([a, b], exact=True, window=n), dl.mix([a, b], exact=True, window=3)),
        (dl.random_stream(1, high=n, size=n), dl.random_stream(1, high=3, size=3)),
        (dl.from_iterable(range(10), chunk=n), dl.from_iterable(range(10), chunk=3)),
    ]
    for got, want in pairs:
        assert got.fingerprint() == want.fingerprint(), repr(got)
        assert repr(got) == repr(want)
    assert [len(x) for x in items.batch(n)] == [3, 3, 3, 1]
    if isinstance(n, np.integer):  # (Dataset.head takes numpy integers, not any __index__)
        assert pipeline_cases.ds(root).head(n).num_rows == 3


@pytest.mark.parametrize(("build", "error", "match"), [
    (lambda v: dl.from_iterable([1]).batch(v), ValueError, "batch size must be a positive int"),
    (lambda v: dl.from_iterable([1]).shuffle(v), (TypeError, ValueError), "buffer"),
    (lambda v: dl.mix([tagged("a", 1)], exact=True, window=v), ValueError, "need an int >= 1"),
    (lambda v: dl.random_stream(1, high=v), ValueError, "high must be an int >= 1"),
    (lambda v: dl.random_stream(1, size=v), ValueError, "size must be an int >= 1"),
    (lambda v: dl.from_iterable([1], chunk=v), ValueError, "chunk must be an int >= 1"),
])
@pytest.mark.parametrize("value", [True, np.True_, np.int64(0), 2.0, "3"])
def test_bools_zero_and_non_integers_are_still_refused_as_before(
        build: Callable[[Any], Any], error: type[Exception], match: str, value: Any) -> None:
    with pytest.raises(error, match=match):
        build(value)


# --- 5. flat_map, scan and choice name what fn or the stream gave -------------------------------


def test_flat_map_says_fn_must_return_an_iterable() -> None:
    p = dl.from_iterable([1, 2])
    with pytest.raises(TypeError, match=r"flat_map\(.*\) must return an iterable of items .*"
                                        r"got an int 1 for item 1"):
        list(p.flat_map(lambda x: x))
    with pytest.raises(TypeError, match=r"flat_map\(.*got None for item 1"):
        list(p.flat_map(lambda x: None))
    assert list(p.flat_map(lambda x: (x, -x))) == [1, -1, 2, -2]


@pytest.mark.parametrize(("fn", "said"), [(lambda acc, x: acc + x, "an int 1"),
                                          (lambda acc, x: (acc, x, 0), r"a tuple \(0, 1, 0\)"),
                                          (lambda acc, x: None, "None")])
def test_scan_says_fn_must_return_an_acc_out_pair(fn: Any, said: str) -> None:
    with pytest.raises(TypeError, match=rf"scan\(.*\) must return a pair \(acc, out\).*got "
                                        rf"{said} for item 1"):
        list(dl.from_iterable([1, 2]).scan(fn, 0))
    assert list(dl.from_iterable([1, 2]).scan(lambda acc, x: [acc + x, acc], 0)) == [0, 1]


@pytest.mark.parametrize(("item", "said"), [("ab", "'ab'"), ({"a": 1}, r"\{'a': 1\}"),
                                            ([-1.0, 2.0], r"\[-1\.0, 2\.0\]"),
                                            ([0.5], r"\[0\.5\]"), (None, "None")])
def test_choice_says_what_its_probability_stream_gave(item: Any, said: str) -> None:
    pipes = [dl.from_iterable([1]).repeat(), dl.from_iterable([2]).repeat()]
    with pytest.raises(ValueError, match=rf"choice: the probability pipeline gave {said} at slot "
                                         r"0; each item must be a sequence of 2 weights"):
        list(dl.choice(pipes, dl.from_iterable([item]), seed=0))
