"""A state saved after the last item of an epoch of ``repeat(n)`` resumes (QA fuzz55).

The repeat moved its pass counter to ``n`` when its last pass ended but kept that pass's
child, so the state paired pass ``n`` with pass ``n - 1``'s position. Restoring built pass
``n``, which is the next outer epoch's first: a generator whose length depends on the epoch
(40, 41, 42 items) refused the position as past its end (PastEndError), and one of fixed
length would have resumed the wrong pass. Only operators that must see the repeat end before
handing out the last item (``batch``, ``mix(stop="all")``) save such a state mid-loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import dload_arrow as dl


def _source(base: int, spread: int) -> dl.Pipeline:
    def gen(epoch: int) -> Iterator[dict[str, Any]]:
        for i in range(base + epoch % spread):  # a length that depends on the epoch
            yield {"i": i, "epoch": epoch}

    return dl.from_iterable(gen)


def _flat(items: list[Any]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for item in items:
        if isinstance(item["i"], int):
            out.append((item["epoch"], item["i"]))
        else:  # a batch: arrays or lists
            out.extend(zip(map(int, item["epoch"]), map(int, item["i"]), strict=True))
    return out


@settings(max_examples=25, deadline=None)
@given(base=st.integers(1, 12), spread=st.integers(1, 4), times=st.integers(1, 3),
       size=st.integers(1, 40), mixed=st.booleans(), data=st.data())
def test_every_position_of_an_epoch_resumes_exactly(
        base: int, spread: int, times: int, size: int, mixed: bool, data: st.DataObject) -> None:
    def build() -> dl.Pipeline:
        rep = _source(base, spread).repeat(times)
        if mixed:
            other = dl.from_iterable([{"i": -1, "epoch": -1}])
            return dl.mix([rep, other], weights=[0.9, 0.1], seed=3, stop="all")
        return rep.batch(size)

    ref = build()
    epochs = [list(ref), list(ref)]
    drawn = data.draw(st.integers(1, len(epochs[0])), label="items before the state")
    for cut in sorted({drawn, len(epochs[0])}):  # the last item always: the case that failed
        first = build()
        it = iter(first)
        taken = [next(it) for _ in range(cut)]
        state = first.state_dict()
        again = build()
        again.load_state_dict(state)
        rest = list(again)
        assert _flat(taken + rest) == _flat(epochs[0])
        assert _flat(list(again)) == _flat(epochs[1])

def test_the_state_after_the_last_batch_names_the_last_pass() -> None:
    pipe = _source(40, 3).repeat(3).batch(64)
    it = iter(pipe)
    assert [len(next(it)["i"]) for _ in range(2)] == [64, 59]  # 40 + 41 + 42 items
    state = pipe.state_dict()
    again = _source(40, 3).repeat(3).batch(64)
    again.load_state_dict(state)
    assert list(again) == []  # was PastEndError: position 42 of a 40-item pass
    assert [len(b["i"]) for b in again] == [64, 59]  # epoch 1: inner epochs 3, 4, 5
