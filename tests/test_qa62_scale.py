"""QA scale62: read-only commands over many objects. The catalog reads refs, log entries and
removal records several at once (the same rows as one by one), and a manifest the root's
listing just showed is not looked up again (`dload ls`: a HEAD per dataset on S3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_ls_does_not_look_up_the_manifests_it_listed(tmp_path: Path) -> None:
    """`dload ls` lists the root with published_names(listed=mark_stored); a Repository's
    own datasets() does not mark (a version removed later is re-checked: review62b)."""
    from dload_arrow.repository.missing import published_names

    root, cache = tmp_path / "root", tmp_path / "cache"
    repo = dl.Repository.open(root, cache_dir=cache)
    for n in range(5):
        repo.commit(f"d{n}", [(f"k{i}", {"x": i + n}) for i in range(3)], progress=False)
    fresh = dl.Repository.open(root, cache_dir=cache)  # manifests in the machine's cache
    asked: list[str] = []
    exists = fresh.storage.exists

    def counted(path: str) -> Any:
        asked.append(path)
        return exists(path)

    fresh.storage.exists = counted  # type: ignore[method-assign]
    names = published_names(fresh.storage, "root", fresh.manifests.mark_stored)  # as ls does
    assert [fresh.manifest(n, fresh.resolve(n, "latest")).num_rows for n in names] == [3] * 5
    assert not [p for p in asked if "/manifests/" in p]


def test_the_catalog_reads_many_refs_and_log_entries_alike(tmp_path: Path, run: RunFn,
                                                            local_root: str) -> None:
    repo = dl.Repository.open(local_root, cache_dir=tmp_path / "cache")
    for n in range(12):
        v = repo.commit(f"d{n:02d}", [(f"k{i}", {"x": i}) for i in range(2)], progress=False)
        repo.tag(f"d{n:02d}", v.version, "v1")
    repo.append("d00", [("k9", {"x": 9})], progress=False)
    repo.rm("d11")
    refs = json.loads(run("sql", "select name, ref from refs order by name, ref",
                          "--json").out)
    assert len(refs) == 22 and refs[0] == {"name": "d00", "ref": "latest"}
    log = json.loads(run("sql", "select name, action from log order by time", "--json").out)
    assert len(log) == 12 * 2 + 1 + 2 + 1  # commits, tags, an append, rm's two ref moves + rm
    rows = json.loads(run("ls", "--json").out)
    assert [r["name"] for r in rows] == [f"d{n:02d}" for n in range(11)]
    assert rows[0]["rows"] == 3
