"""Properties of the deal of an epoch's stream across ranks and workers (plan/partition.py)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dload_arrow.plan.partition import Deal, position_after

layouts = st.tuples(
    st.integers(0, 60),  # total N
    st.integers(1, 7),  # world size R
    st.integers(0, 5),  # workers W
    st.sampled_from(["pad", "drop", "none"]),
)


def _round_robin(streams: list[list[int]]) -> list[int]:
    """What DataLoader yields from W worker streams with batch_size=None."""
    out, i = [], 0
    live = [list(s) for s in streams]
    while any(live):
        if live[i % len(live)]:
            out.append(live[i % len(live)].pop(0))
        i += 1
    return out


def _delivered(deal: Deal) -> dict[int, list[int]]:
    """Stream indices each rank delivers, in DataLoader order."""
    out = {}
    for r in range(deal.world_size):
        streams = [
            [deal.source_index(p) for p in deal.positions(r, w)] for w in range(deal.workers)
        ]
        out[r] = _round_robin(streams)
    return out


@settings(max_examples=300, deadline=None)
@given(layouts)
def test_every_item_once_and_rank_streams_equal_length(layout):
    n, r, w, uneven = layout
    deal = Deal(r, w, 0, n, uneven)
    got = _delivered(deal)
    counts = Counter(i for items in got.values() for i in items)
    lengths = {len(v) for v in got.values()}
    if uneven == "none" or r == 1:
        assert sorted(counts) == list(range(n)) and set(counts.values()) <= {1}
        assert max(lengths) - min(lengths) <= 1
    elif uneven == "drop":
        assert lengths == {n // r}
        assert sorted(counts) == list(range(n // r * r)) and set(counts.values()) <= {1}
    else:
        assert lengths == {-(-n // r)}
        # every real item at least once; only the padding repeats, from the epoch's start
        assert set(counts) == set(range(n))
        assert sum(counts.values()) - n == -(-n // r) * r - n
        assert all(counts[i] == 1 for i in range(n) if i >= -(-n // r) * r - n)


@settings(max_examples=200, deadline=None)
@given(layouts)
def test_global_order_does_not_depend_on_workers(layout):
    n, r, _, uneven = layout
    orders = {w: _delivered(Deal(r, w, 0, n, uneven)) for w in (0, 1, 2, 3)}
    assert all(o == orders[0] for o in orders.values())
    # interleaving the ranks in lockstep gives the global stream back, for every R
    lockstep = [x for row in zip(*orders[0].values(), strict=False) for x in row]
    assert lockstep[: n if uneven != "drop" else n // r * r] == list(range(len(lockstep)))[
        : n if uneven != "drop" else n // r * r
    ]


@settings(max_examples=300, deadline=None)
@given(
    layouts,
    st.integers(1, 7),
    st.integers(0, 5),
    st.data(),
)
def test_resume_with_other_layout_loses_and_repeats_nothing(layout, r2, w2, data):
    n, r, w, uneven = layout
    uneven = "none" if uneven == "pad" else uneven  # padding repeats by design
    deal = Deal(r, w, 0, n, uneven)
    per_rank = deal.rank_length or 0
    k = data.draw(st.integers(0, per_rank), label="items each rank consumed")
    before = [p for rk in range(r) for p in list(deal.rank_positions(rk))[:k]]
    pos = deal.position_after(k)
    assert sorted(before) == list(range(min(pos, n)))
    resumed = Deal(r2, w2, pos, n, uneven)
    after = [p for rk in range(r2) for p in resumed.rank_positions(rk)]
    both = Counter(before + after)
    assert set(both.values()) <= {1}
    if uneven == "none":
        assert sorted(both) == list(range(n))
    else:  # drop: only the last (fewer than R') items are dropped
        assert n - len(both) < max(r, r2)
    lengths = {len(resumed.rank_positions(rk)) for rk in range(r2)}
    assert uneven == "none" or len(lengths) == 1


def test_padding_repeats_the_first_items():
    deal = Deal(world_size=4, num_workers=1, total=10, uneven="pad")
    assert deal.end == 12
    assert [deal.source_index(p) for p in deal.rank_positions(2)] == [2, 6, 0]
    assert [deal.source_index(p) for p in deal.rank_positions(3)] == [3, 7, 1]
    assert list(deal.padding(2, 0)) == [0]


def test_tiny_epoch_pads_cyclically():
    deal = Deal(world_size=5, num_workers=0, total=2, uneven="pad")
    got = [deal.source_index(deal.rank_positions(r)[0]) for r in range(5)]
    assert got == [0, 1, 0, 1, 0]


def test_invalid_layouts_say_what_to_fix():
    with pytest.raises(ValueError, match="uneven='pad' with world_size=2 needs the epoch"):
        Deal(world_size=2, total=None)
    with pytest.raises(ValueError, match="world_size=0"):
        Deal(world_size=0)
    with pytest.raises(ValueError, match="choose one of"):
        Deal(uneven="spread")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rank=3"):
        Deal(world_size=2, total=4).consumer(3, 0)
    assert position_after(10, 3, 4) == 22
