"""QA roots65, a local root and an S3 root side by side: a folder that was another process's
cache was taken as a local root (a commit counted the cache's copies as its shards, and the
cache's next eviction deleted them); a commit of a project folder to an S3 root read the
folder's local root and an old cache inside it as samples."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def test_a_cache_directory_is_no_root(local_root: str, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    repo = dl.Repository.open(local_root, cache_dir=cache)
    repo.commit("d", pa.table({"__key__": ["a"], "x": [1]}))
    repo.cache_status()  # (claims the folder as a cache: its marker)
    assert (Path(cache) / "CACHEDIR.TAG").is_file()
    with pytest.raises(dl.StorageError, match=r"is a cache directory .* not a root"):
        dl.Repository.open(cache, cache_dir=str(tmp_path / "other")).commit(
            "d", pa.table({"__key__": ["a"], "x": [1]}))


def test_a_root_or_cache_inside_a_committed_folder_is_not_read(
        s3_root: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    (project / "images").mkdir(parents=True)
    (project / "images" / "a.txt").write_text("hello")
    inner = dl.Repository.open(str(project / "store"), cache_dir=str(project / "cache"))
    inner.commit("x", [("k", {"v": 1})])
    inner.cache_status()
    run: RunFn = runner(capsys, ["--root", s3_root, "--cache-dir", str(tmp_path / "c")])
    run("commit", "p", "--from", str(project))
    keys = [r["__key__"] for r in dl.Repository.open(
        s3_root, cache_dir=str(tmp_path / "c")).dataset("p").samples()]
    assert keys == ["images/a"], keys
    assert os.path.isdir(project / "store" / "datasets")


def test_folders_like_a_root_or_a_cache_are_read(local_root: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """QA review65d: any subfolder holding datasets/ and shards/, or another tool's
    CACHEDIR.TAG (Cargo's target/), was left out as dload's own."""
    corpus = tmp_path / "corpus"
    for d in ("web/datasets", "web/shards", "tool/target"):
        (corpus / d).mkdir(parents=True)
    (corpus / "web/datasets/list.csv").write_text("a,b\n")
    (corpus / "web/shards/part-0.bin").write_bytes(b"xxxx")
    (corpus / "tool/target/CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n# cargo\n")
    (corpus / "tool/target/x.o").write_bytes(b"o")
    run: RunFn = runner(capsys, ["--root", local_root])
    run("commit", "files", "--from", str(corpus))
    keys = sorted(r["__key__"] for r in dl.Repository.open(local_root).dataset("files").samples())
    assert keys == ["tool/target/CACHEDIR", "tool/target/x", "web/datasets/list",
                    "web/shards/part-0"]


def test_a_folder_with_log_and_refs_folders_of_its_own_is_read(
        local_root: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA review65g: shards/ beside datasets/train/log/ (a training run's own files) was
    taken as a dload root: left out inside a folder, refused as --from."""
    run1 = tmp_path / "proj" / "run1"
    for d in ("shards", "datasets/train/log", "datasets/train/refs"):
        (run1 / d).mkdir(parents=True)
    (run1 / "shards/part.bin").write_bytes(b"x")
    (run1 / "datasets/train/log/epoch1.txt").write_text("loss 1")
    run: RunFn = runner(capsys, ["--root", local_root])
    run("commit", "p", "--from", str(tmp_path / "proj"))
    run("commit", "q", "--from", str(run1))
    keys = sorted(r["__key__"] for r in dl.Repository.open(local_root).dataset("p").samples())
    assert keys == ["run1/datasets/train/log/epoch1", "run1/shards/part"]


def test_an_old_root_holding_this_commits_cache_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA review65h: a --from folder that is a root was let through when the commit's cache (or
    its root) lay inside it: its manifests, log and shards were stored as samples."""
    old = tmp_path / "p"
    dl.Repository.open(str(old), cache_dir=str(tmp_path / "c0")).commit("x", [("k", {"v": 1})])
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "other"),
                                 "--cache-dir", str(old / "cache")])
    assert "is a dload root: its files are" in run("commit", "b", "--from", str(old), rc=1).err
    run = runner(capsys, ["--root", str(old / "newroot"), "--cache-dir", str(tmp_path / "c1")])
    assert "is a dload root: its files are" in run("commit", "b", "--from", str(old), rc=1).err
