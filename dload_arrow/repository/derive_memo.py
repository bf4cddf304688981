"""The memos of ``repo.derive``: ``derived/<fingerprint>.<name>`` (JSON ``{"name", "version",
"fingerprint", "options"}``), found, reused (under another name: the same shards in a new
manifest), checked against a concurrent rm + gc, written and cleared (see ``derive.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import ConflictError, NotFoundError
from dload_arrow.store.commit import Version
from dload_arrow.store.manifest import Manifest, build_manifest
from dload_arrow.store.names import check_name, manifest_path, shard_path
from dload_arrow.store.publish import store_manifest
from dload_arrow.store.refs import RefValue, move_ref, read_ref
from dload_arrow.store.replaced import warn_rolled_back

if TYPE_CHECKING:
    from dload_arrow.repository.repository import Repository

__all__ = ["forget_others", "memo_path", "memoized", "write_memo"]

_PREFIX = "derived/"


def memo_path(fingerprint: str, name: str) -> str:
    """``derived/<fingerprint>.<name>``: one memo per pipeline and derived dataset."""
    return f"{_PREFIX}{fingerprint}.{check_name(name)}"


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


def memoized(repo: Repository, name: str, fp: str, options: str,
              meta: dict[str, Any] | None, recipe: str | None) -> Version | None:
    """The memo of ``fp`` published as ``name``; ``meta``/``recipe`` None keep the memo's."""
    for memo in _memos(repo, fp, name):
        if memo.get("options") != options:
            continue
        src = _stored(repo, memo)
        if src is None:
            continue
        # meta/recipe omitted: this name's memo keeps its own; another name's gives only its
        # "derived" record (not its owner's meta and recipe: the id is the fresh derive's)
        mine = src.name == name
        want = {**((src.meta if mine else {}) if meta is None else meta),
                "derived": src.meta.get("derived")}
        text = recipe if recipe is not None or not mine else src.recipe
        same = src.name == name and src.meta == want and src.recipe == text
        got = (src, 0) if same else _republish(repo, src, name, want, text)
        if got is None:
            continue
        m, wrote = got
        rep: list[RefValue | None] = []
        move_ref(repo.storage, name, "latest", m.version, action="derive", unless_there=True,
                 replaced=rep)
        if rep and rep[0] is not None:
            warn_rolled_back(name, rep[0].version, m, lambda v: repo.manifest(name, v))
        if not _kept(repo, name, m):
            continue  # removed and collected meanwhile: the pipeline runs (and commits)
        if memo["name"] != name or memo["version"] != m.version:
            write_memo(repo, name, m.version, fp, options)
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


def write_memo(repo: Repository, name: str, version: str, fp: str, options: str) -> None:
    record = {"name": name, "version": version, "fingerprint": fp, "options": options}
    repo.storage.write(memo_path(fp, name), json.dumps(record, sort_keys=True).encode())




def forget_others(repo: Repository, fp: str, name: str) -> None:
    """Delete the memos of ``fp`` under names other than ``name``: ``force=True`` ran the
    pipeline again because something it reads changed, so their rows are stale."""
    own = memo_path(fp, name)
    for obj in repo.storage.list(_PREFIX):
        if obj.path != own and obj.path.startswith(f"{_PREFIX}{fp}."):
            repo.storage.delete(obj.path)
