"""mix / choice / select: proportions, exact windows, stop modes, determinism."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
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
