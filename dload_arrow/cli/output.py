"""What every command shares: options, opening the repository, and printing (text or --json)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from dload_arrow.sizes import format_bytes

__all__ = [
    "cell",
    "emit",
    "json_option",
    "open_repo",
    "parse_assignments",
    "parse_spec",
    "print_table",
    "progress_enabled",
    "root_options",
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


def open_repo(root: str | None, cache_dir: str | None = None, cache_budget: str | None = None
              ) -> Any:
    """The Repository for the command's root options."""
    from dload_arrow.repository import Repository

    return Repository.open(root, cache_dir=cache_dir, cache_budget=cache_budget)


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``NAME[@VERSION]`` -> ``(name, version or None)``."""
    name, _, version = spec.partition("@")
    return name, (version or None)


def parse_assignments(items: Sequence[str], what: str) -> dict[str, Any]:
    """``K=V`` pairs; values parsed as JSON when they are JSON (``3``, ``true``), else text."""
    out: dict[str, Any] = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise click.BadParameter(f"{item!r} is not K=V", param_hint=what)
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def progress_enabled() -> bool:
    """Progress bars only when stderr is a terminal (never in logs or pipes)."""
    return sys.stderr.isatty()


def _default(o: Any) -> Any:
    if isinstance(o, bytes):
        return f"<{len(o)} bytes>"
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


def emit(data: Any, as_json: bool, text: Callable[[], None] | None = None) -> None:
    """Print ``data`` as JSON with ``--json``, else run ``text`` (or print ``data``)."""
    if as_json:
        click.echo(json.dumps(data, indent=2, default=_default))
    elif text is not None:
        text()
    else:
        click.echo(data)


def cell(value: Any, width: int = 40) -> str:
    """A short human rendering of one value."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        return f"<{format_bytes(len(value))}>"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{value.dtype} {list(value.shape)}>"
    text = str(value).replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """Aligned columns with a header; ``(none)`` when there are no rows."""
    if not rows:
        click.echo("(none)")
        return
    columns = list(columns or rows[0].keys())
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
