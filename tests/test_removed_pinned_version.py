"""A version pinned in dload.lock is checked against the root, as a full id is: a manifest copy
in the local cache says only that the root had it once. After ``rm --version`` (run from
another machine, whose cache is not this one) the pinned version is refused, naming the
dataset, the version, that it was removed, and the fix; while it exists the check costs one
existence request per process, never a listing or a download."""

from __future__ import annotations

from pathlib import Path

import pytest

from dload_arrow import NotFoundError, Repository


def _open(root: str, cache: Path) -> Repository:
    return Repository.open(root, cache_dir=str(cache), cache_budget="unlimited")


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_root"))


def test_a_removed_pinned_version_is_refused_despite_a_cached_manifest(
        root: str, tmp_path: Path) -> None:
    writer = _open(root, tmp_path / "writer")
    v1 = writer.commit("d", [("a", {"x": 1})], progress=False).version
    writer.commit("d", [("b", {"x": 2})], progress=False)
    reader = _open(root, tmp_path / "reader")
    assert reader.pin("d", v1) == v1
    assert reader.dataset("d").to_arrow().num_rows == 1  # the manifest is cached on disk now
    writer.rm("d", v1)
    reader = _open(root, tmp_path / "reader")  # a new process, its cache still holds v1's copy
    with pytest.raises(NotFoundError) as info:
        reader.dataset("d")
    message = str(info.value)
    assert "'d'" in message and v1[:12] in message and "dload.lock" in message
    assert "was removed" in message
    assert "dload pin d" in message and "dload unpin d" in message
    assert reader.dataset("d", "latest").to_arrow().num_rows == 1  # latest still opens


def test_a_pinned_version_costs_one_existence_check_per_process(
        s3_root: str, s3_server, tmp_path: Path) -> None:
    writer = _open(s3_root, tmp_path / "writer")
    vid = writer.commit("d", [(f"k{i}", {"x": i}) for i in range(5)], progress=False).version
    writer.pin("d", vid)
    _open(s3_root, tmp_path / "reader").dataset("d")  # the manifest is cached on disk now
    reader = _open(s3_root, tmp_path / "reader")
    s3_server.clear()
    for _ in range(3):
        assert reader.dataset("d").num_rows == 5
    assert s3_server.count("HEAD", contains=f"manifests/{vid}") == 1
    assert s3_server.count("GET") == 0  # no listing, no download: the content is the cache's
