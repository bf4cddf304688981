"""``fingerprint()``: a stable hash of a pipeline's definition, and of the code it runs.

What goes in: each operator's name and parameters, the dataset sources' version ids (and
views: units, predicate, columns), and every function by qualified name plus:

- its code: bytecode, names and constants, nested code objects recursively;
- its default arguments and the contents of its closure cells;
- the globals it reads (names in its code resolved in ``fn.__globals__``); a global that is a
  function defined in user code (not the standard library, site-packages or dload_arrow) is
  hashed the same way, recursively;
- values by content: numbers, str, bytes, None, tuples, lists, dicts (sorted by key, an
  OrderedDict in order), sets (sorted), ranges, dataclass instances, enum members, numpy
  arrays (dtype, shape and a sha256 of the bytes), Arrow expressions by their serialized form
  (``filter(pc.field("x") < 3)``), types and schemas by their full text;
- a callable object's class ``__call__``, its ``__dict__`` and its class's methods defined in
  user code; a bound method's object the same way, a ``functools.partial``'s arguments as
  values, a ``functools.cache`` wrapper's function;
- a ``from_iterable`` list, tuple or array by its items, as values.

What is named only (``module.qualname``), its state not hashed: modules, classes, the globals of
library functions, and other objects (a Repository, a Dataset, Arrow arrays and tables,
DataFrames, tensors, an instance passed as a value (its attributes), an object the hasher cannot
read). Big values (past ``_FAST`` items, ``_MAX_ITEMS`` in all or ``_MAX_DEPTH`` levels) are
hashed in bulk as canonical json, never by type and length alone. ``id()``, addresses and
``hash()`` never go in, and ``__mp_main__`` (the main script in a spawned worker) reads as
``__main__``: the same definition hashes the same in any process or machine running the same
code. What a function changes as it runs (a counter, a list it appends to:
``fingerprint_state.py``) is hashed by name only; ``Pipeline.fingerprint()`` caches the first
fingerprint it computes (before a pipeline is pickled into DataLoader workers:
``as_iterable_dataset`` computes it, a worker keeps the main process's).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from dload_arrow.pipeline.fingerprint_values import _Hasher, code_hash

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["code_hash", "describe", "fingerprint", "function_identity"]


def function_identity(fn: Any) -> Any:
    """A JSON-able identity of a callable: qualified name, code, defaults, closure, globals."""
    return _Hasher().function(fn)


def _exact_params(pipe: Pipeline, hasher: _Hasher) -> dict[str, Any]:
    """Parameters whose ``_params`` text is cut short, hashed from the objects themselves:
    a from_iterable list, tuple or array (items by value), a dataset view's predicate."""
    params = pipe._params()
    src = getattr(pipe, "source", None)
    if (pipe.op == "from_iterable" and getattr(pipe, "name", None) is None
            and isinstance(src, list | tuple | np.ndarray)):
        params = {**params, "source": hasher.value(src)}
    predicate = getattr(pipe, "predicate", None) if pipe.op == "dataset" else None
    predicate = getattr(predicate, "expression", predicate)  # a RowFilter's expression
    if isinstance(predicate, pc.Expression):  # str() abbreviates long is_in value sets
        params = {**params, "predicate": hasher.value(predicate)}
    return params


def definition(pipe: Pipeline, hasher: _Hasher | None = None) -> dict[str, Any]:
    """The JSON tree the fingerprint hashes."""
    hasher = hasher or _Hasher()
    return {
        "op": pipe.op,
        "params": hasher.params(_exact_params(pipe, hasher)),
        "children": [definition(c, hasher) for c in pipe._children],
    }


def fingerprint(pipe: Pipeline) -> str:
    """sha256 (hex) of :func:`definition`, computed now (``Pipeline.fingerprint`` caches it)."""
    text = json.dumps(definition(pipe), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


_SHOWN = 4  # inputs of a combinator shown by describe()


def describe(pipe: Pipeline) -> str:
    """A short readable form: ``dataset(...).shuffle(...).map(fn)``."""
    params = {k: v for k, v in pipe._shown().items() if v is not None}
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
    inner = [describe(c) for c in pipe._children[:_SHOWN]]
    if len(pipe._children) > _SHOWN:  # a mix of 50 pipelines: a line, not 3 KB
        inner.append(f"... {len(pipe._children) - _SHOWN} more")
    return f"{head}[{', '.join(inner)}]"


def sources_hint(pipe: Any) -> str:
    """For a refused state: the dataset versions this pipeline reads, and how to read the
    ones a run used (a commit or append since the checkpoint moved latest: QA user58)."""
    from dload_arrow.pipeline.state_sources import source_versions

    found: dict[str, str] = {}
    for source in source_versions(pipe):
        name, version = source.rsplit("@", 1)
        found.setdefault(name, version[:12])
    if not found:
        return ""
    reads = ", ".join(f"{n}@{v}" for n, v in list(found.items())[:_SHOWN])
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    return (f". This pipeline reads {reads}{more}: if one of them was committed or appended to "
            "since the checkpoint, open it at the version the run read (repo.dataset(name, "
            "version); `dload log NAME` lists its versions), and pin it before training "
            "(`dload pin NAME`)")


def state_mismatch(pipe: Any, saved: str) -> str:
    """The refusal of a state whose fingerprint ``saved`` is not ``pipe``'s."""
    return (f"this state was saved from another pipeline (fingerprint {saved}, this one is "
            f"{pipe.fingerprint()[:16]}), or by a dload_arrow whose order for this one differs "
            "(an upgrade): restore it into the pipeline and version that produced it, or "
            "start the epoch anew (only a function's code fixed, the order the same: "
            f"load_state_dict(state, strict=False)){sources_hint(pipe)}")
