"""Ingest messages that say what is wrong and what to do: a file named .npy that is not one,
and a table whose keys repeat, from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import SchemaError
from dload_arrow.ingest import DirectorySource


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_file_named_npy_that_is_not_one_is_named_without_pickle_advice(
    tmp_path: Path, run: RunFn
) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "x.npy").write_bytes(b"not an npy file")
    with pytest.raises(SchemaError, match=r"x\.npy: not a \.npy array") as e:
        DirectorySource(folder).schema  # noqa: B018 (the schema reads the first value)
    assert "pickle" not in str(e.value) and "NUMPY" in str(e.value)
    r = run("commit", "d", "--from", str(folder), rc=1)
    assert "x.npy: not a .npy array" in r.err and "numpy.save" in r.err
    assert "pickle" not in r.err


@pytest.mark.parametrize(("table", "args", "came_from"), [
    ("id,v\n1,2\n1,3\n2,4\n", ["--key-column", "id"], "--key-column 'id'"),
    ("__key__,v\na,2\na,3\n", [], "the table's __key__ column"),
])
def test_duplicate_keys_of_a_table_point_at_key_column(
    tmp_path: Path, run: RunFn, table: str, args: list[str], came_from: str
) -> None:
    (tmp_path / "t.csv").write_text(table)
    r = run("commit", "t", "--from", str(tmp_path / "t.csv"), *args, rc=1)
    assert "1 duplicate keys in one version" in r.err
    assert f"Here the keys came from {came_from}: give --key-column another column" in r.err
    assert "key='column'" not in r.err


@pytest.mark.parametrize("dtype", [">f8", ">i4", ">i2", ">u8"])
def test_a_big_endian_npy_is_stored_as_its_values(tmp_path: Path, run: RunFn,
                                                  local_root: str, dtype: str) -> None:
    """A .npy saved on a big-endian machine crashed the commit as an internal error (Arrow
    has no byte-swapped arrays; QA ingest 42): its values are stored in this machine's order."""
    import zipfile

    import numpy as np

    from dload_arrow import Repository

    folder = tmp_path / "d"
    folder.mkdir()
    arrays = {k: (np.arange(6) * (i + 1)).astype(dtype).reshape(2, 3)
              for i, k in enumerate(("a", "b"))}
    for k, arr in arrays.items():
        np.save(folder / f"{k}.npy", arr)
    with zipfile.ZipFile(tmp_path / "d.zip", "w") as z:
        for k in arrays:
            z.write(folder / f"{k}.npy", f"{k}.npy")
    run("commit", "folder", "--from", str(folder))
    run("commit", "zipped", "--from", str(tmp_path / "d.zip"))
    repo = Repository.open(local_root)
    for name in ("folder", "zipped"):
        ds = repo.dataset(name)
        for k, arr in arrays.items():
            got = ds.get(k)["npy"]
            assert got.dtype == arr.dtype.newbyteorder("=") and np.array_equal(got, arr)


def test_from_an_http_url_says_to_download_it_first(run: RunFn) -> None:
    r = run("commit", "photos", "--from", "https://example.com/photos.zip", rc=1)
    assert "does not download from http(s) URLs" in r.err and "curl -LO" in r.err
    assert "root" not in r.err  # (it spoke of a root being written to)
    r = run("commit", "photos", "--from", "https://example.com/imgs/", rc=1)
    assert "download its files first" in r.err and "curl" not in r.err


def test_a_key_column_beside_a_key_column_names_the_cli_option(tmp_path: Path,
                                                               run: RunFn) -> None:
    (tmp_path / "kk.csv").write_text("__key__,v\na,1\n")
    r = run("commit", "k", "--from", str(tmp_path / "kk.csv"), "--key-column", "v", rc=1)
    assert "key='v' (--key-column) names another" in r.err, r.err
