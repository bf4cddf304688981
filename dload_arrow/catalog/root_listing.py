"""One listing of a root's ``datasets/`` (what the catalog's tables are built from), and
reading many small objects of it at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from dload_arrow.errors import DloadError, IntegrityError, NotAFileError
from dload_arrow.storage import Storage
from dload_arrow.store.names import check_digest, check_name, check_ref
from dload_arrow.store.ref_log import log_entry
from dload_arrow.store.refs import is_log_entry
from dload_arrow.store.removals import REMOVED, record_file

__all__ = ["list_root", "log_row", "read_all", "read_bytes"]

_READ_THREADS = 8  # small objects (refs, log entries, removal records) read at once
T = TypeVar("T")
R = TypeVar("R")


def read_all(fn: Callable[[T], R], items: Sequence[T]) -> list[R | BaseException]:
    """``fn`` of each item, several at once (one GET each on S3: a root's hundreds of refs
    and log entries read one by one took 20 s, QA scale62); an item's exception is its
    result, for the caller to raise or skip."""
    def one(item: T) -> R | BaseException:
        try:
            return fn(item)
        except Exception as e:
            return e

    if len(items) < 2:
        return [one(i) for i in items]
    with ThreadPoolExecutor(min(_READ_THREADS, len(items))) as pool:
        return list(pool.map(one, items))


def read_bytes(result: bytes | BaseException) -> bytes:
    """A small object's bytes from ``read_all``: its error raised, a FIFO or a device in its
    place as IntegrityError (to be left out like a malformed object: one FIFO log entry
    failed every SQL query, QA review65c)."""
    if isinstance(result, NotAFileError):
        raise IntegrityError(str(result)) from result
    if isinstance(result, BaseException):
        raise result
    return result


def _valid(check: Any, value: str) -> bool:
    try:
        check(value)
    except DloadError:
        return False
    return True


def list_root(storage: Storage) -> dict[str, list[tuple[str, str]]]:
    """One listing of ``datasets/``: ``manifests`` (name, vid), ``refs`` (name, ref), ``log``
    (name, path) and ``removed`` (name, vid: removal records, ``store/removals.py``); paths
    that do not parse as valid names are left out."""
    found: dict[str, list[tuple[str, str]]] = {"manifests": [], "refs": [], "log": [],
                                               "removed": [], "removed_again": []}
    for obj in storage.list("datasets/"):
        parts = obj.path.split("/")
        if len(parts) < 4 or not _valid(check_name, parts[1]):
            continue
        name, kind = parts[1], parts[2]
        if kind == "manifests" and len(parts) == 4 and parts[3].endswith(".arrow"):
            vid = parts[3][: -len(".arrow")]
            if _valid(check_digest, vid):
                found["manifests"].append((name, vid))
        elif kind == "refs" and len(parts) == 4 and _valid(check_ref, parts[3]):
            found["refs"].append((name, parts[3]))
        elif kind == "log" and len(parts) == 5 and is_log_entry(parts[4]):
            found["log"].append((name, obj.path))
        elif kind == REMOVED and len(parts) == 4 and (record := record_file(parts[3])):
            vid, again = record  # a later removal's record: "<vid>.<n>" (its log row only)
            found["removed_again" if again else "removed"].append(
                (name, f"{vid}.{again}" if again else vid))
    return found


def log_row(name: str, path: str, data: bytes) -> dict[str, Any]:
    """The ``dload_raw_log`` row of the log entry at ``path`` (IntegrityError: malformed)."""
    e = log_entry(path, data)  # (its checks: ranges, types, depth)
    try:
        versions = [None if v is None else check_digest(v, "logged version")
                    for v in (e.version, e.previous)]
        return {"name": name, "ref": check_ref(e.ref), "seq": e.seq, "action": e.action,
                "time": int(e.time * 1_000_000), "version": versions[0],
                "previous": versions[1], "user": e.user, "host": e.host}
    except DloadError as err:
        raise IntegrityError(f"log entry {path} is malformed: {err}") from err
