"""A .tar.zst cut inside a zstd frame is refused, however few bytes are missing.

python-zstandard's stream reader ends quietly when its input stops inside a frame; cut in the
4-byte checksum, all the content is there and the checksum is never compared, so a byte
changed in transit was committed (QA hostile54). ``FrameCheck`` follows the frame structure
as the bytes pass and refuses a file that does not end between frames.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import dload_arrow as dl
from dload_arrow.errors import IntegrityError
from dload_arrow.ingest import open_source
from dload_arrow.ingest.zstd_frames import FrameCheck, ZstdTruncated


def _drain(data: bytes, n: int = 7) -> bytes:
    f = FrameCheck(io.BytesIO(data))
    out = b""
    while chunk := f.read(n):
        out += chunk
    return out


def _skippable(payload: bytes) -> bytes:
    return (0x184D2A5A).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


def _streams() -> list[tuple[bytes, int]]:
    """Valid zstd files, each with the length of its last frame."""
    rnd = os.urandom(50_000)
    rep = b"abc" * 40_000
    zeros = bytes(300_000)  # RLE blocks
    c = zstandard.ZstdCompressor
    long = zstandard.ZstdCompressionParameters.from_level(3, window_log=27, write_checksum=1)
    last = [
        c(write_checksum=True).compress(rnd),
        c(write_checksum=False).compress(rep),
        c(write_checksum=True, write_content_size=False).compress(zeros),
        c(level=19, write_checksum=True).compress(rep + rnd),
        c(write_checksum=True).compress(b""),
        c(write_checksum=True).compress(rep),
        c(write_checksum=True).compress(rnd),
        c(compression_params=long).compress(rep),  # `zstd --long=27`
    ]
    before = [b""] * 5 + [c().compress(rnd[:100]),  # two frames
                          _skippable(b"index"),  # pzstd, seekable zstd
                          b""]
    return [(head + frame, len(frame)) for head, frame in zip(before, last, strict=True)]


@pytest.mark.parametrize("i", range(8))
def test_whole_streams_pass_unchanged(i: int) -> None:
    data, _ = _streams()[i]
    assert _drain(data) == data
    assert _drain(data, 1 << 20) == data


@pytest.mark.parametrize("i", range(8))
def test_every_cut_inside_the_last_frame_is_refused(i: int) -> None:
    data, last = _streams()[i]
    # the cuts that matter most are the last bytes (the checksum), then a spread of others
    cuts = list(range(1, min(12, last))) + list(range(12, last, max(1, last // 40)))
    for cut in cuts:
        with pytest.raises(ZstdTruncated, match=f"after {len(data) - cut:,} compressed"):
            _drain(data[: len(data) - cut])


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=3000), st.booleans(), st.data())
def test_a_single_frame_ends_only_at_its_end(content: bytes, checksum: bool,
                                              data: st.DataObject) -> None:
    whole = zstandard.ZstdCompressor(write_checksum=checksum).compress(content)
    keep = data.draw(st.integers(1, len(whole) - 1))
    with pytest.raises(ZstdTruncated):
        _drain(whole[:keep])
    assert _drain(whole) == whole


def _tar_zst(files: dict[str, bytes]) -> bytes:
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w") as t:
        for name, blob in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(blob)
            t.addfile(ti, io.BytesIO(blob))
    return zstandard.ZstdCompressor(write_checksum=True).compress(b.getvalue())


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_changed_byte_in_an_archive_cut_in_its_checksum_is_not_committed(
        tmp_path: Path, cut: int) -> None:
    files = {f"s{i:03d}.bin": os.urandom(3000) for i in range(40)}
    z = bytearray(_tar_zst(files))
    z[len(z) // 2] ^= 0xFF  # inside a stored block: decodes to a changed byte, no error
    path = tmp_path / "d.tar.zst"
    path.write_bytes(bytes(z[:-cut]))
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    with pytest.raises(IntegrityError, match=r"d\.tar\.zst is truncated: its zstd stream ends "
                       r"inside a frame, in or after entry 's039\.bin' \(after [0-9,]+ "
                       "compressed bytes\\), so the end of its data or the checksum"):
        repo.commit("d", open_source(path))
    assert "d" not in repo.datasets()
    path.write_bytes(_tar_zst(files))  # the archive, whole: committed byte for byte
    repo.commit("d", open_source(path))
    got = {r["__key__"]: r["bin"] for r in repo.dataset("d").to_arrow().to_pylist()}
    assert got == {k.removesuffix(".bin"): v for k, v in files.items()}


def test_a_cut_metadata_frame_is_named_as_such() -> None:
    """(review54) a seekable archive cut in its trailing seek table has all its data: the
    error says a metadata frame is cut, not that data or a checksum is missing."""
    data = zstandard.ZstdCompressor(write_checksum=True).compress(b"x" * 5000)
    table = _skippable(b"seek table" * 10)
    for cut in (1, 50, len(table) - 5):
        with pytest.raises(ZstdTruncated) as e:
            _drain(data + table[:-cut])
        assert e.value.skippable
    for cut in (1, 3, len(data) - 5):  # in the data frame: not a skippable one
        with pytest.raises(ZstdTruncated) as e:
            _drain(table + data[:-cut])
        assert not e.value.skippable
    with pytest.raises(ZstdTruncated) as e:  # the next frame's magic number cut: not metadata
        _drain(data + table + data[:2])
    assert not e.value.skippable
