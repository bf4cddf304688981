"""A root that is a directory on this machine: the embedded default."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import BinaryIO

from dload_arrow.errors import NotAFileError, NotFoundError, StorageError, user_stacklevel
from dload_arrow.storage.base import Digest, ObjectInfo, check_relpath
from dload_arrow.storage.local_errors import write_error

__all__ = ["LocalStorage", "dangling_link", "mode_like_open", "umask"]

_COPY_CHUNK = 4 * 2**20


def dangling_link(path: str) -> str | None:
    """Why ``path`` cannot be made: it or a folder above it is a symbolic link whose target
    does not exist (a scratch directory purged under a link to it); None when none is."""
    p = os.path.abspath(os.path.expanduser(path))
    while True:
        if os.path.islink(p) and not os.path.exists(p):
            target = os.path.join(os.path.dirname(p), os.readlink(p))
            return (f"{p} is a link to {os.path.normpath(target)}, which does not exist (a "
                    "purged scratch folder?); create that folder or point the link elsewhere")
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def umask() -> int:
    """This process's umask, read without changing it (``/proc``; the ``os.umask`` round trip
    where that is missing, which races with other threads' file creation only there)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def mode_like_open(fd: int) -> None:
    """Give a file ``tempfile.mkstemp`` made (0600) the mode ``open()`` gives, ``0666 & ~umask``:
    a cache shared by a team's group (umask 002, a setgid folder) must stay writable and
    readable by the group (QA readonly55: the second user was refused)."""
    os.fchmod(fd, 0o666 & ~umask())


class LocalStorage:
    """Objects are files under ``directory``; writes go to a temp file and are renamed.

    Conditional writes are exact on one machine and on POSIX shared filesystems with working
    ``link()`` and ``flock()``: create-if-absent is a hard link that fails when the name
    exists, and compare-and-swap holds an exclusive lock while it re-reads and replaces.
    """

    is_local = True
    conditional_writes = True

    def __init__(self, directory: str) -> None:
        self.root = os.path.abspath(os.path.expanduser(directory))
        self.url = "file://" + self.root
        dangling = dangling_link(self.root)
        if dangling:
            raise StorageError(f"root {self.root}: {dangling}")
        if os.path.exists(self.root) and not os.path.isdir(self.root):
            raise StorageError(f"root {self.root} is a file, not a directory; point the root at "
                               "a directory (a new one is created on the first commit)")
        if os.path.isfile(os.path.join(self.root, "CACHEDIR.TAG")):  # (QA roots65: a commit
            raise StorageError(  # there counted a cache's copies as its shards; evicted later)
                f"root {self.root} is a cache directory (it holds CACHEDIR.TAG: a dload shard "
                "cache, whose shards may be deleted at any time), not a root; point the root "
                "at a directory of its own")

    def __repr__(self) -> str:
        return f"LocalStorage({self.root!r})"

    def _full(self, path: str) -> str:
        return os.path.join(self.root, *check_relpath(path).split("/"))

    def _tmp(self, full: str) -> str:
        try:
            os.makedirs(os.path.dirname(full), exist_ok=True)
        except OSError as e:
            raise write_error(self.root, os.path.dirname(full), e) from e
        return f"{full}.tmp-{uuid.uuid4().hex}"

    def _write_tmp(self, path: str, full: str, data: bytes | memoryview) -> str:
        """A temp file next to ``full`` holding ``data``; removed again when writing fails."""
        tmp = self._tmp(full)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
        except BaseException as e:
            with suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, OSError) and not isinstance(e, StorageError):
                raise write_error(self.root, repr(path), e) from e
            raise
        return tmp

    def open_regular(self, path: str) -> BinaryIO:
        """``path``'s file for reading; a FIFO or a device in its place (a root unpacked from
        someone's tarball) is refused, not read: it hung or filled memory (QA hostile65)."""
        fd = os.open(self._full(path), os.O_RDONLY | os.O_NONBLOCK)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            what = "a directory" if stat.S_ISDIR(mode) else "a FIFO, a device, or a link to one"
            raise NotAFileError(f"{path!r} under {self.url} is not a regular file ({what}): "
                                "no dload object is; remove it", what)
        return os.fdopen(fd, "rb")

    def read(self, path: str) -> bytes:
        try:
            with self.open_regular(path) as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError) as e:
            raise NotFoundError(f"no object {path!r} under {self.url}") from e
        except PermissionError as e:  # (another user's, umask 077: QA review66e)
            raise StorageError(
                f"cannot read {path!r} under {self.url} ({e.strerror}): this user may not "
                "read it; `ls -l` shows its owner and mode: ask its owner to make it readable "
                "(chmod -R g+rX)") from e

    def read_range(self, path: str, start: int, end: int) -> bytes:
        try:
            with self.open_regular(path) as f:
                f.seek(start)
                return f.read(end - start)
        except (FileNotFoundError, NotADirectoryError) as e:
            raise NotFoundError(f"no object {path!r} under {self.url}") from e

    def write(self, path: str, data: bytes) -> None:
        full = self._full(path)
        tmp = self._write_tmp(path, full, data)
        try:
            os.replace(tmp, full)
        except OSError as e:
            with suppress(OSError):
                os.unlink(tmp)
            raise write_error(self.root, repr(path), e) from e

    def put_if_absent(self, path: str, data: bytes | memoryview) -> bool:
        full = self._full(path)
        tmp = self._write_tmp(path, full, data)
        try:
            os.link(tmp, full)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            raise write_error(self.root, repr(path), e) from e
        finally:
            with suppress(OSError):
                os.unlink(tmp)

    @contextmanager
    def _locked(self, path: str) -> Iterator[None]:
        lock_dir = os.path.join(self.root, ".locks")
        name = hashlib.sha256(path.encode()).hexdigest()[:32]
        try:
            os.makedirs(lock_dir, exist_ok=True)
            f = open(os.path.join(lock_dir, name), "a+b")  # noqa: SIM115 (closed below)
        except OSError as e:
            raise write_error(self.root, f"the lock file of {path!r}", e) from e
        with f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def read_with_token(self, path: str) -> tuple[bytes, str] | None:
        try:
            data = self.read(path)
        except NotFoundError:
            return None
        return data, hashlib.sha256(data).hexdigest()

    def compare_and_swap(self, path: str, data: bytes, token: str | None) -> bool:
        with self._locked(path):
            current = self.read_with_token(path)
            if (current[1] if current else None) != token:
                return False
            self.write(path, data)
            return True

    def exists(self, path: str) -> bool:
        return os.path.exists(self._full(path))

    def touch(self, path: str) -> bool:
        try:
            os.utime(self._full(path))
            return True
        except FileNotFoundError:
            return False
        except OSError as e:  # a read-only root (QA shell59: it was "this is a bug")
            raise write_error(self.root, repr(path), e) from e

    def info(self, path: str) -> ObjectInfo:
        try:
            st = os.stat(self._full(path))
        except (FileNotFoundError, NotADirectoryError) as e:
            raise NotFoundError(f"no object {path!r} under {self.url}") from e
        return ObjectInfo(path, st.st_size, st.st_mtime, f"{st.st_ino}:{st.st_mtime_ns}")

    def list(self, prefix: str) -> list[ObjectInfo]:
        base = self._full(prefix.rstrip("/"))
        out: list[ObjectInfo] = []
        for dirpath, _dirs, files in os.walk(base, onerror=self._unlisted):
            for fn in files:
                if ".tmp-" in fn:
                    continue
                full = os.path.join(dirpath, fn)
                rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                out.append(ObjectInfo(rel, st.st_size, st.st_mtime,
                                      f"{st.st_ino}:{st.st_mtime_ns}"))
        return sorted(out, key=lambda o: o.path)

    def _unlisted(self, e: OSError) -> None:
        """A folder the walk cannot read (another user's, umask 077): left out, warned once,
        and kept in :meth:`unreadable` for gc to refuse on (QA perms66: gc, not seeing a
        private dataset, deleted its shards; QA review66c: failing every listing stopped
        other users' commits and queries)."""
        if isinstance(e, FileNotFoundError | NotADirectoryError):
            return  # (nothing there: an empty listing)
        where = os.path.relpath(e.filename, self.root) if e.filename else "?"
        unread = self.__dict__.setdefault("_unread", set())
        if where not in unread:
            unread.add(where)
            warnings.warn(f"{where!r} in root {self.root} cannot be read by this user "
                          f"({e.strerror}): what it holds is left out; make it readable to "
                          "everyone who shares the root (chmod -R g+rX, umask 002 for "
                          "writers)", stacklevel=user_stacklevel("<frozen os>"))

    def unreadable(self) -> tuple[str, ...]:
        """The folders listings of this root left out, unreadable to this user."""
        return tuple(sorted(self.__dict__.get("_unread", ())))

    def delete(self, path: str) -> None:
        try:
            os.unlink(self._full(path))
        except FileNotFoundError:
            pass
        except IsADirectoryError as e:  # (made by hand: what it holds may be someone's)
            raise StorageError(
                f"cannot delete {path!r} in root {self.root}: it is a directory, which no "
                "dload object is; look inside and remove it yourself (`rm -r`)") from e
        except OSError as e:
            raise StorageError(
                f"cannot delete {path!r} in root {self.root} ({e.strerror}); deleting needs "
                "write permission on the root's folders: run it as a user who has it"
            ) from e

    def download(self, path: str, dest: str, digest: Digest | None = None) -> int:
        try:
            with self.open_regular(path) as src:
                if digest is None:  # (copyfile: the kernel's sendfile)
                    shutil.copyfile(self._full(path), dest)
                else:
                    with open(dest, "wb") as out:
                        while chunk := src.read(_COPY_CHUNK):
                            out.write(chunk)
                            digest.update(chunk)
        except (FileNotFoundError, NotADirectoryError) as e:
            raise NotFoundError(f"no object {path!r} under {self.url}") from e
        except OSError as e:
            raise StorageError(f"copying {path!r} to {dest!r} failed: {e}") from e
        return os.path.getsize(dest)

    def local_path(self, path: str) -> str | None:
        return self._full(path)
