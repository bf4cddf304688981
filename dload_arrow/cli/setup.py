"""``dload init``: write a config file (user or project) after checking its values."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import click

from dload_arrow.cli.output import (
    emit,
    json_option,
)
from dload_arrow.config import (
    KEYS,
    anchored,
    check_edges,
    find_up,
    resolve_settings,
    user_config_path,
)
from dload_arrow.config import said as config_said
from dload_arrow.config_values import check_cache_dir, check_endpoint, local_form
from dload_arrow.errors import ConfigError
from dload_arrow.sizes import parse_size
from dload_arrow.storage import open_storage, redact_url
from dload_arrow.storage.base import holds_credentials

__all__ = ["COMMANDS", "init", "shown_path"]

def _absolute(value: str | None) -> str | None:
    """A relative local path made absolute against the working directory (URLs unchanged).

    A user config applies wherever dload runs, so a path typed relative to the working
    directory must not be read later relative to the config file's directory."""
    return None if value is None else anchored(value, os.getcwd())


def shown_path(value: str | None) -> str | None:
    """A local path setting as it is used: absolute (a relative one from --root or an env var
    is relative to the working directory); URLs as given, without credentials."""
    if not value:
        return None
    if "://" in value:
        return redact_url(value)
    return os.path.expanduser(anchored(value, os.getcwd()))


def _warn_hidden(path: Path) -> None:
    """A new project file below another one hides it: only the nearest dload.toml is read."""
    outer = find_up("dload.toml", path.parent)  # (not written yet: the one read now)
    if outer is None or outer == path:
        return
    try:
        keys = ", ".join(f"{k}={redact_url(str(v))}" for k, v in tomllib.loads(
            outer.read_text(encoding="utf-8")).items())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        keys = "?"
    click.echo(f"warning: {path} hides {outer} in {path.parent} and below (only the nearest "
               f"dload.toml is read, so its settings ({keys}) no longer apply here); to "
               f"change the project's settings instead, run init in {outer.parent}", err=True)


def _check_budget(value: str) -> str:
    if value.strip().lower() in ("auto", "unlimited"):  # as the resolver reads them
        return value.strip().lower()
    try:
        parse_size(value, "cache budget")
    except ConfigError as e:
        raise ConfigError(f"{e}; or 'auto' (a share of the free disk) or 'unlimited'") from None
    return value


@click.command()
@click.option("--user", "user", is_flag=True,
              help="Write ~/.config/dload/config.toml (default).")
@click.option("--project", "project", is_flag=True,
              help="Write ./dload.toml (applies in this directory and below; not with --user).")
@click.option("--root", default=None, help="Storage root: a directory or s3://bucket/prefix.")
@click.option("--cache-dir", default=None, help="Local cache directory.")
@click.option("--cache-budget", default=None, help="Cache size limit: 50GB, auto or unlimited.")
@click.option("--endpoint-url", default=None, help="S3 endpoint (R2, MinIO, ...).")
@json_option
def init(user: bool, project: bool, root: str | None, cache_dir: str | None,
         cache_budget: str | None, endpoint_url: str | None, as_json: bool) -> None:
    """Write settings to the user config or to ./dload.toml.

    Only the keys given change: the file's other lines and comments are kept as they are.
    A file holding a key dload does not read is refused, naming the key.

    A relative --root or --cache-dir is stored as given in ./dload.toml, where it is read
    relative to the directory holding the file (the same from every subdirectory), and made
    absolute in the user config.

    \b
    Example:
      dload init --project --root s3://my-bucket/datasets --cache-budget 200GB
    """
    if user and project:
        raise click.UsageError("--user and --project write different files: give one of them "
                               "(run init twice to write both)")
    scope = "project" if project else "user"
    path = user_config_path() if scope == "user" else Path.cwd() / "dload.toml"
    given = {"root": root, "cache_dir": cache_dir, "cache_budget": cache_budget,
             "endpoint_url": endpoint_url}
    if cache_budget is not None:
        _check_budget(cache_budget)
    if cache_dir is not None:  # refused as every command would refuse it, nothing written
        check_cache_dir(local_form(cache_dir), "--cache-dir")
    for key, value in (("root", root), ("cache_dir", cache_dir)):
        check_edges(key, value, f"--{key.replace('_', '-')}")  # as every command would
    _check_root(root, endpoint_url)
    if scope == "user":
        given["root"], given["cache_dir"] = _absolute(root), _absolute(cache_dir)
    updates = {k: str(v) for k, v in given.items() if v is not None}
    old = _read_config(path)
    if scope == "project" and old is None:
        _warn_hidden(path)
    text = _set_keys(path, old, updates) if old is not None else "".join(
        [f"# dload settings ({scope}); keys: {', '.join(KEYS)}\n"]
        + [f"{k} = {_toml_string(v)}\n" for k, v in updates.items()])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if text != old:
            path.write_text(text, encoding="utf-8", newline="")
    except OSError as e:
        other = ("--user (your config, ~/.config/dload or $XDG_CONFIG_HOME)" if scope ==
                 "project" else "--project (./dload.toml), or set XDG_CONFIG_HOME")
        raise ConfigError(f"cannot write the {scope} config {path}: {e.strerror or e}; run "
                          f"where you can write it, or use {other}") from e
    # what the file holds now, read back: the report never lists a key the file lacks
    held = {k: redact_url(str(v)) for k, v in tomllib.loads(text).items()}
    kept = {k: v for k, v in held.items() if k not in updates}

    def said() -> None:
        parts = [f"{what} " + ", ".join(f"{k}={v}" for k, v in items.items())
                 for what, items in (("set", {k: held[k] for k in updates}), ("kept", kept))
                 if items]
        if text == old:  # nothing written: say what it holds
            click.echo(f"{path} unchanged: it holds " + (", ".join(
                f"{k}={v}" for k, v in held.items()) or "no settings"))
            return
        click.echo(f"wrote {path}: " + ("; ".join(parts) or "no settings (give --root, "
                   "--cache-dir, --cache-budget or --endpoint-url)"))

    emit({"path": str(path), "settings": held, "set": list(updates)}, as_json, said)
    _warn_overridden(path, list(updates))


def _warn_overridden(path: Path, keys: list[str]) -> None:
    """Settings just written that do not apply here: a variable (DLOAD_ROOT) or, for the user
    config, a project's dload.toml wins over them (QA roots65: init said nothing of it)."""
    try:
        sources = resolve_settings(check=False).sources
    except ConfigError:  # (another setting is unusable: every command will say so)
        return
    for key in keys:
        if (source := sources.get(key, str(path))) != str(path):
            click.echo(f"warning: {key} as written in {path} does not apply here: "
                       f"{config_said(key, source)} overrides it", err=True)


def _check_root(root: str | None, endpoint_url: str | None) -> None:
    """Refuse what every later command would refuse, before it is written to a file."""
    if endpoint_url is not None:
        check_endpoint(endpoint_url, "--endpoint-url")  # as every command checks it
    if root is None:
        return
    if not root.strip():
        raise ConfigError("--root is empty; give a directory or s3://bucket/prefix")
    if holds_credentials(root):
        raise ConfigError(
            f"--root {redact_url(root)!r} holds credentials, which dload never reads from a "
            "URL and would write here in plain text; give them through the AWS chain "
            "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ~/.aws, an instance role)")
    if "://" in root:
        open_storage(root, endpoint_url=endpoint_url)  # an unknown scheme, no bucket: refused


def _read_config(path: Path) -> str | None:
    """The text of the config file ``path`` (None: there is none), refused when it holds a key
    dload does not read: every command refuses such a file, so writing to it fixes nothing."""
    if not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8", newline="") as f:  # newline="": keep \r\n as is
            text = f.read()
        current = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}; fix or delete it") from e
    unknown = sorted(set(current) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{path} holds keys dload does not read: {', '.join(unknown)} (known keys: "
            f"{', '.join(KEYS)}); every dload command refuses the file while they are there. "
            "Nothing was written: remove those keys (keep notes as # comments), then run "
            "init again")
    return text


def _toml_string(value: str) -> str:
    """``value`` as a TOML basic string (JSON's escapes are TOML's; DEL must be escaped too,
    and a character beyond the BMP written as itself, not as JSON's surrogate pair)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


# `key = value  # comment` on one line; the value a one-line string or a bare word / number
_VALUE = r"(?P<value>\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s#\"']+)(?P<tail>[ \t]*(?:#.*)?)"


def _set_keys(path: Path, text: str, updates: dict[str, str]) -> str:
    """``text`` with each key of ``updates`` set: the value on its line replaced (the line's
    comment kept) or a line added at the end; every other line and comment stays as it is."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)  # not splitlines: TOML breaks only at \n
    eol = "\r\n" if "\r\n" in text else "\n"
    for key, value in updates.items():
        head = re.compile(rf"[ \t]*(?:{key}|\"{key}\"|'{key}')[ \t]*=[ \t]*")
        for i, line in enumerate(lines):
            body = line.rstrip("\r\n")
            start = head.match(body)
            if start is None:
                continue
            rest = re.fullmatch(_VALUE, body[start.end():])
            tail = rest["tail"] if rest else ""  # else an odd value: the line is replaced
            lines[i] = f"{start.group()}{_toml_string(value)}{tail}{line[len(body):]}"
            break
        else:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += eol
            lines.append(f"{key} = {_toml_string(value)}{eol}")
    out = "".join(lines)
    try:
        ok = tomllib.loads(out) == {**tomllib.loads(text), **updates}
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:  # a value spanning lines, a table of a known key: not edited blindly
        raise ConfigError(
            f"cannot set {', '.join(updates)} in {path} in place (a value there spans lines "
            "or is not a plain `key = value`); nothing was written: edit the file by hand "
            "or delete it and run init again")
    return out


COMMANDS = [init]
