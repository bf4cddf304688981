"""Parse SQL-ish row filters (``"label = 3 and score > 0.5"``) without eval.

Grammar (keywords case-insensitive)::

    expr      := or
    or        := and ("OR" and)*
    and       := not ("AND" not)*
    not       := "NOT" not | predicate
    predicate := operand [cmp operand
                         | "IS" ["NOT"] "NULL"
                         | ["NOT"] "IN" "(" [literal ("," literal)*] ")"
                         | ["NOT"] "BETWEEN" operand "AND" operand]
    operand   := literal | column | "(" expr ")"
    cmp       := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    literal   := number | 'string' ('' escapes a quote) | TRUE | FALSE | NULL
    column    := identifier | "quoted identifier"

The result is a small tree (:class:`Node`) that :mod:`dload_arrow.catalog.filtering` turns
into a ``pyarrow.compute.Expression`` and uses to prune row groups. NULL follows SQL (unknown
rows are dropped). No LIKE: a prefix is a range (the error says so).
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dload_arrow.catalog.name_hints import KEYWORDS, list_columns
from dload_arrow.catalog.name_hints import advice as _advice
from dload_arrow.errors import PredicateError

__all__ = ["And", "Between", "Column", "Compare", "In", "IsNull", "Literal", "Node", "Not",
           "Or", "PredicateError", "WrittenFloat", "flip", "parse_predicate"]


@dataclass(frozen=True)
class Column:
    name: str


@dataclass(frozen=True)
class Literal:
    value: Any  # int, float, str, bool, None, or a time (datetime or numpy datetime64)
    # A time compared with a timestamp (time-of-day) column: its exact count of units of the
    # column's type ``time_type`` since the epoch (midnight)
    # (:mod:`dload_arrow.catalog.time_literals`), which evaluators compare (a scalar of that
    # type; the data read may have a finer unit).
    ticks: int | None = None
    time_type: Any = None  # a pyarrow timestamp or time type when ticks is set


@dataclass(frozen=True)
class Compare:
    op: str  # one of = != < <= > >=
    left: Node
    right: Node


@dataclass(frozen=True)
class IsNull:
    operand: Node
    negated: bool


@dataclass(frozen=True)
class In:
    operand: Node
    values: tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class Between:
    operand: Node
    low: Node
    high: Node
    negated: bool


@dataclass(frozen=True)
class And:
    left: Node
    right: Node


@dataclass(frozen=True)
class Or:
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    operand: Node


Node = Column | Literal | Compare | IsNull | In | Between | And | Or | Not

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
    | (?P<string>'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")+")
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><>|!=|==|<=|>=|=|<|>)
    | (?P<punct>[(),])
    )""",
    re.VERBOSE,
)
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _tokenize(text: str, columns: Iterable[str] = (), lists: frozenset[str] = frozenset()
              ) -> list[tuple[str, Any, int]]:
    tokens: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            at = len(text[:pos]) + (len(text[pos:]) - len(text[pos:].lstrip()))
            raise PredicateError(f"cannot read the filter {text!r} at position {at} "
                                 f"({text[at:at + 10]!r})" + _advice(text, at, columns, lists))
        kind = m.lastgroup or ""
        raw, start = m.group(kind), m.start(kind)
        if kind == "number":
            value: Any = _number(raw)
        elif kind == "string":
            value = raw[1:-1].replace("''", "'")
        elif kind == "quoted":
            kind, value = "column", raw[1:-1].replace('""', '"')
        elif kind == "word" and raw.upper() in KEYWORDS:
            kind, value = "keyword", raw.upper()
        elif kind == "word":
            kind, value = "column", raw
        else:
            value = "!=" if raw == "<>" else "=" if raw == "==" else raw
        tokens.append((kind, value, start))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str, columns: Iterable[str] = (),
                 lists: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.columns = tuple(columns)
        self.lists = lists
        self.tokens = _tokenize(text, self.columns, lists)
        self.i = 0

    def error(self, what: str) -> PredicateError:
        at = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
        return PredicateError(
            f"{what} at position {at} of the filter {self.text!r}"
            + _advice(self.text, at, self.columns, self.lists)
        )

    def peek(self, kind: str, value: Any = None) -> bool:
        if self.i >= len(self.tokens):
            return False
        k, v, _ = self.tokens[self.i]
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value: Any = None) -> Any:
        if not self.peek(kind, value):
            raise self.error(f"expected {value or kind}")
        self.i += 1
        return self.tokens[self.i - 1][1]

    def accept(self, kind: str, value: Any = None) -> bool:
        if self.peek(kind, value):
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        if not self.tokens:
            raise PredicateError("the filter is empty; e.g. ds.where(\"label = 3\")")
        node = self.or_()
        if self.i != len(self.tokens):
            raise self.error(f"unexpected {self.tokens[self.i][1]!r}")
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.accept("keyword", "OR"):
            node = Or(node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.accept("keyword", "AND"):
            node = And(node, self.not_())
        return node

    def not_(self) -> Node:
        if self.accept("keyword", "NOT"):
            return Not(self.not_())
        return self.predicate()

    def predicate(self) -> Node:
        left = self.operand()
        if self.peek("op"):
            op = self.take("op")
            return Compare(op, left, self.operand())
        if self.accept("keyword", "IS"):
            negated = self.accept("keyword", "NOT")
            self.take("keyword", "NULL")
            return IsNull(left, negated)
        negated = self.accept("keyword", "NOT")
        if self.accept("keyword", "IN"):
            self.take("punct", "(")
            if self.accept("punct", ")"):  # IN (): false, null for a null value, as DuckDB
                none = Or(And(IsNull(left, True), Literal(False)),  # (QA active65: a list of
                          And(IsNull(left, False), Literal(None)))  # keys, none yet)
                return Not(none) if negated else none
            values = [self.literal()]
            while self.accept("punct", ","):
                values.append(self.literal())
            self.take("punct", ")")
            return In(left, tuple(values), negated)
        if self.accept("keyword", "BETWEEN"):
            low = self.operand()
            self.take("keyword", "AND")
            return Between(left, low, self.operand(), negated)
        if negated:
            raise self.error("expected IN or BETWEEN after NOT")
        return left

    def literal(self) -> Literal:
        node = self.operand()
        if not isinstance(node, Literal):
            raise self.error("IN (...) takes literal values")
        return node

    def operand(self) -> Node:
        if self.accept("punct", "("):
            node = self.or_()
            self.take("punct", ")")
            return node
        if self.peek("number") or self.peek("string"):
            self.i += 1
            return Literal(self.tokens[self.i - 1][1])
        if self.peek("column"):
            return Column(self.take("column"))
        for word, value in (("TRUE", True), ("FALSE", False), ("NULL", None)):
            if self.accept("keyword", word):
                return Literal(value)
        raise self.error("expected a column, a value or '('")


class WrittenFloat(float):
    """A float literal written with a point and no exponent, which keeps its text: a decimal
    column compares the exact value (``d = 12345678901234567.89``), not the float64 nearest
    it. As in DuckDB, where such a literal is a DECIMAL and one with an exponent a DOUBLE."""

    text: str

    def __new__(cls, text: str) -> WrittenFloat:
        value = super().__new__(cls, text)
        value.text = text
        return value


def _number(raw: str) -> int | float:
    """A number literal: an int when written as one, or when written with a point or an
    exponent but whole and beyond float64's exact integers (2**53) within 64 bits, so that
    ``n = 9007199254740993.0`` compares exactly (a float would be 2**53)."""
    if not any(c in raw for c in ".eE"):
        return int(raw)
    exact = decimal.Decimal(raw)
    if exact == exact.to_integral_value() and abs(exact) > 2**53 and -(2**63) <= exact < 2**64:
        return int(exact)
    return float(raw) if "e" in raw.lower() else WrittenFloat(raw)


def parse_predicate(text: str, columns: Any = ()) -> Node:
    """Parse a filter expression into a :data:`Node` tree (raises PredicateError).

    ``columns``, the dataset's column names (or its pyarrow schema), only improve the errors:
    a name that needs double quotes, written bare where parsing failed, is shown quoted; a
    schema's list columns get list advice for ``col.field``.
    """
    lists = list_columns(columns)  # (of a schema; names alone: none)
    if not isinstance(text, str):  # a pyarrow Expression belongs to filter(expr)
        raise PredicateError(f"a filter must be a string, got {type(text).__name__}" + (
            "; pass a pyarrow expression to filter(expr)" * (type(text).__name__ == "Expression")))
    return _Parser(text, getattr(columns, "names", columns), lists).parse()


def flip(op: str) -> str:
    """The operator with its sides swapped (``3 < x`` is ``x > 3``)."""
    return _FLIP[op]
