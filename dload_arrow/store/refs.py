"""Refs (mutable pointers such as ``latest`` and tags) and their append-only log.

A ref is a small JSON object ``{"version", "seq"}`` moved by compare-and-swap. After each
successful move an entry ``log/<ref>/<seq>.json`` records who moved it, when, from and to.
The log is written after the move, so a crash in between leaves a gap in ``seq`` that
readers can see (filled when the same move is made again: :func:`log_lost_move`); it can never
record a move that did not happen.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from dataclasses import dataclass

from dload_arrow.errors import (
    ConflictError,
    DloadError,
    IntegrityError,
    NotFoundError,
    StorageError,
)
from dload_arrow.storage import Storage, redact_url
from dload_arrow.store.names import check_digest, check_name, check_ref
from dload_arrow.store.ref_log import LogEntry, append_log, is_log_entry, last_seq, read_log

__all__ = [
    "LogEntry", "RefValue", "delete_ref", "is_log_entry", "list_refs", "move_ref", "read_log",
    "read_ref",
]

_MAX_TRIES = 64
_SETTLED_S = 60.0  # a ref moved longer ago whose log entry is missing: its writer is gone


@dataclass(frozen=True)
class RefValue:
    """Where a ref points and how many times it has moved."""

    version: str
    seq: int


def _ref_path(name: str, ref: str) -> str:
    return f"datasets/{check_name(name)}/refs/{check_ref(ref)}"


def _parse(data: bytes, where: str, storage: Storage | None = None) -> RefValue:
    try:
        obj = json.loads(data)
        seq = int(obj["seq"])
        if not 0 <= seq < 2**63:
            raise ValueError(f"seq {seq} is out of range")
        return RefValue(check_digest(obj["version"], f"version in {where}"), seq)
    except (ValueError, KeyError, TypeError, DloadError, RecursionError, OverflowError) as e:
        raise IntegrityError(_damaged(where, e, storage)) from e  # (the last two: QA hostile65)


def _damaged(path: str, error: BaseException, storage: Storage | None) -> str:
    """Why the ref object at ``path`` does not read, and how to mend it: written outside
    dload (a copy cut short, an edit); a ref is never written partly."""
    _, name, _, ref = path.split("/", 3)
    root = f" under {redact_url(storage.url)}" if storage is not None else ""
    mend = (f"restore it with `dload tag {name}@VERSION latest`, VERSION being what `dload "
            f"sql \"select version from log where name = '{name}' and ref = 'latest' order by "
            "seq desc limit 1\"` says" if ref == "latest" else
            f"tag the version again (`dload tag {name}@VERSION {ref}`)")
    return (f"{path}{root} is not a valid ref ({error}): the object was changed outside "
            f"dload; delete it, then {mend}")


def read_ref(storage: Storage, name: str, ref: str = "latest") -> RefValue | None:
    """The ref's value, or None when it does not exist."""
    got = storage.read_with_token(_ref_path(name, ref))
    return None if got is None else _parse(got[0], _ref_path(name, ref), storage)


def list_refs(storage: Storage, name: str) -> dict[str, RefValue]:
    """Every ref of a dataset by name."""
    prefix = f"datasets/{check_name(name)}/refs/"
    out = {}
    for obj in storage.list(prefix):
        ref = obj.path[len(prefix) :]
        try:
            check_ref(ref)
        except DloadError:  # not dload's (a Finder's .DS_Store): passed over (QA hostile65)
            continue
        value = read_ref(storage, name, ref)
        if value is not None:
            out[ref] = value
    return out


def move_ref(
    storage: Storage,
    name: str,
    ref: str,
    version: str,
    *,
    action: str = "commit",
    only_if: str | None = None,
    unless_there: bool = False,
    only_if_absent: bool = False,
    replaced: list[RefValue | None] | None = None,
) -> RefValue:
    """Point ``ref`` at ``version`` by compare-and-swap, retrying on contention.

    ``only_if``: move only while the ref still points there (used by rm to step back);
    a mismatch raises ConflictError instead of retrying. ``unless_there``: when the ref
    already points at ``version``, leave it (and the log) alone: a commit of identical
    samples is a no-op. ``only_if_absent``: create it only (a lost ``latest`` restored),
    ConflictError when it exists. ``replaced``, when given, gets the value this move
    replaced (None: the ref was new), read in the swap itself: another writer's move just
    before is seen (QA shell59: two tags at once both said "new").
    """
    path = _ref_path(name, ref)
    check_digest(version, "version id")
    tried: tuple[bytes, RefValue, RefValue | None] | None = None  # a swap said to have failed
    writer = secrets.token_hex(8)  # tells this move's own write from another's
    for attempt in range(_MAX_TRIES):
        got = storage.read_with_token(path)
        if tried is not None and got is not None and got[0] == tried[0]:
            # The ref holds what the last swap sent (its writer nonce: no one else's): the
            # store applied it, then answered an error, and the retried request lost to it.
            if replaced is not None:
                replaced.append(tried[2])
            return _logged(storage, name, ref, tried[1], tried[2], action)
        old = None if got is None else _parse(got[0], path, storage)
        if unless_there and old is not None and old.version == version:
            if replaced is not None:
                replaced.append(old)
            log_lost_move(storage, name, ref, old, action)
            return old
        if only_if is not None and (old is None or old.version != only_if):
            raise ConflictError(f"ref {name}:{ref} moved concurrently; retry the operation")
        if only_if_absent and old is not None:
            raise ConflictError(f"ref {name}:{ref} exists (it points at {old.version[:12]}): "
                                "another writer published meanwhile; nothing to restore")
        new = RefValue(version, (old.seq if old else last_seq(storage, name, ref)) + 1)
        body = json.dumps({"version": new.version, "seq": new.seq, "writer": writer},
                          sort_keys=True).encode()
        try:
            swapped = storage.compare_and_swap(path, body, None if got is None else got[1])
        except StorageError as e:  # the store may have applied it (QA s3fault61)
            if storage.local_path(path) is not None:  # a local root refused it: not moved
                raise StorageError(f"{e}; {name}:{ref} did not move") from e  # (QA perms66)
            raise StorageError(f"{e}; whether {name}:{ref} moved to {version[:12]} is unknown "
                               f"(the store did not answer): "
                               f"{_settle(name, ref, version, action)}") from e
        if swapped:
            if replaced is not None:
                replaced.append(old)
            return _logged(storage, name, ref, new, old, action)
        tried = (body, new, old)
        time.sleep(min(0.5, 0.005 * 2**attempt) * random.random())
    raise ConflictError(
        f"could not move {name}:{ref} after {_MAX_TRIES} tries: too many concurrent writers; "
        "retry the commit"
    )


def _logged(storage: Storage, name: str, ref: str, new: RefValue, old: RefValue | None,
            action: str) -> RefValue:
    """Log the move to ``new`` that this writer made; ``new``."""
    try:
        logged = append_log(storage, name, ref, new, old.version if old else None, action)
    except StorageError as e:  # the move is made: say so (QA s3fault61: read as a failure)
        again = ("run the same commit again a minute from now, once the store answers, "
                 "which records it" if action == "commit" else
                 "tagging again records nothing, the tag is set" if action == "tag" else
                 f"do not run the {action} again (it is made)")
        raise StorageError(
            f"{name}:{ref} now points at {new.version[:12]} (the {action} is published), but "
            f"the log entry of that move could not be written ({e}); {again}") from e
    if not logged:
        _undone_by_delete(storage, name, ref, new, old, action)
    return new


def _settle(name: str, ref: str, version: str, action: str) -> str:
    """How to find out whether an unanswered move was made, per action (QA review61b: an
    append run again on top of its own published version stored its rows twice)."""
    if action in ("commit", "tag"):
        return (f"run the same {action} again once it answers, which finds the move if it "
                "was made, or makes it")
    return (f"once it answers, see whether {name}'s {ref} is {version[:12]} (`dload versions "
            f"{name}`): if it is, the {action} is made, do not run it again")


def log_lost_move(storage: Storage, name: str, ref: str, at: RefValue, action: str) -> None:
    """Record the move to ``at`` when its log entry is missing: a move whose answer was lost
    (the store applied it, then the endpoint went away), found by running the command again;
    unlogged, ``versions`` would show ``latest`` with no time or user for good."""
    if at.seq < 1 or storage.exists(f"datasets/{name}/log/{ref}/{at.seq:012d}.json"):
        return
    try:  # a move this young may be another writer's, about to log it (QA review61b)
        if time.time() - storage.info(_ref_path(name, ref)).mtime < _SETTLED_S:
            return
    except (DloadError, OSError):
        return
    try:
        before = json.loads(storage.read(f"datasets/{name}/log/{ref}/{at.seq - 1:012d}.json"))
        previous = before.get("version")
    except (NotFoundError, ValueError, AttributeError):
        previous = None
    append_log(storage, name, ref, at, previous, action)


def _undone_by_delete(storage: Storage, name: str, ref: str, new: RefValue,
                      old: RefValue | None, action: str) -> None:
    """This move's log entry clashed: a delete that read the ref before the move logged its
    deletion under the same number, after deleting the ref this move had just set. The move
    is logged after it, and ConflictError says it was undone."""
    seq = new.seq
    while not append_log(storage, name, ref, RefValue(new.version, seq),
                          old.version if old else None, action):
        seq += 1
    if read_ref(storage, name, ref) is None:
        raise ConflictError(
            f"ref {name}:{ref} was moved to {new.version[:12]} ({action}), but a concurrent "
            "delete of it (untag, rm) removed it just after; the log records both. Run the "
            f"{action} again if {ref} should stay")


def delete_ref(storage: Storage, name: str, ref: str, *, moved_ok: bool = False) -> None:
    """Remove a ref (a log entry records it).

    Storage has no conditional delete, so a move by another writer between the read and the
    delete is undone by it. That move took the sequence number this deletion's log entry
    would take: the clash is how it is seen. The deletion is then logged after that move and
    ConflictError names the ref and the undone move (``moved_ok``: the caller is removing the
    whole dataset, so the move is gone with it anyway). A clash with a move made after the
    delete (the ref is back, with that number) undid nothing; that move's entry records it."""
    old = read_ref(storage, name, ref)
    storage.delete(_ref_path(name, ref))
    if old is None:
        return
    seq = old.seq + 1
    if append_log(storage, name, ref, RefValue(old.version, seq), old.version, "delete",
                   deleted=True):
        return
    now = read_ref(storage, name, ref)
    if now is not None and now.seq >= seq:
        return  # moved (re-created) after the delete: nothing undone
    try:
        undone = json.loads(storage.read(f"datasets/{name}/log/{ref}/{seq:012d}.json"))
    except ValueError:
        undone = {}
    while not append_log(storage, name, ref, RefValue(old.version, seq), undone.get(
            "version"), "delete", deleted=True):
        seq += 1  # the deletion is recorded after the move it undid
    if moved_ok:
        return
    to = undone.get("version")
    raise ConflictError(
        f"deleting ref {name}:{ref}: another writer moved it ({undone.get('action', '?')}"
        f"{f' to {to[:12]}' if isinstance(to, str) else ''}) between this delete's read and "
        "its delete, so that move was undone too (the log records both)"
        + (f"; if it should stay, run `dload tag {name} {to} {ref}`" if isinstance(to, str)
           else "") + "; otherwise nothing to do")
