"""``repo.derive(name, pipe)``: run a finite deterministic pipeline once, commit it, memoize.

The memo ``derived/<fingerprint>`` (JSON ``{"name", "version", "fingerprint"}``) maps the
pipeline's definition to the version it produced. A second derive of the same pipeline, in
this process or on another machine against the same root, finds the memo and returns that
version without computing. Concurrent derives race on ``put_if_absent`` of the memo: one wins
and every caller returns the winner's version (a deterministic pipeline gives the same rows,
so the commits are the same content-addressed version anyway). ``repo.rm`` of the dataset
clears its memos (``Repository._clear_memos`` reads the same JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import NotFoundError
from dload_arrow.pipeline.chunks import chunk_items
from dload_arrow.store.commit import Version
from dload_arrow.store.names import KEY_COLUMN, check_name, manifest_path

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline
    from dload_arrow.repository.repository import Repository

__all__ = ["derive", "memo_path"]

_EPOCH = 0  # derive always runs epoch 0: the result must not depend on how often it ran


def memo_path(fingerprint: str) -> str:
    return f"derived/{fingerprint}"


def _read_memo(repo: Repository, path: str) -> dict[str, Any] | None:
    try:
        memo = json.loads(repo.storage.read(path))
    except NotFoundError:
        return None
    except ValueError:
        return None
    if not isinstance(memo, dict) or "name" not in memo or "version" not in memo:
        return None
    return memo


def _existing(repo: Repository, memo: dict[str, Any]) -> Version | None:
    name, vid = memo["name"], memo["version"]
    try:
        check_name(name)
        if not repo.storage.exists(manifest_path(name, vid)):
            return None
        m = repo.manifest(name, vid)
    except (NotFoundError, ValueError):
        return None
    return Version(name=name, version=vid, num_rows=m.num_rows, shards_total=len(m.shards),
                   shards_uploaded=0, bytes_total=m.num_bytes, bytes_uploaded=0, seconds=0.0,
                   manifest=m)


def _rows(pipe: Pipeline) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, sample) pairs of epoch 0; items without ``__key__`` get their position."""
    pipe.set_epoch(_EPOCH)
    k = 0
    for chunk in pipe.iter_chunks():
        for item in chunk_items(chunk):
            if not isinstance(item, dict):
                raise TypeError(
                    f"derive needs dict items (one row each), got {type(item).__name__} at "
                    f"position {k}; map items to dicts (and do not batch) before deriving"
                )
            row = dict(item)
            key = row.pop(KEY_COLUMN, None)
            yield (str(key) if key is not None else f"{k:012d}"), row
            k += 1


def derive(
    repo: Repository,
    name: str,
    pipe: Pipeline,
    *,
    meta: dict[str, Any] | None = None,
    recipe: str | None = None,
    progress: bool = False,
    **commit_kwargs: Any,
) -> Version:
    """Commit the rows of ``pipe`` (epoch 0) as ``name``, once per pipeline definition.

    Args:
        repo: the repository.
        name: the dataset to create (a new version of it).
        pipe: a finite, deterministic pipeline of row dicts.
        meta, recipe: stored in the manifest like :meth:`Repository.commit`.
        progress: show a progress bar while committing.
        commit_kwargs: passed to :meth:`Repository.commit` (shard_size, row_group_size, ...).

    Returns:
        The version; ``shards_uploaded == 0`` and ``seconds == 0`` when it was memoized.
    """
    check_name(name)
    if not pipe.finite:
        raise ValueError(
            f"derive({name!r}) needs a finite pipeline, but {pipe!r} may never end; "
            "add .take(n) or give repeat() a count"
        )
    fp = pipe.fingerprint()
    path = memo_path(fp)
    memo = _read_memo(repo, path)
    if memo is not None:
        found = _existing(repo, memo)
        if found is not None:
            return found
    parents = []
    for src in pipe.sources():
        entry = {"name": src.name, "version": src.version, "relation": "derive",
                 "fingerprint": fp}
        if entry not in parents:
            parents.append(entry)
    info = {"fingerprint": fp, "pipeline": repr(pipe)}
    version = repo.commit(name, _rows(pipe), meta={**(meta or {}), "derived": info},
                          recipe=recipe, parents=parents, progress=progress, **commit_kwargs)
    record = json.dumps({"name": name, "version": version.version, "fingerprint": fp},
                        sort_keys=True).encode()
    if not repo.storage.put_if_absent(path, record):
        winner = _read_memo(repo, path)
        found = None if winner is None else _existing(repo, winner)
        if found is not None:
            return found
        repo.storage.write(path, record)  # the memo pointed at a removed version: replace it
    return version
