"""The user's ``meta``, ``recipe`` and ``parents`` of a manifest: checked before anything is
uploaded."""

from __future__ import annotations

import json
from typing import Any

from dload_arrow.errors import ConfigError, DloadError, shown, surrogate_at
from dload_arrow.store.names import check_digest, check_name

__all__ = ["check_meta", "check_parents"]


def check_meta(meta: Any, recipe: Any) -> None:
    """Refuse a ``meta`` that is not a dict of JSON values, or a ``recipe`` that is not text."""
    if meta is not None and not isinstance(meta, dict):
        raise ConfigError(
            f"meta must be a dict of JSON values, got {type(meta).__name__} {shown(meta)}; "
            "e.g. meta={'source': 'camera-3', 'license': 'CC-BY'}"
        )
    if recipe is not None and not isinstance(recipe, str):
        raise ConfigError(
            f"recipe must be text (the script that made the data, stored verbatim), got "
            f"{type(recipe).__name__} {shown(recipe)}"
        )
    try:
        json.dumps(meta or {}, sort_keys=True, allow_nan=False)  # NaN is not JSON
    except (TypeError, ValueError) as e:
        raise ConfigError(
            f"meta must be JSON-serialisable (str keys; str, finite numbers, bools, None, "
            f"lists and dicts of them): {e}"
        ) from e
    for what, text in (("recipe", recipe), ("meta", json.dumps(meta or {}, ensure_ascii=False))):
        if text is not None and (at := surrogate_at(text)) is not None:  # QA errors61: then
            raise ConfigError(  # every SQL query of the root failed (its catalog is UTF-8)
                f"{what} is not valid Unicode: it holds a lone surrogate ({text[at]!r}, at "
                f"{shown(text[max(0, at - 20):at + 20])}), as text decoded with "
                "errors='surrogateescape' does (a file, argument or name in another encoding); "
                "decode it with its encoding (open(path, encoding='latin-1')), or replace it: "
                "text.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')")
    bad = _non_str_key(meta or {})
    if bad is not None:  # JSON would store the key 1 as "1": meta would not read back as given
        raise ConfigError(f"meta keys must be str, got {bad!r} ({type(bad).__name__}) in "
                          f"{shown(meta)}; write it as {str(bad)!r}")


def _non_str_key(value: Any) -> Any:
    """The first dict key that is not a str, at any depth of ``value`` (None if none)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return k
            found = _non_str_key(v)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for v in value:
            found = _non_str_key(v)
            if found is not None:
                return found
    return None


def check_parents(parents: Any) -> None:
    """Refuse a commit's ``parents=`` that its manifest could not hold: a list of dicts, each
    with the parent's dataset ``name`` and its 64-hex ``version`` id."""
    example = "e.g. parents=[{'name': 'photos', 'version': repo.dataset('photos').version}]"
    if parents is None:
        return
    if not isinstance(parents, (list, tuple)) or not all(isinstance(p, dict) for p in parents):
        raise ConfigError(f"parents= must be a list of dicts, got {shown(parents)}; {example}")
    for p in parents:
        name, version = p.get("name"), p.get("version")
        try:
            check_name(name if isinstance(name, str) else "")
            check_digest(version if isinstance(version, str) else "", "version")
        except DloadError as e:
            raise ConfigError(
                f"parents= entry {shown(p)}: each needs 'name' (the parent's dataset) and "
                f"'version' (its full 64-hex version id): {e}; {example}") from None
