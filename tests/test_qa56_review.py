"""A review of this session's change (QA review56): what its first versions got wrong.

- the tag case-twin check listed the refs of an unchecked name (the storage layer's error);
- a dload.toml linked to /dev/null was called a link "which does not exist";
- the same endpoint with and without a trailing slash counted as two;
- ``dload diff`` missed a tensor column whose shape changed ((2, 3) to (3, 2): one type);
- the torch refusal of an int past 2**53 among floats blamed a mix even after a map().
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow import ConfigError, InvalidNameError, Repository, SchemaError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_tag_of_a_bad_dataset_name_names_the_rule(repo: Repository) -> None:
    with pytest.raises(InvalidNameError, match=r"dataset name 'a b' is not allowed: use"):
        repo.tag("a b", "0" * 64, "v1")


def test_a_settings_link_to_a_device_is_not_called_missing() -> None:
    os.symlink("/dev/null", "dload.toml")
    with pytest.raises(ConfigError, match=r"a link to '/dev/null', which is not a file"):
        dl.Repository.open()


def test_one_endpoint_with_and_without_a_slash_is_one() -> None:
    repo = dl.Repository.open("s3://bkt/p", endpoint_url="http://127.0.0.1:9/",
                              storage_options={"endpoint_url": "http://127.0.0.1:9"})
    assert repo.storage._options["endpoint_url"] == "http://127.0.0.1:9"  # type: ignore[attr-defined]


def test_diff_names_a_tensor_whose_shape_changed(run: RunFn, local_root: str) -> None:
    repo = Repository.open(local_root)
    v1 = repo.commit("t", [("a", {"img": np.zeros((2, 3), np.uint8)})], progress=False).version
    v2 = repo.commit("t", [("a", {"img": np.zeros((3, 2), np.uint8)})], progress=False).version
    out = run("diff", f"t@{v1}", f"t@{v2}").out
    assert "columns: ~ img fixed_size_list<item: uint8>[6] (2, 3) -> " in out
    assert "- 0 keys\n  ? 1 keys in both versions" in out and "(3, 2)" in out


def test_the_torch_refusal_after_a_map_does_not_blame_a_mix() -> None:
    from dload_arrow.torch import collate

    with pytest.raises(SchemaError, match=r"its items hold ints and floats \(.*or a map\(\) "
                                          r"returning both\)"):
        collate([{"x": 2**60 + 1}, {"x": 0.5}])




def test_appended_samples_without_a_column_warn_as_a_table_does(repo: Repository) -> None:
    repo.commit("d", [("a", {"x": 1, "y": 0.5})], progress=False)
    with pytest.warns(UserWarning, match=r"the appended samples have no value in column\(s\) "
                                         r"\['y'\] of 'd'"):
        repo.append("d", [("b", {"x": 2}), ("c", {"x": 3, "y": None})], progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.append("d", [("e", {"x": 4}), ("f", {"x": 5, "y": 1.0})], progress=False)
    assert repo.dataset("d").num_rows == 5
