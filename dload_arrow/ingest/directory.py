"""``DirectorySource``: a local folder of files, walked recursively, grouped into samples."""

from __future__ import annotations

import errno
import itertools
import os
import shlex
import stat
from collections.abc import Sequence

from dload_arrow.errors import (
    ConfigError,
    ConflictError,
    NotFoundError,
    SchemaError,
    UnsafePathError,
)
from dload_arrow.ingest.globs import exact_path
from dload_arrow.ingest.grouping import Entry, check_entry_name
from dload_arrow.ingest.kinds import file_kind, wrong_as
from dload_arrow.ingest.location import (
    is_remote,
    local_path,
    open_binary,
    own_dirs,
    refuse_own_data,
)
from dload_arrow.ingest.source import SampleSource
from dload_arrow.ingest.stores import is_store, refuse_inside_store, store_refusal

__all__ = ["DirectorySource"]

# A link is refused, a FIFO opens at once (then refused as no regular file) instead of waiting
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class DirectorySource(SampleSource):
    """The files under ``path`` (recursive), in sorted key order.

    Symbolic links are not followed (a link could point anywhere on the machine): they are
    reported as skipped, like sockets and other special files. Hidden directories (``.git``,
    ``.ipynb_checkpoints``) are not entered and are reported as skipped, and so are
    ``store_dirs``: dload's own folders (the CLI passes its local storage root and cache, so
    a folder holding them never commits its store as samples). A ``\\`` in a file
    name reads as ``/``, as in archives, so a folder and its zip give the same keys.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        split: str = "last",
        store_dirs: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        local = local_path(os.fspath(path))  # a file:// URL is its path, as for archives
        self.root = os.path.abspath(local)
        # dload's own folders (a local storage root, the cache): never samples
        self._store_dirs = own_dirs(store_dirs)
        remote = is_remote(os.fspath(path))
        if remote:
            # A remote folder (not read yet) or a missing object says so here.
            open_binary(os.fspath(path))[0].close()
        if remote or os.path.isfile(self.root):
            kind = file_kind(os.fspath(path) if remote else self.root)
            if kind is not None:
                raise wrong_as(os.fspath(path), "a file", "a directory", kind[1],
                               f" (it is {kind[0]})")
            raise ConfigError(
                f"{os.fspath(path)!r} is a file, not a directory, and neither a table (by "
                "extension) nor an archive (by extension or content): --from takes a "
                "directory, an archive or a table; check the path (to store the file as a "
                "sample, commit the folder that holds it)"
            )
        if not os.path.isdir(self.root):
            raise NotFoundError(f"no directory {os.fspath(path)!r}; check the path")
        refuse_own_data(os.fspath(path), self.root, self._store_dirs)
        own = os.path.realpath(os.path.join(self.root, "datasets")) in self._store_dirs
        if is_store(self.root) and not own:  # (its commit's own root: its own folders are
            raise store_refusal(os.fspath(path), self.root)  # left out below; QA 65e, 65h)
        refuse_inside_store(os.fspath(path), self.root, self._store_dirs)
        super().__init__(os.fspath(path), include=include, exclude=exclude, split=split)

    def _list(self) -> list[Entry]:
        out: list[Entry] = []
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False,
                                                    onerror=self._unreadable):
            rel_dir = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            rel_dir = "" if rel_dir == "." else rel_dir + "/"
            for d in list(dirnames):
                if os.path.islink(os.path.join(dirpath, d)):
                    self._skipped.append((rel_dir + d, "symbolic link (not followed)"))
                    dirnames.remove(d)
                elif (self._store_dirs and os.path.realpath(os.path.join(dirpath, d))
                      in self._store_dirs) or (is_store(os.path.join(dirpath, d)) and (
                          os.path.realpath(os.path.join(dirpath, d, "datasets"))
                          not in self._store_dirs)):  # (this commit's root: its folders, 65h)
                    self._skipped.append((rel_dir + d + "/", "dload's own data (not read)"))
                    dirnames.remove(d)
                elif d.startswith("."):
                    self._skipped.append((rel_dir + d + "/", "hidden directory (not read)"))
                    dirnames.remove(d)
                elif self.globs.excludes_dir(rel_dir + d):
                    dirnames.remove(d)  # excluded whole: not even listed
                    self._excluded_dirs.append(rel_dir + d + "/")
            for f in filenames:
                full = os.path.join(dirpath, f)
                name = rel_dir + f
                if os.path.islink(full):
                    self._skipped.append((name, "symbolic link (not followed)"))
                    continue
                try:
                    st = os.stat(full)
                except FileNotFoundError as e:  # listed, then removed
                    raise self._changed(full, e) from e
                except OSError as e:  # a folder that lists but cannot be entered (r, no x)
                    self._unreadable(OSError(e.errno, e.strerror, dirpath))
                if not os.path.isfile(full):
                    self._skipped.append((name, "not a regular file"))
                    continue
                if "\\" in name:  # as in archives, where it is a Windows separator
                    try:
                        name = check_entry_name(name, self.location)
                    except UnsafePathError:  # e.g. '..\x.jpg': a key that would leave a folder
                        self._skipped.append((name, "unsafe path once '\\' reads as '/'"))
                        continue
                out.append(Entry(name, st.st_size, full))
        out.sort(key=lambda e: e.name)
        for a, b in itertools.pairwise(out):
            if a.name == b.name:  # only a name with a '\\' can meet another one
                first, second = sorted(os.path.relpath(e.ref, self.root) for e in (a, b))
                raise SchemaError(
                    f"{self.location}: files '{first}' and '{second}' both read as {a.name!r} "
                    "(a '\\' in a name reads as '/', as in archives); rename one of them"
                )
        self._skipped.sort()
        return out

    def _unreadable(self, e: OSError) -> None:
        """A folder os.walk cannot list fails the listing (its files would be left out
        silently), as an unreadable file fails the read."""
        where = e.filename or self.root
        raise type(e)(e.errno, f"cannot list the folder {where!r} in {self.location!r} "
                      f"({e.strerror}); its files would be left out: make it readable "
                      f"(e.g. `chmod -R u+rX {where}`), move it out of the folder, or leave it "
                      "out with --exclude (exclude= in Python)") from e

    def _replaced(self, entry: Entry, now: str) -> ConflictError:
        return ConflictError(
            f"{entry.ref!r} was a file when listed and is now {now}: the folder "
            f"{self.location!r} changed during the commit (its links are never followed); "
            "commit again once it stops changing")

    def _changed(self, path: str, e: OSError) -> OSError:
        return type(e)(e.errno, f"{path!r} was listed, then removed before it was read "
                       f"({e.strerror}): the folder {self.location!r} changed during the "
                       "commit; commit again once it stops changing")

    def _read(self, entry: Entry) -> bytes:
        try:
            # Not following a link, not waiting on a FIFO: a listed file replaced by either
            # before it is read (a writer racing the commit) is refused (QA security64).
            try:
                fd = os.open(entry.ref, os.O_RDONLY | _NO_FOLLOW)
            except OSError as e:
                if e.errno != errno.ELOOP:
                    raise
                raise self._replaced(entry, "a symbolic link") from e
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise self._replaced(entry, "not a regular file")
                data = f.read()
            if len(data) != entry.size:  # rewritten since the listing (a copy still running)
                raise ConflictError(
                    f"{entry.ref!r} was {entry.size:,} bytes when listed and {len(data):,} when "
                    f"read: the folder {self.location!r} changed during the commit (a copy or "
                    "a writer still running?); commit again once it stops changing")
            return data
        except FileNotFoundError as e:
            raise self._changed(entry.ref, e) from e
        except OSError as e:
            raise type(e)(e.errno, f"cannot read {entry.ref!r} in {self.location!r} "
                          f"({e.strerror}): make it readable (e.g. `chmod u+r "
                          f"{shlex.quote(entry.ref)}`), move it out of the folder, or leave it "
                          f"out with --exclude {shlex.quote(exact_path(entry.name))} (exclude= "
                          "in Python)") from e
