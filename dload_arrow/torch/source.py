"""The few things the torch adapter asks of a pipeline, in one place.

A source is anything with the pipeline surface used here: ``set_epoch(e)``, ``skip(n)``
(start at a global output position), ``shard(index, count)`` (keep every ``count``-th item),
iteration, and optionally ``len()`` (the epoch's length, needed for equal-length ranks) and
``schema`` (to shape tensor columns). :class:`dload_arrow.pipeline` pipelines and
:class:`dload_arrow.Dataset` (through ``ds.pipeline()``) provide them.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from dload_arrow.args import MAX_COUNT
from dload_arrow.errors import ConfigError, SchemaError, shown

__all__ = [
    "as_source", "check_length", "compact", "epoch_length", "open_stream", "refuse_loaded",
    "refuse_past_end", "source_schema", "start_epoch",
]

_NEEDED = ("skip", "shard", "set_epoch", "__iter__")
_SLACK = 1 << 16  # bytes of overhead not worth a copy


def as_source(obj: Any) -> Any:
    """The pipeline to stream from: a pipeline as is, a Dataset through ``.pipeline()``."""
    if all(hasattr(obj, m) for m in _NEEDED):
        return obj
    pipeline = getattr(obj, "pipeline", None)
    if callable(pipeline):
        pipe = pipeline()
        if all(hasattr(pipe, m) for m in _NEEDED):
            return pipe
    raise SchemaError(
        f"cannot stream a {type(obj).__name__} into torch: pass a dload_arrow pipeline "
        f"(e.g. ds.shuffle(...).batch(...)) or a Dataset; it needs {', '.join(_NEEDED)}"
    )


def refuse_loaded(pipe: Any) -> None:
    """Refuse a pipeline (or one it reads) with a state loaded but not started
    (``pipe.load_state_dict``): the torch dataset keeps its own cursor, and starting at (0, 0)
    silently replayed what the state said was done (QA pipes 42). Checked when the dataset is
    made and when an iteration begins (a state loaded after wrapping, review 42)."""
    todo = [pipe]
    while todo:
        p = todo.pop()
        pending = getattr(p, "_pending", None)
        if isinstance(pending, dict) and pending.get("cursor") is not None:
            raise ConfigError(
                "this pipeline has a state loaded (pipe.load_state_dict) that the torch dataset "
                "cannot carry over: it resumes from its own state. Wrap a pipeline without one "
                "and resume with ds.load_state_dict(...) of a state saved from the dataset or "
                "its loader (ds.state_dict(), loader.state_dict())")
        todo.extend(getattr(p, "_children", ()))


def start_epoch(pipe: Any) -> int:
    """The epoch a torch dataset over ``pipe`` starts with, from its start (:func:`refuse_loaded`
    first): the one ``pipe.set_epoch(3)`` or a state saved between epochs set on a pipeline
    not iterated since; else 0 (a pipeline iterated once to count its batches, say, is not
    taken to have moved on: the same script with and without the count trains alike)."""
    from dload_arrow.pipeline import closer

    refuse_loaded(pipe)
    pending = getattr(pipe, "_pending", None)
    if isinstance(pending, dict):
        return int(pending["epoch"])
    if getattr(pipe, "_live", None) is not closer.nothing:  # iterated (or not a Pipeline)
        return 0
    return int(getattr(pipe, "_next_epoch", 0))


def _epoch_view(pipe: Any, epoch: int, first: int) -> Any:
    # skip() makes a new pipeline object, so setting its epoch leaves the user's untouched.
    view = pipe.skip(first)
    view.set_epoch(epoch)
    return view


def check_length(length: Any) -> Any:
    """``length`` of :func:`as_iterable_dataset` when it is None, a function of the epoch or
    an int >= 0 (what the function returns is checked per epoch, by :func:`epoch_length`)."""
    if length is None or callable(length):
        return length
    if isinstance(length, bool) or not hasattr(type(length), "__index__") or not (
            0 <= operator.index(length) <= MAX_COUNT):
        raise ConfigError(f"length={shown(length)}: give the epoch's item count (an int from 0 "
                          f"to {MAX_COUNT:,}), a function of the epoch returning it, or None")
    return operator.index(length)


def epoch_length(pipe: Any, epoch: int, length: Any = None) -> int | None:
    """Items in epoch ``epoch`` of ``pipe``, or None when only reading would tell.

    ``length`` (an int, or a function of the epoch) overrides what the pipeline knows.
    """
    view = pipe.skip(0)
    view.set_epoch(epoch)
    try:
        known: int | None = len(view)
    except (TypeError, NotImplementedError):
        known = None
    if length is None:
        return known
    n = length(epoch) if callable(length) else length
    if isinstance(n, bool) or not hasattr(type(n), "__index__") or operator.index(n) < 0:
        raise ConfigError(f"length={n!r} for epoch {epoch}: need an int >= 0")
    if known is not None and operator.index(n) != known:
        raise ConfigError(
            f"length={n!r} for epoch {epoch}, but this pipeline's epoch has {known} items: "
            "drop length= (it is for pipelines that cannot tell their length, such as after "
            "a filter); to use fewer items an epoch, end the pipeline with .take(n)"
        )
    return operator.index(n)


def refuse_past_end(pipe: Any, epoch: int, position: int, length: Any = None,
                    world_size: int = 1) -> None:
    """ConfigError when a loaded ``position`` lies past the end of epoch ``epoch`` (an edited
    state, or one of another source: it would load as an empty epoch). With
    ``uneven="none"`` a rank's last item leaves it up to a round of ``world_size`` past the
    end (61 items, 2 ranks: rank 0 ends at 62): that much is let through."""
    total = epoch_length(pipe, epoch, length)
    if total is not None and position > total + max(1, world_size) - 1:
        raise ConfigError(
            f"this state's position {position:,} is past the end of epoch {epoch} "
            f"({total:,} items{'' if length is None else f', from length={length:,}'}), so it "
            "would resume into an empty epoch: was it saved with another length= (a corrected "
            "count: load it with the length= it was saved with for the rest of that epoch), "
            "edited, or saved from another source? Load what state_dict() returned"
        )


def open_stream(pipe: Any, epoch: int, first: int, step: int) -> Iterator[Any]:
    """Iterate global positions ``first, first + step, ...`` of epoch ``epoch``."""
    # Shard first, so the shard is pushed down into dataset sources (they then read only
    # their own units), then skip whole rounds of the sharded stream (cheap there too).
    view = pipe.shard(first % step, step).skip(first // step) if step > 1 else pipe.skip(first)
    view.set_epoch(epoch)
    return iter(view)


def source_schema(pipe: Any) -> pa.Schema | None:
    schema = getattr(pipe, "schema", None)
    return schema if isinstance(schema, pa.Schema) else None


def compact(item: Any) -> Any:
    """``item`` ready to be pickled to the main process: an Arrow slice copied out.

    Pickling a sliced ``pyarrow.RecordBatch`` or ``Table`` writes its parent's whole buffers
    (a 100-row slice of a 1 M-row batch pickles about 50 MB). A worker's Arrow item whose
    buffers are more than twice its own bytes is copied into fresh buffers first; other items
    pass unchanged.
    """
    if isinstance(item, (pa.RecordBatch, pa.Table)) and (
        item.get_total_buffer_size() > 2 * item.nbytes + _SLACK
    ):
        if isinstance(item, pa.RecordBatch):
            return pa.concat_batches([item])
        batches = [pa.concat_batches([b]) for b in item.to_batches()]
        return pa.Table.from_batches(batches, schema=item.schema)
    return item
