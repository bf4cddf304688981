"""``fingerprint()``: a stable hash of a pipeline's definition.

What goes in: each operator's name and parameters, the dataset sources' version ids (and
views: units, predicate, columns), and functions by qualified name plus a hash of their code
(bytecode, constants, nested code, default arguments and immutable closure values: numbers,
strings, tuples). What stays out: ``id()``, memory addresses, ``hash()``, global variables and
mutable captured objects (a captured list or dict is named by its type only, so a counter a
function updates does not change the fingerprint): the same definition hashes the same in
any process or machine running the same code.
"""

from __future__ import annotations

import hashlib
import json
import types
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["code_hash", "describe", "fingerprint", "function_identity"]

_SIMPLE = (int, float, str, bool, type(None), bytes)


def code_hash(code: types.CodeType) -> str:
    """sha256 of a code object's bytecode and constants (nested code objects recursively)."""
    h = hashlib.sha256()
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            h.update(code_hash(c).encode())
        else:
            h.update(repr(c).encode())
    return h.hexdigest()


def _simple(value: Any, depth: int = 0) -> Any:
    if isinstance(value, _SIMPLE):
        return value if not isinstance(value, bytes) else value.hex()
    if depth < 3 and isinstance(value, (tuple, frozenset)):
        return [_simple(v, depth + 1) for v in value]
    if callable(value):
        return function_identity(value, depth + 1)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def function_identity(fn: Any, depth: int = 0) -> Any:
    """A JSON-able identity of a callable: qualified name, code hash, defaults, closure."""
    if isinstance(fn, types.MethodType):
        return {"method": function_identity(fn.__func__, depth), "self": _simple(fn.__self__)}
    if hasattr(fn, "func") and hasattr(fn, "args"):  # functools.partial
        return {"partial": function_identity(fn.func, depth), "args": _simple(list(fn.args)),
                "kwargs": _simple(dict(fn.keywords or {}))}
    code = getattr(fn, "__code__", None)
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"
    if code is None:
        if not isinstance(fn, type) and callable(fn):
            call = type(fn).__call__
            if hasattr(call, "__code__"):
                return {"callable": name, "call": code_hash(call.__code__),
                        "state": _simple(getattr(fn, "__dict__", {}), depth + 1)}
        return {"callable": name}
    out: dict[str, Any] = {"fn": name, "code": code_hash(code)}
    if depth < 3:
        if getattr(fn, "__defaults__", None):
            out["defaults"] = _simple(list(fn.__defaults__), depth + 1)
        cells = getattr(fn, "__closure__", None) or ()
        if cells:
            vals = []
            for c in cells:
                try:
                    vals.append(_simple(c.cell_contents, depth + 1))
                except ValueError:  # empty cell
                    vals.append(None)
            out["closure"] = vals
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if callable(value) and not isinstance(value, type):
        return function_identity(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, _SIMPLE):
        return value
    return _simple(value)


def definition(pipe: Pipeline) -> dict[str, Any]:
    """The JSON tree the fingerprint hashes."""
    return {
        "op": pipe.op,
        "params": _jsonable(pipe._params()),
        "children": [definition(c) for c in pipe._children],
    }


def fingerprint(pipe: Pipeline) -> str:
    """sha256 (hex) of :func:`definition`."""
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
