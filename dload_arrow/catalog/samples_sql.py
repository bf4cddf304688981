"""Find ``samples('<name>' [, '<version>'])`` calls in a SQL query, outside strings and comments.

The catalog replaces each call by ``read_parquet($<param>)`` with the list of local shard files
bound as a parameter, so DuckDB's own Parquet reader (with its statistics pruning and
projection) reads the samples; nothing from the query is ever formatted into SQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dload_arrow.errors import InvalidNameError

__all__ = ["SamplesCall", "find_samples_calls", "replace_calls"]

_CALL = re.compile(r"samples\s*\(", re.IGNORECASE)
_STRING = re.compile(r"'((?:[^']|'')*)'")


@dataclass(frozen=True)
class SamplesCall:
    """One ``samples(...)`` call: its span in the query and its arguments."""

    start: int
    end: int
    name: str
    version: str | None


def _code_spans(query: str) -> list[tuple[int, int]]:
    """Spans of ``query`` that are SQL code, not strings (``'...'``, ``E'...'`` with
    backslash escapes, ``$$...$$``/``$tag$...$tag$``), quoted identifiers or comments
    (``--``, and ``/* */``, which DuckDB nests)."""
    spans = []
    i = start = 0
    n = len(query)
    while i < n:
        end = _quoted_end(query, i)
        if end is None:
            i += 1
            continue
        spans.append((start, i))
        i = start = end
    spans.append((start, n))
    return [(a, b) for a, b in spans if a < b]


def _quoted_end(query: str, i: int) -> int | None:
    """Where the string, quoted identifier or comment starting at ``i`` ends (one past it);
    None when none starts there."""
    c, n = query[i], len(query)
    if c in "eE" and query.startswith("'", i + 1) and not (i and _word(query[i - 1])):
        return _closing(query, i + 2, "'", escapes=True)
    if c in "'\"":
        return _closing(query, i + 1, c, escapes=False)
    if c == "$" and not (i and _word(query[i - 1])) and (m := _DOLLAR.match(query, i)):
        # (a $ inside an identifier, a$b$c, starts no string)
        j = query.find(m.group(), m.end())
        return n if j < 0 else j + len(m.group())
    if query.startswith("--", i):
        j = query.find("\n", i)
        return n if j < 0 else j + 1
    if query.startswith("/*", i):
        depth, j = 1, i + 2
        while j < n and depth:
            if query.startswith("/*", j):
                depth, j = depth + 1, j + 2
            elif query.startswith("*/", j):
                depth, j = depth - 1, j + 2
            else:
                j += 1
        return j
    return None


def _closing(query: str, j: int, quote: str, *, escapes: bool) -> int:
    """One past the ``quote`` that closes a string whose text starts at ``j`` (a doubled
    quote is a quote; with ``escapes``, a backslash escapes the next character)."""
    n = len(query)
    while j < n:
        if (escapes and query[j] == "\\") or query.startswith(quote * 2, j):
            j += 2
        elif query[j] == quote:
            break
        else:
            j += 1
    return j + 1


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


_DOLLAR = re.compile(r"\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$")


def _skip_ws(query: str, i: int) -> int:
    while i < len(query) and query[i].isspace():
        i += 1
    return i


def _string_at(query: str, i: int, call: str) -> tuple[str, int]:
    m = _STRING.match(query, i)
    if m is None:
        raise InvalidNameError(
            f"{call}: arguments of samples() must be string literals, e.g. "
            "samples('mnist') or samples('mnist', 'v1')"
        )
    return m.group(1).replace("''", "'"), m.end()


def find_samples_calls(query: str) -> list[SamplesCall]:
    """Every ``samples(...)`` call in ``query``, in order."""
    calls = []
    for a, b in _code_spans(query):
        for m in _CALL.finditer(query, a, b):
            before = query[: m.start()].rstrip()
            if m.start() > 0 and (query[m.start() - 1].isalnum() or query[m.start() - 1] in "_"):
                continue  # part of a longer identifier, e.g. my_samples(
            if before.endswith("."):
                continue  # schema.samples(...) is someone else's function
            call = query[m.start(): m.start() + 60]
            i = _skip_ws(query, m.end())
            name, i = _string_at(query, i, call)
            version = None
            i = _skip_ws(query, i)
            if query.startswith(",", i):
                version, i = _string_at(query, _skip_ws(query, i + 1), call)
                i = _skip_ws(query, i)
            if not query.startswith(")", i):
                raise InvalidNameError(
                    f"{call}: samples() takes a dataset name and an optional version, "
                    "e.g. samples('mnist', 'v1')"
                )
            if "@" in name and version is None:  # the CLI's NAME@VERSION, in SQL
                bare, _, at = name.partition("@")
                raise InvalidNameError(
                    f"{call}: samples() takes the version apart from the name: "
                    f"samples('{bare}', '{at}')"
                )
            calls.append(SamplesCall(m.start(), i + 1, name, version))
    return calls


def replace_calls(query: str, calls: list[SamplesCall], replacements: list[str]) -> str:
    """``query`` with each call's span replaced by the matching replacement text."""
    out, last = [], 0
    for call, text in zip(calls, replacements, strict=True):
        out.append(query[last: call.start])
        out.append(text)
        last = call.end
    out.append(query[last:])
    return "".join(out)
