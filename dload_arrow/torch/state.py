"""Checkpoint states of the torch adapter: build them, validate them, read loader states.

A state is a handful of integers (bounded size, whatever the dataset or shuffle buffer):

- ``{"format", "epoch", "position", "pipeline"}``: a cursor into the epoch's global stream;
  any number of ranks and workers can resume it. ``pipeline`` is the pipeline's short
  fingerprint (as in a pipeline's own state): a state is refused by another pipeline (other
  seed, dataset version, operators); states saved without it still load;
- a worker's own state adds its consumer (``world_size``, ``rank``, ``num_workers``,
  ``worker``, ``yielded``, ``done``): what torchdata's StatefulDataLoader collects per worker.

:func:`from_state` also reads a whole StatefulDataLoader state and turns its worker states
back into one global position, so a job saved with one layout resumes with another.
"""

from __future__ import annotations

import operator
from typing import Any

from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.iterator import FINGERPRINT
from dload_arrow.pipeline.state_sources import check_sources
from dload_arrow.torch.control import Plan

__all__ = [
    "CONSUMER_KEYS",
    "EPOCH",
    "FINGERPRINT",
    "FORMAT",
    "POSITION",
    "STATE_FORMAT",
    "from_state",
    "unseen_consumption",
    "worker_state",
]

FORMAT = "format"
EPOCH = "epoch"
POSITION = "position"
STATE_FORMAT = "dload.torch/1"
CONSUMER_KEYS = ("world_size", "rank", "num_workers", "worker", "yielded", "done")

# torchdata StatefulDataLoader's keys (stateful_dataloader.py / incremental_state.py).
_SNAPSHOT = "_snapshot"
_WORKER_SNAPSHOTS = "_worker_snapshots"
_STEPS_SINCE_SNAPSHOT = "_steps_since_snapshot"
_FINISHED = "_iterator_finished"
_NUM_YIELDED = "_num_yielded"
_DATASET_STATE = "dataset_state"
_MAIN_SNAPSHOT = "_main_snapshot"
_SNAPSHOT_STEP = "_snapshot_step"
_SAMPLER_ITER_STATE = "_sampler_iter_state"  # None unless a batch sampler (batch_size) runs


def worker_state(epoch: int, position: int, fingerprint: str | None = None,
                 **consumer: int | bool) -> dict[str, Any]:
    """A state dict: the cursor, the pipeline's fingerprint, and a worker's consumer fields
    when given."""
    state: dict[str, Any] = {FORMAT: STATE_FORMAT, EPOCH: int(epoch), POSITION: int(position)}
    if fingerprint is not None:
        state[FINGERPRINT] = fingerprint
    for key in CONSUMER_KEYS:
        if key in consumer:
            state[key] = consumer[key]
    return state


def _bad(state: Any, why: str) -> ConfigError:
    text = repr(state)
    text = text if len(text) <= 200 else text[:197] + "..."
    return ConfigError(
        f"not a dload_arrow torch state ({why}): {text}; pass what ds.state_dict() or the "
        "loader's state_dict() returned"
    )


def _ours(state: Any, fingerprint: str | None) -> tuple[Plan | None, dict[str, Any] | None]:
    if not isinstance(state, dict) or state.get(FORMAT) != STATE_FORMAT:
        raise _bad(state, f"{FORMAT!r} is not {STATE_FORMAT!r}")
    saved = state.get(FINGERPRINT)
    if saved is not None and fingerprint is not None and saved != fingerprint:
        raise ConfigError(
            f"this state was saved from another pipeline (fingerprint {saved}, this one is "
            f"{fingerprint}: another seed, dataset version or operator): restore it into the "
            "pipeline that produced it (the number of workers and ranks may change). If only "
            "a function's code changed (a fix) and the order did not, "
            "ds.load_state_dict(state, strict=False) resumes anyway"
        )
    # Whole numbers only (an int, a numpy integer): "17" or 17.9 is not a saved cursor.
    got = [state.get(k) for k in (EPOCH, POSITION)]
    if any(isinstance(v, bool) or not hasattr(type(v), "__index__") for v in got):
        raise _bad(state, "epoch/position missing or not integers")
    epoch, position = (operator.index(v) for v in got if v is not None)
    if epoch < 0 or position < 0:
        raise _bad(state, "epoch and position must be >= 0")
    if "num_workers" not in state:
        return Plan(epoch, position), None
    if any(k not in state for k in CONSUMER_KEYS):
        raise _bad(state, f"a worker state needs all of {CONSUMER_KEYS}")
    consumer = dict(state)
    if int(state["num_workers"]) == 1:  # the worker saw the whole rank stream
        return Plan(epoch, position + int(state["yielded"]) * int(state["world_size"])), consumer
    return None, consumer


def _from_workers(state: dict[str, Any], fingerprint: str | None) -> Plan:
    snaps = state[_SNAPSHOT].get(_WORKER_SNAPSHOTS, {})
    ours: list[dict[str, Any]] = [
        s[_DATASET_STATE] for s in snaps.values()
        if isinstance(s, dict) and isinstance(s.get(_DATASET_STATE), dict)
    ]
    if not ours:
        raise _bad(state, "a StatefulDataLoader state without dataset states from its workers")
    parsed: list[tuple[dict[str, Any] | None, dict[str, Any]]] = [
        (_ours(s, fingerprint)[1], s) for s in ours
    ]
    epoch = max(int(s[EPOCH]) for _, s in parsed)
    consumers = [s for c, s in parsed if c is not None and int(s[EPOCH]) == epoch]
    if state.get(_FINISHED):
        return Plan(epoch + 1, 0)
    steps = int(state.get(_STEPS_SINCE_SNAPSHOT, 0))
    batched = _batched_items(state, consumers, steps)  # ConfigError when not one position
    if not consumers:  # no worker snapshot since they began: the plan they were given, plus
        first = parsed[0][1]  # the items the loop took since (snapshot_every_n_steps > 1)
        if steps and "world_size" not in first:
            raise _bad(state, f"{steps} items taken before the workers' first snapshot, saved "
                              "by a dload_arrow that did not record the world size; resume "
                              "with the same num_workers through the loader's load_state_dict")
        return Plan(int(first[EPOCH]), int(first[POSITION]) + steps * int(first.get(
            "world_size", 1)))
    start = {int(s[POSITION]) for s in consumers}
    world = {int(s["world_size"]) for s in consumers}
    if len(start) != 1 or len(world) != 1:
        raise _bad(state, "its workers disagree on the start position or the world size")
    consumed = batched if batched is not None else sum(
        int(s["yielded"]) for s in consumers) + steps
    return Plan(epoch, start.pop() + consumed * world.pop())


def _batched_items(state: dict[str, Any], consumers: list[dict[str, Any]],
                   steps: int) -> int | None:
    """The items a loader with a ``batch_size`` took (None: it has none, a step is an item).

    Such a loader takes a whole batch from one worker a step, while the workers are dealt
    items in turn: what it took is a prefix of the stream (one position) only with one
    worker, or when every worker yielded its share of the same prefix. The steps taken since
    the last snapshot count ``batch_size`` items each, read off the snapshot (the items the
    worker had yielded by its step). Any other state is refused (ConfigError): only the same
    loader layout can resume it.
    """
    main = state[_SNAPSHOT].get(_MAIN_SNAPSHOT)
    if not isinstance(main, dict) or main.get(_SAMPLER_ITER_STATE) is None:
        return None
    yielded = {int(s["worker"]): int(s["yielded"]) for s in consumers}
    workers = max((int(s["num_workers"]) for s in consumers), default=1)
    items = sum(yielded.values())
    at = int(state[_SNAPSHOT].get(_SNAPSHOT_STEP, 0))
    if workers > 1:
        if not steps and all(yielded.get(w, 0) == (items - w + workers - 1) // workers
                             for w in range(workers)):
            return items
        why = (f"its {workers} workers had yielded {[yielded.get(w, 0) for w in range(workers)]} "
               f"items (+{steps} steps since), whole batches from one worker at a time, which "
               "is not a prefix of the stream")
    elif not steps:
        return items
    elif at > 0 and items % at == 0:
        return items + steps * (items // at)
    else:
        why = f"it was saved {steps} steps after its last snapshot, before one told the batch size"
    raise ConfigError(
        f"this StatefulDataLoader state (batch_size set) cannot resume with another layout: "
        f"{why}. Resume it with the same num_workers through the loader's load_state_dict, or "
        "batch in the pipeline (batch_size=None and pipe.batch(n)), whose states resume with "
        "any number of workers and ranks"
    )


def from_state(
    state: Any, fingerprint: str | None = None, pipe: Any = None
) -> tuple[Plan | None, dict[str, Any] | None]:
    """``(plan, consumer)`` from a state.

    ``plan`` is the global cursor (None when only the saving worker can use the state);
    ``consumer`` is the worker state itself when it is one. A state that names another
    pipeline than ``fingerprint`` is refused (ConfigError; ``pipe``'s sources named).
    """
    finished = isinstance(state, dict) and bool(state.get(_FINISHED))  # (an epoch's end)
    if pipe is not None and not finished:  # another dataset version: refused, strict or not
        loader = isinstance(state, dict) and (_SNAPSHOT in state or _NUM_YIELDED in state)
        snap = state.get(_SNAPSHOT) if isinstance(state, dict) else None
        fresh = not loader or not (state.get(_NUM_YIELDED) or state.get(_STEPS_SINCE_SNAPSHOT)
                                   or (snap or {}).get(_SNAPSHOT_STEP))  # (snapshots lag)
        for saved in _dataset_states(state):
            check_sources(pipe, saved, at_start_ok=fresh, strict=fingerprint is not None)
    try:
        return _from_state(state, fingerprint)
    except ConfigError as e:
        if pipe is None or "saved from another pipeline" not in str(e):
            raise
        from dload_arrow.pipeline.fingerprint import sources_hint

        raise ConfigError(f"{e}{sources_hint(pipe)}") from None


def _dataset_states(state: Any) -> list[Any]:
    """The dataset states inside ``state``: itself, a StatefulDataLoader's, its workers'."""
    if not isinstance(state, dict):
        return []
    snaps = state.get(_SNAPSHOT, {}).get(_WORKER_SNAPSHOTS, {}) if isinstance(
        state.get(_SNAPSHOT), dict) else {}
    inner = [s.get(_DATASET_STATE) for s in snaps.values() if isinstance(s, dict)]
    return [state, state.get(_DATASET_STATE), *inner]


def _from_state(state: Any, fingerprint: str | None) -> tuple[Plan | None, dict[str, Any] | None]:
    if isinstance(state, dict) and _SNAPSHOT in state:
        return _from_workers(state, fingerprint), None
    if isinstance(state, dict) and _NUM_YIELDED in state:
        inner = state.get(_DATASET_STATE)
        if inner is None:
            raise _bad(state, "a StatefulDataLoader state without the dataset's state")
        return _ours(inner, fingerprint)
    return _ours(state, fingerprint)


def unseen_consumption() -> ConfigError:
    """The error for a main-process state while a plain DataLoader's workers read ahead."""
    return ConfigError(
        "DataLoader workers read this dataset ahead of the training loop, so it cannot tell "
        "what the loop consumed: save the loader's state (a torchdata StatefulDataLoader's; "
        "in a to_device loop over one, the wrapper's), or iterate with "
        "dload_arrow.torch.StatefulLoader(ds, num_workers=...), whose dataset counts; a "
        "plain DataLoader keeps none (ds.set_epoch(e) at epoch starts)")
