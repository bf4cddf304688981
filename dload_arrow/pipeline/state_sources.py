"""The dataset versions a state was saved on (``"datasets"``: ``["name@<16 hex>", ...]``), so
that a resume never continues an epoch on another version, ``strict=False`` included: the
fingerprint alone cannot tell a fixed function (``strict=False``'s purpose) from an append
that moved ``latest`` (QA continual61: 52 rows twice and 35 never, silently)."""

from __future__ import annotations

import warnings
from typing import Any

from dload_arrow.errors import ConfigError, user_stacklevel

__all__ = ["SOURCES", "check_sources", "source_versions", "with_sources"]

SOURCES = "datasets"
_ID = 16  # hex digits of a version id kept: enough to tell versions apart, a small state


def source_versions(pipe: Any) -> list[str]:
    """``name@version`` of each dataset a pipeline reads, in the order it meets them."""
    found: dict[str, None] = {}

    def walk(p: Any) -> None:
        if getattr(p, "op", None) == "dataset":
            params = p._params()
            found[f"{params['dataset']}@{str(params['version'])[:_ID]}"] = None
        for c in getattr(p, "_children", ()):
            walk(c)

    walk(pipe)
    return list(found)


def with_sources(state: dict[str, Any], pipe: Any) -> dict[str, Any]:
    """``state`` with the versions ``pipe`` reads (none added for a pipeline of no dataset)."""
    versions = source_versions(pipe)
    return {**state, SOURCES: versions} if versions else state


def check_sources(pipe: Any, state: Any, at_start_ok: bool = True,
                  strict: bool = True) -> None:
    """ConfigError when ``state`` was saved on other dataset versions than ``pipe`` reads
    (whatever ``strict``): the rest of that epoch would repeat rows and miss others. A state
    at an epoch's start (saved at the end of the one before) resumes nothing: let through,
    unless ``at_start_ok`` is False (a worker's snapshot inside a loader's state, which may
    be older than the items the loader counted since: QA review61e). A state that records no
    versions (an older dload_arrow's) of another pipeline, loaded with ``strict=False``, is
    warned about: an append since cannot be told from a fixed function (QA pack62)."""
    saved = state.get(SOURCES) if isinstance(state, dict) else None
    if at_start_ok and isinstance(state, dict) and _at_epoch_start(state):
        return
    if not isinstance(saved, list) or not saved:
        if not strict and isinstance(state, dict):
            _warn_unversioned(pipe, state)
        return  # (a state saved before versions were recorded: the fingerprint decides)
    now = source_versions(pipe)
    if sorted(map(str, saved)) == sorted(now):
        return
    by_name: dict[str, tuple[list[str], list[str]]] = {}
    for s in saved:
        by_name.setdefault(str(s).rsplit("@", 1)[0], ([], []))[0].append(str(s))
    for s in now:
        by_name.setdefault(s.rsplit("@", 1)[0], ([], []))[1].append(s)
    moved = [(n, old, new) for n, (old, new) in by_name.items()
             if old and new and sorted(old) != sorted(new)]
    if not moved:
        return  # another set of datasets: the fingerprint (strict) tells that apart
    name, old, new = moved[0]
    gone = sorted(set(old) - set(new)) or old
    vid = gone[0].rsplit("@", 1)[1]
    raise ConfigError(
        f"this state was saved while reading {', '.join(old)} and this pipeline reads "
        f"{', '.join(new)} (a commit or append moved latest since the checkpoint, or a "
        "dload.lock pin or a version given picks another one): resuming "
        "would repeat some rows of the epoch and miss others, strict=False or not; finish "
        f"that epoch on the version it began with, repo.dataset({name!r}, {vid!r}), if it is "
        f"still stored (an `rm` removes it for good: `dload versions {name}` lists the ones "
        "left; tag or pin the versions checkpointed jobs resume on), or start a new epoch on "
        "the new version without the state")


def _warn_unversioned(pipe: Any, state: dict[str, Any]) -> None:
    from dload_arrow.pipeline.iterator import FINGERPRINT

    now = source_versions(pipe)
    fp = state.get(FINGERPRINT)
    if not now or fp is None or fp == pipe.fingerprint()[:16]:
        return
    warnings.warn(
        "load_state_dict(strict=False): this state records no dataset versions (it was saved "
        f"by an older dload_arrow) and another pipeline's fingerprint; this pipeline reads "
        f"{', '.join(now)}. If a commit or append moved latest since the checkpoint, the rest "
        "of the epoch repeats some rows and misses others: resume on the version the "
        "checkpoint read (repo.dataset(name, version)), or start a new epoch without the "
        "state", stacklevel=user_stacklevel())


def _at_epoch_start(state: dict[str, Any]) -> bool:
    """Whether a pipeline or torch state points at the start of an epoch."""
    if "cursor" in state:
        return state["cursor"] is None
    return state.get("position") == 0 and not state.get("yielded")
