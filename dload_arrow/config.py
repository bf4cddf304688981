"""Settings and where each came from.

Each setting is resolved, first match wins: an explicit argument, the environment
(``DLOAD_ROOT``, ``DLOAD_CACHE_DIR``, ``DLOAD_CACHE_BUDGET``, ``DLOAD_ENDPOINT_URL``,
``R2_ACCOUNT_ID``), ``./dload.toml`` searched up from the working directory, the user file
``~/.config/dload/config.toml``, then the defaults (a local root in the user's data dir, the
cache in ``~/.cache/dload``, budget ``auto`` = half the free disk). Credentials are never
settings: S3 takes them from the standard AWS chain.

A relative ``root`` or ``cache_dir`` in a config file is relative to the directory holding that
file, so every subdirectory of a project sees the same root; one from an argument or the
environment is relative to the working directory, as paths typed in a shell are. The cache dir
is made absolute here, once, so a later ``os.chdir()`` does not move it.
"""

from __future__ import annotations

import os
import sys
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dload_arrow.args import check_bool
from dload_arrow.config_values import (
    budget_text,
    check_cache_dir,
    check_endpoint,
    config_file,
    find_up,
    fs_text,
    key_hint,
    local_form,
    warn_unknown_env,
)
from dload_arrow.errors import ConfigError, surrogate_at

__all__ = ["KEYS", "Settings", "anchored", "check_edges", "config_file", "find_up",
           "progress_bar", "progress_wanted", "resolve_settings", "said", "user_config_path"]

KEYS = ("root", "cache_dir", "cache_budget", "endpoint_url")
_ENV = {"root": "DLOAD_ROOT", "cache_dir": "DLOAD_CACHE_DIR",
        "cache_budget": "DLOAD_CACHE_BUDGET", "endpoint_url": "DLOAD_ENDPOINT_URL"}


@dataclass
class Settings:
    """Resolved settings; ``sources[key]`` says where each value came from."""

    root: str
    cache_dir: str
    cache_budget: str
    endpoint_url: str | None
    sources: dict[str, str] = field(default_factory=dict)


def _xdg(name: str, *default: str) -> Path:
    """``$name``, or ``~/default``: a relative one is ignored, as the XDG spec says (it would
    move the default root with every ``cd``)."""
    value = os.environ.get(name)
    return Path(value) if value and os.path.isabs(value) else Path.home().joinpath(*default)


def _data_home() -> Path:
    return _xdg("XDG_DATA_HOME", ".local", "share")


def _cache_home() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache")


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/dload/config.toml`` (``~/.config/dload/config.toml``)."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "dload" / "config.toml"


_PATH_KEYS = ("root", "cache_dir")


def anchored(value: str, base: Path | str) -> str:
    """A local path setting made absolute against ``base`` when it is relative; URLs
    (``s3://...``) and absolute paths (``~`` included) are returned as given; a ``file://``
    URL is the path it names."""
    value = local_form(value)
    expanded = os.path.expanduser(value)
    if "://" in value or os.path.isabs(expanded):
        return value
    return os.path.normpath(Path(base).absolute() / expanded)


def _anchor_paths(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``data`` with a relative local ``root`` / ``cache_dir`` made absolute against the
    directory of the config file ``path`` (URLs such as ``s3://`` are left alone)."""
    out = dict(data)
    for key in _PATH_KEYS:
        value = out.get(key)
        if value and str(value).strip():  # (a blank one stays blank: refused as empty)
            out[key] = anchored(value, path.parent)
    return out


# (file, key, value) already warned about: settings are resolved several times per command
_WARNED: set[tuple[str, str, str]] = set()


def _warn_relative(path: Path, key: str, value: str, used: str) -> None:
    """Say once per process that ``key = value`` in the user config ``path`` (whose relative
    paths once meant the working directory) is read relative to that file's folder; called
    only when that value is the one used, not when an argument or the environment wins."""
    if value == used or (str(path), key, value) in _WARNED:
        return
    _WARNED.add((str(path), key, value))
    warnings.warn(
        f"{key} = {value!r} in {path} is relative: it is read relative to that file's folder, "
        f"as {used} (not the working directory); write an absolute path: "
        f"dload init --user --{key.replace('_', '-')} /absolute/path", stacklevel=3)


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = tomllib.loads(f.read().decode("utf-8-sig"))  # (Notepad's byte-order mark)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read config file {path}: {e}; fix or delete it") from e
    unknown = set(data) - set(KEYS)
    if unknown:
        raise ConfigError(
            f"config file {path} has unknown keys {sorted(unknown)}{key_hint(unknown, data)}; "
            f"known keys: {list(KEYS)}"
        )
    for key, value in data.items():
        check_edges(key, value, str(path))
        number = key == "cache_budget" and isinstance(value, int | float) \
            and not isinstance(value, bool)
        if not isinstance(value, str) and not number:
            kind = "text or a number of bytes" if key == "cache_budget" else "text"
            raise ConfigError(f"config file {path}: {key} = {value!r} must be {kind}, e.g. "
                              f"{key} = {_EXAMPLES[key]}")
    return data


_EXAMPLES = {"root": '"s3://bucket/datasets"', "cache_dir": '"/scratch/dload-cache"',
             "cache_budget": '"50GB"', "endpoint_url": '"http://127.0.0.1:9000"'}


def check_edges(key: str, value: Any, source: str) -> None:
    """Refuse a path setting that begins or ends with a blank (``DLOAD_ROOT=" /data/x"``, a
    copy-paste slip): relative, it would make a folder named ``" "`` in the working
    directory and commit there."""
    if key == "root" and isinstance(value, str) and surrogate_at(value) is not None:
        raise ConfigError(  # (QA errors61: an internal error in every command)
            f"{key} {value!r} (from {said(key, source)}) is not UTF-8 (a folder named in "
            "another encoding, e.g. Latin-1 'donn\\xe9es'): rename the folder to a UTF-8 name")
    if key in _PATH_KEYS and isinstance(value, str) and value.strip() and \
            value != value.strip():
        raise ConfigError(
            f"{key} {value!r} (from {said(key, source)}) begins or ends with a blank, which "
            "would become part of a folder name (a relative path: ' /data/x' is a folder "
            "named ' ' in the working directory); remove the blank")


def said(key: str, source: str) -> str:
    """Where a setting came from, as an error names it: the variable (``env DLOAD_ROOT``), the
    argument and flag (``argument cache_budget= / --cache-budget``), or the file."""
    if source == "env":
        return f"env {_ENV[key]}"
    if source == "argument":
        return f"argument {key}= / --{key.replace('_', '-')}"
    return source


def resolve_settings(check: bool = True, **explicit: Any) -> Settings:
    """Resolve every setting; ``explicit`` values (not None) win over everything else.
    ``check=False`` skips the checks of the cache dir and endpoint (``dload status`` shows
    such values before it reports what is wrong with them). TypeError for a keyword that is
    no setting (``cache_budgt``)."""
    if unknown := sorted(set(explicit) - set(KEYS)):  # a typo would fall back to a default
        raise TypeError(f"resolve_settings() got {unknown}; the settings are {', '.join(KEYS)}")
    layers: list[tuple[str, dict[str, Any]]] = [
        ("argument", {k: fs_text(v) for k, v in explicit.items() if v is not None}),
        ("env", {k: os.environ[e] for k, e in _ENV.items() if os.environ.get(e)}),
    ]
    if os.environ.get("R2_ACCOUNT_ID") and not os.environ.get("DLOAD_ENDPOINT_URL"):
        layers[1][1]["endpoint_url"] = (
            f"https://{os.environ['R2_ACCOUNT_ID']}.r2.cloudflarestorage.com"
        )
    for source, layer in layers:
        for key, value in layer.items():
            check_edges(key, value, source)
    warn_unknown_env()
    project = find_up("dload.toml")
    if project is not None:
        layers.append((str(project), _anchor_paths(_load_toml(project), project)))
    user = user_config_path()
    user_raw: dict[str, Any] = _load_toml(config_file(user)) if os.path.lexists(user) else {}
    if user_raw:
        layers.append((str(user), _anchor_paths(user_raw, user)))
    layers.append(("default", {
        "root": str(_data_home() / "dload" / "root"),
        "cache_dir": str(_cache_home() / "dload"),
        "cache_budget": "auto",
        "endpoint_url": None,
    }))
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in KEYS:
        for source, layer in layers:
            if key in layer:
                values[key] = layer[key]
                sources[key] = source
                if (key == "endpoint_url" and source == "env"
                        and not os.environ.get("DLOAD_ENDPOINT_URL")):
                    sources[key] = "env R2_ACCOUNT_ID"  # (what status shows: not DLOAD_...)
                break
    for key in _PATH_KEYS:
        if sources.get(key) == str(user) and user_raw.get(key):
            _warn_relative(user, key, local_form(user_raw[key]), values[key])
        values[key] = local_form(values[key])  # (from an argument or the environment)
    where = {k: said(k, sources.get(k, "default")) for k in KEYS}
    root = "" if values["root"] is None else str(values["root"])
    if not root.strip() or root[-1].isspace():  # " ", or anchored to a folder: "dir/ "
        raise ConfigError(f"root is empty (from {where['root']}: {root!r}); set it (--root, "
                          "DLOAD_ROOT or 'root' in dload.toml) to a directory or a URL")
    if values["cache_dir"] is None or not str(values["cache_dir"]).strip():
        raise ConfigError(
            f"cache_dir is empty (from {where['cache_dir']}): that would make "
            "the current directory the cache; give a directory, or leave cache_dir out for "
            f"the default, {_cache_home() / 'dload'}")
    if check:
        check_cache_dir(str(values["cache_dir"]), where["cache_dir"])
    if check and values["endpoint_url"] is not None:  # unused by a local root: no secret still
        check_endpoint(values["endpoint_url"], where["endpoint_url"],
                       used=root.lower().startswith("s3://"))
    budget = budget_text(values["cache_budget"], where["cache_budget"])
    if budget.lower() not in ("auto", "unlimited"):
        from dload_arrow.sizes import parse_size

        try:
            parse_size(budget, f"cache budget (from {where['cache_budget']})")
        except ConfigError as e:
            raise ConfigError(f"{e}; or use 'auto' (half the free disk) or 'unlimited'") from e
    return Settings(
        root=str(values["root"]),
        # absolute once, here: every part of a Repository (footers, shards, catalog) must
        # use one folder, whatever os.chdir() happens later
        cache_dir=str(values["cache_dir"]) if "://" in str(values["cache_dir"]) else
        os.path.abspath(os.path.expanduser(str(values["cache_dir"]))),  # (check=False: shown)
        cache_budget=budget,
        endpoint_url=values["endpoint_url"],
        sources=sources,
    )


def progress_wanted(progress: bool | None) -> bool:
    """Whether to draw a progress bar: the caller's choice, else (None) only where someone
    watches: stderr is a terminal, or the code runs in a notebook kernel (never in logs)."""
    if check_bool("", "progress", progress, none=True) is not None:
        return bool(progress)
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty()) or _in_kernel()


def progress_bar() -> Any:
    """The tqdm class to draw with: a notebook widget where ipywidgets is installed (tqdm.auto),
    else a text bar, without tqdm.auto's "IProgress not found" warning in a kernel that lacks
    it (ipywidgets is not a dependency)."""
    from importlib.util import find_spec

    if find_spec("ipywidgets") is None:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


def _in_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (not merely with ipykernel imported: a test
    run or a tool that executes notebooks imports it without being one)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    # Jupyter's shell, or one built on it (Colab's subclasses it)
    return any(c.__name__ == "ZMQInteractiveShell" for c in type(shell).__mro__)
