"""What every command shares: options, opening the repository, and printing (text or --json)."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import unicodedata
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, TypeVar

import click

from dload_arrow.errors import ConfigError, NotFoundError, escaped
from dload_arrow.sizes import format_bytes
from dload_arrow.storage import redact_url
from dload_arrow.store.names import parse_spec

__all__ = [
    "cell",
    "emit",
    "emit_csv",
    "escaped",
    "empty_root_hint",
    "json_option",
    "open_repo",
    "parse_assignments",
    "parse_spec",
    "print_table",
    "progress_enabled",
    "root_options",
    "root_problem",
]

F = TypeVar("F", bound=Callable[..., Any])


def root_options(f: F) -> F:
    """``--root``, ``--cache-dir`` and ``--cache-budget`` (else env, dload.toml, user config)."""
    f = click.option("--cache-budget", default=None, help="Cache size limit, e.g. 50GB or auto.")(f)
    f = click.option("--cache-dir", default=None, help="Local cache directory.")(f)
    f = click.option(
        "--root", default=None,
        help="Storage root: a directory or s3://bucket/prefix "
        "(default: DLOAD_ROOT, dload.toml, user config).",
    )(f)
    return f


def json_option(f: F) -> F:
    """``--json``: print machine-readable JSON instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)


# Where a root setting came from, in the words a user would fix it with.
_ROOT_SOURCES = {"argument": "--root", "env": "DLOAD_ROOT", "default": "the default root"}


def root_problem(repo: Any, dataset: str | None = None) -> NotFoundError | None:
    """The error for a local root directory that does not exist, else None.

    Listing a missing directory gives nothing, so without this a mistyped root looks like an
    empty one. Remote roots (S3...) are not checked: an empty prefix is an empty root there.
    (A file as the root is refused when the storage is opened.)
    """
    from dload_arrow.storage import LocalStorage

    if not isinstance(repo.storage, LocalStorage) or os.path.exists(repo.storage.root):
        return None
    source = repo.settings.sources.get("root", "")
    what = f"no dataset {dataset!r}: root" if dataset else "root"
    return NotFoundError(
        f"{what} {repo.storage.root} (from {_ROOT_SOURCES.get(source, source)}) does not exist; "
        "`dload commit NAME --from PATH` or `dload demo` creates it; if you expected data "
        "there, check --root, DLOAD_ROOT and dload.toml (`dload status` shows which is used)"
    )


def empty_root_hint(repo: Any) -> str:
    """What a root without datasets may mean: a new root, or a mistyped one (an S3 prefix or
    an existing directory that holds no dload_arrow root lists as empty, not as an error)."""
    source = repo.settings.sources.get("root", "")
    local = getattr(repo.storage, "is_local", False)
    where = repo.storage.root if local else redact_url(repo.storage.url)
    what = "directory" if local else "prefix"
    removed = sorted({o.path.split("/")[1] for o in repo.storage.list("datasets/")
                      if "/log/" in o.path})  # rm of a dataset keeps its log
    if removed:
        shown = ", ".join(escaped(n) for n in removed[:5]) + (" ..." if len(removed) > 5 else "")
        return (f"no datasets under {where}: every dataset it held was removed "
                f"({len(removed)}: {shown}); `dload log NAME` says when and by whom")
    if source == "default":  # nothing configured, so nothing mistyped
        return (f"no datasets under {where} (the default root) yet: `dload demo` or `dload "
                "commit NAME --from PATH` creates the first; --root, DLOAD_ROOT or "
                "dload.toml point elsewhere")
    return (f"no datasets under {where} (from {_ROOT_SOURCES.get(source, source)}): that "
            f"{what} holds no dload_arrow root yet; if you expected data there, the root is "
            "mistyped: check --root, DLOAD_ROOT and dload.toml; `dload commit NAME --from "
            "PATH` creates the first dataset")


def open_repo(root: str | None, cache_dir: str | None = None, cache_budget: str | None = None,
              *, must_exist: bool = True, dataset: str | None = None,
              keeps: bool = False) -> Any:
    """The Repository for the command's root options.

    Args:
        must_exist: a missing local root is an error; False for commands that may create it
            (commit, append, demo) or never read it (unpin, cache clear, status).
        dataset: the dataset the command is about, named in that error.
        keeps: the command stores data (commit, append): a memory:// root is refused, since
            it would be gone when the process exits.
    """
    from dload_arrow.repository import Repository

    repo = Repository.open(root, cache_dir=cache_dir, cache_budget=cache_budget)
    if keeps and repo.storage.url.startswith("memory://"):
        raise ConfigError(
            f"root {repo.storage.url!r} is held in memory by one process, and each dload "
            "command is a new process: what it wrote would be gone when it exits; use a "
            "directory or s3://bucket/prefix (memory:// roots are for the Python API)")
    problem = root_problem(repo, dataset) if must_exist else None
    if problem is not None:
        raise problem
    return repo


def parse_assignments(items: Sequence[str], what: str) -> dict[str, Any]:
    """``K=V`` pairs; values parsed as JSON when they are JSON (``3``, ``true``), else text.

    ``NaN``, ``Infinity`` and numbers too big for a float are not JSON (Python's parser takes
    them, and the stored metadata could not hold them): they stay text, as other non-JSON does.
    """
    out: dict[str, Any] = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise click.BadParameter(f"{item!r} is not K=V", param_hint=what)
        try:
            out[k] = json.loads(v, parse_constant=_not_json, parse_float=_finite_float)
        except ValueError:
            out[k] = v
    return out


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _finite_float(text: str) -> float:
    f = float(text)
    if not math.isfinite(f):
        raise ValueError(f"{text} does not fit a float")
    return f


def progress_enabled() -> bool:
    """Progress bars only when stderr is a terminal (never in logs or pipes)."""
    return sys.stderr.isatty()


def _finite(o: Any) -> Any:
    """``o`` with NaN and +/-Infinity floats (also in lists and dicts) replaced by None, and
    a whole Decimal (scale 0) that fits an int64 as an int (others are text, exactly).

    ``json.dumps`` writes them as ``NaN`` and ``Infinity``, which JSON does not have: strict
    parsers (``jq``, JavaScript, ``json.loads`` with ``parse_constant``) refuse the output.
    """
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, Decimal) and o.is_finite() and o.as_tuple().exponent == 0 \
            and -2**63 <= o < 2**63:
        return int(o)  # a whole number (DuckDB's sum of ints is a HUGEINT, a decimal here)
    if _interval(o):  # a namedtuple, which would print as an unlabeled list
        return {"months": o.months, "days": o.days, "nanoseconds": o.nanoseconds}
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _default(o: Any) -> Any:
    import datetime as dt

    if isinstance(o, bytes):
        return f"<{len(o)} bytes>"
    if hasattr(o, "tolist"):
        return _finite(o.tolist())
    if isinstance(o, dt.date | dt.time):  # (datetime too) ISO 8601 with a T, as `versions`
        return o.isoformat()  # gives its times and `export` its values (QA json62)
    if isinstance(o, dt.timedelta):  # seconds, as `export` writes them ("-1 day, 23:59:59")
        return o.total_seconds()
    return str(o)


def emit(data: Any, as_json: bool, text: Callable[[], None] | None = None) -> None:
    """Print ``data`` as JSON with ``--json`` (NaN and infinities as null), else run ``text``
    (or print ``data``)."""
    if as_json:
        click.echo(json.dumps(_finite(data), indent=2, default=_default, allow_nan=False))
    elif text is not None:
        text()
    else:
        click.echo(data)


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, bytes):
        return _default(value)
    if _interval(value):
        return interval_text(value)
    if isinstance(value, (list, dict)):  # as JSON (NaN and infinities null: JSON has none)
        return json.dumps(_finite(value), default=_default, allow_nan=False)
    return str(value)


def _interval(o: Any) -> bool:
    """Whether ``o`` is Arrow's month-day-nanosecond interval (what DuckDB's INTERVAL gives),
    told by name: importing pyarrow here would slow every command's start."""
    return type(o).__name__ == "MonthDayNano"


def interval_text(o: Any) -> str:
    """An interval as text: ``1 month 2 days 0:00:05.5`` (the time part as a timedelta)."""
    import datetime as dt

    parts = [f"{n} {unit}{'s' if n != 1 else ''}"
             for n, unit in ((o.months, "month"), (o.days, "day")) if n]
    if o.nanoseconds or not parts:
        parts.append(str(dt.timedelta(microseconds=o.nanoseconds / 1000)))
    return " ".join(parts)


def emit_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """Print rows as CSV with a header row (nulls empty; lists and structs as JSON)."""
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(columns)
    for r in rows:
        out.writerow([_csv_value(r.get(c)) for c in columns])


def cell(value: Any, width: int = 40) -> str:
    """A short human rendering of one value."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        return f"<{format_bytes(len(value))}>"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{value.dtype} {list(value.shape)}>"
    if _interval(value):
        return interval_text(value)
    text = escaped(_nested(value) if isinstance(value, list | tuple | dict) else str(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def _nested(value: Any) -> str:
    """A list or dict as ``str`` shows it, with blobs as their size and intervals as text
    inside it too (as :func:`cell` shows them at the top)."""
    if isinstance(value, bytes):
        return f"<{format_bytes(len(value))}>"
    if _interval(value):
        return interval_text(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_nested(v)}" for k, v in value.items()) + "}"
    return repr(value)


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """Aligned columns with a header; ``(none)`` when there are no rows."""
    if not rows:
        click.echo("(none)")
        return
    columns = list(columns or rows[0].keys())
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    heads = [escaped(c) for c in columns]
    widths = [max(_width(c), *(_width(row[i]) for row in cells)) for i, c in enumerate(heads)]
    for row in [heads, *cells]:
        click.echo("  ".join(v + " " * (w - _width(v))
                             for v, w in zip(row, widths, strict=True)).rstrip(" "))


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide (CJK) characters two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
