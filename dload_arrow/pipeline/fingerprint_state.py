"""Which names a function uses as *state*, so that a fingerprint leaves their values out.

A fingerprint hashes a user function by its code and the values it reads (globals, closure
cells, a callable object's attributes), so that changing a constant the function uses changes
the fingerprint. But a value the function itself changes is state, not definition: a call
counter (``global calls; calls += 1``), a list it appends to, ``self.n += 1`` in ``__call__``.
Hashing those made the fingerprint move as the pipeline ran, so ``repo.derive`` computed
everything again the second time and a checkpoint no longer matched a rebuilt pipeline.

:func:`written_names` reads the bytecode (nested functions included) for names that are
assigned (``STORE_GLOBAL``, ``STORE_DEREF``, ``STORE_ATTR``), changed in place through a
mutating method (``seen.append``, ``d.update``...) or item assignment (``counts[k] += 1``:
the container read from the function's definition in its source file, from the bytecode only
when sure; a row changed in place, ``r["y"] = r["x"] * SCALE``, is a local, and ``SCALE``
stays a value). Those are hashed by name only. Reads of everything else are hashed by value.
"""

from __future__ import annotations

import ast
import dis
import functools
import linecache
import os
import sysconfig
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Written", "is_user_code", "owner_attrs", "user_methods", "written_names"]

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


_SKIP = frozenset({"CACHE", "PRECALL", "PUSH_NULL", "EXTENDED_ARG", "NOP"})
# one value pushed, nothing popped: what a subscript's key is when the container is known
_KEYS = frozenset({"LOAD_FAST", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME",
                   "LOAD_CLASSDEREF", "LOAD_FAST_CHECK"})


@functools.lru_cache(maxsize=4096)
def written_names(code: types.CodeType) -> Written:
    """The globals, cells and attributes that ``code`` (or code nested in it) changes."""
    out: dict[str, set[str]] = {"globals": set(), "cells": set(), "attrs": set()}
    just: tuple[str, str] | None = None  # the name loaded just before (a method's owner)
    ins = [i for i in dis.get_instructions(code) if i.opname not in _SKIP]
    subscripts = _subscript_targets(code)  # from the source, when it can be read
    for kind, name in subscripts or ():
        out[kind].add(name)
    for at, i in enumerate(ins):
        op, name = i.opname, i.argval
        if op in _STORES:
            out[_STORES[op]].add(name)
        elif op in ("STORE_SUBSCR", "DELETE_SUBSCR") and subscripts is None:
            if (container := _container(ins, at)) is not None:
                out[container[0]].add(container[1])
        elif op in ("LOAD_METHOD", "LOAD_ATTR") and name in _MUTATORS and just is not None:
            out[just[0]].add(just[1])  # seen.append(...), self.items.add(...)
        just = (_LOADS[op], name) if op in _LOADS and isinstance(name, str) else None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner = written_names(const)
            out["globals"] |= inner.globals
            out["cells"] |= inner.cells
            out["attrs"] |= inner.attrs
    return Written(frozenset(out["globals"]), frozenset(out["cells"]), frozenset(out["attrs"]))


def _container(ins: list[dis.Instruction], at: int) -> tuple[str, str] | None:
    """The global, cell or attribute whose item instruction ``at`` (a subscript store or
    delete) sets: ``counts[k] = v`` loads counts, then the key; ``counts[k] += 1`` copies
    both (``COPY 2`` twice) and swaps the result under them. None when the container is a
    local (``r["y"] = ...``: the row itself) or not a plain load: a name is state only when
    it surely is (hashing one by name only would keep a changed value out of the
    fingerprint, and ``repo.derive`` would return stale rows)."""
    j = at - 1
    if ins[at].opname == "STORE_SUBSCR" and j >= 0 and ins[j].opname == "SWAP":
        j = next((k - 1 for k in range(j - 1, 0, -1) if ins[k].opname == "COPY"
                  and ins[k - 1].opname == "COPY" and ins[k].argval == ins[k - 1].argval == 2),
                 -1) - 1
    if j < 1 or ins[j].opname not in _KEYS:
        return None
    load = ins[j - 1]
    if load.opname in _LOADS and isinstance(load.argval, str):
        return _LOADS[load.opname], load.argval
    return None


def _subscript_targets(code: types.CodeType) -> set[tuple[str, str]] | None:
    """The globals, cells and attributes whose items ``code``'s own statements assign or
    delete (``counts[row["k"]] += 1``, ``self.seen[k] = v``), read from its source: the
    container of any key expression, which the bytecode alone does not tell. None when the
    source cannot be read (:func:`_container` then decides, from the bytecode)."""
    body = _function_node(code)
    if body is None:
        return None
    found: set[tuple[str, str]] = set()
    for node in _own_nodes(body):
        targets = (node.targets if isinstance(node, ast.Assign | ast.Delete) else
                   [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            for sub in ast.walk(target):  # (a, d[k]) = ...: tuples of targets too
                if not isinstance(sub, ast.Subscript):
                    continue
                base = sub.value
                if isinstance(base, ast.Attribute):
                    found.add(("attrs", base.attr))
                elif isinstance(base, ast.Name) and base.id not in code.co_varnames:
                    found.add(("cells" if base.id in code.co_freevars else "globals", base.id))
    return found


def _function_node(code: types.CodeType) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition of ``code`` in its file (or notebook cell), found by name and first
    line (a decorator's, when decorated); None without a readable source."""
    lines = linecache.getlines(code.co_filename)
    tree = _parsed("".join(lines)) if lines else None
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name == code.co_name and code.co_firstlineno in (
                    node.lineno, *(d.lineno for d in node.decorator_list))):
            return node
    return None


@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of function ``fn``'s own body, not those of functions nested in it (their
    code objects are read on their own)."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
            if k in paths}
    return tuple(d + os.sep for d in sorted(dirs))


def is_user_code(fn: Any) -> bool:
    """True for functions whose globals are hashed: not stdlib, site-packages or dload_arrow."""
    if str(getattr(fn, "__module__", "") or "").split(".")[0] == "dload_arrow":
        return False
    return not _library_file(fn.__code__.co_filename)


@functools.lru_cache(maxsize=4096)
def _library_file(filename: str) -> bool:
    """Whether ``filename`` is the standard library's or site-packages' (a realpath each:
    cached, a torch module has thousands of methods)."""
    return filename.startswith("<frozen") or os.path.realpath(filename).startswith(
        _library_dirs())


_BUILDERS = frozenset({"__init__", "__new__", "__post_init__", "__setstate__", "__set_name__",
                       "__init_subclass__"})


def owner_attrs(owner: Any, code: types.CodeType | None,
                methods: dict[str, types.FunctionType]) -> dict[str, Any] | None:
    """The attributes of a callable object or a bound method's object, those that ``code``
    (its ``__call__``, the method) or one of its class's ``methods`` writes by name only
    (``self.n += 1``, a helper filling ``self.cache``: state); None for an object without a
    ``__dict__`` (a module, a class, a builtin's)."""
    attrs = getattr(owner, "__dict__", None)
    if not isinstance(attrs, dict) or isinstance(owner, type | types.ModuleType):
        return None
    codes = [code] if code is not None else []
    codes += [f.__code__ for f in methods.values()
              if f.__name__ not in _BUILDERS]  # what builds the object defines it
    own = frozenset().union(*(written_names(c).attrs for c in codes))
    return {k: ({"state": k} if k in own else v) for k, v in dict(attrs).items()}


def user_methods(cls: type, user: Callable[[Any], bool]) -> dict[str, types.FunctionType]:
    """The methods defined in user code along ``cls``'s MRO, by qualified name (static and
    class methods, properties and ``functools`` wrappers unwrapped): a helper method
    ``__call__`` calls is part of what the object does."""
    out = {}
    for t in cls.__mro__:
        for n, f in sorted(vars(t).items()):
            for g in (f.fget, f.fset) if isinstance(f, property) else (f,):
                g = getattr(g, "__func__", g)  # staticmethod, classmethod
                g = getattr(g, "__wrapped__", g)  # functools.cache, lru_cache, wraps
                if isinstance(g, types.FunctionType) and user(g):
                    out[f"{t.__qualname__}.{n}" + ("" if g is f else f".{g.__name__}")] = g
    return out
