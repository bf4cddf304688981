"""``ZipSource``: samples of a zip archive, read in place through its central directory.

Only the central directory (at the end of the file) and the members actually read are
fetched; on S3 each is a ranged GET. Every member is CRC-checked as it is read.

Entry names are UTF-8 whatever the zipper: a name flagged UTF-8 (bit 11) is taken as is, an
Info-ZIP Unicode Path extra field (0x7075) whose CRC matches the header name wins, and an
unflagged name (Info-ZIP ``zip`` writes the system's name bytes, UTF-8 on Linux and macOS,
without the flag) is read as UTF-8 when it is valid UTF-8, else as CP437 (the zip default);
so a zip, a tar and the folder they were made from give the same keys.
"""

from __future__ import annotations

import os
import stat
import struct
import unicodedata
import warnings
import weakref
import zipfile
import zlib
from collections.abc import Sequence
from typing import IO, Any

from dload_arrow.errors import ConfigError, IntegrityError, user_stacklevel
from dload_arrow.ingest.grouping import Entry, check_entry_name
from dload_arrow.ingest.location import open_binary
from dload_arrow.ingest.source import SampleSource

__all__ = ["ZipSource"]

# UnicodeDecodeError: a name flagged UTF-8 (bit 11) whose bytes are not (zipfile decodes the
# central directory's names when it opens the file, and a member's local name when it reads).
_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError,
           UnicodeDecodeError)
# The compression methods zipfile reads, and the names of common ones it does not.
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_OTHER_METHODS = {1: "Shrink", 6: "Implode", 9: "Deflate64", 10: "PKWARE DCL Implode",
                  18: "IBM TERSE", 19: "IBM LZ77", 93: "Zstandard", 94: "MP3", 95: "XZ",
                  96: "JPEG", 97: "WavPack", 98: "PPMd"}


class ZipSource(SampleSource):
    """A zip archive, local or remote; random access by key (:meth:`get`), sorted order.

    Picklable: the file is reopened lazily in each process (DataLoader workers).
    """

    extract_command = "unzip {name} -d {stem}"

    random_access = True

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        split: str = "last",
        endpoint_url: str | None = None,
    ) -> None:
        super().__init__(location, include=include, exclude=exclude, split=split)
        self.endpoint_url = endpoint_url
        self._zip: zipfile.ZipFile | None = None
        self._file: IO[bytes] | None = None
        self._pid = -1
        self._closer: weakref.finalize[Any, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_zip=None, _file=None, _pid=-1, _closer=None)
        return state

    @property
    def zip(self) -> zipfile.ZipFile:
        if self._zip is None or self._pid != os.getpid():
            self._file, _ = open_binary(
                self.location, endpoint_url=self.endpoint_url, block_size=256 * 1024
            )
            try:
                self._zip = zipfile.ZipFile(self._file)
            except _ERRORS as e:
                self._file.close()
                why = (f"the entry name {bytes(e.object)!r} is flagged as UTF-8 but is not "
                       "UTF-8: a faulty zipper or a damaged file"
                       if isinstance(e, UnicodeDecodeError) else str(e))
                raise IntegrityError(
                    f"{self.location} is not a readable zip archive ({why}); re-download or "
                    "recreate it"
                ) from e
            self._pid = os.getpid()
            # A source dropped without close() still closes its file when collected.
            self._closer = weakref.finalize(self, _close, self._zip, self._file)
        return self._zip

    def close(self) -> None:
        if self._closer is not None and self._pid == os.getpid():
            self._closer()
        self._zip = self._file = self._closer = None

    def _list(self) -> list[Entry]:
        out = []
        guessed = [i for i in self.zip.infolist() if _entry_name(i) == i.filename
                   and not i.flag_bits & _UTF8_FLAG and _cjk(i.orig_filename.encode("cp437"))]
        if guessed:  # (QA ocr66: a CJK Windows zip's keys garbled without a word; a Western
            _warn_cp437(self.location, guessed)  # one's CP437 names are right: review66d)
        for info in self.zip.infolist():
            name = check_entry_name(_entry_name(info), self.location)
            # Unix file types live in the high 16 bits (only meaningful from Unix zippers).
            ftype = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
            if info.is_dir() or not name:
                if info.file_size and name:  # a faulty zipper's: said, not dropped silently
                    self._skipped.append((name, f"a directory entry holding "
                                                f"{info.file_size} bytes (not read)"))
                continue
            if ftype == stat.S_IFLNK:
                self._skipped.append((name, "symbolic link (not followed)"))
            elif ftype and ftype != stat.S_IFREG:
                self._skipped.append((name, "not a regular file"))
            elif info.flag_bits & 0x1:
                self._skipped.append((name, "encrypted"))
            elif info.compress_type not in _METHODS:  # found now, not halfway through a commit
                if self.globs(name):  # an excluded entry is never read
                    raise _unsupported(self.location, name, info.compress_type)
            else:
                # By its ZipInfo, not its name: two entries may share a header name (and
                # differ by their Unicode Path field), and a read by name gets the last one.
                out.append(Entry(name, info.file_size, info))
        return out

    def _read(self, entry: Entry) -> bytes:
        try:
            return self.zip.read(entry.ref)
        except NotImplementedError as e:  # a method zipfile knows but cannot read here
            raise _unsupported(self.location, entry.name, entry.ref.compress_type) from e
        except _ERRORS as e:
            raise IntegrityError(
                f"{self.location}: entry {entry.name!r} is corrupt or unreadable ({e}); "
                "re-download or recreate the archive"
            ) from e


def _unsupported(location: str, name: str, method: int) -> ConfigError:
    """The error of an entry compressed with a method that zipfile cannot read: not a corrupt
    archive, so re-downloading cannot help; recompressing can."""
    what = _OTHER_METHODS.get(method, "an unknown method")
    return ConfigError(
        f"{location}: entry {name!r} is compressed with {what} (zip method {method}), which "
        "cannot be read here (only stored, deflate, bzip2 and LZMA); recompress the zip with "
        "deflate, e.g. extract it and `zip -r -Z deflate new.zip DIR` (Windows Explorer writes "
        "Deflate64 for big files; 7-Zip: -mm=Deflate), commit the extracted folder, or leave "
        "the entry out with --exclude"
    )


_UTF8_FLAG = 0x800
_UNICODE_PATH = 0x7075


def _entry_name(info: zipfile.ZipInfo) -> str:
    """The name of a zip entry as its creator meant it (see the module docstring)."""
    if info.flag_bits & _UTF8_FLAG:
        return info.filename
    # zipfile decoded the unflagged header name as CP437, which maps every byte: this
    # gives the header's bytes back.
    raw = info.orig_filename.encode("cp437")
    unicode_path = _unicode_path_extra(info.extra, raw)
    if unicode_path is not None:
        return unicode_path
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except UnicodeError:
        return info.filename


def _warn_cp437(location: str, infos: list[zipfile.ZipInfo]) -> None:
    """Warn that names neither flagged UTF-8 nor valid UTF-8, which read as CJK text in a
    CJK encoding, were read as CP437."""
    raw = infos[0].orig_filename.encode("cp437")
    other = next((f" (as {enc}: {raw.decode(enc)!r})" for enc in ("cp932", "gbk")
                  if _decodes(raw, enc)), "")
    warnings.warn(
        f"{location}: {len(infos)} entry name(s) are neither UTF-8 nor flagged with their "
        f"encoding, so they are read as CP437, the zip default (e.g. {infos[0].filename!r}"
        f"{other}); a zip made by Windows in another locale (Japanese: CP932, Chinese: GBK) "
        "gives such names, and its keys are then garbled: extract it with its encoding "
        "(`unzip -O cp932 x.zip`, or 7-Zip) and commit the folder", stacklevel=user_stacklevel())


def _cjk(raw: bytes) -> bool:
    """Whether ``raw`` (a name's bytes) reads as CJK text in CP932 or GBK, and not as Latin
    letters in CP437 (a Western name: Müller also reads in GBK, as 'M乴ler': QA review66e)."""
    if all(c.isascii() or (ord(c) < 0x250 and unicodedata.category(c).startswith("L"))
           for c in raw.decode("cp437")):
        return False
    for enc in ("cp932", "gbk"):
        try:
            text = raw.decode(enc)
        except UnicodeError:
            continue
        if sum("\u3000" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" for c in text) >= 2:
            return True
    return False


def _decodes(raw: bytes, encoding: str) -> bool:
    try:
        raw.decode(encoding)
    except UnicodeError:
        return False
    return not raw.isascii()


def _unicode_path_extra(extra: bytes, raw_name: bytes) -> str | None:
    """The UTF-8 name of an Info-ZIP Unicode Path extra field (version 1, CRC-32 of the
    header name, name), if ``extra`` has one that matches ``raw_name``; else None."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + size]
        pos += 4 + size
        if tag != _UNICODE_PATH or len(body) < 5 or body[0] != 1:
            continue
        # A stale field (the header name was changed by a tool that did not know the field)
        # no longer describes the entry: the CRC says so.
        if struct.unpack_from("<I", body, 1)[0] != zlib.crc32(raw_name):
            continue
        try:
            return body[5:].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _close(archive: zipfile.ZipFile, file: IO[bytes]) -> None:
    archive.close()
    file.close()
