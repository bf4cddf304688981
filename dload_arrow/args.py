"""Checks of the public API's arguments, shared by every layer.

Each check names the call, the parameter, the value given and what is allowed, and raises when
the call is made (TypeError for a value of the wrong kind, ValueError for one out of range),
not later and deep inside numpy or Arrow with an error that names neither.
"""

from __future__ import annotations

import inspect
import operator
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from dload_arrow.errors import ConfigError, shown

__all__ = ["MAX_COUNT", "check_bool", "check_callable", "check_count", "check_path", "column_names",
           "kind"]

MAX_COUNT = 2**63 - 1
"""The largest count or position accepted (``sys.maxsize``, the usual "no limit"): plans are
int64 numpy arrays and Arrow offsets."""


def _call(op: str, name: str, value: Any) -> str:
    """How a message quotes the argument: ``op(name=value)``, or ``name=value`` without op."""
    return f"{op}({name}={shown(value)})" if op else f"{name}={shown(value)}"


def kind(value: Any) -> str:
    """``value``'s type with its article, for a message: "an int", "a str" (or "None")."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def check_count(op: str, name: str, value: Any, *, low: int = 0, top: int = MAX_COUNT) -> int:
    """``value`` (argument ``name`` of ``op``: an epoch, a number of items) as an int in
    ``[low, top]``. ``op`` (in every check) may be empty when several calls share the check.

    Raises:
        TypeError: not an integer (a str, a float, a bool): silently flooring 2.7 or parsing
            "3" would hide a bug in the caller.
        ValueError: an integer out of range.
    """
    call = _call(op, name, value)
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{call}: {name} must be an int >= {low}, got {kind(value)}")
    n = operator.index(value)
    if n < low:
        raise ConfigError(f"{call}: {name} must be >= {low}")
    if n > top:
        raise ConfigError(f"{call}: {name} must be at most {top:,}")
    return n


def check_bool(op: str, name: str, value: Any, *, none: bool = False) -> Any:
    """``value`` when it is True or False (or None, with ``none=True``: "decide for me").

    Raises:
        TypeError: anything else; ``dry_run="no"`` is truthy, so accepting it would do the
            opposite of what the caller wrote.
    """
    if isinstance(value, bool) or (none and value is None):
        return value
    np = sys.modules.get("numpy")  # not imported for this: `dload --help` stays light
    if np is not None and isinstance(value, np.bool_):  # a numpy comparison's answer
        return bool(value)
    allowed = "True, False or None" if none else "True or False"
    raise TypeError(f"{_call(op, name, value)}: {name} must be {allowed}, got {kind(value)}")


def check_callable(op: str, name: str, value: Any) -> Any:
    """``value`` when it is callable.

    Raises:
        TypeError: naming the value; a str gets a hint that a function is wanted, not its name.
    """
    if not callable(value):
        hint = " (pass the function itself, not its name)" if isinstance(value, str) else ""
        raise TypeError(f"{_call(op, name, value)}: {name} must be a function{hint}, got "
                        f"{kind(value)}")
    return value


def check_path(op: str, name: str, value: Any) -> str:
    """``value`` (a str, ``os.PathLike`` such as ``pathlib.Path``, or bytes as
    ``os.fsencode`` makes them) as a str.

    Raises:
        TypeError: anything else (a number, a list, None), naming the argument.
    """
    if isinstance(value, str | bytes | os.PathLike):
        return os.fsdecode(value)
    raise TypeError(f"{_call(op, name, value)}: {name} must be a str or a pathlib.Path, "
                    f"got {kind(value)}")


def column_names(columns: Any, op: str = "", arg: str = "columns") -> list[str] | None:
    """``columns`` as a list of column names: None stays None (all columns), one str is one
    column, and any other iterable of str is taken in order.

    Raises:
        TypeError: a number, bool, mapping or other object, or a name that is not a str.
    """
    call = _call(op, arg, columns)
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, bytes | Mapping) or not isinstance(columns, Iterable):
        raise TypeError(f"{call}: {arg} must be a list of column names (or one name), "
                        f"got {kind(columns)}")
    if isinstance(columns, set | frozenset):
        raise TypeError(f"{call}: {arg} must be in the order you want, got a set (its order "
                        "changes from one Python run to the next, and the pipeline's "
                        "fingerprint with it): pass a list, or sorted(...)")
    names = list(columns)
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise TypeError(f"{call}: column names are str, got {kind(bad[0])} {shown(bad[0])}")
    return names


def name_as(owner: type, *mixins: type) -> None:
    """Name the public methods of ``mixins`` as ``owner``'s (``Repository.tag``, not
    ``TagsMixin.tag``): Python's own TypeErrors, help() and pickle by reference (its module
    too) then speak of the class users call (QA review62b, review62c)."""
    for cls in mixins:
        for attr, method in vars(cls).items():
            if not inspect.isfunction(method) or attr.startswith("_"):
                continue
            fn: Any = method
            while fn is not None:  # a functools.wraps wrapper, and the function it calls
                fn.__qualname__ = f"{owner.__name__}.{attr}"
                fn.__module__ = owner.__module__
                fn.__code__ = fn.__code__.replace(co_qualname=fn.__qualname__)
                fn = getattr(fn, "__wrapped__", None)
