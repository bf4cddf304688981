"""Progress: the commit bar moves as rows are encoded (not only when a shard is uploaded), its
sample count is an int, and a tar's listing pass shows a counter only when progress is on."""

from __future__ import annotations

import io
import os
import re
import tarfile
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest
from click.testing import CliRunner

from dload_arrow import Repository
from dload_arrow.cli.main import cli
from dload_arrow.ingest import open_archive
from dload_arrow.store import commit as commit_mod
from dload_arrow.store.shard import write_shards

_SAMPLES = re.compile(r"([\d,]+) samples")


def _batches(n_batches: int, rows: int, start: int = 0) -> list[pa.RecordBatch]:
    out = []
    for b in range(n_batches):
        keys = [f"k{start + b * rows + i:06d}" for i in range(rows)]
        out.append(pa.record_batch({"__key__": keys,
                                    "x": [os.urandom(500) for _ in range(rows)]}))
    return out


def _frames(text: str) -> list[str]:
    return [f for f in re.split(r"[\r\n]", text) if f.strip()]


class _Recorded(commit_mod._Progress):
    """The commit's bar, drawing every update into a StringIO."""

    made: ClassVar[list[_Recorded]] = []
    _EVERY = 0.0

    def __init__(self, enabled: bool, name: str, **options: Any) -> None:
        self.out = io.StringIO()
        super().__init__(enabled, name, file=self.out, mininterval=0, miniters=1, **options)
        self.made.append(self)


def test_the_commit_bar_moves_before_the_first_shard_is_uploaded(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    _Recorded.made = []
    monkeypatch.setattr(commit_mod, "_Progress", _Recorded)
    at_upload: list[str] = []
    upload = commit_mod.upload_shard

    def watched(*args: Any) -> int:
        at_upload.append(_Recorded.made[0].out.getvalue())
        return upload(*args)

    monkeypatch.setattr(commit_mod, "upload_shard", watched)
    batches = _batches(10, 300)  # 3,000 rows of 500 random bytes: about 1.5 MB
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, batches)
    v = repo.commit("p", reader, shard_size="1GiB", row_group_size="64KiB", progress=True)
    assert v.shards_total == 1 and len(at_upload) == 1
    (bar,) = _Recorded.made
    # By the time the only shard was uploaded, the bar had shown rows and bytes moving.
    shown = [int(m.replace(",", "")) for m in _SAMPLES.findall(at_upload[0])]
    assert any(0 < n < 3000 for n in shown), at_upload[0]
    encoded = {f.split(":")[1].split("[")[0].strip() for f in _frames(at_upload[0])}
    assert len(encoded) > 3, encoded  # many distinct byte counts, not one jump at the end
    assert "shards stored: 0" in at_upload[0] and "shards stored: 1" not in at_upload[0]
    # The final totals are exact: bytes encoded = the shards' size, every sample, every shard.
    assert bar.bar.n == v.bytes_total and bar.rows == v.num_rows == 3000
    last = _frames(bar.out.getvalue())[-1]
    assert "commit p (encoded)" in last
    assert "3,000 samples" in last and "shards stored: 1" in last, last
    assert "e+" not in bar.out.getvalue()


def test_the_sample_count_is_an_int_with_thousands_separators() -> None:
    out = io.StringIO()
    bar = commit_mod._Progress(True, "d", file=out, mininterval=0, miniters=1)
    for _ in bar.taken(iter(_batches(50, 1000))):
        pass
    bar.encoded(1000, 12345)
    bar.stored()
    bar.close()
    text = out.getvalue()
    assert "50,000 samples" in text and "e+" not in text, text
    assert isinstance(bar.rows, int) and bar.rows == 50_000


def test_no_bar_is_drawn_when_progress_is_off(capsys: pytest.CaptureFixture[str]) -> None:
    bar = commit_mod._Progress(False, "d")
    assert list(bar.taken(iter(_batches(2, 10)))) and bar.rows == 20
    bar.encoded(10, 100)
    bar.stored()
    bar.close()
    assert capsys.readouterr().err == ""


def test_write_shards_reports_every_row_group_and_every_byte() -> None:
    calls: list[tuple[int, int]] = []
    batches = _batches(8, 200)
    shards = list(write_shards(batches, batches[0].schema, shard_size=200_000,
                               row_group_size=50_000, on_row_group=lambda r, b:
                               calls.append((r, b))))
    assert len(shards) > 1
    assert sum(r for r, _ in calls) == 1600 == sum(s.rows for s in shards)
    assert sum(b for _, b in calls) == sum(s.nbytes for s in shards)
    assert sum(1 for r, _ in calls if r) == sum(len(s.rg_rows) for s in shards)


def _tar(path: Path, n: int) -> Path:
    with tarfile.open(path, "w") as t:
        for i in range(n):
            for ext in ("txt", "jpg"):
                data = f"{i} {ext}".encode()
                info = tarfile.TarInfo(f"s/{i:04d}.{ext}")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return path


def test_the_tar_listing_pass_counts_entries_when_progress_is_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tar = _tar(tmp_path / "archive.tar", 600)
    src = open_archive(str(tar))
    src.progress = True
    assert len(src) == 600
    err = capsys.readouterr().err
    assert "listing archive.tar: 1,200 entries" in err, err

    for progress in (False, None):  # None: capsys's stderr is no terminal
        src = open_archive(str(tar))
        src.progress = progress
        assert len(src) == 600
        assert capsys.readouterr().err == ""


def test_the_cli_draws_no_listing_counter_in_a_pipe(tmp_path: Path) -> None:
    tar = _tar(tmp_path / "archive.tar", 20)
    result = CliRunner().invoke(cli, ["commit", "t", "--root", str(tmp_path / "root"),
                                      "--from", str(tar)])
    assert result.exit_code == 0, result.output
    assert "listing" not in result.output and "commit t (encoded)" not in result.output


def test_bars_follow_a_kernel_not_an_imported_ipykernel(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from dload_arrow.config import progress_wanted

    # A test run that executed a notebook has ipykernel imported without being a kernel
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    assert progress_wanted(None) is False

    class ZMQInteractiveShell:  # what get_ipython() returns inside a Jupyter kernel
        pass

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert progress_wanted(None) is True
    assert progress_wanted(False) is False


def test_a_shell_built_on_jupyters_counts_as_a_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from dload_arrow.config import progress_wanted

    class ZMQInteractiveShell:
        pass

    class Shell(ZMQInteractiveShell):  # how Colab's shell is made
        pass

    ipython = types.ModuleType("IPython")
    ipython.get_ipython = Shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    assert progress_wanted(None) is True


@pytest.mark.parametrize("widgets", [False, True])
def test_a_kernel_without_ipywidgets_gets_a_text_bar_and_no_warning(
        widgets: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # tqdm.auto in a Jupyter kernel without ipywidgets warns "IProgress not found. Please
    # update jupyter and ipywidgets" (QA 8): the bar is picked by what is installed
    import importlib.util
    import warnings

    import tqdm.auto
    import tqdm.std

    from dload_arrow.config import progress_bar

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        real("tqdm") if widgets else None) if name == "ipywidgets" else real(name, *a))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = progress_bar()
    assert got is (tqdm.auto.tqdm if widgets else tqdm.std.tqdm)
