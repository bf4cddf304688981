"""``TarSource``: samples of a .tar, .tar.gz or .tar.zst archive, streamed, never extracted.

A tar is a stream: the first pass reads the headers (checking names, links, the files' order
(``order.stream_order``), the integrity of the compressed stream, and that only zeros follow
the end-of-archive marker, before anything is committed), then each iteration streams the
archive once more and yields one sample at a time. A hard link (what GNU tar stores for a
file's second name) reads as its target, an earlier member whose bytes are held from where it
passes until its last link; symbolic links are skipped and reported.
"""

from __future__ import annotations

import gzip
import os
import tarfile
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, cast

from dload_arrow.errors import ConfigError, IntegrityError, user_stacklevel
from dload_arrow.ingest.columns import column_kind
from dload_arrow.ingest.grouping import Entry, check_entry_name, split_name
from dload_arrow.ingest.kinds import compressed_table
from dload_arrow.ingest.location import open_binary
from dload_arrow.ingest.source import SampleSource
from dload_arrow.ingest.tar_stream import BLOCK, Tail, drains, errors, is_header, zstd_unchecked
from dload_arrow.ingest.zstd_frames import FrameCheck, ZstdTruncated

__all__ = ["TarSource"]

_MAX_WINDOW = 1 << 31
_PEEK = 4096


def _link_target(linkname: str) -> str:
    """A hard link's target as a normalised entry name ("": one no entry can have)."""
    try:
        return check_entry_name(linkname, "")
    except ValueError:
        return ""


class TarSource(SampleSource):
    """A tar archive (``compression``: ``None``, ``"gz"`` or ``"zst"``), in archive order."""

    extract_command = "mkdir {stem} && tar -xf {name} -C {stem}"

    random_access = False

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        compression: str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        split: str = "last",
        endpoint_url: str | None = None,
    ) -> None:
        super().__init__(location, include=include, exclude=exclude, split=split)
        if compression not in (None, "gz", "zst"):
            raise ConfigError(f"compression must be None, 'gz' or 'zst', not {compression!r}")
        self.compression = compression
        self.endpoint_url = endpoint_url
        self._first: dict[str, bytes] = {}
        self._told = False  # the missing-checksum warning is given once (two passes read)

    @contextmanager
    def _members(self) -> Iterator[Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]]:
        raw, _ = open_binary(self.location, endpoint_url=self.endpoint_url, block_size=BLOCK)
        stream: IO[bytes] = raw
        if self.compression == "zst":
            import zstandard

            peek = getattr(raw, "peek", None)  # a buffered reader: look without reading
            if peek is not None:  # what the buffer holds: skippable frames, then a header
                self._warn_unchecked(peek(_PEEK))
            # Up to a 2 GiB window (`zstd --long=31`): the default refuses frames written with
            # --long=28 or more ("too much memory"), which are valid archives. The decoder
            # allocates the window a frame asks for, not more.
            # FrameCheck: the decoder ends quietly on a file cut inside a frame's checksum
            stream = zstandard.ZstdDecompressor(max_window_size=_MAX_WINDOW).stream_reader(
                cast("IO[bytes]", FrameCheck(raw)), read_size=BLOCK)
        elif self.compression == "gz":  # GzipFile checks the CRC and length at the end
            stream = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        tail = Tail(stream)
        last: list[str] = []

        def members() -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
            try:
                with tarfile.open(fileobj=tail, mode="r|") as tf:  # type: ignore[call-overload]
                    while (m := tf.next()) is not None:
                        tf.members.clear()  # tarfile keeps every header; we need none
                        last[:] = [m.name]
                        yield m, tf
                    # tarfile ends quietly on a truncated or garbled header: insist on the
                    # end-of-archive block, then read to the end (gzip checks its CRC there).
                    if tail.block(tf.offset) != bytes(tarfile.BLOCKSIZE):
                        raise tarfile.ReadError("no end-of-archive marker: truncated or corrupt")
                    after = tail.data_after(tf.offset)
                    if after is not None:
                        raise IntegrityError(self._joined(tf.offset, *after))
            except GeneratorExit:  # abandoned (maybe at exit): errors() would import
                raise
            except errors() as e:
                raise IntegrityError(self._failure(e, tail, last[0] if last else None)) from e

        try:
            yield members()
        finally:
            stream.close()
            raw.close()

    def _joined(self, end: int, at: int, block: bytes) -> str:
        """Data after the end-of-archive marker: most likely tars joined with ``cat``, whose
        later members tar (without ``-i``) and tarfile never read. Zero padding is normal."""
        what = "data"
        if len(block) >= tarfile.BLOCKSIZE and is_header(block[: tarfile.BLOCKSIZE]):
            name = tarfile.TarInfo.frombuf(
                block[: tarfile.BLOCKSIZE], tarfile.ENCODING, "surrogateescape").name
            what = f"another tar header (entry {name!r})"
        within = " of the decompressed tar" if self.compression else ""
        return (
            f"{self.location}: {what} at byte {at}{within} follows its end-of-archive marker "
            f"(at byte {end}); it looks like archives joined with `cat`, whose members after the "
            "first archive's end would be left out. Recreate one archive (e.g. `tar -cf "
            "all.tar -C dir .`), or extract it with `tar -xif` and commit the folder"
        )

    def _failure(self, e: BaseException, tail: Tail, last: str | None) -> str:
        """Why reading failed, in the user's terms: truncated, not a tar, or corrupt."""
        fix = "re-download or recreate the archive"
        if last is None and self.compression is not None:
            codec = {"gz": "gzip", "zst": "zstd"}[self.compression]
            start = tail.buf[: tarfile.BLOCKSIZE] if tail.pos == len(tail.buf) else None
            decoded = isinstance(e, tarfile.TarError)  # the decoder read it all; tar failed
            if decoded and tail.pos == 0 and codec == "zstd":  # a cut frame gives 0 bytes
                return (f"{self.location} is truncated: its zstd stream ends before the first "
                        f"tar entry is complete ({type(e).__name__}: {e}); {fix}")
            # the compressed stream decodes to its end: a byte changed early decodes to
            # garbage, and gzip's CRC at the end tells
            intact = decoded and drains(tail)
            if intact and tail.pos == 0:  # gzip reads a 0-byte file as no data, no error
                return (f"{self.location} is empty or truncated: it decompresses to no bytes "
                        f"at all (a failed download or copy?); {fix}")
            # no tar header: not a tar, unless the compressed stream is itself corrupt
            if intact and start is not None and not is_header(start):
                inner = compressed_table(self.location)
                if inner:  # a compressed table: x.csv.gz
                    return (f"{self.location} is {inner[0]} compressed with {codec}, which is "
                            f"not read compressed: decompress it (`{codec} -dk {inner[1]}`) and "
                            f"commit {inner[1][:inner[1].rfind('.')]!r}")
                return (f"{self.location} is a {codec}-compressed file but not a tar archive "
                        f"(what it decompresses to has no tar header): commit a tar of the "
                        f"files (e.g. `tar -czf data.tar.gz DIR`), or the folder of the "
                        "decompressed files")
        where = f"in or after entry {last!r}" if last else "at its first entry"
        if isinstance(e, ZstdTruncated):  # cut inside a frame, maybe only in its checksum
            where = f", in or after entry {last!r}" if last else ""
            lost = ("a metadata (skippable) frame, such as a seek table, is cut short"
                    if e.skippable else "the end of its data or the checksum that proves it "
                    "is missing")
            return (f"{self.location} is truncated: its zstd stream ends inside a frame{where}"
                    f" ({e}), so {lost} (a failed download or copy?); {fix}")
        if isinstance(e, EOFError) and self.compression == "gz":  # gzip's own end is missing
            where = f", in or after entry {last!r}" if last else ""
            return (f"{self.location} is truncated: its gzip stream ends before its end marker"
                    f"{where} (a failed download or copy?); {fix}")
        return f"{self.location} is corrupt {where} ({type(e).__name__}: {e}); {fix}"

    def _warn_unchecked(self, head: bytes) -> None:
        """Say once that a ``.tar.zst`` written without frame checksums cannot be checked."""
        if self._told:
            return
        self._told = True
        if zstd_unchecked(head):
            warnings.warn(
                f"{self.location}: this .tar.zst has no zstd checksums, so a byte changed in "
                "transit or on disk cannot be detected and would be committed as it is; write "
                "it with `zstd` (checksums on by default) or ship a sha256sum beside it",
                stacklevel=user_stacklevel())

    def _list(self) -> list[Entry]:
        out = []
        data_of: dict[str, Entry] = {}  # a name -> the entry of the member holding its data
        links: set[str] = set()  # symbolic links' names (GNU tar hard-links to them too)
        with self._members() as members, self._counting() as count:
            for i, (m, tf) in enumerate(members):
                count(i + 1)
                name = check_entry_name(m.name, self.location)
                if m.isdir() or not name:
                    continue
                if m.issym():
                    links.add(name)
                    self._skipped.append((name, "symbolic link (not followed)"))
                    continue
                if m.islnk():  # a file's second name: its data is an earlier member's
                    target = data_of.get(_link_target(m.linkname))
                    if target is None and _link_target(m.linkname) in links:
                        links.add(name)  # a second name of a symbolic link: one too
                        self._skipped.append((name, "symbolic link (not followed)"))
                        continue
                    if target is None:
                        self._skipped.append((name, "hard link to no earlier file"))
                        continue
                    entry = Entry(name, target.size, i)
                    self._links[i] = target
                    data_of[name] = target
                    out.append(entry)
                    continue
                if not m.isfile():
                    self._skipped.append((name, "not a regular file"))
                    continue
                entry = data_of[name] = Entry(name, m.size, i)
                parsed = split_name(name, self.split)
                if (
                    parsed
                    and column_kind(parsed[1]) == "npy"
                    and parsed[1] not in self._first
                    and self.globs(name)
                ):
                    self._first[parsed[1]] = self._extract(tf, m, entry)
                out.append(entry)
        return out

    def _extract(self, tf: tarfile.TarFile, m: tarfile.TarInfo, entry: Entry) -> bytes:
        f = tf.extractfile(m)
        if f is None:
            raise IntegrityError(f"{self.location}: entry {entry.name!r} has no data")
        data = f.read()
        if len(data) != m.size:
            raise IntegrityError(
                f"{self.location}: entry {entry.name!r} is truncated ({len(data)} of {m.size} "
                "bytes); re-download or recreate the archive"
            )
        return data

    def _first_bytes(self, entry: Entry) -> bytes:
        parsed = split_name(entry.name, self.split)
        assert parsed is not None  # only grouped entries reach here
        if parsed[1] not in self._first:  # the column's first file is a hard link
            target = self._links[entry.ref]
            with self._members() as members:
                for i, (m, tf) in enumerate(members):
                    if i == target.ref:
                        self._first[parsed[1]] = self._extract(tf, m, target)
                        break
        return self._first[parsed[1]]

    def _stream(self) -> Iterator[tuple[Entry, bytes]]:
        # The plan holds each entry's position in the archive: the member found there must
        # be the same file, and every planned one must be found, else the archive was
        # replaced since it was listed (an epoch must not quietly shrink). A hard link's
        # target is held from where it passes until its last planned link.
        planned = {e.ref: e for group in self._plan[0].values() for e in group.values()}
        links = {i: self._links[i] for i in planned if i in self._links}
        waiting = Counter(t.ref for t in links.values())  # a target -> its links to come
        targets = {t.ref: t for t in links.values()}
        held: dict[int, bytes] = {}
        found = 0
        with self._members() as members:
            for i, (m, tf) in enumerate(members):
                want = planned.get(i)
                if want is None and i not in waiting:
                    continue  # not planned: skipped over without being read
                if i in links:
                    assert want is not None
                    if not m.islnk() or check_entry_name(m.name, self.location) != want.name:
                        raise IntegrityError(self._changed(f"entry {i + 1} was the hard link "
                                                           f"{want.name!r}, now {m.name!r}"))
                    t = links[i].ref
                    waiting[t] -= 1
                    data = held[t] if waiting[t] else held.pop(t)
                    found += 1
                    yield want, data
                    continue
                expect = want or targets[i]
                if (not m.isfile() or m.issym() or m.islnk() or m.size != expect.size
                        or check_entry_name(m.name, self.location) != expect.name):
                    raise IntegrityError(self._changed(
                        f"entry {i + 1} was {expect.name!r} ({expect.size} bytes), now "
                        f"{m.name!r} ({m.size} bytes)"))
                data = self._extract(tf, m, expect)
                if i in waiting:
                    held[i] = data
                if want is not None:
                    found += 1
                    yield want, data
        if found != len(planned):
            raise IntegrityError(self._changed(
                f"it now ends after {found} of the {len(planned)} files listed"))

    def _changed(self, what: str) -> str:
        return (f"{self.location} changed since it was listed ({what}); its samples were "
                "planned from the first read: open it again (from_archive, open_source) to "
                "read the new archive, and do not overwrite an archive that is being read")
