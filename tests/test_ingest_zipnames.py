"""Zip entry names as their creator meant them: Info-ZIP's unflagged UTF-8 names and its
Unicode Path extra field give the same keys, and version id, as the folder they came from."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

from dload_arrow import Repository
from dload_arrow.ingest import DirectorySource, open_archive

FILES = {
    "café/crème.jpg": b"\xff\xd8 jpeg bytes",
    "café/crème.txt": b"a caption",
    "日本/東京.jpg": b"\xff\xd8 other bytes",
    "plain/ascii.jpg": b"\xff\xd8 ascii",
}


def _folder(base: Path) -> Path:
    for name, data in FILES.items():
        p = base / "folder" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return base / "folder"


def _headers(data: bytes) -> list[tuple[int, int]]:
    """``(offset of the flag bits, offset of the name)`` of every local and central header."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        pos = z.start_dir  # type: ignore[attr-defined]
    out = [(i.header_offset + 6, i.header_offset + 30) for i in infos]
    for _ in infos:
        assert data[pos : pos + 4] == b"PK\x01\x02"
        n, m, k = struct.unpack_from("<HHH", data, pos + 28)
        out.append((pos + 8, pos + 46))
        pos += 46 + n + m + k
    return out


def _clear_utf8_flag(path: Path) -> None:
    """Rewrite ``path`` as Info-ZIP ``zip`` writes it: UTF-8 names without flag bit 11."""
    data = bytearray(path.read_bytes())
    for flags, _ in _headers(bytes(data)):
        (bits,) = struct.unpack_from("<H", data, flags)
        struct.pack_into("<H", data, flags, bits & ~0x800)
    path.write_bytes(bytes(data))


def _commit_both(repo: Repository, folder: Path, archive: Path) -> tuple[str, str]:
    v_dir = repo.commit("d", DirectorySource(folder).reader(), progress=False)
    v_zip = repo.commit("d", open_archive(str(archive)).reader(), progress=False)
    return v_dir.version, v_zip.version


def test_unflagged_utf8_names_give_the_folder_keys_and_version(
    tmp_path: Path, repo: Repository
) -> None:
    folder = _folder(tmp_path)
    archive = tmp_path / "infozip.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name, data in FILES.items():
            z.writestr(name, data)
    _clear_utf8_flag(archive)
    with zipfile.ZipFile(archive) as z:  # the bytes really are unflagged UTF-8
        assert all(not i.flag_bits & 0x800 for i in z.infolist())
        assert "café/crème.jpg".encode().decode("cp437") in z.namelist()
    src = open_archive(str(archive))
    expected = ["café/crème", "plain/ascii", "日本/東京"]
    assert src.keys() == DirectorySource(folder).keys() == expected
    assert src.get("café/crème") == DirectorySource(folder).get("café/crème")
    v_dir, v_zip = _commit_both(repo, folder, archive)
    assert v_zip == v_dir


def _unicode_path_field(raw_name: bytes, name: str) -> bytes:
    body = b"\x01" + struct.pack("<I", zlib.crc32(raw_name)) + name.encode("utf-8")
    return struct.pack("<HH", 0x7075, len(body)) + body


def test_unicode_path_extra_field_names_the_entry(tmp_path: Path, repo: Repository) -> None:
    """A name in a legacy code page (Shift-JIS here) with the UTF-8 name in field 0x7075."""
    files = {"日本/東京.jpg": b"\xff\xd8 other bytes"}
    folder = tmp_path / "folder"
    (folder / "日本").mkdir(parents=True)
    (folder / "日本" / "東京.jpg").write_bytes(files["日本/東京.jpg"])
    legacy = "日本/東京.jpg".encode("shift_jis")
    placeholder = b"x" * len(legacy)
    archive = tmp_path / "legacy.zip"
    with zipfile.ZipFile(archive, "w") as z:
        info = zipfile.ZipInfo(placeholder.decode())
        info.extra = _unicode_path_field(legacy, "日本/東京.jpg")
        z.writestr(info, files["日本/東京.jpg"])
    data = bytearray(archive.read_bytes())
    for _, name_at in _headers(bytes(data)):
        assert data[name_at : name_at + len(legacy)] == placeholder
        data[name_at : name_at + len(legacy)] = legacy
    archive.write_bytes(bytes(data))
    assert open_archive(str(archive)).keys() == ["日本/東京"]
    v_dir, v_zip = _commit_both(repo, folder, archive)
    assert v_zip == v_dir


def test_a_stale_unicode_path_field_and_a_cp437_name_keep_the_header_name(
    tmp_path: Path,
) -> None:
    """The field's CRC no longer matches the header name: the field is ignored, and a header
    name that is not UTF-8 is read as CP437 (the zip default)."""
    archive = tmp_path / "stale.zip"
    with zipfile.ZipFile(archive, "w") as z:
        info = zipfile.ZipInfo("xxxx.jpg")
        info.extra = _unicode_path_field(b"other.jpg", "wrong.jpg")
        z.writestr(info, b"data")
    data = bytearray(archive.read_bytes())
    for _, name_at in _headers(bytes(data)):
        data[name_at : name_at + 4] = "café".encode("cp437")
    archive.write_bytes(bytes(data))
    assert open_archive(str(archive)).keys() == ["café"]
