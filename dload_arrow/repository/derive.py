"""``repo.derive(name, pipe)``: run a finite deterministic pipeline once, commit it, memoize.

The memo ``derived/<fingerprint>.<name>`` (JSON ``{"name", "version", "fingerprint",
"options"}``) maps a pipeline's definition, and the dataset it was derived as, to the version
it produced; ``options`` is a digest of the commit arguments that shape the shards
(``shard_size``, ``row_group_size``, ``schema``...). A second derive of the same pipeline, in
this process or on another machine against the same root, finds the memo and returns that
version without computing, after pointing ``latest`` of ``name`` back at it if another commit
moved it: ``repo.dataset(name)`` is the derived data once ``derive`` returns.

The rows are the same whatever the name, ``meta`` or ``recipe``, so a memo under another name,
or made with another ``meta``/``recipe``, is reused too: a new manifest lists the same shards
(like a commit of the same samples: nothing is encoded or uploaded) with the new name and meta.
Its shards are touched after the manifest is stored, as a commit reusing shards does, so a
concurrent ``gc`` cannot delete them unseen (``store/publish.py``).

Concurrent derives of one pipeline commit the same content-addressed version (the pipeline is
deterministic) and write the same memo. ``repo.rm`` of the dataset clears its memos
(``Repository._clear_memos`` reads the same JSON).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import check_bool
from dload_arrow.errors import ConfigError, SchemaError, shown, user_stacklevel
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import chunk_items
from dload_arrow.pipeline.fingerprint import fingerprint
from dload_arrow.repository.derive_memo import forget_others, memoized, write_memo
from dload_arrow.storage import redact_url
from dload_arrow.store.commit import Version, commit_samples
from dload_arrow.store.manifest import check_meta
from dload_arrow.store.names import KEY_COLUMN, check_name
from dload_arrow.store.refs import read_ref

if TYPE_CHECKING:
    from dload_arrow.repository.repository import Repository

__all__ = ["derive"]

_EPOCH = 0  # derive always runs epoch 0: the result must not depend on how often it ran
_NO_BATCH = "map items to dicts (and do not batch) before deriving"


_COMMIT_OPTIONS = frozenset({"shard_size", "row_group_size", "schema"})
"""The :meth:`Repository.commit` arguments derive passes on."""


def _as_pipeline(name: str, pipe: Any) -> Pipeline:
    """A Pipeline as given; a Dataset (or a ``where()`` view) as its default pipeline."""
    if isinstance(pipe, Pipeline):
        return pipe
    make = getattr(pipe, "pipeline", None)
    if callable(make) and hasattr(pipe, "manifest"):
        made = make()
        if isinstance(made, Pipeline):
            return made
    raise TypeError(f"derive({name!r}) needs a Pipeline or a Dataset (e.g. "
                    f"ds.where(...).map(fn)), got {type(pipe).__name__}")


def _options(commit_kwargs: dict[str, Any]) -> str:
    """A digest of the commit arguments that change the stored shards."""

    def text(v: Any) -> str:
        return v.serialize().to_pybytes().hex() if isinstance(v, pa.Schema) else repr(v)

    raw = json.dumps(commit_kwargs, sort_keys=True, default=text)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _one_key(key: Any, position: int) -> str:
    """An item's ``__key__`` as commit takes keys: text, or an integer (as its digits)."""
    if isinstance(key, np.ndarray) and key.ndim == 0:
        key = key.item()
    if isinstance(key, list | tuple | np.ndarray | pa.Array | pa.ChunkedArray):
        raise SchemaError(
            f"derive needs one row per item, but the item at position {position} is a batch "
            f"(its {KEY_COLUMN} holds {len(key)} keys); {_NO_BATCH}, or unbatch() after batch()"
        )
    if isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_):
        return str(int(key))
    if not isinstance(key, str) or not key:
        raise SchemaError(
            f"derive: the item at position {position} has {KEY_COLUMN} {shown(key)}; keys "
            "must be non-empty strings (or integers): map() it to one (bytes: "
            "k.decode())")
    return key


def _rows(pipe: Pipeline, name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, sample) pairs of epoch 0; items without ``__key__`` get their position."""
    view = pipe.skip(0)  # its own cursor: a state loaded into ``pipe`` must not move epoch 0
    view.set_epoch(_EPOCH)
    k = 0
    warned = not pipe.sources()  # rows of from_iterable() have no keys to lose
    for chunk in view.iter_chunks():
        for item in chunk_items(chunk):
            if not isinstance(item, dict):
                raise SchemaError(
                    f"derive needs dict items (one row each), got {type(item).__name__} at "
                    f"position {k}; {_NO_BATCH}"
                )
            row = dict(item)
            key = row.pop(KEY_COLUMN, None)
            if key is None and not warned:  # (QA eng58: the sources' keys lost, unsaid)
                warned = True
                warnings.warn(
                    f"derive({name!r}): the pipeline's items carry no {KEY_COLUMN} (a select() "
                    "without it, or a map returning a new dict), so the rows are keyed by "
                    "position (000000000000, ...) and cannot be joined back to the sources' "
                    f"keys; to keep them, select([{KEY_COLUMN!r}, ...]) or return "
                    f"r[{KEY_COLUMN!r}] from the map", stacklevel=user_stacklevel())
            yield (_one_key(key, k) if key is not None else f"{k:012d}"), row
            k += 1


def derive(
    repo: Repository,
    name: str,
    pipe: Pipeline | Any,
    *,
    meta: dict[str, Any] | None = None,
    recipe: str | None = None,
    progress: bool = False,
    force: bool = False,
    **commit_kwargs: Any,
) -> Version:
    """Commit the rows of ``pipe`` (epoch 0) as ``name``, once per pipeline definition.

    The fingerprint (:mod:`dload_arrow.pipeline.fingerprint`) covers the sources' versions,
    the operators and their parameters, and the code the pipeline runs: functions, their
    defaults, closures and the globals they read (helper functions recursively), with values
    such as lists, dicts and numpy arrays by content. Modules, classes and other objects are
    named only: their state is not hashed. Pass ``force=True`` when something the
    fingerprint cannot see changed (a file the code reads, an object's attributes).

    Args:
        name: the dataset to create (a new version of it); ``latest`` points at the result.
        pipe: a finite, deterministic pipeline of row dicts (not batches), or a Dataset or
            ``where()`` view (its rows as they are).
        meta, recipe: stored in the manifest like :meth:`Repository.commit`; changing them
            makes a new version over the same shards, without computing (omitted: a memo
            keeps its own).
        progress: show a progress bar while committing.
        force: run and commit the pipeline even if it is memoized (and replace the memo).
        commit_kwargs: passed to :meth:`Repository.commit` (shard_size, row_group_size, ...).

    Returns:
        The version; ``shards_uploaded == 0`` and ``seconds == 0`` when it was memoized.

    Raises:
        ValueError: the pipeline may never end.
        SchemaError: an item is not a dict, or is a batch (``__key__`` holds several keys).
    """
    check_name(name)
    pipe = _as_pipeline(name, pipe)
    check_meta(meta, recipe)
    if meta and "derived" in meta:
        raise ConfigError(f"derive({name!r}): meta key 'derived' is derive's own record (the "
                          "pipeline's fingerprint and description); name yours otherwise")
    check_bool("derive", "force", force)
    unknown = sorted(set(commit_kwargs) - _COMMIT_OPTIONS)
    if unknown:
        takes = ", ".join(["meta", "recipe", "progress", "force", *sorted(_COMMIT_OPTIONS)])
        raise TypeError(f"derive({name!r}) got unexpected keyword argument(s) "
                        f"{', '.join(unknown)}; it takes {takes}")
    if not pipe.finite:
        raise ConfigError(
            f"derive({name!r}) needs a finite pipeline, but {pipe!r} may never end; "
            "add .take(n), give repeat() a count, or declare a generator function's "
            "iterators finite: from_iterable(fn, finite=True)"
        )
    if pipe.op == "batch":
        raise SchemaError(f"derive({name!r}) needs one row per item, but {pipe!r} ends with "
                          f"batch(); {_NO_BATCH}, or add .unbatch()")
    fp = fingerprint(pipe)  # now, not the pipeline's cached value: globals may have changed
    options = _options(commit_kwargs)
    if not force:
        if read_ref(repo.storage, name, "latest") is None:  # a memo is published as a new
            repo._new_name(name)  # dataset too: its name checked as a commit's is
        found = memoized(repo, name, fp, options, None if meta is None else dict(meta), recipe)
        if found is not None:
            return found
    parents = []
    for src in pipe.sources():
        other = getattr(getattr(src, "ds", None), "repo", repo).storage.url
        if other != repo.storage.url:  # its lineage would name a version this root never held
            raise ConfigError(
                f"derive({name!r}) reads {src.name!r} of another root ({redact_url(other)}); "
                f"derive in that root, or commit the rows here (repo.commit({name!r}, "
                "pipe, ...)) without lineage")
        entry = {"name": src.name, "version": src.version, "relation": "derive",
                 "fingerprint": fp}
        if entry not in parents:
            parents.append(entry)
    # (a default repr's address would make the id another in every process)
    shown = re.sub(r" at 0x[0-9a-fA-F]+", "", repr(pipe))
    meta = {**(meta or {}), "derived": {"fingerprint": fp, "pipeline": shown}}
    if commit_kwargs.get("schema") is None and pipe.schema is not None:
        # rows as stored (no map): their types, not ones inferred from Python values (an
        # int8 column would become int64, an all-null one the type null)
        commit_kwargs = {**commit_kwargs, "schema": pipe.schema}
    latest, listed = repo._listed_shards(name)  # what repo.commit does, logged as derive
    try:
        version = commit_samples(repo.storage, name, _rows(pipe, name), meta=meta, recipe=recipe,
                                 parents=parents, progress=progress, protected=listed,
                                 protected_by=latest, action="derive", **commit_kwargs)
    except SchemaError as e:  # the commit's advice (tables, `key=`) does not fit a pipeline
        if "duplicate keys" not in str(e):
            raise
        raise SchemaError(f"{str(e).split(';')[0]}; the pipeline gives some keys more than "
                          "once (a repeat(), a concat of overlapping sources, a map that sets "
                          "__key__): map __key__ to unique keys (e.g. add the epoch or source), "
                          "or drop __key__ and the items are numbered by position") from e
    if commit_kwargs.get("schema") is None:
        _warn_widened(name, pipe, version.manifest.schema)
    write_memo(repo, name, version.version, fp, options)
    if force:
        forget_others(repo, fp, name)
    return version


def _family(t: pa.DataType) -> str | None:
    for test, fam in ((pa.types.is_integer, "int"), (pa.types.is_floating, "float"),
                      (pa.types.is_timestamp, "time"), (pa.types.is_duration, "duration")):
        if test(t):
            return fam
    return None


def _warn_widened(name: str, pipe: Pipeline, stored: pa.Schema) -> None:
    """Warn when a column kept its source's name and kind but not its type: after a ``map``
    the rows are Python values, whose types are inferred again (``uint8`` labels become
    ``int64``, ``float32`` features ``float64``: QA evolve56)."""
    was: dict[str, pa.DataType] = {}
    for src in pipe.sources():
        for f in getattr(src, "schema", None) or []:
            was.setdefault(f.name, f.type)
    changed = [f"{f.name} {was[f.name]} -> {f.type}" for f in stored
               if f.name in was and not f.type.equals(was[f.name])
               and _family(f.type) is not None and _family(f.type) == _family(was[f.name])]
    if changed:
        warnings.warn(
            f"derive({name!r}) stored {', '.join(changed)}: the pipeline's rows are Python "
            "values, so their types were inferred again; to keep the sources' types, derive "
            "again with schema= (the source's schema and your new columns) and force=True",
            stacklevel=user_stacklevel())
