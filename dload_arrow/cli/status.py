"""``dload status``: each setting and where it came from, the cache, and the root's state."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from dload_arrow.cli.aws_chain import botocore_credentials, botocore_endpoint
from dload_arrow.cli.data import cache_text
from dload_arrow.cli.output import (
    emit,
    empty_root_hint,
    json_option,
    open_repo,
    root_options,
    root_problem,
)
from dload_arrow.cli.setup import shown_path
from dload_arrow.config import KEYS, resolve_settings
from dload_arrow.errors import DloadError
from dload_arrow.sizes import plural
from dload_arrow.storage import LocalStorage, redact_url

__all__ = ["COMMANDS", "cache_summary", "status"]


def cache_summary(repo: Any) -> dict[str, Any]:
    """The cache status, or when the root cannot be listed its budget and usage alone and
    the error (the cache is local all the same)."""
    from dload_arrow.read.context import unwritable
    from dload_arrow.read.pull import CacheStatus, cache_status

    # the same keys whatever happened (QA json62): null where unknown, "error" null if none
    out = {**{f.name: None for f in dataclasses.fields(CacheStatus)},
           "cache_dir": repo.settings.cache_dir, "unwritable": None, "error": None}
    try:
        return {**out, **dataclasses.asdict(repo.cache_status()),
                "unwritable": unwritable(repo.settings.cache_dir)}
    except (DloadError, OSError) as e:  # an unreachable root: the cache is local all the same
        out["error"] = " ".join(str(e).split())
        try:  # budget and usage without the root's datasets (their residency is unknown)
            return {**out, **dataclasses.asdict(cache_status(repo.read_context, [])),
                    "unwritable": unwritable(repo.settings.cache_dir)}
        except (DloadError, OSError):
            return out


def _reach(repo: Any) -> dict[str, Any]:
    """Whether the root can be listed; ``exists`` is False for a local root not created yet."""
    # only a local directory can be told apart from an empty root; elsewhere None
    exists = (root_problem(repo) is None) if isinstance(repo.storage, LocalStorage) else None
    try:
        names = repo.datasets()
    except (DloadError, OSError) as e:
        return {"reachable": False, "exists": exists, "datasets": None,
                "error": " ".join(str(e).split())}
    return {"reachable": True, "exists": exists, "datasets": len(names), "error": None}


@click.command()
@root_options
@json_option
def status(root: str | None, cache_dir: str | None, cache_budget: str | None,
           as_json: bool) -> None:
    """Show each setting and where it came from, the cache, and whether the root is reachable.

    Credentials are reported as present or absent, never shown.

    \b
    Example:
      dload status --json
    """
    from dload_arrow.read.env_settings import env_settings

    try:
        settings = resolve_settings(False, root=root, cache_dir=cache_dir,
                                    cache_budget=cache_budget)
    except DloadError as e:  # a bad budget or dload.toml: no settings to show, the rest is
        _refused(e, None, as_json)
        raise
    try:
        repo = open_repo(root, cache_dir, cache_budget, must_exist=False)
    except DloadError as e:  # a setting no command can use (a root that is a file): shown
        _refused(e, settings, as_json)  # first, then the error (stderr) and exit 1
        raise
    reach = _reach(repo)
    shown = {"settings": {k: {"value": _shown(settings, k), "source": settings.sources.get(k)}
                          for k in KEYS}}
    if shown["settings"]["endpoint_url"]["value"] is None:
        shown["settings"]["endpoint_url"] = botocore_endpoint(
            settings.root.startswith(("s3://", "s3a://")))
    out = {
        **shown,
        "root": reach,
        "cache": cache_summary(repo),
        "credentials": botocore_credentials(settings.root),
        "environment": env_settings(),  # the variables with no other surface
    }

    def text() -> None:
        _settings_table({k: (v["value"], v["source"]) for k, v in out["settings"].items()})
        _env_text(out["environment"])
        if not reach["reachable"]:
            state = f"NOT reachable: {reach['error']}"
        elif reach["exists"] is False:
            state = ("does not exist yet (`dload commit` creates it; if you expected data, the "
                     "root setting above is wrong)")
        else:
            state = f"reachable, {plural(reach['datasets'], 'dataset')}"
            if not reach["datasets"]:
                state += f"; {empty_root_hint(repo)}"
        click.echo(f"root: {state}")
        if "budget_bytes" in out["cache"]:  # usage is local: shown even when the root is not
            cache_text(out["cache"], residency=False)
        else:
            click.echo(f"cache: {out['cache']['cache_dir']} ({out['cache']['error']})")
        cred = out["credentials"]
        click.echo("credentials: " + ("not needed (local root)" if not cred["needed"] else
                   ("present (" + ", ".join(cred["from"]) + ")") if cred["present"] else
                   "NONE found" + (f" ({cred['error']})" if cred.get("error") else "")
                   + ": set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"))

    emit(out, as_json, text)


COMMANDS = [status]


def _refused(e: DloadError, settings: Any, as_json: bool) -> None:
    """What status shows before a refused setting's error: the settings (None: they could
    not be resolved) and the environment-only variables; with --json, a document with the
    ``error`` too (QA review57, review58: --json printed nothing)."""
    from dload_arrow.read.env_settings import env_settings

    env = env_settings()
    got = None if settings is None else {
        k: {"value": _shown(settings, k), "source": settings.sources.get(k)} for k in KEYS}
    if as_json:
        emit({"settings": got, "environment": env, "error": " ".join(str(e).split())}, True,
             lambda: None)
        return
    if got is not None:
        _settings_table({k: (v["value"], v["source"]) for k, v in got.items()})
    _env_text(env)


def _shown(settings: Any, key: str) -> str | None:
    """A setting as status shows it: local paths absolute, URLs without credentials."""
    value = getattr(settings, key)
    if key in ("root", "cache_dir"):
        return shown_path(value)
    return redact_url(str(value)) if value else None


def _env_text(env: dict[str, dict[str, Any]]) -> None:
    """One line for the environment-only variables: each one's value and what it means."""
    parts = [f"{name}={v['value']!r}: {v['effective'] or 'REFUSED (see the error)'}"
             if v["value"] else f"{name} unset: {v['effective']}" for name, v in env.items()]
    click.echo("environment: " + "; ".join(parts))


def _settings_table(values: dict[str, tuple[str | None, str | None]]) -> None:
    # not print_table: it shortens cells to 40 characters, and a path must show whole
    rows = [("setting", "value", "from")] + [
        (k, v or "-", source or "-") for k, (v, source) in values.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    for r in rows:
        click.echo(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}")
