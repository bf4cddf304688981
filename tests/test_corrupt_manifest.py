"""One corrupt manifest object in the root: its error names the dataset, the object, the root
and the fix, and the fix (``rm`` of that version, or of the dataset) works without reading it,
while ``versions`` and the catalog list the good versions and name the bad one."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import IntegrityError, Repository
from dload_arrow.store.names import manifest_path


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_root"))


@pytest.fixture(params=["other_version", "cut_in_half"])
def corrupt(request: pytest.FixtureRequest, root: str, tmp_path: Path) -> tuple[str, str]:
    """``d`` at v1 (10 rows) and v2 (20 rows), v1's manifest object overwritten with v2's bytes
    or cut in half; the two version ids."""
    writer = Repository.open(root, cache_dir=str(tmp_path / "writer"), cache_budget="unlimited")
    v1 = writer.commit("d", [(f"k{i:02d}", {"x": i}) for i in range(10)], progress=False).version
    v2 = writer.commit("d", [(f"k{i:02d}", {"x": i}) for i in range(20)], progress=False).version
    good = writer.storage.read(manifest_path("d", v1))
    bad = (writer.storage.read(manifest_path("d", v2)) if request.param == "other_version"
           else good[: len(good) // 2])
    writer.storage.write(manifest_path("d", v1), bad)
    return v1, v2


def _fresh(root: str, tmp_path: Path) -> Repository:
    return Repository.open(root, cache_dir=str(tmp_path / "fresh"), cache_budget="unlimited")


def _names_everything(message: str, root: str, v1: str) -> None:
    assert "'d'" in message
    assert f"datasets/d/manifests/{v1}.arrow" in message
    assert root in message
    assert f"`dload rm d --version {v1[:12]} --yes`" in message


def test_reading_the_corrupt_version_names_dataset_object_root_and_the_fix(
        root: str, corrupt: tuple[str, str], tmp_path: Path) -> None:
    v1, _v2 = corrupt
    repo = _fresh(root, tmp_path)
    with pytest.raises(IntegrityError, match="is corrupt") as e:
        repo.dataset("d", v1)
    _names_everything(str(e.value), root, v1)
    with pytest.raises(IntegrityError, match="is corrupt") as e:
        repo.gc(dry_run=True)  # gc stops rather than guess which shards it lists
    _names_everything(str(e.value), root, v1)


def test_versions_and_sql_list_the_good_versions_and_name_the_corrupt_one(
        root: str, corrupt: tuple[str, str], tmp_path: Path) -> None:
    v1, v2 = corrupt
    repo = _fresh(root, tmp_path)
    with pytest.warns(UserWarning, match="is corrupt") as w:
        assert [v.version for v in repo.versions("d")] == [v2]
    _names_everything(str(w[0].message), root, v1)
    with pytest.warns(UserWarning, match="is corrupt"):
        rows = repo.sql("select name, latest, num_rows from datasets").to_pylist()
    assert rows == [{"name": "d", "latest": v2, "num_rows": 20}]
    assert repo.dataset("d").to_arrow().num_rows == 20  # latest is fine


def test_rm_of_the_corrupt_version_removes_it_without_reading_it(
        root: str, corrupt: tuple[str, str], tmp_path: Path) -> None:
    v1, v2 = corrupt
    repo = _fresh(root, tmp_path)
    assert repo.rm("d", v1[:12]) == [v1]
    assert [v.version for v in repo.versions("d")] == [v2]  # no warning left: none corrupt
    assert repo.gc(dry_run=True).kept_referenced == 1  # gc reads every manifest again
    assert repo.dataset("d").to_arrow().num_rows == 20


def test_rm_of_a_dataset_with_a_corrupt_version_removes_all_of_it(
        capsys: pytest.CaptureFixture[str], root: str, corrupt: tuple[str, str],
        tmp_path: Path) -> None:
    run: RunFn = runner(capsys, ["--root", root, "--cache-dir", str(tmp_path / "cli")])
    assert "removed 2 versions of d" in run("rm", "d", "--yes").out
    assert _fresh(root, tmp_path).datasets() == []


def test_the_cli_lists_around_a_corrupt_version_and_its_fix_works(
        capsys: pytest.CaptureFixture[str], root: str, corrupt: tuple[str, str],
        tmp_path: Path) -> None:
    v1, v2 = corrupt
    run: RunFn = runner(capsys, ["--root", root, "--cache-dir", str(tmp_path / "cli")])
    listed = run("versions", "d")
    assert v2[:12] in listed.out and v1[:12] not in listed.out
    _names_everything(listed.err, root, v1)
    _names_everything(run("verify", f"d@{v1[:12]}", rc=1).err, root, v1)
    _names_everything(run("gc", "--dry-run", rc=1).err, root, v1)
    removed = run("rm", "d", "--version", v1[:12], "--yes")
    assert "removed 1 version" in removed.out and removed.err == ""
    run("gc", "--dry-run")
    assert v1[:12] not in run("versions", "d").out
