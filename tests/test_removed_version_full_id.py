"""A version named by its full id is checked against the root: a manifest copy in the local
cache says only that the root had it once. After ``rm`` and ``gc`` (run from another machine,
whose cache is not this one), the full id is as unknown as its 12-character prefix, and while
the version exists the check costs one existence request, never a listing or a download."""

from __future__ import annotations

from pathlib import Path

import pytest

from dload_arrow import NotFoundError, Repository


def _open(root: str, cache: Path) -> Repository:
    return Repository.open(root, cache_dir=str(cache), cache_budget="unlimited")


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_root"))


def test_a_removed_version_by_its_full_id_is_not_found_despite_a_cached_manifest(
        root: str, tmp_path: Path) -> None:
    writer = _open(root, tmp_path / "writer")
    vid = writer.commit("d", [(f"k{i}", {"x": i}) for i in range(5)], progress=False).version
    assert _open(root, tmp_path / "reader").dataset("d", vid).to_arrow().num_rows == 5
    writer.rm("d")
    writer.gc(grace=0)
    reader = _open(root, tmp_path / "reader")  # a new process, its cache still holds v's copy
    for name in (vid, vid[:12]):
        with pytest.raises(NotFoundError, match=r"dataset 'd' under .* was removed"):
            reader.dataset("d", name)


def test_a_removed_version_of_a_kept_dataset_by_its_full_id_is_not_found(
        root: str, tmp_path: Path) -> None:
    writer = _open(root, tmp_path / "writer")
    v1 = writer.commit("d", [("a", {"x": 1})], progress=False).version
    writer.commit("d", [("b", {"x": 2})], progress=False)
    assert _open(root, tmp_path / "reader").dataset("d", v1).to_arrow().num_rows == 1
    writer.rm("d", v1)
    with pytest.raises(NotFoundError, match=f"version {v1[:12]} of 'd' has no manifest"):
        _open(root, tmp_path / "reader").dataset("d", v1)


def test_a_full_id_costs_one_existence_check_per_process(
        s3_root: str, s3_server, tmp_path: Path) -> None:
    writer = _open(s3_root, tmp_path / "writer")
    vid = writer.commit("d", [(f"k{i}", {"x": i}) for i in range(5)], progress=False).version
    _open(s3_root, tmp_path / "reader").dataset("d", vid)  # the manifest is cached on disk now
    reader = _open(s3_root, tmp_path / "reader")
    s3_server.clear()
    for _ in range(3):
        assert reader.dataset("d", vid).num_rows == 5
    assert s3_server.count("HEAD", contains=f"manifests/{vid}") == 1
    assert s3_server.count("GET") == 0  # no listing, no download: the content is the cache's


def test_listing_versions_checks_no_manifest_one_by_one(
        s3_root: str, s3_server, tmp_path: Path) -> None:
    writer = _open(s3_root, tmp_path / "writer")
    for i in range(3):
        writer.commit("d", [("k", {"x": i})], progress=False)
    _open(s3_root, tmp_path / "reader").versions("d")  # every manifest cached on disk now
    s3_server.clear()
    assert len(_open(s3_root, tmp_path / "reader").versions("d")) == 3
    assert s3_server.count("HEAD", contains="manifests/") == 0  # the listing says they exist
