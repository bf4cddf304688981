"""The one save/restore harness every pipeline node runs through.

``check_resume(case, root, k, worker)``: iterate the case's pipeline uninterrupted; iterate a
second copy for ``k`` items and take ``state_dict()``; send the state (through JSON: a small
cursor, never samples) to a *fresh process* (a spawned worker that never saw the pipeline),
which rebuilds the pipeline from its factory, loads the state and returns the rest of the
stream. The rest must equal the uninterrupted stream after ``k`` items.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import pipeline_cases

MAX_STATE_BYTES = 4096


def normalize(item: Any) -> Any:
    """Items as plain comparable Python (numpy arrays -> lists, tuples -> lists)."""
    if isinstance(item, np.ndarray):
        return item.tolist()
    if isinstance(item, np.generic):
        return item.item()
    if isinstance(item, dict):
        return {k: normalize(v) for k, v in item.items()}
    if isinstance(item, (list, tuple)):
        return [normalize(v) for v in item]
    return item


def stream(case: str, root: str, epochs: int = 1) -> list[Any]:
    """The uninterrupted stream of ``epochs`` consecutive iterations."""
    pipe = pipeline_cases.CASES[case](root)
    return [[normalize(x) for x in pipe] for _ in range(epochs)]


def rest_after(case: str, root: str, state_json: str) -> list[Any]:
    """Run in the fresh process: rebuild, restore, return the rest of the stream."""
    pipe = pipeline_cases.CASES[case](root)
    pipe.load_state_dict(json.loads(state_json))
    return [normalize(x) for x in pipe]


@contextmanager
def fresh_worker() -> Iterator[ProcessPoolExecutor]:
    """One spawned process (no state inherited from the test process)."""
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        yield pool


def checkpoint(case: str, root: str, k: int) -> tuple[str, list[Any]]:
    """Consume ``k`` items; return the state (as JSON) and the items consumed."""
    pipe = pipeline_cases.CASES[case](root)
    it = iter(pipe)
    head = []
    for _ in range(k):
        head.append(normalize(next(it)))
    state = json.dumps(pipe.state_dict())
    assert len(state) <= MAX_STATE_BYTES, f"state of {case} is {len(state)} bytes: {state[:200]}"
    return state, head


def check_resume(case: str, root: str, k: int, pool: ProcessPoolExecutor,
                 full: list[Any]) -> None:
    """The harness: checkpoint after ``k`` items, restore in ``pool``'s fresh process."""
    state, head = checkpoint(case, root, k)
    assert head == full[:k], f"{case}: the interrupted run diverged before the checkpoint"
    rest = pool.submit(rest_after, case, root, state).result()
    got = head + rest
    diffs = [(i, a, b) for i, (a, b) in enumerate(zip(got, full, strict=False)) if a != b]
    assert got == full, (
        f"{case}: resumed at {k} of {len(full)}; got {len(rest)} more items, "
        f"first differences: {diffs[:3]}"
    )
