"""QA infer60: a whole-version commit that replaced an append made while it ran dropped that
append from ``latest`` silently; ``if_latest`` publishes only over the version read."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.errors import ConflictError


def _rows(prefix: str, n: int) -> list[tuple[str, dict[str, int]]]:
    return [(f"{prefix}-{i:03d}", {"x": i}) for i in range(n)]


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    r = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    r.commit("d", _rows("day0", 50), progress=False)
    return r


def test_compaction_with_if_latest_refuses_over_an_append(repo: dl.Repository) -> None:
    ds = repo.dataset("d")
    snapshot = ds.to_arrow()  # a compaction job reads latest...
    b = repo.append("d", _rows("day1", 10), progress=False)  # ...an append lands meanwhile
    before = {v.version for v in repo.versions("d")}
    with pytest.raises(ConflictError, match=rf"if_latest \(--if-latest\) {ds.version[:12]}: "
                       rf"latest is now {b.version[:12]}, so nothing was published"):
        repo.commit("d", snapshot, if_latest=ds.version, progress=False)
    assert repo.dataset("d").version == b.version  # the append stays latest
    assert {v.version for v in repo.versions("d")} == before  # no unpublished version listed
    # over the version it was read from, it publishes
    c = repo.commit("d", repo.dataset("d").to_arrow(), if_latest=b.version[:10],
                    progress=False)
    assert repo.dataset("d").version == c.version and c.num_rows == 60


def test_if_latest_refused_at_publish_stores_no_version(repo: dl.Repository) -> None:
    """latest moves after the commit's start check but before its ref moves."""
    v0 = repo.dataset("d").version
    moved: list[str] = []

    def rows() -> Iterator[tuple[str, dict[str, int]]]:  # an append lands meanwhile
        yield from _rows("day0", 25)
        moved.append(dl.Repository.open(repo.storage.url).append(
            "d", _rows("day1", 5), progress=False).version)
        yield from _rows("new", 25)

    with pytest.raises(ConflictError, match=r"nothing was published\. Its shards are stored"):
        repo.commit("d", rows(), if_latest=v0, progress=False)
    assert repo.dataset("d").version == moved[0]
    assert len(repo.versions("d")) == 2  # the first commit and the append


def test_a_commit_that_replaced_an_append_made_while_it_ran_warns(repo: dl.Repository
                                                                   ) -> None:
    moved: list[str] = []

    def rows() -> Iterator[tuple[str, dict[str, int]]]:
        yield from _rows("day0", 25)
        moved.append(dl.Repository.open(repo.storage.url).append(
            "d", _rows("day1", 5), progress=False).version)
        yield from _rows("fix", 25)

    with pytest.warns(UserWarning, match=r"commit of 'd': latest moved from \w{12} to ") as rec:
        v = repo.commit("d", rows(), progress=False)
    assert f"to {moved[0][:12]} while this commit ran" in str(rec[0].message)
    assert repo.dataset("d").version == v.version
    # no warning when latest did not move, nor for the same samples again (a no-op)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.commit("d", _rows("other", 3), progress=False)
        repo.commit("d", _rows("other", 3), progress=False)


def test_rederiving_after_an_append_to_the_derived_dataset_warns(repo: dl.Repository) -> None:
    pipe = repo.dataset("d").pipeline().map(lambda r: {**r, "y": r["x"] * 2})
    derived = repo.derive("preds", pipe, progress=False)
    repo.append("preds", [("extra-1", {"x": 1, "y": 2})], progress=False)
    with pytest.warns(UserWarning, match=r"derive of 'preds': latest was \w{12}, 1 append\(s\) "
                      r"of 1 rows onto this pipeline's version"):
        again = repo.derive("preds", pipe, progress=False)
    assert again.version == derived.version == repo.dataset("preds").version


def test_the_cli_takes_if_latest(repo: dl.Repository, tmp_path: Path) -> None:
    from test_cli import dload

    v0 = repo.dataset("d").version
    repo.append("d", _rows("day1", 5), progress=False)
    (tmp_path / "t.csv").write_text("id,x\na,1\nb,2\n")
    args = ["--root", repo.storage.url, "--cache-dir", str(tmp_path / "c")]
    r = dload("commit", "d", "--from", str(tmp_path / "t.csv"), "--key-column", "id",
              "--if-latest", v0[:8], *args, cwd=tmp_path, rc=1)
    assert "latest is now" in r.err and "nothing was published" in r.err
    assert repo.dataset("d").num_rows == 55


def test_parents_must_be_versions_of_this_root(repo: dl.Repository) -> None:
    """QA infer60: a mistyped parent id was stored, and lineage called it "removed"."""
    base = repo.dataset("d").version
    typo = base[:-1] + ("0" if base[-1] != "0" else "1")
    with pytest.raises(dl.NotFoundError, match=rf"parents= entry d@{typo[:12]}: .*never had"):
        repo.commit("preds", [("u", {"p": 1})], progress=False,
                    parents=[{"name": "d", "version": typo, "relation": "inference"}])
    with pytest.raises(dl.NotFoundError, match=r"parents= entry nope@"):
        repo.commit("preds", [("u", {"p": 1})], progress=False,
                    parents=[{"name": "nope", "version": base}])
    assert "preds" not in repo.datasets()
    v = repo.commit("preds", [("u", {"p": 1})], progress=False,
                    parents=[{"name": "d", "version": base, "relation": "inference"}])
    repo.append("d", _rows("day1", 2), progress=False)
    repo.rm("d", base)  # a removed parent is still one this root had
    repo.commit("preds", [("u", {"p": 2})], progress=False,
                parents=[{"name": "d", "version": base}])
    assert v.version != repo.dataset("preds").version


def test_if_latest_refusals_say_what_is_wrong(repo: dl.Repository, tmp_path: Path) -> None:
    """QA review60: an empty --if-latest dropped the guard; a new dataset was told to
    "create it with repo.commit()"; another dataset's id read as "latest is now ..."."""
    from test_cli import dload

    v = repo.dataset("d").version
    other = repo.commit("o", _rows("o", 3), progress=False).version
    with pytest.raises(dl.ConfigError, match="names no version"):
        repo.commit("d", _rows("x", 3), if_latest="", progress=False)
    with pytest.raises(ConflictError, match="'newds' has no version"):
        repo.commit("newds", _rows("x", 3), if_latest=v, progress=False)
    with pytest.raises(dl.NotFoundError, match="is no stored version of 'd'"):
        repo.commit("d", _rows("x", 3), if_latest=other, progress=False)
    (tmp_path / "t.csv").write_text("id,x\na,1\n")
    r = dload("commit", "d", "--from", str(tmp_path / "t.csv"), "--if-latest", "",
              "--root", repo.storage.url, "--cache-dir", str(tmp_path / "c"), cwd=tmp_path,
              rc=1)
    assert "names no version" in r.err
    assert repo.dataset("d").version == v and "newds" not in repo.datasets()


def test_a_commit_over_a_latest_that_rm_stepped_back_does_not_warn(repo: dl.Repository
                                                                   ) -> None:
    v2 = repo.commit("d", _rows("two", 3), progress=False).version

    def rows() -> Iterator[tuple[str, dict[str, int]]]:
        yield from _rows("c", 3)
        dl.Repository.open(repo.storage.url).rm("d", v2)  # latest steps back to the first
        yield from _rows("e", 3)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = repo.commit("d", rows(), progress=False)
    assert repo.dataset("d").version == v.version
