"""The exception hierarchy of dload_arrow.

Every error the package raises on purpose is a :class:`DloadError`. Subclasses also derive
from the matching builtin so callers can keep catching what they already catch
(``except KeyError`` still works for a missing dataset). Messages say what failed, which
value, and how to fix it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "ConfigError",
    "ConflictError",
    "DloadError",
    "EmptyInputError",
    "InfeasiblePlanError",
    "IntegrityError",
    "InvalidNameError",
    "KeysStoredError",
    "MissingKeyError",
    "NotFoundError",
    "PredicateError",
    "SchemaError",
    "SqlError",
    "StorageError",
    "UnsafePathError",
]  # (the exception classes; the message helpers below are the package's own)


class DloadError(Exception):
    """Base class of every error raised on purpose by dload_arrow."""


class ConfigError(DloadError, ValueError):
    """A setting (root, cache dir, budget, endpoint) is missing or malformed."""


class NotFoundError(DloadError, KeyError):
    """A dataset, version, ref, key or object does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message; keep it readable
        return str(self.args[0]) if self.args else ""


class MissingKeyError(NotFoundError):
    """No sample of the dataset has the key asked for (``key in ds`` is then False and
    ``ds.get(key, default=...)`` returns the default; a missing shard is a NotFoundError)."""


class IntegrityError(DloadError, ValueError):
    """Bytes read from the root or the cache do not match their recorded digest or format."""


class ConflictError(DloadError, RuntimeError):
    """A compare-and-swap lost a race too many times, or an object already exists."""


class SchemaError(DloadError, TypeError):
    """A sample does not fit the dataset's schema, or a schema is unusable."""


class KeysStoredError(SchemaError):
    """An append's keys are already stored in the dataset's latest version: a rerun of an
    append that published (its rows are in), or new samples under keys already taken."""


class EmptyInputError(NotFoundError, SchemaError):
    """The input holds no samples: an empty folder or archive, tables with no rows, no
    samples given. A NotFoundError (as before, for the CLI's inputs) and a SchemaError (as
    before, for the API's empty samples); ``dload append --allow-empty`` takes it as nothing
    to append."""


class InvalidNameError(DloadError, ValueError):
    """A dataset name, ref, digest or path read from input or from the root is not allowed."""


class UnsafePathError(InvalidNameError):
    """An archive entry or export target would escape its directory."""


class InfeasiblePlanError(DloadError, RuntimeError):
    """A read plan cannot fit the machine's cache budget or free disk."""


class StorageError(DloadError, OSError):
    """The storage backend failed (network, permissions, missing bucket)."""


class NotAFileError(StorageError):
    """An object's path in a local root holds no regular file; ``what`` it holds instead."""

    def __init__(self, message: str, what: str = "no regular file") -> None:
        super().__init__(message)
        self.what = what


class SqlError(DloadError, ValueError):
    """A catalog SQL query failed (syntax, unknown view or column, bad parameter)."""


class PredicateError(DloadError, ValueError):
    """A where() filter does not parse or does not fit the dataset's columns."""


def surrogate_at(text: str) -> int | None:
    """Where ``text`` holds its first lone surrogate (a byte in another encoding decoded with
    errors='surrogateescape', which UTF-8 cannot store), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return e.start
    return None


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for an error message that quotes input."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def column_list(names: Sequence[str], missing: str | None = None, limit: int = 20,
                schema: object = None) -> str:
    """``names`` for a message, the first ``limit`` and a count of the rest (a 1,500-column
    table's error stays short), after the names closest to ``missing`` (another case, a
    typo): ``"did you mean 'feature_0001'? columns: __key__, a, ... (1,480 more)"``."""
    import difflib

    near: list[str] = []
    if missing is not None:
        folded = {n.casefold(): n for n in names}
        numbered = {_unpadded(n): n for n in names}  # feature_1 for feature_0001
        near = ([folded[missing.casefold()]] if missing.casefold() in folded else
                [numbered[_unpadded(missing)]] if _unpadded(missing) in numbered else
                difflib.get_close_matches(missing, list(names), 3, 0.75))
    rest = f", ... ({len(names) - limit:,} more)" if len(names) > limit else ""
    mean = f"did you mean {' or '.join(map(repr, near))}? " if near else ""
    nested = "" if missing is None or schema is None else nested_hint(missing, schema)
    return f"{mean}columns: {', '.join(map(str, names[:limit]))}{rest}{nested}"


def nested_hint(missing: str, schema: object) -> str:
    """``"; 'meta.score' is a field of 'meta': ..."`` when ``missing`` is a dotted path to a
    field of a struct column of ``schema`` (a pyarrow Schema; a name selects a top-level
    column), else ''."""
    names = getattr(schema, "names", [])
    head = next((n for n in names if missing.startswith(f"{n}.") and n != missing), None)
    if head is None:
        return ""
    rest = missing[len(head) + 1:]
    t = schema.field(head).type  # type: ignore[attr-defined]
    keys = f"[{head!r}]"
    for part in rest.split("."):  # each a field of a struct (a list's items: its structs)
        if getattr(t, "value_type", None) is not None:
            t, keys = t.value_type, keys + "[i]"
        if not hasattr(t, "get_field_index") or (i := t.get_field_index(part)) < 0:
            return ""
        t, keys = t.field(i).type, keys + f"[{part!r}]"
    path = "".join(f"['{p}']" for p in rest.split("."))  # (meta.sub.x: DuckDB reads a table)
    quoted = '\\"' + head + '\\"'  # (a keyword, `order`, or an odd name: quoted)
    sql = "" if "[i]" in keys else (f", or select it in SQL: repo.sql(\"SELECT {quoted}{path} "
                                    "FROM samples('NAME')\")")  # (through a list: no such SQL)
    return (f"; {missing!r} is a field of the column {head!r}, and a name selects a whole "
            f"column: read columns=[{head!r}] and take the field (r{keys}, "
            f"pyarrow.compute.struct_field){sql}")


def _unpadded(name: str) -> str:
    """``name`` folded, its numbers without leading zeros (``Feature_0001`` -> ``feature_1``)."""
    return re.sub(r"\d+", lambda m: str(int(m.group())), name.casefold())


def form_hint(name: str, names: Iterable[str]) -> str:
    """``"; 'e\\u0301' differs from the column 'é' only in Unicode normalization (NFD
    against NFC: ...)"`` when one of ``names`` is ``name`` in another Unicode form (a name
    typed or made on macOS, whose file names are NFD), else ''."""
    import unicodedata

    nfc = unicodedata.normalize("NFC", name)
    twin = next((n for n in names if n != name and unicodedata.normalize("NFC", n) == nfc), None)
    if twin is None:
        return ""
    form = "NFC" if unicodedata.is_normalized("NFC", twin) else "NFD"
    return (f"; {name!a} differs from {twin!a} only in Unicode normalization (that "
            f"one is {form}): write it as stored, e.g. unicodedata.normalize({form!r}, name)")


def escaped(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\t``, ``\\x1b``): a key's or a
    column name's ESC or newline must not drive the terminal or split a line of output."""
    return _CONTROL.sub(_escaped, text)


# controls, and the line/paragraph separators and bidi overrides (a line split, a row shown
# reversed); not zero-width joiners, which emoji are made of
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def user_stacklevel(*also: str) -> int:
    """``warnings.warn``'s stacklevel of the first frame outside dload_arrow: the user's call
    (``functools`` frames, a ``cached_property`` on the way, count as ours; so do those under
    the folders ``also``, e.g. torch's DataLoader calling a dataset)."""
    package = (os.path.dirname(os.path.abspath(__file__)) + os.sep, *also)
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (frame.f_code.co_filename.startswith(package)
                                        or frame.f_code.co_filename == functools.__file__):
        frame, level = frame.f_back, level + 1
    return level


def user_warner() -> Callable[[str], None]:
    """A function warning (UserWarning) at the user's call as it is now, from any thread
    later: a commit reads its input in a worker thread, with no user frame on its stack
    (QA review62: such warnings pointed at threading.py)."""
    frame = sys._getframe(user_stacklevel() - 1)
    where = (frame.f_code.co_filename, frame.f_lineno, frame.f_globals)

    def warn(message: str) -> None:
        name, line, globs = where
        # (no module_globals: its loader, for the source line, fails under `python -c`)
        warnings.warn_explicit(message, UserWarning, name, line, module=globs.get("__name__"),
                               registry=globs.setdefault("__warningregistry__", {}))

    return warn


_USER = "_dload_user_error"


def mark_user_error(error: BaseException) -> BaseException:
    """Mark ``error`` as raised by the user's function (``map``, ``filter``...): a restore
    that meets it reports it as it is, not as a saved position that does not fit."""
    with contextlib.suppress(AttributeError, TypeError):  # a class with __slots__
        setattr(error, _USER, True)
    return error


def is_user_error(error: BaseException) -> bool:
    """True for an error :func:`mark_user_error` marked, or one raised outside dload_arrow
    (the innermost frame of its traceback is not ours: a user's source or function)."""
    if getattr(error, _USER, False) is True:
        return True
    files = []
    tb = error.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    for name in reversed(files):  # innermost first; the standard library decides nothing
        if name.startswith(_PACKAGE) or not _stdlib(name):
            return not name.startswith(_PACKAGE)
    return False


def _stdlib(name: str) -> bool:
    return name.startswith(_STDLIB) and not any(
        part in name for part in ("site-packages", "dist-packages"))


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = os.path.dirname(os.__file__) + os.sep
