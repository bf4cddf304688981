"""A pin must not be lost to the working directory (QA user58: ``python proj/train.py`` run
from outside ``proj`` read latest, silently): ``DLOAD_LOCK`` names the lock file, and a lock
beside the running script that is not in use is warned of."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from dload_arrow import Repository
from dload_arrow.errors import ConfigError


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    for var in ("DLOAD_LOCK", "DLOAD_ROOT", "DLOAD_CACHE_DIR", "DLOAD_CEILING_DIRECTORIES"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "root"
    repo = Repository.open(root, cache_dir=tmp_path / "cache")
    old = repo.commit("ds", [("a", {"n": 1})], progress=False).version
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    assert repo.pin("ds") == old
    new = repo.commit("ds", [("a", {"n": 1}), ("b", {"n": 2})], progress=False).version
    monkeypatch.chdir(tmp_path)  # outside the project
    return proj, old, new


def test_dload_lock_names_the_lock_file(project: tuple[Path, str, str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    proj, old, new = project
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    assert repo.dataset("ds").version == new  # no lock from here
    monkeypatch.setenv("DLOAD_LOCK", str(proj / "dload.lock"))
    assert repo.dataset("ds").version == old
    monkeypatch.setenv("DLOAD_LOCK", "proj/dload.lock")  # relative to the working directory
    assert repo.dataset("ds").version == old
    repo.pin("ds")  # pins go to that file too
    monkeypatch.delenv("DLOAD_LOCK")
    monkeypatch.chdir(proj)
    assert repo.dataset("ds").version == new


@pytest.mark.parametrize(("value", "said"), [("nope.lock", "no such file"),
                                             ("proj", "is a directory")])
def test_a_dload_lock_that_names_no_file_is_refused(project: tuple[Path, str, str],
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    value: str, said: str) -> None:
    monkeypatch.setenv("DLOAD_LOCK", value)
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    with pytest.raises(ConfigError, match=f"DLOAD_LOCK='{value}'.*{said}"):
        repo.dataset("ds")


def test_a_lock_beside_the_script_not_in_use_is_warned_of(project: tuple[Path, str, str],
                                                          tmp_path: Path) -> None:
    proj, old, new = project
    (proj / "train.py").write_text(
        "import dload_arrow as dl\n"
        f"r = dl.Repository.open({str(tmp_path / 'root')!r}, cache_dir={str(tmp_path / 'c')!r})\n"
        "print(r.dataset('ds').version)\nprint(r.dataset('ds').version)\n")
    env = {k: v for k, v in os.environ.items() if k != "DLOAD_LOCK"}
    out = subprocess.run([sys.executable, "proj/train.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [new, new], out.stderr
    assert out.stderr.count("beside the running script pins 'ds' to " + old[:12]) == 1
    assert "train.py:3: UserWarning" in out.stderr  # the user's line
    assert f"DLOAD_LOCK={proj / 'dload.lock'}" in out.stderr
    out = subprocess.run([sys.executable, "train.py"], cwd=proj, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [old, old] and "Warning" not in out.stderr


def test_tag_without_a_version_tags_the_pinned_one(project: tuple[Path, str, str],
                                                   tmp_path: Path) -> None:
    """QA user58: in a pinned project `dload tag ds paper-v1` tagged latest, while info,
    head and training read the pin."""
    from test_cli import dload

    proj, old, new = project
    args = ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "cache")]
    r = dload("tag", "ds", "paper-v1", "--json", *args, cwd=proj)
    assert json.loads(r.out)["version"] == old
    assert json.loads(r.out)["pinned_by"] == str(proj / "dload.lock")
    r = dload("tag", "ds", "later", *args, cwd=tmp_path)  # no lock here: latest
    assert r.out.strip() == f"tagged ds@{new[:12]} as later"
    r = dload("tag", "ds@latest", "latest", *args, cwd=tmp_path, rc=1)
    assert "commit its data again" in r.err


def test_gc_says_how_to_delete_the_young_shards(tmp_path: Path) -> None:
    """QA user58: `rm` says to run `dload gc`, which then kept everything, unexplained."""
    from test_cli import dload

    args = ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "cache")]
    Repository.open(tmp_path / "root").commit("bad", [("a", {"n": 1})], progress=False)
    dload("rm", "bad", "--yes", *args, cwd=tmp_path)
    out = dload("gc", *args, cwd=tmp_path).out
    assert "1 younger than 1h (unreferenced, kept for commits still running and for jobs " \
           "still reading a version rm removed" in out and "once neither runs)" in out
    out = dload("gc", "--grace", "0", *args, cwd=tmp_path).out
    assert out.startswith("deleted 1 shard") and "--grace 0" not in out


def test_a_budget_holding_the_whole_dataset_fits_any_number_of_consumers(
        tmp_path: Path) -> None:
    """QA user58: two DataLoader workers were refused a budget larger than the dataset (each
    counted with its own copy of the one shard; they share the machine's cache), and the
    refusal said "needs 43.4 KB" beside "at least 43.5 KB"."""
    from dload_arrow.errors import InfeasiblePlanError
    from dload_arrow.read.planner import plan_read

    root = f"memory://qa58-{tmp_path.name}"
    repo = Repository.open(root, cache_dir=tmp_path / "c")
    repo.commit("one", [(f"k{i:03d}", {"x": os.urandom(200)}) for i in range(100)],
                progress=False)
    m = repo.manifest("one")
    assert len(m.shards) == 1
    ctx = Repository.open(root, cache_dir=tmp_path / "c",
                          cache_budget=str(m.num_bytes + 100)).read_context
    from dload_arrow.read.reader import all_units

    plan = plan_read(ctx, m, all_units(m), consumers=2)
    assert plan.feasible and plan.resident_bytes == m.num_bytes, plan
    small = Repository.open(root, cache_dir=tmp_path / "c",
                            cache_budget=str(m.num_bytes // 2)).read_context
    with pytest.raises(InfeasiblePlanError) as e:
        plan_read(small, m, all_units(m), consumers=2).check()
    need = str(e.value).split("it needs ")[1].split(" resident")[0]
    assert f"at least {need} " in str(e.value), str(e.value)


def test_a_labels_table_beside_the_files_is_warned_of(tmp_path: Path) -> None:
    """QA user58: images plus one labels.csv made a bogus sample ``labels`` without a word."""
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(12):
        (folder / f"{i}.jpg").write_bytes(os.urandom(50))
    (folder / "labels.csv").write_text("file,label\n0.jpg,3\n")
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    with pytest.warns(UserWarning, match=r"'labels.csv' shares no column with the other 12 "
                                         r"samples: .*\(--exclude /labels.csv"):
        _commit_dir(repo, folder)
    (folder / "labels.csv").unlink()
    (folder / "0.cls").write_text("3")  # a column of one sample among others: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _commit_dir(repo, folder)


def _commit_dir(repo: Repository, folder: Path) -> None:
    from dload_arrow.ingest import DirectorySource

    repo.commit("pics", DirectorySource(folder).reader(), progress=False)


def test_diff_tells_keys_whose_values_changed(tmp_path: Path) -> None:
    """QA user58: a file re-exported with new content under the same key made `dload diff`
    print "+ 0 keys / - 0 keys", as for identical versions."""
    from test_cli import dload

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    rows = {f"k{i:02d}": {"n": i, "s": f"v{i}"} for i in range(20)}
    v1 = repo.commit("t", list(rows.items()), progress=False).version
    rows["k03"] = {"n": 3, "s": "CHANGED"}
    rows["k07"] = {"n": 70, "s": "v7"}
    del rows["k09"]
    v2 = repo.commit("t", list(rows.items()), progress=False).version
    args = ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")]
    out = dload("diff", f"t@{v1}", f"t@{v2}", *args, cwd=tmp_path).out
    assert "- 1 keys" in out and "? 19 keys in both versions lie in shards that differ" in out
    got = json.loads(dload("diff", f"t@{v1}", f"t@{v2}", "--values", "--json", *args,
                           cwd=tmp_path).out)
    assert got["changed"] == ["k03", "k07"] and got["removed"] == ["k09"]
    assert got["in_both_unshared"] == 19
    out = dload("diff", f"t@{v1}", f"t@{v2}", "--values", *args, cwd=tmp_path).out
    assert "~ 2 keys changed (of 19 in both versions whose shards differ)" in out
    assert json.loads(dload("diff", f"t@{v1}", f"t@{v1}", "--values", "--json", *args,
                            cwd=tmp_path).out)["changed"] == []


def test_a_refused_state_names_the_versions_the_pipeline_reads(tmp_path: Path) -> None:
    """QA user58: a checkpoint from before a colleague's append was refused without a word
    on which dataset moved."""
    pytest.importorskip("torch")
    from dload_arrow import mix
    from dload_arrow.errors import ConfigError
    from dload_arrow.torch import as_iterable_dataset

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    repo.commit("a", [(f"a{i}", {"n": i}) for i in range(8)], progress=False)
    repo.commit("b", [(f"b{i}", {"n": i}) for i in range(8)], progress=False)

    def pipe() -> object:
        return mix([repo.dataset("a").shuffle(seed=0), repo.dataset("b").shuffle(seed=0)],
                   [0.5, 0.5], seed=0).batch(2)

    p = pipe()
    it = iter(p)
    next(it)
    state = p.state_dict()
    torch_state = as_iterable_dataset(p).state_dict()
    old = repo.manifest("a").version
    va = repo.commit("a", [(f"a{i}", {"n": i}) for i in range(9)], progress=False).version
    said = (rf"saved while reading a@{old[:16]} and this pipeline reads a@{va[:16]} .*"
            rf"repo.dataset\('a', '{old[:16]}'\)")  # (QA continual61: the version to open)
    with pytest.raises(ConfigError, match=said):
        pipe().load_state_dict(state)
    # (the torch state, taken before any item, is at the epoch's start: it resumes nothing, so
    # the versions do not refuse it; the fingerprint does, naming what the pipeline reads)
    with pytest.raises(ConfigError, match=f"This pipeline reads a@{va[:12]}, b@"):
        as_iterable_dataset(pipe()).load_state_dict(torch_state)


def test_consumers_reading_other_shards_are_still_counted_apart(tmp_path: Path) -> None:
    """QA review58b: the cap was this consumer's own shards, so two ranks on one machine
    reading one shard each passed a budget that holds one shard, and one waited for cache
    room until DLOAD_CACHE_WAIT ran out."""
    from dload_arrow.read.planner import plan_read
    from dload_arrow.read.reader import all_units

    root = f"memory://qa58b-{tmp_path.name}"
    repo = Repository.open(root, cache_dir=tmp_path / "c")
    repo.commit("d", [(f"k{i:03d}", {"x": os.urandom(200)}) for i in range(200)],
                shard_size="25KB", row_group_size="8KB", progress=False)
    m = repo.manifest("d")
    assert len(m.shards) >= 2
    biggest = max(s.bytes for s in m.shards)
    ctx = Repository.open(root, cache_dir=tmp_path / "c",
                          cache_budget=str(biggest + 100)).read_context
    mine = [u for u in all_units(m) if u[0] == 0]  # rank 0's block: the first shard
    assert not plan_read(ctx, m, mine, consumers=2).feasible
    assert plan_read(ctx, m, mine, consumers=1).feasible


def _folder(tmp_path: Path, files: dict[str, bytes]) -> Path:
    folder = tmp_path / "photos"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_one_labels_table_per_split_folder_is_warned_of(tmp_path: Path) -> None:
    files = {f"{split}/{i}.jpg": b"x" for split in ("train", "val") for i in range(10)}
    files.update({"train/labels.csv": b"f,l\n", "val/labels.csv": b"f,l\n"})
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    with pytest.warns(UserWarning, match=r"'train/labels.csv' shares no column with the other "
                                         r"20 samples: .*\(and 1 more like it\)"):
        _commit_dir(repo, _folder(tmp_path, files))


def test_an_odd_image_among_others_is_no_table(tmp_path: Path) -> None:
    files = {f"{i:02d}.jpg": b"x" for i in range(29)}
    files["07b.png"] = b"y"
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _commit_dir(repo, _folder(tmp_path, files))
