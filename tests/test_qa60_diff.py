"""``Repository.diff``: the comparison ``dload diff`` prints, from Python (QA user58: a
notebook had to shell out to the CLI and parse its JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow import Repository
from dload_arrow.errors import ConfigError, NotFoundError


@pytest.fixture
def two(tmp_path: Path) -> tuple[Repository, str, str]:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    rows = {f"k{i:02d}": {"n": i, "s": f"v{i}"} for i in range(20)}
    v1 = repo.commit("t", list(rows.items()), progress=False).version
    rows["k03"] = {"n": 3, "s": "CHANGED"}
    del rows["k09"]
    new = {k: {**r, "extra": 1.5} for k, r in rows.items()}
    new["k99"] = {"n": 99, "s": "new", "extra": 0.0}
    v2 = repo.commit("t", list(new.items()), progress=False).version
    return repo, v1, v2


def test_diff_from_python_lists_keys_values_and_columns(two: tuple[Repository, str, str]
                                                        ) -> None:
    repo, v1, v2 = two
    d = repo.diff(f"t@{v1}", "t@latest", values=True)
    assert isinstance(d, dl.VersionDiff)
    assert d.added == ["k99"] and d.removed == ["k09"] and d.changed == ["k03"]
    assert d.columns == {"added": ["extra"], "removed": [], "changed": []}
    assert (d.old["version"], d.new["version"]) == (v1, v2)
    assert (d.old["rows"], d.new["rows"]) == (20, 20)
    assert d.in_both_unshared == 19
    assert "+1 keys, -1, ~1 changed" in repr(d) and "k03" not in repr(d)
    assert repo.diff(f"t@{v1}", f"t@{v2}").changed is None  # values not compared
    assert repo.diff(f"t@{v1}", f"t@{v1}", values=True).changed == []


def test_diff_takes_datasets_ids_and_a_bare_version_of_the_other_side(
        two: tuple[Repository, str, str]) -> None:
    repo, v1, v2 = two
    repo.tag("t", v1, "first")
    want = repo.diff(f"t@{v1}", f"t@{v2}").to_dict()
    assert repo.diff(repo.dataset("t", v1), repo.dataset("t")).to_dict() == want
    assert repo.diff(v1[:10], v2).to_dict() == want  # bare ids name their dataset
    assert repo.diff("t@first", "t").to_dict() == want  # a bare name: its latest
    assert repo.diff("t@latest", "first").new["version"] == v1  # a tag of the other side


def test_diff_refuses_a_filtered_view_and_an_unknown_name(two: tuple[Repository, str, str]
                                                          ) -> None:
    repo, v1, _ = two
    with pytest.raises(ConfigError, match=r"filtered view.*repo\.dataset\('t'"):
        repo.diff(repo.dataset("t").where("n > 3"), f"t@{v1}")
    with pytest.raises(NotFoundError, match="'tt'"):
        repo.diff("tt", f"t@{v1}")
    with pytest.raises(ConfigError, match="not int"):
        repo.diff(3, f"t@{v1}")  # type: ignore[arg-type]


def test_the_cli_prints_what_python_returns(two: tuple[Repository, str, str],
                                            tmp_path: Path) -> None:
    from test_cli import dload

    repo, v1, v2 = two
    args = ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")]
    got = json.loads(dload("diff", f"t@{v1}", f"t@{v2}", "--values", "--json", *args,
                           cwd=tmp_path).out)
    assert got == repo.diff(f"t@{v1}", f"t@{v2}", values=True).to_dict()
    assert list(got) == ["old", "new", "shards_shared", "shards_only_old", "shards_only_new",
                         "added", "removed", "in_both_unshared", "changed", "columns"]


def test_keys_0_prints_counts_only(two: tuple[Repository, str, str], tmp_path: Path) -> None:
    """QA infer60: `--keys 0` printed "... N more" under each count."""
    from test_cli import dload

    _, v1, v2 = two
    args = ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")]
    out = dload("diff", f"t@{v1}", f"t@{v2}", "--keys", "0", "--values", *args,
                cwd=tmp_path).out
    assert "+ 1 keys" in out and "~ 1 keys changed" in out and "more" not in out


def test_diff_refuses_a_pipeline_and_another_roots_dataset(two: tuple[Repository, str, str],
                                                           tmp_path: Path) -> None:
    repo, v1, _ = two
    with pytest.raises(ConfigError, match=r"or a Dataset, not \w+"):
        repo.diff(repo.dataset("t").pipeline(), f"t@{v1}")  # type: ignore[arg-type]
    other = Repository.open(tmp_path / "other", cache_dir=tmp_path / "c")
    other.commit("t", [("a", {"n": 1, "s": "x"})], progress=False)
    with pytest.raises(ConfigError, match=r"versions of one root.*other"):
        repo.diff(other.dataset("t"), f"t@{v1}")
