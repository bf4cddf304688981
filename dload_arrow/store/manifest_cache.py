"""A local copy of manifests: immutable, so each one is fetched from the root at most once.

Files live at ``<cache_dir>/manifests/<root>/<vid>.arrow``, ``<root>`` a hash of the root's URL
(and S3 endpoint). A copy is trusted only after its bytes hash to its name again (the version
id), so a damaged copy is fetched anew, never used. The folder is per root because a copy also
says "this root has that version": several roots share a cache directory, and a version of one
(a pin made there, say) must not open on another that lacks its manifest and shards.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

from dload_arrow.errors import DloadError, IntegrityError, NotFoundError
from dload_arrow.storage import Storage, redact_url
from dload_arrow.storage.local import mode_like_open
from dload_arrow.store.folder_hints import misnamed_error
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import check_digest, manifest_path
from dload_arrow.store.removals import gone_hint

__all__ = ["ManifestCache", "corrupt_manifest", "root_id", "trim_copies"]

# Parsed manifests kept in memory, least recently used out first past this many bytes of
# their tables (a process appending 1,000 times kept every parent: 570 MB); the disk copy
# under the cache dir brings one back.
MEMORY_BYTES = 256 * 2**20
# ... and past this many (a small manifest's table is ~200 bytes, yet each parsed one holds
# ~30 KB: its info, schema, shard entries; a writer committing 10,000 times grew by 320 MB)
MEMORY_ITEMS = 1024
_OVERHEAD = 32 * 2**10  # what a parsed manifest costs beside its table's buffers
# The disk copies of one root's manifests, least recently used out past this many bytes
# (appending 100,000 times wrote 165 MB of them, kept until `cache clear`): checked at a
# process's first copy and every DISK_CHECK_EVERY copies after it, trimmed to 3/4.
DISK_BYTES = 1 << 30
DISK_CHECK_EVERY = 64


_PER_SHARD = 800  # a shard entry parsed into Python (ShardEntry and its tuples: 746 bytes)


def _cost(m: Manifest) -> int:
    """What a parsed manifest holds: its table, its shard entries once parsed (they outweighed
    the table 3 to 1: an appender grew to 1 GB where this counted 256 MB, QA replay64)."""
    return m.table.nbytes + _OVERHEAD + _PER_SHARD * m.table.num_rows


def root_id(storage: Storage) -> str:
    """A short stable name for a root: a hash of its URL and (S3) endpoint."""
    options = getattr(storage, "_options", None) or {}
    ident = f"{storage.url}\n{options.get('endpoint_url') or ''}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def corrupt_manifest(storage: Storage, name: str, version: str,
                     e: IntegrityError) -> IntegrityError:
    """The error for a manifest object of the root that does not parse or hash to its name:
    which dataset, which object, which root, and the fix. Nothing else can mend it: every
    command that reads the version (or all versions: ``versions``, ``sql``, ``gc``) fails on
    it, and ``rm`` of that version removes it without reading it."""
    where = (f"dataset {name!r}, object datasets/{name}/manifests/{version}.arrow under "
             f"{redact_url(storage.url)}")
    if "upgrade dload-arrow" in str(e):  # a newer release wrote it: sound, keep it
        return IntegrityError(f"{e} ({where}); the version is sound, do not remove it: "
                              "pip install -U dload-arrow")
    return IntegrityError(
        f"{e} ({where}); restore the object from a copy, or remove that version "
        f"with `dload rm {name} --version {version[:12]} --yes`")


class ManifestCache:
    """Manifests by version id: memory, then ``<cache_dir>/manifests``, then the root."""

    def __init__(self, storage: Storage, cache_dir: str | os.PathLike[str]) -> None:
        self.storage = storage
        self.folder = Path(cache_dir) / "manifests" / root_id(storage)
        self._memory: OrderedDict[str, Manifest] = OrderedDict()
        self._memory_bytes = 0
        self._lock = threading.Lock()
        _CACHES.add(self)
        self._stored: set[str] = set()  # versions this process saw in the root itself
        self.fetched = 0  # manifests read from the root (tests count these)
        self._copies = 0  # disk copies written by this process (trim's cadence)

    def __getstate__(self) -> dict[str, object]:  # (a Repository pickles into workers)
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        _CACHES.add(self)

    def get(self, name: str, version: str, *, keep: bool = True) -> Manifest:
        """The validated manifest ``version`` of dataset ``name`` (kept in memory for the next
        call unless ``keep`` is False: a caller reading every version once)."""
        check_digest(version, "version id")
        with self._lock:
            got = self._memory.get(version)
            if got is not None:
                self._memory.move_to_end(version)
        if got is None:
            got = self._from_disk(version) or self._from_root(name, version)
            if keep:
                self._keep(version, got)
        if got.name != name:  # checked on every hit: a version id of another dataset
            raise misnamed_error(self.storage, name, version, got.name,
                                 lambda v: self._from_disk(v) or self._from_root(name, v))
        return got

    def _keep(self, version: str, manifest: Manifest) -> None:
        with self._lock:  # (threads load manifests at once: the catalog's pool)
            old = self._memory.pop(version, None)
            if old is not None:
                self._memory_bytes -= _cost(old)
            self._memory[version] = manifest
            self._memory_bytes += _cost(manifest)
            while len(self._memory) > 1 and (self._memory_bytes > MEMORY_BYTES
                                             or len(self._memory) > MEMORY_ITEMS):
                self._memory_bytes -= _cost(self._memory.popitem(last=False)[1])

    def check_stored(self, name: str, version: str) -> None:
        """NotFoundError unless the root still stores the manifest of ``version``.

        For a version named by its full id, which nothing else has looked up in the root: a
        local copy only says the root had it once (it may have been removed, and its shards
        collected, since). One existence check per version and process; none for a manifest
        this process read from the root itself."""
        if version in self._stored:
            return
        if not self.storage.exists(manifest_path(name, version)):
            raise NotFoundError(self._missing(name, version))
        self._stored.add(version)

    def mark_stored(self, versions: list[str]) -> None:
        """Note versions whose manifests a listing of the root just showed (no HEAD later)."""
        self._stored.update(versions)

    def _missing(self, name: str, version: str) -> str:
        """Why ``version`` has no manifest: its removal record (who, when), if it has one."""
        where = f"version {version[:12]} of {name!r} has no manifest under " \
                f"{redact_url(self.storage.url)}"
        try:
            hint = gone_hint(self.storage, name, version)
            owner = None if hint else self._owner(version)
        except (DloadError, OSError):  # (a listing or a log entry that fails: no more said)
            hint, owner = "", None
        if owner is not None and owner != name:  # (QA curation66, eval66: "was it removed?")
            return (f"version {version[:12]} is a version of {owner!r}, not of {name!r}: a "
                    f"version id belongs to one dataset; name it {owner}@{version[:12]} "
                    f"(repo.dataset({owner!r}, {version[:12]!r}))")
        return f"{where}: {hint}" if hint else f"{where} (was it removed?)"

    def _owner(self, version: str) -> str | None:
        """The dataset whose manifest ``version`` is: a copy here names it, else the root's
        listing (an error's path only)."""
        got = self._memory.get(version) or self._from_disk(version)
        if got is not None and self.storage.exists(manifest_path(got.name, version)):
            return got.name  # (a copy here of one removed elsewhere: QA review66c)
        end = f"/manifests/{version}.arrow"
        return next((o.path.split("/")[1] for o in self.storage.list("datasets/")
                     if o.path.endswith(end) and o.path.count("/") == 3), None)

    def forget(self, version: str) -> None:
        """Drop a removed version's copies (memory and disk) on this machine."""
        with self._lock:
            gone = self._memory.pop(version, None)
            if gone is not None:
                self._memory_bytes -= _cost(gone)
        self._stored.discard(version)
        (self.folder / f"{check_digest(version, 'version id')}.arrow").unlink(missing_ok=True)

    def _from_disk(self, version: str) -> Manifest | None:
        path = self.folder / f"{version}.arrow"
        try:
            data = path.read_bytes()
        except OSError:
            return None
        with contextlib.suppress(OSError):  # recently used: the disk trim keeps it longer
            os.utime(path)
        try:
            return Manifest.from_bytes(data, version)
        except IntegrityError:
            path.unlink(missing_ok=True)  # damaged copy: drop it and fetch again
            return None

    def _from_root(self, name: str, version: str) -> Manifest:
        try:
            data = self.storage.read(manifest_path(name, version))
        except NotFoundError as e:
            raise NotFoundError(self._missing(name, version)) from e
        self.fetched += 1
        self._stored.add(version)
        try:
            manifest = Manifest.from_bytes(data, version)  # verifies the hash before we keep it
        except IntegrityError as e:
            raise corrupt_manifest(self.storage, name, version, e) from e
        self._store(version, data)
        return manifest

    def _store(self, version: str, data: bytes) -> None:
        if (self.folder.parent.parent / "datasets").is_dir():  # a root given as the cache:
            return  # reads refuse it; ls and sql wrote manifests/ into it (QA roots65)
        tmp = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{version[:12]}.", suffix=".tmp")
            mode_like_open(fd)  # a team's shared cache: readable by the group
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.folder / f"{version}.arrow")
        except OSError:
            # A read-only or full cache only costs a re-fetch next time.
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            return
        if self._copies % DISK_CHECK_EVERY == 0:
            trim_copies(self.folder, DISK_BYTES)
        self._copies += 1


def trim_copies(folder: Path, limit: int) -> None:
    """Delete the least recently used manifest copies in ``folder`` while they hold more than
    ``limit`` bytes, down to 3/4 of it (any of them is fetched from the root again if needed;
    one another process deletes first is simply gone)."""
    files = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(".arrow"):
                    with contextlib.suppress(OSError):
                        st = e.stat()
                        files.append((st.st_mtime_ns, st.st_size, e.path))
    except OSError:
        return
    total = sum(size for _, size, _ in files)
    if total <= limit:
        return
    for _, size, path in sorted(files):
        if total <= limit * 3 // 4:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
        total -= size


# A fork while another thread holds a cache's lock would leave the child's copy held forever
# (DataLoader workers are forked from a training process that reads).
_CACHES: weakref.WeakSet[ManifestCache] = weakref.WeakSet()


def _after_fork() -> None:
    for cache in list(_CACHES):
        cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
