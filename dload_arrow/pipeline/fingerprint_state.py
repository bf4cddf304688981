"""Which names a function uses as *state*, so that a fingerprint leaves their values out.

A fingerprint hashes a user function by its code and the values it reads (globals, closure
cells, a callable object's attributes), so that changing a constant the function uses changes
the fingerprint. But a value the function itself changes is state, not definition: a call
counter (``global calls; calls += 1``), a list it appends to, ``self.n += 1`` in ``__call__``.
Hashing those made the fingerprint move as the pipeline ran, so ``repo.derive`` computed
everything again the second time and a checkpoint no longer matched a rebuilt pipeline.

:func:`written_names` reads the bytecode (nested functions included) for names that are
assigned (``STORE_GLOBAL``, ``STORE_DEREF``, ``STORE_ATTR``), changed in place through a
mutating method (``seen.append``, ``d.update``...) or item assignment (``counts[k] += 1``).
Those are hashed by name only. Reads of everything else are hashed by value, as before.
"""

from __future__ import annotations

import dis
import functools
import types
from dataclasses import dataclass, field

__all__ = ["Written", "written_names"]

_MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault",
    "add", "discard", "appendleft", "extendleft", "popleft", "rotate", "sort", "reverse",
    "difference_update", "intersection_update", "symmetric_difference_update", "write",
    "put", "put_nowait", "send", "inc", "increment",
})
_LOADS = {"LOAD_GLOBAL": "globals", "LOAD_NAME": "globals", "LOAD_DEREF": "cells",
          "LOAD_CLASSDEREF": "cells", "LOAD_ATTR": "attrs"}
_STORES = {"STORE_GLOBAL": "globals", "DELETE_GLOBAL": "globals", "STORE_DEREF": "cells",
           "DELETE_DEREF": "cells", "STORE_ATTR": "attrs", "DELETE_ATTR": "attrs"}


@dataclass(frozen=True)
class Written:
    """Names a code object treats as state: globals, closure cells and attributes."""

    globals: frozenset[str] = field(default_factory=frozenset)
    cells: frozenset[str] = field(default_factory=frozenset)
    attrs: frozenset[str] = field(default_factory=frozenset)


@functools.lru_cache(maxsize=4096)
def written_names(code: types.CodeType) -> Written:
    """The globals, cells and attributes that ``code`` (or code nested in it) changes."""
    out: dict[str, set[str]] = {"globals": set(), "cells": set(), "attrs": set()}
    # The name loaded just before (a method's owner), and the last one loaded at all (a
    # subscript's container: `counts[k] = v` loads counts, then the key).
    just: tuple[str, str] | None = None
    last: tuple[str, str] | None = None
    for ins in dis.get_instructions(code):
        op, name = ins.opname, ins.argval
        if op in _STORES:
            out[_STORES[op]].add(name)
        elif op in ("STORE_SUBSCR", "DELETE_SUBSCR") and last is not None:
            out[last[0]].add(last[1])
        elif op in ("LOAD_METHOD", "LOAD_ATTR") and name in _MUTATORS and just is not None:
            out[just[0]].add(just[1])  # seen.append(...), self.items.add(...)
        if op in _LOADS and isinstance(name, str):
            just = last = (_LOADS[op], name)
        elif op not in ("CACHE", "PRECALL", "PUSH_NULL", "EXTENDED_ARG"):
            just = None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = written_names(const)
            out["globals"] |= inner.globals
            out["cells"] |= inner.cells
            out["attrs"] |= inner.attrs
    return Written(frozenset(out["globals"]), frozenset(out["cells"]), frozenset(out["attrs"]))
