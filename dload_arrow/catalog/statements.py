"""The named SQL statements of ``sql/``: one statement per file, a header naming its parameters.

The wheel ships the folder as ``dload_arrow/sql`` (pyproject force-include); an editable
install or a source checkout reads the repository's top-level ``sql/`` instead.

Header format (SQL comments before the statement)::

    -- name: ancestors
    -- kind: view | query
    -- params: $name VARCHAR (dataset), $version VARCHAR (version id)   (or: none)
    -- returns: depth INTEGER, relation VARCHAR, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dload_arrow.errors import NotFoundError

__all__ = ["Statement", "VIEW_ORDER", "all_statements", "sql_dir", "statement"]

# Views are created in this order: later ones read earlier ones.
VIEW_ORDER = ("refs", "log", "parents", "versions", "datasets", "shards", "lineage")

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Statement:
    """One SQL file: its name, kind (``view`` or ``query``), parameter names and text."""

    name: str
    kind: str
    params: tuple[str, ...]
    returns: str
    text: str
    path: str


def sql_dir() -> Path:
    """The folder holding the statements: installed package first, then the source tree."""
    installed = Path(__file__).resolve().parent.parent / "sql"
    if installed.is_dir():
        return installed
    source = Path(__file__).resolve().parents[2] / "sql"
    if source.is_dir():
        return source
    raise NotFoundError(
        f"the SQL statements are missing (looked in {installed} and {source}); "
        "reinstall dload-arrow"
    )


def _parse(path: Path) -> Statement:
    text = path.read_text(encoding="utf-8")
    header: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        body = line[2:].strip()
        m = re.match(r"^(name|kind|params|returns):\s*(.*)$", body)
        if m:
            last = m.group(1)
            header[last] = m.group(2)
        elif last == "returns" and body and not body[0].isupper():
            header["returns"] += " " + body  # continuation line of the column list
        else:
            last = ""
    name = header.get("name", path.stem)
    if name != path.stem:
        raise ValueError(f"{path} declares name {name!r}; the file must be named {name}.sql")
    params_text = header.get("params", "none")
    params = tuple(dict.fromkeys(_PARAM.findall(params_text)))
    code = re.sub(r"--[^\n]*", "", text)
    used = tuple(dict.fromkeys(_PARAM.findall(code)))
    if set(used) != set(params):
        raise ValueError(f"{path}: header params {params} differ from those used {used}")
    return Statement(
        name=name,
        kind=header.get("kind", "query"),
        params=params,
        returns=header.get("returns", ""),
        text=text,
        path=str(path),
    )


@cache
def all_statements() -> dict[str, Statement]:
    """Every statement by name (views and queries)."""
    out: dict[str, Statement] = {}
    for path in sorted(sql_dir().rglob("*.sql")):
        st = _parse(path)
        if st.name in out:
            raise ValueError(f"two SQL files are named {st.name!r}: {out[st.name].path}, {path}")
        out[st.name] = st
    return out


def statement(name: str) -> Statement:
    """The statement ``name`` (e.g. ``"ancestors"``); NotFoundError lists the known ones."""
    found = all_statements().get(name)
    if found is None:
        raise NotFoundError(
            f"no SQL statement {name!r}; known: {', '.join(sorted(all_statements()))}"
        )
    return found
