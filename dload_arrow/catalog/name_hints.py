"""Advice for filters that write a column's name where the parser reads something else.

A where() filter reads a bare word as a column only when it looks like an identifier (ASCII
letters, digits and ``_``, not starting with a digit) and is not a keyword; any other name
needs double quotes: ``"é名" = 'v10'``, ``"1st" = 3``, ``"and" = 3``, ``"true" = 3``. Unquoted,
such a name fails to parse, or (``true``, ``null``) becomes a value. These helpers add the
quoted spelling to those errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from dload_arrow.errors import SqlError, form_hint, shown, surrogate_at

__all__ = ["KEYWORDS", "check_utf8", "column_hint", "field_hint", "like_hint",
           "literal_compare_hint", "needs_quotes", "quote_hint", "sql_literal"]

KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE"})
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHOWN = 80  # a longer filter is not repeated whole in a hint: only the quoted name is
_LITERAL_WORDS = {True: "TRUE", False: "FALSE", None: "NULL"}


def needs_quotes(name: str) -> bool:
    """Whether a filter must double-quote ``name`` to read it as a column."""
    return _PLAIN.match(name) is None or name.upper() in KEYWORDS


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is not part of a longer word on either side."""
    before = start == 0 or not (_word(text[start - 1]) and _word(text[start]))
    after = end == len(text) or not (_word(text[end - 1]) and _word(text[end]))
    return before and after


def _spot(text: str, at: int, name: str) -> int | None:
    """Where ``name`` is written as a whole word over position ``at`` of ``text``, or just
    before it for NOT (read as the operator, "not = 3" fails after it, at "=")."""
    for start in range(max(0, at - len(name) + 1), at + 1):
        if text.startswith(name, start) and _bounded(text, start, start + len(name)):
            return start
    start = len(text[:at].rstrip()) - len(name)
    if (name.upper() == "NOT" and start >= 0 and text.startswith(name, start)
            and _bounded(text, start, start + len(name))):
        return start
    return None


def quote_hint(text: str, at: int, columns: Iterable[str]) -> str:
    """``'; to name the column 'é名', quote it: "é名" = 'v10'`` when a column whose name needs
    quotes is written bare at position ``at`` of ``text`` (where parsing failed); else ''.

    The longest such name wins ("x y" over "x").
    """
    best: tuple[int, str] | None = None
    for name in columns:
        if not name or not needs_quotes(name) or (best and len(name) <= len(best[1])):
            continue
        start = _spot(text, at, name)
        if start is not None:
            best = (start, name)
    if best is None:
        return ""
    start, name = best
    fixed = text[:start] + quoted(name) + text[start + len(name):]
    shown = fixed if len(fixed) <= _SHOWN else quoted(name)
    return f"; to name the column {name!r}, quote it: {shown}"


def sql_literal(value: Any) -> str:
    """A literal as a filter writes it: TRUE, NULL, 3, 'a'."""
    if value is None or isinstance(value, bool):
        return _LITERAL_WORDS[value]
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def literal_compare_hint(left: Any, op: str, right: Any, columns: Iterable[str]) -> str:
    """Why ``left <op> right`` (two values) is refused, and the quoting that names a column."""
    sides = [sql_literal(left), sql_literal(right)]
    named = sorted(c for c in columns if c.upper() in sides and c.upper() in KEYWORDS)
    if named:
        name = named[0]
        fixed = [quoted(name) if side == name.upper() else side for side in sides]
        fix = f"if you meant the column {name!r}, double-quote it: {fixed[0]} {op} {fixed[1]}"
    else:
        fix = ('a column named like a keyword or a value must be double-quoted, e.g. '
               '"true" = 3')
    return (f"cannot compare {sides[0]} with {sides[1]}: a comparison needs a column on one "
            f"side; {fix}")


_LIKE = re.compile(r"""(?P<col>[A-Za-z_][A-Za-z0-9_]*|"(?:[^"]|"")+")\s+(?:NOT\s+)?I?LIKE\s+
                       '(?P<prefix>(?:[^'%_]|'')*)%'\s*$""", re.IGNORECASE | re.VERBOSE)


def like_hint(text: str, at: int) -> str:
    """The advice for ``LIKE`` in a where() filter (which has none): a prefix as the key range
    that gives it, with the user's own column and prefix where the filter is one LIKE 'p%'."""
    word = text[at:].split(maxsplit=1)[0].upper() if text[at:].strip() else ""
    if word not in ("LIKE", "ILIKE"):
        return ""
    m = _LIKE.search(text)
    col, prefix = (m.group("col"), m.group("prefix").replace("''", "'")) if m and m.group(
        "prefix") else ("__key__", "spk01/")
    stop = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return (f"; where() takes no {word}: a prefix is a range ({col} >= {_quote(prefix)} and "
            f"{col} < {_quote(stop)}: the prefix, its last character raised by one); "
            f"repo.sql() takes {word}")


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_FIELD = re.compile(r'\s*"?([A-Za-z_][A-Za-z0-9_]*)"?')


def field_hint(text: str, at: int, columns: Iterable[str],
               lists: frozenset[str] = frozenset()) -> str:
    """The advice for a struct field written in a where() filter (``prof.age > 40``, failing
    at its ``.``; or ``"prof.age"``, no such column): where() compares top-level columns; the
    field is reached in SQL or a pipeline filter (QA tabular60). "" when the text before the
    dot is no column."""
    if text[at:at + 1] != ".":
        return ""
    head = text[:at].rstrip()
    m = re.search(r'(?:"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_]*))\Z', head)
    col = None if m is None else (m.group(1) or "").replace('""', '"') or m.group(2)
    if col is None or col not in set(columns):
        return ""
    f = _FIELD.match(text, at + 1)
    field = f.group(1) if f else "field"
    if f"{col}.{field}" in set(columns):  # a column named with a dot: quote_hint's case
        return ""
    name = quoted(col) if needs_quotes(col) else col
    if col in lists:  # a list of structs (COCO's annotations: QA detect62)
        sql = f"len(list_filter({name}, lambda x: x.{field} ...)) > 0".replace('"', '\\"')
        return (f"; where() compares top-level columns, not a field of the list {col!r}: "
                f"filter it with repo.sql(\"SELECT * FROM samples('NAME') WHERE {sql}\") or "
                f"a pipeline's .filter(lambda r: any(a[{field!r}] ... for a in r[{col!r}]))")
    sql = f"{name}.{field}".replace('"', '\\"')
    return (f"; where() compares top-level columns, not a field of {col!r}: filter it with "
            f"repo.sql(\"SELECT * FROM samples('NAME') WHERE {sql} ...\") or "
            f"a pipeline's .filter(lambda r: r[{col!r}][{field!r}] ...)")


def list_columns(columns: Any) -> frozenset[str]:
    """The list columns of a schema (``columns`` names alone: none known)."""
    if not hasattr(columns, "names"):
        return frozenset()
    return frozenset(f.name for f in columns if str(f.type).startswith(("list<", "large_list<")))


def column_hint(name: str, schema: Any, text: str = "") -> str:
    """The advice for a column ``name`` that ``schema`` (or a list of names) lacks: a spelling
    of one (another case, Unicode form), a struct field written as a column (``"prof.age"``;
    of a list of structs, its own), or, written in double quotes in the filter ``text``, a
    value (pandas' query() habit: ``robot_id == "r1"``)."""
    names = list(getattr(schema, "names", schema))
    return form_hint(name, names) or field_hint(name, name.find("."), names,
                                                list_columns(schema)) or (
        f"; if {name!r} is a value, write it in single quotes, {_quote(name)}: double quotes "
        "name a column" if quoted(name) in text
        and name.casefold() not in {n.casefold() for n in names} else "")


def check_utf8(query: str) -> None:
    """Refuse a query holding a lone surrogate (a byte in another encoding read from argv):
    DuckDB's parser fails on it with a TypeError that reads as a bug (QA errors61)."""
    if (at := surrogate_at(query)) is not None:
        raise SqlError(f"the query is not UTF-8 text: it holds {query[at]!r} at "
                       f"{shown(query[max(0, at - 20):at + 20])} (a byte in another "
                       "encoding); write it in UTF-8")


_EXAMPLE = "; write comparisons such as \"label = 3 and score > 0.5\""


def advice(text: str, at: int, columns: Iterable[str], lists: frozenset[str] = frozenset()
           ) -> str:
    """How to fix a where() filter where reading failed at ``at``: a LIKE, a struct field
    (of a list of structs: ``lists``), a column written bare that needs quotes, or the usual
    example (QA audio59, tabular60)."""
    return (like_hint(text, at) or field_hint(text, at, columns, lists)
            or quote_hint(text, at, columns) or _EXAMPLE)
