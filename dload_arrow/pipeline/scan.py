"""``scan(fn, initial)``: a running state over the items, checkpointed with the cursor (the
accumulator is stored in JSON's types where it can be, see :func:`_encode_acc`)."""

from __future__ import annotations

import base64
import copy
from typing import Any

import numpy as np

from dload_arrow.errors import shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk, chunk_items
from dload_arrow.pipeline.node import Node, State
from dload_arrow.pipeline.transforms import _ChunkNode, _got, _name, _OnePipe, _Partial

__all__ = ["ScanPipe"]

ACC = "acc"


class ScanPipe(_OnePipe):
    op = "scan"

    def __init__(self, child: Pipeline, fn: Any, initial: Any) -> None:
        super().__init__(child, fn)
        self.initial = initial

    def _params(self) -> dict[str, Any]:
        return {"fn": self.fn, "initial": self.initial}

    def _length(self) -> int | None:
        return self.child._length()

    def _build(self, epoch: int) -> Node:
        return _ScanNode(self.child._build(epoch), self.fn, self.initial)


class _ScanNode(_ChunkNode):
    def __init__(self, child: Node, fn: Any, initial: Any) -> None:
        super().__init__(child, False)
        self.fn, self.initial = fn, initial
        self.what = f"scan({_name(fn)})"
        self.partial = True
        self.acc = initial

    def reset(self, state: State | None = None) -> None:
        super().reset(state)
        self.acc = self.initial if state is None else _decode_acc(state[ACC])

    def get_state(self) -> State:
        state = super().get_state()  # the child's, and the items done of a failed chunk
        state[ACC] = _encode_acc(self.acc)
        return state

    def apply(self, chunk: Chunk) -> Chunk:
        out: list[Any] = []
        try:
            for x in chunk_items(chunk):
                got = self.fn(self.acc, x)
                if not isinstance(got, tuple | list) or len(got) != 2:
                    raise TypeError(f"scan({_name(self.fn)}) must return a pair (acc, out): "
                                    f"the new accumulator and the item to yield, got "
                                    f"{_got(got)} for item {shown(x)}")
                self.acc, y = got
                out.append(y)
        except Exception as e:  # the accumulator holds the items before: they go out
            raise _Partial(out, len(out), e) from e
        return out


_TAG = "__dload__"


def _encode_acc(v: Any) -> Any:
    """The accumulator in JSON's types where it holds tuples, bytes or numpy values (tagged,
    so :func:`_decode_acc` rebuilds them exactly): a scan's state survives a JSON round trip.
    Other objects stay as they are (the state is then pickle-able only)."""
    if isinstance(v, tuple):
        return {_TAG: "tuple", "items": [_encode_acc(x) for x in v]}
    if isinstance(v, list):
        return [_encode_acc(x) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v) and _TAG not in v:
            return {k: _encode_acc(x) for k, x in v.items()}
        # JSON would make int keys text ({0: 1} -> {"0": 1}): the pairs keep them as they are
        return {_TAG: "dict", "items": [[_encode_acc(k), _encode_acc(x)] for k, x in v.items()]}
    if isinstance(v, bytes):
        return {_TAG: "bytes", "b64": base64.b64encode(v).decode()}
    if isinstance(v, np.ndarray | np.generic) and v.dtype != object:
        a = np.asarray(v)
        return {_TAG: "ndarray" if isinstance(v, np.ndarray) else "npscalar", "dtype": a.dtype.str,
                "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode()}
    return copy.deepcopy(v)


def _decode_acc(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode_acc(x) for x in v]
    if not isinstance(v, dict):
        return copy.deepcopy(v)
    kind = v.get(_TAG)
    if kind == "tuple":
        return tuple(_decode_acc(x) for x in v["items"])
    if kind == "bytes":
        return base64.b64decode(v["b64"])
    if kind == "dict":
        return {_decode_acc(k): _decode_acc(x) for k, x in v["items"]}
    if kind in ("ndarray", "npscalar"):
        a = np.frombuffer(base64.b64decode(v["b64"]), dtype=np.dtype(v["dtype"]))
        a = a.reshape(v["shape"]).copy()
        return a if kind == "ndarray" else a[()]
    return {k: _decode_acc(x) for k, x in v.items()}
