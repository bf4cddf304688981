"""`dload` CLI findings of the fourth QA pass: `ls` and pins (A2), `verify` of a missing shard
(B2), a mistyped NAME with @VERSION (C1), the "Known datasets" hint (C6) and the demo's help
(C7). Every check runs `main()` in this process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import NotFoundError, Repository
from dload_arrow.repository.missing import unknown_dataset
from dload_arrow.sizes import format_bytes
from dload_arrow.store.names import shard_path


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def root_repo(local_root: str) -> Repository:
    return Repository.open(local_root)


def _commit(repo: Repository, name: str, n: int = 1, tag: bytes = b"") -> str:
    return repo.commit(name, {f"k{i}": {"txt": tag + b"%d" % i} for i in range(n)}).version


# --- A2: ls lists latest and marks pins; rm warns about a pinned version -------------------

def test_ls_lists_latest_and_marks_the_pin(run: RunFn, root_repo: Repository) -> None:
    v1 = _commit(root_repo, "p")
    run("pin", "p")
    v2 = _commit(root_repo, "p", tag=b"new")
    lock = Path.cwd() / "dload.lock"
    m = root_repo.manifest("p", "latest")
    got = run("ls", "--json").json
    assert got == [{"name": "p", "version": v2, "rows": 1, "bytes": m.num_bytes, "shards": 1,
                    "pinned": {"version": v1, "lock": str(lock), "exists": True,
                               "full_id": True}}]
    lines = run("ls").out.splitlines()
    assert [ln.split() for ln in lines[:2]] == [
        ["name", "version", "rows", "bytes", "shards", "pinned"],
        ["p", v2[:12], "1", *format_bytes(m.num_bytes).split(), "1", v1[:12]]]
    assert lines[2:] == [f"pinned by {lock}: NAME without @VERSION reads the pinned version; "
                         "`dload unpin NAME` follows latest"]


def test_ls_without_pins_has_no_pinned_column(run: RunFn, root_repo: Repository) -> None:
    v = _commit(root_repo, "p")
    lines = run("ls").out.splitlines()
    assert [ln.split()[:2] for ln in lines] == [["name", "version"], ["p", v[:12]]]
    assert "pinned" not in lines[0] and len(lines) == 2
    assert run("ls", "--json").json[0]["pinned"] is None


def test_a_stale_pin_is_shown_and_does_not_hide_the_dataset(run: RunFn,
                                                             root_repo: Repository) -> None:
    v1 = _commit(root_repo, "p")
    run("pin", "p")
    v2 = _commit(root_repo, "p", tag=b"new")
    r = run("rm", "p", "--version", v1[:12], "--yes")
    lock = Path.cwd() / "dload.lock"
    assert r.err == (f"warning: {lock} pins p to {v1[:12]}; once it is removed, reading p "
                     "without @VERSION fails: run `dload unpin p` (or `dload pin p` to pin "
                     "latest)\n")
    got = run("ls", "--json").json
    assert [(d["name"], d["version"], d["pinned"]) for d in got] == [
        ("p", v2, {"version": v1, "lock": str(lock), "exists": False, "full_id": True})]
    lines = run("ls").out.splitlines()
    assert lines[1].split()[-2:] == [v1[:12], "(gone)"]
    assert lines[2] == (f"pinned by {lock}: NAME without @VERSION reads the pinned version; "
                        "(gone): this root lacks it; `dload unpin NAME` follows latest")


def test_rm_warns_only_when_the_pinned_version_goes(run: RunFn, root_repo: Repository) -> None:
    v1 = _commit(root_repo, "p")
    v2 = _commit(root_repo, "p", tag=b"new")
    run("pin", f"p@{v1}")
    assert run("rm", "p", "--version", v2, "--yes").err == ""
    _commit(root_repo, "q")
    assert run("rm", "q", "--yes").err == ""  # q is not pinned
    assert run("rm", "p", "--yes").err.startswith(
        f"warning: {Path.cwd() / 'dload.lock'} pins p to {v1[:12]};")


# --- B2: verify reports a missing shard and checks the others ------------------------------

def test_verify_reports_a_missing_shard_and_checks_the_rest(run: RunFn, local_root: str,
                                                            root_repo: Repository) -> None:
    v = root_repo.commit("s", {f"k{i}": {"bin": os.urandom(3000)} for i in range(8)},
                         shard_size="4KB", row_group_size="1KB").version
    digests = root_repo.manifest("s").digests()
    assert len(digests) > 2
    gone = sorted(digests)[1]
    os.remove(os.path.join(local_root, shard_path(gone)))
    r = run("verify", "s", rc=1)
    assert r.out == (f"s@{v[:12]}: {len(digests)} objects checked, 1 BAD\n"
                     f"  BAD {gone}  missing\n")
    assert r.err == (f"dload: error: 1 of {len(digests)} objects of s@{v[:12]} are missing or "
                     f"corrupt (first: {gone[:12]} missing); commit the same data again to "
                     "restore them\n")
    assert run("verify", "s", "--json", rc=1).json == {
        "name": "s", "version": v, "checked": len(digests),
        "bad": [{"digest": gone, "problem": "missing"}], "ok": False}


# --- C1 / C6: a mistyped NAME, with or without @VERSION --------------------------------------

def test_a_mistyped_name_with_a_version_says_the_dataset_does_not_exist(
        run: RunFn, local_root: str, root_repo: Repository) -> None:
    v = _commit(root_repo, "photos")
    run("tag", "photos", "v1")
    msg = (f"no dataset 'photoz' under file://{local_root}. Did you mean 'photos'? Known "
           "datasets: photos (`dload ls`). Create it with repo.commit() or `dload commit`.")
    for args in (["info", "photoz@v1"], ["info", f"photoz@{v}"], ["head", "photoz@abc"],
                 ["diff", "photos@v1", "photoz@v1"], ["versions", "photoz"],
                 ["sql", "select count(*) from samples('photoz', 'v1')"],
                 ["tag", "photoz@v1", "v2"], ["tag", "photoz", "v2"], ["pin", "photoz@v1"],
                 ["pin", "photoz"], ["rm", "photoz", "--version", "v1", "--yes"]):
        assert run(*args, rc=1).err == f"dload: error: {msg}\n", args
    for version in ("v1", v, "latest", None):
        with pytest.raises(NotFoundError) as e:
            root_repo.dataset("photoz", version)
        assert e.value.args[0] == msg
    # a known dataset keeps the version message
    assert run("info", "photos@v9", rc=1).err == (
        "dload: error: 'photos' has no version or tag 'v9'; list them with "
        "`dload versions photos`\n")


def test_known_datasets_lists_close_matches_first_then_ten_and_a_count(
        run: RunFn, local_root: str, root_repo: Repository) -> None:
    for name in [f"a{i}" for i in range(1, 11)] + ["simple"]:
        _commit(root_repo, name)
    msg = (f"dload: error: no dataset 'simpel' under file://{local_root}. Did you mean "
           "'simple'? Known datasets: simple, a1, a10, a2, a3, a4, a5, a6, a7, a8 and 1 more "
           "(`dload ls`). Create it with repo.commit() or `dload commit`.\n")
    for args in (["info", "simpel"], ["tag", "simpel", "v1"], ["pin", "simpel"]):
        assert run(*args, rc=1).err == msg


def test_unknown_dataset_message_shapes() -> None:
    assert unknown_dataset("x", [], "file:///r") == (
        "no dataset 'x' under file:///r. The root has no datasets yet. Create it with "
        "repo.commit() or `dload commit`.")
    assert unknown_dataset("zzz", ["a", "b"], "s3://b/p") == (
        "no dataset 'zzz' under s3://b/p. Known datasets: a, b (`dload ls`). Create it with "
        "repo.commit() or `dload commit`.")
    got = unknown_dataset("photo", ["photos", "photo2", "other"], "u")
    assert got.startswith("no dataset 'photo' under u. Did you mean 'photos' or 'photo2'? "
                          "Known datasets: photos, photo2, other (`dload ls`).")


# --- C7: the demo's --root help says which root it uses ------------------------------------

def test_demo_help_says_the_root_comes_from_the_usual_settings(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(runner(capsys)("demo", "--help").out.split())
    assert ("--root TEXT Root to use (default: as for every command, DLOAD_ROOT, then "
            "dload.toml, then the user config, else a local directory in your data dir; the "
            "first line printed names it).") in out
    assert "embedded default" not in out
