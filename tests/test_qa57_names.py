"""Names a new dataset or tag may not take (carried from QA names56).

- a dataset ``Label`` beside ``label`` was accepted: one folder on macOS and Windows, where
  the two overwrite each other's versions; refused at its first commit (any way to commit);
- Windows' device names (``con``, ``LPT1.txt``) and a final ``.`` cannot be file names
  there: refused for new datasets and tags, while names stored before stay readable.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from dload_arrow import InvalidNameError, Repository
from dload_arrow.store.commit import commit_samples
from dload_arrow.store.names import not_portable

ROW = [{"__key__": "a", "x": 1}]


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")


def test_a_case_twin_of_a_dataset_is_refused_at_its_first_commit(repo: Repository) -> None:
    repo.commit("label", ROW, progress=False)
    with pytest.raises(InvalidNameError, match=r"'Label' differs from 'label' .* only in case"):
        repo.commit("Label", ROW, progress=False)
    with pytest.raises(InvalidNameError, match="only in case"):
        repo.derive("LABEL", repo.dataset("label").pipeline(), progress=False)
    assert repo.datasets() == ["label"]
    # the dataset itself still commits and appends
    repo.commit("label", [{"__key__": "b", "x": 2}], progress=False)
    repo.append("label", [{"__key__": "c", "x": 3}], progress=False)
    assert repo.dataset("label").num_rows == 2


def test_a_removed_twin_frees_the_name(repo: Repository) -> None:
    repo.commit("label", ROW, progress=False)
    repo.rm("label")
    repo.commit("Label", ROW, progress=False)
    assert repo.datasets() == ["Label"]


@pytest.mark.parametrize("name", ["con", "NUL", "aux.v2", "LPT1", "com9.parquet", "data."])
def test_names_windows_cannot_hold_are_refused_for_new_datasets(repo: Repository,
                                                                name: str) -> None:
    with pytest.raises(InvalidNameError, match="Windows"):
        repo.commit(name, ROW, progress=False)
    assert repo.datasets() == []


def test_names_windows_cannot_hold_are_refused_for_tags(repo: Repository) -> None:
    repo.commit("label", ROW, progress=False)
    for tag in ("nul", "prn.old", "v1."):
        with pytest.raises(InvalidNameError, match=rf"tag '{tag}' is not allowed: .*Windows"):
            repo.tag("label", "latest", tag)
    repo.tag("label", "latest", "console")  # a longer word is a name like any other
    assert "console" in repo.refs("label")


def test_a_dataset_stored_under_such_a_name_stays_readable(repo: Repository) -> None:
    # committed by the store layer, as a version before the check did
    commit_samples(repo.storage, "con", ROW, progress=False)
    assert repo.datasets() == ["con"]
    assert repo.dataset("con").num_rows == 1
    repo.append("con", [{"__key__": "z", "x": 2}], progress=False)  # not a new dataset
    repo.commit("con", pa.table({"x": [1, 2, 3]}), progress=False)
    assert repo.dataset("con").num_rows == 3


@pytest.mark.parametrize(("name", "bad"), [("con", True), ("conv", False), ("com10", False),
                                           ("x.con", False), ("a.b", False), ("a.", True)])
def test_not_portable(name: str, bad: bool) -> None:
    assert bool(not_portable(name)) is bad


def test_a_read_meeting_a_half_done_rm_does_not_prescribe_a_repair_alone(
        repo: Repository) -> None:
    """QA ops56: a reader racing another process's rm (or commit) was told the dataset is
    half removed and to run rm again, which would remove what the other process commits next.
    The text says it may be an rm or commit still running."""
    from dload_arrow import NotFoundError
    from dload_arrow.store.refs import delete_ref
    from dload_arrow.store.removals import record_removal

    v = repo.commit("d", ROW, progress=False).version
    record_removal(repo.storage, "d", v, repo.manifest("d", v))  # an rm's first steps
    delete_ref(repo.storage, "d", "latest")  # it has not deleted the manifest yet
    with pytest.raises(NotFoundError, match=r"half removed: .*unless an rm or commit of it is "
                                            r"still running in another process: then retry"):
        repo.dataset("d")


def test_a_memoized_derive_checks_the_new_name_too(repo: Repository) -> None:
    """QA review57: a pipeline derived before was published under a new name from its memo
    without the name checks a commit makes."""
    repo.commit("raw", [(f"k{i}", {"n": i}) for i in range(5)], progress=False)
    pipe = repo.dataset("raw").pipeline()
    repo.derive("clean", pipe, progress=False)
    for name, why in (("Clean", "only in case"), ("con", "device name")):
        with pytest.raises(InvalidNameError, match=why):
            repo.derive(name, pipe, progress=False)
    assert repo.datasets() == ["clean", "raw"]
    assert repo.derive("clean2", pipe, progress=False).shards_uploaded == 0  # memo still used


def test_a_dataset_named_before_the_checks_is_not_told_to_commit_again(
        repo: Repository) -> None:
    """QA review57: a dataset 'con' stored before the checks, half removed, was told to
    "commit to 'con'", which a new dataset is now refused; it is told to finish the rm."""
    from dload_arrow import NotFoundError
    from dload_arrow.store.refs import delete_ref
    from dload_arrow.store.removals import record_removal

    v = commit_samples(repo.storage, "con", ROW, progress=False).version
    record_removal(repo.storage, "con", v, repo.manifest("con", v))
    delete_ref(repo.storage, "con", "latest")
    with pytest.raises(NotFoundError, match="half removed") as e:
        repo.dataset("con")
    assert "again to finish" in str(e.value) and "commit to 'con'" not in str(e.value)
    repo.rm("con")
    with pytest.raises(NotFoundError, match="was removed") as e:
        repo.dataset("con")
    assert "Commit to 'con'" not in str(e.value)
    commit_samples(repo.storage, "d", ROW, progress=False)
    repo.rm("d")
    with pytest.raises(NotFoundError, match="Commit to 'd' to create it again"):
        repo.dataset("d")
