"""``fingerprint()``: a stable hash of a pipeline's definition, and of the code it runs.

What goes in: each operator's name and parameters, the dataset sources' version ids (and
views: units, predicate, columns), and every function by qualified name plus:

- its code: bytecode, names and constants, nested code objects recursively;
- its default arguments and the contents of its closure cells;
- the globals it reads (names in its code resolved in ``fn.__globals__``); a global that is a
  function defined in user code (not the standard library, site-packages or dload_arrow) is
  hashed the same way, recursively;
- values by content: numbers, str, bytes, None, tuples, lists, dicts, sets, ranges, dataclass
  instances, enum members, numpy arrays (dtype, shape and a sha256 of the bytes), and Arrow
  expressions (``filter(pc.field("x") < 3)``), types and schemas by their text;
- a callable object's class ``__call__`` and its ``__dict__``; a bound method's ``self`` and a
  ``functools.partial``'s arguments as values.

What is named only (``module.qualname``), its state not hashed: modules, classes, the globals
of library functions, and other objects (a Repository, a Dataset, Arrow arrays and tables,
DataFrames, tensors, an instance's attributes). Past ``_MAX_DEPTH`` levels of nesting or
``_MAX_ITEMS`` values, a value counts by type and length only. ``id()``, addresses and ``hash()``
never go in (sets are sorted): the same definition hashes the same in any process or machine
running the same code. A function that mutates what it reads (a counter, a cache dict) changes
the fingerprint as it runs; ``Pipeline.fingerprint()`` caches the first one it computes.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import sysconfig
import types
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["code_hash", "describe", "fingerprint", "function_identity"]

_SIMPLE = (int, float, str, bool, type(None), bytes)
_MAX_DEPTH = 16  # containers and helper functions nested deeper count by type only
_MAX_ITEMS = 200_000  # values hashed one by one per fingerprint (json fast path aside)
_FAST = 1_000  # containers longer than this are hashed via json.dumps when it can
_INLINE_SOURCE = 10_000  # from_iterable sources whose repr is longer are hashed, not inlined


def _const_text(c: Any) -> str:
    if isinstance(c, types.CodeType):
        return code_hash(c)
    if isinstance(c, frozenset):  # `x in {"a", "b"}`: repr order follows PYTHONHASHSEED
        return "frozenset(" + ",".join(sorted(_const_text(v) for v in c)) + ")"
    if isinstance(c, tuple):
        return "(" + ",".join(_const_text(v) for v in c) + ")"
    return repr(c)


def code_hash(code: types.CodeType) -> str:
    """sha256 of a code object's bytecode, names and constants (nested code recursively)."""
    h = hashlib.sha256()
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        h.update(_const_text(c).encode())
    return h.hexdigest()


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
            if k in paths}
    return tuple(d + os.sep for d in sorted(dirs))


def _is_user_code(fn: Any) -> bool:
    """True for functions whose globals are hashed: not stdlib, site-packages or dload_arrow."""
    if str(getattr(fn, "__module__", "") or "").split(".")[0] == "dload_arrow":
        return False
    filename = fn.__code__.co_filename
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(_library_dirs())


def _type_name(value: Any) -> str:
    t = value if isinstance(value, type) else type(value)
    return f"{t.__module__}.{t.__qualname__}"


class _Hasher:
    """Turns values and functions into JSON trees; one per fingerprint (budget, cycles)."""

    def __init__(self) -> None:
        self.items = 0
        self.active: set[int] = set()  # functions and containers being hashed (cycles only)
        self.seen: dict[int, tuple[Any, str]] = {}  # id -> (function kept alive, digest)

    def value(self, v: Any, depth: int = 0) -> Any:
        if isinstance(v, bytes | bytearray):
            return bytes(v).hex() if len(v) <= 64 else {"bytes": len(v), "sha256": _sha(v)}
        if isinstance(v, np.generic) and not isinstance(v, _SIMPLE):
            return {"np": v.dtype.str, "v": v.tobytes().hex()}
        if isinstance(v, _SIMPLE):
            return v
        if isinstance(v, np.ndarray) and v.dtype != object:
            dtype = v.dtype.str if v.dtype.fields is None else str(v.dtype.descr)
            return {"ndarray": dtype, "shape": list(v.shape),
                    "sha256": _sha(np.ascontiguousarray(v).reshape(-1).view(np.uint8))}
        if isinstance(v, types.ModuleType):
            return {"module": v.__name__}
        if isinstance(v, type):
            return {"class": _type_name(v)}
        if isinstance(v, pc.Expression | pa.DataType | pa.Schema):  # their text is complete
            return {_type_name(v): str(v)}
        if isinstance(v, enum.Enum):
            return {"enum": _type_name(v), "name": v.name}
        if callable(v):
            return self.function(v, depth + 1)
        if depth > _MAX_DEPTH or id(v) in self.active:
            return {"unhashed": _type_name(v), "len": len(v) if hasattr(v, "__len__") else None}
        self.active.add(id(v))
        try:
            return self._container(v, depth)
        finally:
            self.active.discard(id(v))

    def _container(self, v: Any, depth: int) -> Any:
        kind = _type_name(v)
        if isinstance(v, np.ndarray):  # object dtype: the items, not their pointers
            return {"ndarray": "O", "shape": list(v.shape), "items": self.value(v.tolist(), depth)}
        if isinstance(v, range):
            return {"range": [v.start, v.stop, v.step]}
        if dataclasses.is_dataclass(v):
            fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
            return {"dataclass": kind, "fields": self.value(fields, depth + 1)}
        if not isinstance(v, tuple | list | dict | set | frozenset):
            return f"<{kind}>"
        if len(v) > _FAST:
            try:  # big tables of plain values: hashed at C speed, outside the budget
                text = json.dumps(v if not isinstance(v, set | frozenset) else sorted(v),
                                  sort_keys=True, allow_nan=True)
                return {kind: len(v), "sha256": _sha(text.encode())}
            except (TypeError, ValueError):
                pass
        self.items += len(v)
        if self.items > _MAX_ITEMS:
            return {"unhashed": kind, "len": len(v)}
        if isinstance(v, dict):
            return {kind: [[self.value(k, depth + 1), self.value(x, depth + 1)]
                           for k, x in v.items()]}
        items = [self.value(x, depth + 1) for x in v]
        if isinstance(v, set | frozenset):
            items.sort(key=lambda x: json.dumps(x, sort_keys=True))
        return items if isinstance(v, tuple) and kind == "builtins.tuple" else {kind: items}

    def function(self, fn: Any, depth: int = 0) -> Any:
        if isinstance(fn, types.MethodType):
            return {"method": self.function(fn.__func__, depth),
                    "self": self.value(fn.__self__, depth)}
        if isinstance(fn, functools.partial):
            return {"partial": self.function(fn.func, depth),
                    "args": self.value(list(fn.args), depth),
                    "kwargs": self.value(dict(fn.keywords or {}), depth)}
        name = (f"{getattr(fn, '__module__', '?')}."
                f"{getattr(fn, '__qualname__', getattr(fn, '__name__', type(fn).__qualname__))}")
        code = getattr(fn, "__code__", None)
        code = code if isinstance(code, types.CodeType) else None
        if id(fn) in self.seen:  # met again in a call graph: by digest, hashed once
            return {"fn": name, "same": self.seen[id(fn)][1]}
        if id(fn) in self.active or depth > _MAX_DEPTH:  # recursion, or too deep: code only
            return {"fn": name, "code": code_hash(code) if code else None}
        self.active.add(id(fn))
        try:
            out = self._function(fn, name, code, depth)
        finally:
            self.active.discard(id(fn))
        self.seen[id(fn)] = (fn, _sha(json.dumps(out, sort_keys=True).encode()))
        return out

    def _function(self, fn: Any, name: str, code: types.CodeType | None, depth: int) -> Any:
        if code is None:
            call = type(fn).__call__
            if isinstance(fn, type) or not hasattr(call, "__code__"):
                return {"callable": name}  # builtins, ufuncs, classes: named only
            return {"callable": name, "call": self.function(call, depth),
                    "state": self.value(dict(getattr(fn, "__dict__", {})), depth)}
        out: dict[str, Any] = {"fn": name, "code": code_hash(code)}
        if getattr(fn, "__defaults__", None):
            out["defaults"] = self.value(list(fn.__defaults__), depth)
        if getattr(fn, "__kwdefaults__", None):
            out["kwdefaults"] = self.value(dict(fn.__kwdefaults__), depth)
        if getattr(fn, "__closure__", None):
            out["closure"] = [self.value(_cell(c), depth) for c in fn.__closure__]
        glob = getattr(fn, "__globals__", None)
        if glob is not None and _is_user_code(fn):
            used = {n: self.value(glob[n], depth) for n in sorted(_global_names(code))
                    if n in glob}
            if used:
                out["globals"] = used
        return out

    def params(self, value: Any) -> Any:
        """Operator parameters: JSON values as they are; functions and others as above."""
        if isinstance(value, np.ndarray):
            return value.tolist() if value.dtype != object else self.value(value)
        if isinstance(value, np.generic):
            return value.item()
        if callable(value) and not isinstance(value, type):
            return self.function(value)
        if isinstance(value, list | tuple):
            return [self.params(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.params(v) for k, v in value.items()}
        return self.value(value)


def _sha(data: Any) -> str:  # any buffer: an array is hashed without a copy
    return hashlib.sha256(data).hexdigest()


def _cell(c: types.CellType) -> Any:
    try:
        return c.cell_contents
    except ValueError:  # an empty cell (a name assigned later in the enclosing function)
        return None


def function_identity(fn: Any) -> Any:
    """A JSON-able identity of a callable: qualified name, code, defaults, closure, globals."""
    return _Hasher().function(fn)


def _source_params(pipe: Pipeline, params: dict[str, Any]) -> dict[str, Any]:
    """A long from_iterable list or array is hashed whole (its repr in params is cut short)."""
    src = getattr(pipe, "source", None)
    if pipe.op != "from_iterable" or getattr(pipe, "name", None) is not None:
        return params
    if isinstance(src, list | tuple) and len(text := repr(src)) > _INLINE_SOURCE:
        return {**params, "source": {"items_sha256": _sha(text.encode()), "len": len(src)}}
    if isinstance(src, np.ndarray) and 2 * src.nbytes > _INLINE_SOURCE:
        return {**params, "source": _Hasher().value(src)}
    return params


def definition(pipe: Pipeline, hasher: _Hasher | None = None) -> dict[str, Any]:
    """The JSON tree the fingerprint hashes."""
    hasher = hasher or _Hasher()
    return {
        "op": pipe.op,
        "params": hasher.params(_source_params(pipe, pipe._params())),
        "children": [definition(c, hasher) for c in pipe._children],
    }


def fingerprint(pipe: Pipeline) -> str:
    """sha256 (hex) of :func:`definition`, computed now (``Pipeline.fingerprint`` caches it)."""
    text = json.dumps(definition(pipe), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def describe(pipe: Pipeline) -> str:
    """A short readable form: ``dataset(...).shuffle(...).map(fn)``."""
    params = {k: v for k, v in pipe._params().items() if v is not None}
    shown = []
    for k, v in params.items():
        if callable(v) and not isinstance(v, type):
            shown.append(f"{k}={getattr(v, '__qualname__', type(v).__name__)}")
        elif k == "version":
            shown.append(f"{k}={str(v)[:12]}")
        else:
            text = repr(v)
            shown.append(f"{k}={text if len(text) < 40 else text[:37] + '...'}")
    head = f"{pipe.op}({', '.join(shown)})"
    if not pipe._children:
        return head
    if len(pipe._children) == 1:
        return f"{describe(pipe._children[0])}.{head}"
    return f"{head}[{', '.join(describe(c) for c in pipe._children)}]"
