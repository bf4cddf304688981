"""The hasher behind :mod:`dload_arrow.pipeline.fingerprint`: values and functions as JSON
trees whose text is the same in any process running the same code: dicts sorted by key (an
OrderedDict keeps its order), sets sorted, Arrow expressions by their serialized form,
``__mp_main__`` (a spawned worker's) as ``__main__``, an object with a ``__dload_fingerprint__``
(a Dataset, its bound methods) by what it gives, data objects by content (fingerprint_data).
Past the item budget or the depth limit, values are hashed in bulk (json with a canonical
fallback per object); an object the hasher cannot read counts by its type name."""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import hashlib
import json
import pickle
import types
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.pipeline.fingerprint_data import data_content
from dload_arrow.pipeline.fingerprint_state import (
    is_user_code,
    owner_attrs,
    user_methods,
    written_names,
)

__all__ = ["code_hash", "type_name"]

_SIMPLE = (int, float, str, bool, type(None), bytes)
_MAX_DEPTH = 16  # containers and helper functions nested deeper are hashed in bulk
_MAX_ITEMS = 200_000  # values hashed one by one per fingerprint; past it, in bulk
_FAST = 1_000  # containers longer than this are hashed in bulk via json.dumps
# Immutable values named by their repr (a date cutoff in a filter), subclasses included
_PLAIN_MODULES = frozenset({"datetime", "decimal", "fractions", "uuid", "pathlib"})


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
    h = hashlib.sha256(code.co_code)
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


def _module(name: Any) -> str:
    # A spawned worker imports the main script as __mp_main__: the same code, the same name.
    name = str(name)
    return "__main__" + name[len("__mp_main__"):] if name.startswith("__mp_main__") else name


def type_name(value: Any) -> str:
    """``module.qualname`` of a class, or of a value's class."""
    t = value if isinstance(value, type) else type(value)
    return f"{_module(t.__module__)}.{t.__qualname__}"


def _key(tree: Any) -> str:
    return json.dumps(tree, sort_keys=True)


class _Hasher:
    """Turns values and functions into JSON trees; one per fingerprint (budget, cycles)."""

    def __init__(self) -> None:
        self.items = 0
        self.active: set[int] = set()  # functions and containers being hashed (cycles only)
        self.owners: set[int] = set()  # objects whose attributes are being hashed
        self.seen: dict[int, tuple[Any, str]] = {}  # id -> (function kept alive, digest)

    def value(self, v: Any, depth: int = 0) -> Any:
        try:
            return self._value(v, depth)
        except Exception:  # an odd object (a failing __len__, __getattr__...): by type only
            return {"unreadable": type_name(v)}

    def _value(self, v: Any, depth: int) -> Any:
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
            return {"module": _module(v.__name__)}
        if isinstance(v, type):
            return {"class": type_name(v)}
        if isinstance(v, pc.Expression):  # str() abbreviates long value sets: the bytes
            return {type_name(v): _sha(pickle.dumps(v))}
        if isinstance(v, pa.Schema | pa.DataType):
            return {type_name(v): v.to_string(truncate_metadata=False)
                    if isinstance(v, pa.Schema) else str(v)}
        if isinstance(v, enum.Enum):
            return {"enum": type_name(v), "name": v.name}
        if (own := getattr(type(v), "__dload_fingerprint__", None)) is not None:  # QA active65
            return {type_name(v): self.value(own(v), depth + 1)}
        if callable(v):
            return self.function(v, depth + 1)
        if id(v) in self.active:
            return {"cycle": type_name(v)}
        self.active.add(id(v))
        try:
            return self._container(v, depth)
        finally:
            self.active.discard(id(v))

    def _container(self, v: Any, depth: int) -> Any:
        kind = type_name(v)
        if isinstance(v, np.ndarray):  # object dtype: the items, not their pointers
            return {"ndarray": "O", "shape": list(v.shape), "items": self.value(v.tolist(), depth)}
        if isinstance(v, range):  # (a range's repr is its content)
            return {"range": [v.start, v.stop, v.step]}
        if dataclasses.is_dataclass(v):
            fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
            return {"dataclass": kind, "fields": self.value(fields, depth + 1)}
        if isinstance(v, complex) or any(  # (complex: no JSON form of its own)
                t.__module__.split(".")[0] in _PLAIN_MODULES for t in type(v).__mro__):
            return {kind: repr(v)}
        if not isinstance(v, tuple | list | dict | set | frozenset):  # data: its content
            return f"<{kind}>" if (data := data_content(v)) is None else {kind: data}
        if len(v) > _FAST or depth > _MAX_DEPTH or self.items + len(v) > _MAX_ITEMS:
            bulk = self._bulk(v, depth)
            if bulk is not None:
                return {kind: len(v), "sha256": _sha(bulk.encode())}
        self.items += len(v)
        if isinstance(v, dict):
            pairs = [[self.value(k, depth + 1), self.value(x, depth + 1)] for k, x in v.items()]
            if not isinstance(v, collections.OrderedDict):  # insertion order is not content
                pairs.sort(key=lambda kx: _key(kx[0]))
            return {kind: pairs}
        items = [self.value(x, depth + 1) for x in v]
        if isinstance(v, set | frozenset):
            items.sort(key=_key)
        return items if isinstance(v, tuple) and kind == "builtins.tuple" else {kind: items}

    def _bulk(self, v: Any, depth: int) -> str | None:
        """Canonical json of a big or deep value at C speed, others through ``value``."""
        default = functools.partial(self._default, depth=depth)
        try:
            if isinstance(v, set | frozenset):
                v = sorted(json.dumps(x, sort_keys=True, allow_nan=True, default=default)
                           for x in v)
            elif isinstance(v, collections.OrderedDict):
                v = list(v.items())
            return json.dumps(v, sort_keys=True, allow_nan=True, default=default)
        except (TypeError, ValueError, RecursionError):  # tuple or mixed keys, cycles: by item
            return None

    def _default(self, o: Any, depth: int) -> Any:
        if isinstance(o, tuple | list | dict | set | frozenset):  # a subclass: json misses it
            return {type_name(o): self._bulk(o, depth) or self.value(o, depth)}
        return self.value(o, depth + 1)

    def function(self, fn: Any, depth: int = 0) -> Any:
        try:
            return self._function_cached(fn, depth)
        except Exception:  # an odd callable: by type only
            return {"unreadable": type_name(fn)}

    def _function_cached(self, fn: Any, depth: int) -> Any:
        if isinstance(fn, types.MethodType):  # its object by attributes and methods too
            obj = None if hasattr(type(fn.__self__), "__dload_fingerprint__") else self._object(
                fn.__self__, getattr(fn.__func__, "__code__", None), depth)  # (65c: Dataset)
            return {"method": self.function(fn.__func__, depth),
                    "self": self.value(fn.__self__, depth) if obj is None else obj}
        if isinstance(fn, functools.partial):
            return {"partial": self.function(fn.func, depth),
                    "args": self.value(list(fn.args), depth),
                    "kwargs": self.value(dict(fn.keywords or {}), depth)}
        name = (f"{_module(getattr(fn, '__module__', '?'))}."
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
            wrapped = getattr(fn, "__wrapped__", None)
            if not isinstance(fn, type) and not hasattr(call, "__code__") and callable(wrapped):
                # functools.cache, lru_cache: the function they wrap
                return {"wrapper": type_name(fn), "wrapped": self.function(wrapped, depth + 1)}
            if isinstance(fn, type) or not hasattr(call, "__code__"):
                return self._builtin(fn, name, depth)
            if type(fn).__module__ == "unittest.mock":  # a Mock: what it runs, not its calls
                return {"mock": type_name(fn), "side_effect": self.value(
                    fn.side_effect if callable(fn.side_effect) else None, depth)}
            return {"callable": name, "call": self.function(call, depth),
                    "state": self._object(fn, call.__code__, depth) or {}}
        out: dict[str, Any] = {"fn": name, "code": code_hash(code)}
        if getattr(fn, "__defaults__", None):
            out["defaults"] = self.value(list(fn.__defaults__), depth)
        if getattr(fn, "__kwdefaults__", None):
            out["kwdefaults"] = self.value(dict(fn.__kwdefaults__), depth)
        changed = written_names(code)  # counters, lists appended to: by name only
        if getattr(fn, "__closure__", None):
            out["closure"] = [{"state": n} if n in changed.cells else self.value(_cell(c), depth)
                              for n, c in zip(code.co_freevars, fn.__closure__, strict=False)]
        glob = getattr(fn, "__globals__", None)
        if glob is not None and is_user_code(fn):
            used = {n: {"state": n} if n in changed.globals else self.value(glob[n], depth)
                    for n in sorted(_global_names(code)) if n in glob}
            if used:
                out["globals"] = used
        return out

    def _object(self, owner: Any, code: types.CodeType | None, depth: int) -> Any:
        """An object by its attributes (those ``code`` or its methods change: by name) and
        its class's methods defined in user code; None without a ``__dict__``."""
        methods = user_methods(type(owner), is_user_code)
        attrs = owner_attrs(owner, code, methods)
        if attrs is None:
            return None
        if id(owner) in self.owners:  # (self.step = self.helper: the object again)
            return {"cycle": type_name(owner)}
        self.owners.add(id(owner))
        try:  # its methods by code only: what they read as they run may be their state
            return {"attrs": self.value(attrs, depth),
                    "methods": {n: code_hash(f.__code__) for n, f in methods.items()}}
        finally:
            self.owners.discard(id(owner))

    def _builtin(self, fn: Any, name: str, depth: int) -> Any:
        """A callable without Python code: a bound builtin method by its object too
        (``{1: "a"}.get``), an ``operator.itemgetter`` & co by what they pickle as; classes,
        builtin functions and ufuncs by name."""
        if isinstance(fn, types.BuiltinMethodType):
            owner = getattr(fn, "__self__", None)
            if owner is None or isinstance(owner, types.ModuleType):
                return {"callable": name}
            return {"callable": name, "self": self.value(owner, depth)}
        if not isinstance(fn, type) and type(fn).__module__ in ("operator", "functools"):
            reduced = fn.__reduce__()
            if isinstance(reduced, tuple) and len(reduced) >= 2:
                return {"callable": name, "reduce": self.value(list(reduced[:2]), depth)}
        return {"callable": name}

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
