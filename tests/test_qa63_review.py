"""QA review63, of the sixth review's fixes: short hex ids (git shas) and numbered class
words read as one key form; zero-width values in a dictionary nested in a struct or list are
refused; collate warnings from a thread running torch's loader point at torch's call."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.ingest.group_warnings import _form
from dload_arrow.pipeline import collate_checks, default_collate

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow.torch.device import to_device  # noqa: E402


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.mark.parametrize("keys", [
    [uuid.uuid5(uuid.NAMESPACE_DNS, str(i)).hex[:7] for i in range(21)],
    [f"{w}{i:04d}" for w in ("cat", "face", "dog") for i in range(7)],
])
def test_short_shas_and_numbered_words_read_as_one_form(tmp_path: Path, run: RunFn,
                                                        keys: list[str]) -> None:
    assert len({_form(k) for k in keys}) == 1
    d = tmp_path / "caps"
    d.mkdir()
    for k in keys:
        if k != keys[1]:  # its image failed to download
            (d / f"{k}.jpg").write_bytes(b"JPEG")
        (d / f"{k}.txt").write_text("a caption")
    assert "A table of labels" not in run("commit", "caps", "--from", str(d)).err
    assert _form("labels") != _form(keys[0]) and _form("img_0001") != _form("dataset_info")


def test_zero_width_dictionaries_nested_are_refused(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    d = pa.DictionaryArray.from_arrays(pa.array([0, 0, 0], pa.int32()),
                                       pa.array([b""], pa.binary(0)))
    for arr in (pa.StructArray.from_arrays([d], ["h"]),
                pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), d)):
        with pytest.raises(dl.SchemaError, match="of size 0"):
            repo.commit("z", pa.table({"c": arr}), progress=False)
    assert not repo.datasets()


def test_collate_warnings_in_to_devices_thread_point_at_torch() -> None:
    collate_checks._WARNED.discard("x")
    items = [{"x": np.zeros((i % 2 + 1,))} for i in range(4)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in to_device(DataLoader(items, batch_size=2, collate_fn=default_collate), "cpu"):
            pass
    found = [w for w in seen if "different shapes" in str(w.message)]
    assert found and all("threading" not in w.filename for w in found), found[0].filename
    assert "torch" in found[0].filename
