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
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import check_bool
from dload_arrow.errors import ConfigError, ConflictError, NotFoundError, SchemaError
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import chunk_items
from dload_arrow.pipeline.fingerprint import fingerprint
from dload_arrow.store.commit import Version, commit_samples
from dload_arrow.store.manifest import Manifest, build_manifest, check_meta
from dload_arrow.store.names import KEY_COLUMN, check_name, manifest_path, shard_path
from dload_arrow.store.publish import store_manifest
from dload_arrow.store.refs import move_ref, read_ref

if TYPE_CHECKING:
    from dload_arrow.repository.repository import Repository

__all__ = ["derive", "memo_path"]

_EPOCH = 0  # derive always runs epoch 0: the result must not depend on how often it ran
_PREFIX = "derived/"
_NO_BATCH = "map items to dicts (and do not batch) before deriving"


def memo_path(fingerprint: str, name: str) -> str:
    """``derived/<fingerprint>.<name>``: one memo per pipeline and derived dataset."""
    return f"{_PREFIX}{fingerprint}.{check_name(name)}"


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


def _read_memo(repo: Repository, path: str, fp: str) -> dict[str, Any] | None:
    try:
        memo = json.loads(repo.storage.read(path))
    except (NotFoundError, ValueError):
        return None
    if not isinstance(memo, dict) or memo.get("fingerprint") != fp:
        return None
    if not isinstance(memo.get("name"), str) or not isinstance(memo.get("version"), str):
        return None
    return memo


def _memos(repo: Repository, fp: str, name: str) -> Iterator[dict[str, Any]]:
    """This name's memo first, then the memos of the same pipeline under other names."""
    own = memo_path(fp, name)
    memo = _read_memo(repo, own, fp)
    if memo is not None:
        yield memo
    for obj in repo.storage.list(_PREFIX):
        if obj.path != own and obj.path.startswith(f"{_PREFIX}{fp}."):
            memo = _read_memo(repo, obj.path, fp)
            if memo is not None:
                yield memo


def _stored(repo: Repository, memo: dict[str, Any]) -> Manifest | None:
    try:
        name, vid = check_name(memo["name"]), memo["version"]
        if not repo.storage.exists(manifest_path(name, vid)):
            return None
        return repo.manifests.get(name, vid)
    except (NotFoundError, ValueError):
        return None


def _republish(repo: Repository, src: Manifest, name: str, meta: dict[str, Any],
               recipe: str | None) -> tuple[Manifest, int] | None:
    """``src``'s shards as a version of ``name`` with ``meta``/``recipe`` (no shard uploaded)
    and the manifest bytes written (0: stored already); None when a concurrent rm + gc
    removed them."""
    m = build_manifest(name, src.schema, src.table, keys_sorted=src.keys_sorted, meta=meta,
                       recipe=recipe, parents=src.parents, key_index=src.key_index,
                       settings=src.info.get("settings"))
    path = manifest_path(name, m.version)
    wrote = store_manifest(repo.storage, m)
    # Stored first, then touched: a gc either sees this manifest or finds the shards young.
    intact = all(repo.storage.touch(shard_path(d)) for d in src.digests())
    if not intact:
        if wrote:
            repo.storage.delete(path)
        return None
    return m, wrote


def _memoized(repo: Repository, name: str, fp: str, options: str,
              meta: dict[str, Any] | None, recipe: str | None) -> Version | None:
    """The memo of ``fp`` published as ``name``; ``meta``/``recipe`` None keep the memo's."""
    for memo in _memos(repo, fp, name):
        if memo.get("options") != options:
            continue
        src = _stored(repo, memo)
        if src is None:
            continue
        want = src.meta if meta is None else {**meta, "derived": src.meta.get("derived")}
        text = src.recipe if recipe is None else recipe
        same = src.name == name and src.meta == want and src.recipe == text
        got = (src, 0) if same else _republish(repo, src, name, want, text)
        if got is None:
            continue
        m, wrote = got
        move_ref(repo.storage, name, "latest", m.version, action="derive", unless_there=True)
        if not _kept(repo, name, m):
            continue  # removed and collected meanwhile: the pipeline runs (and commits)
        if memo["name"] != name or memo["version"] != m.version:
            _write_memo(repo, name, m.version, fp, options)
        return Version(name=name, version=m.version, num_rows=m.num_rows,
                       shards_total=len(m.shards), shards_uploaded=0,
                       bytes_total=m.num_bytes, bytes_uploaded=wrote, seconds=0.0, manifest=m,
                       manifest_bytes_uploaded=wrote)
    return None


def _kept(repo: Repository, name: str, m: Manifest) -> bool:
    """Whether ``m`` is still stored now that ``latest`` points at it, as a commit checks
    (``store/publish.py``): an rm of it may have run between the memo's check and the move.
    While latest still points here, derive wins: the same bytes restore exactly this version
    and its shards are touched (stored first, then touched, as in :func:`_republish`); False
    when a gc collected one meanwhile (the pipeline runs again). Once the rm has moved latest
    away, the rm wins: ConflictError."""
    path = manifest_path(name, m.version)
    if repo.storage.exists(path):
        return True
    ref = read_ref(repo.storage, name, "latest")
    if ref is None or ref.version != m.version:
        raise ConflictError(
            f"derive of {name!r}: the version it reused ({m.version[:12]}) was removed (rm) "
            "just as latest moved to it, and latest moved away from it; derive again")
    repo.manifests.forget(m.version)
    wrote = store_manifest(repo.storage, m)
    if all(repo.storage.touch(shard_path(d)) for d in m.digests()):
        return True
    if wrote:  # it lists shards gc deleted: the commit of the pipeline's rows replaces it
        repo.storage.delete(path)
    return False


def _write_memo(repo: Repository, name: str, version: str, fp: str, options: str) -> None:
    record = {"name": name, "version": version, "fingerprint": fp, "options": options}
    repo.storage.write(memo_path(fp, name), json.dumps(record, sort_keys=True).encode())


def _one_key(key: Any, position: int) -> str:
    if isinstance(key, list | tuple | np.ndarray | pa.Array | pa.ChunkedArray):
        raise SchemaError(
            f"derive needs one row per item, but the item at position {position} is a batch "
            f"(its {KEY_COLUMN} holds {len(key)} keys); {_NO_BATCH}, or unbatch() after batch()"
        )
    return str(key)


def _rows(pipe: Pipeline) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, sample) pairs of epoch 0; items without ``__key__`` get their position."""
    view = pipe.skip(0)  # its own cursor: a state loaded into ``pipe`` must not move epoch 0
    view.set_epoch(_EPOCH)
    k = 0
    for chunk in view.iter_chunks():
        for item in chunk_items(chunk):
            if not isinstance(item, dict):
                raise SchemaError(
                    f"derive needs dict items (one row each), got {type(item).__name__} at "
                    f"position {k}; {_NO_BATCH}"
                )
            row = dict(item)
            key = row.pop(KEY_COLUMN, None)
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
    check_bool("derive", "force", force)
    unknown = sorted(set(commit_kwargs) - _COMMIT_OPTIONS)
    if unknown:
        raise TypeError(f"derive({name!r}) got unexpected keyword argument(s) {unknown}; it "
                        f"takes meta, recipe, progress, force and {sorted(_COMMIT_OPTIONS)}")
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
        found = _memoized(repo, name, fp, options, None if meta is None else dict(meta), recipe)
        if found is not None:
            return found
    parents = []
    for src in pipe.sources():
        entry = {"name": src.name, "version": src.version, "relation": "derive",
                 "fingerprint": fp}
        if entry not in parents:
            parents.append(entry)
    meta = {**(meta or {}), "derived": {"fingerprint": fp, "pipeline": repr(pipe)}}
    if commit_kwargs.get("schema") is None and pipe.schema is not None:
        # rows as stored (no map): their types, not ones inferred from Python values (an
        # int8 column would become int64, an all-null one the type null)
        commit_kwargs = {**commit_kwargs, "schema": pipe.schema}
    latest, listed = repo._listed_shards(name)  # what repo.commit does, logged as derive
    version = commit_samples(repo.storage, name, _rows(pipe), meta=meta, recipe=recipe,
                             parents=parents, progress=progress, protected=listed,
                             protected_by=latest, action="derive", **commit_kwargs)
    _write_memo(repo, name, version.version, fp, options)
    return version
