"""Relative paths in config files (fourth QA pass, finding A1): a relative ``root`` or
``cache_dir`` in a config file is relative to that file's directory, so a project's
subdirectories share its root; arguments and env vars stay relative to the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow.config import resolve_settings, user_config_path


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> RunFn:
    return runner(capsys)


def _project(tmp_path: Path, text: str) -> tuple[Path, Path]:
    """A project dir holding dload.toml with ``text``, and a subdirectory of it."""
    proj = tmp_path / "proj"
    (proj / "sub" / "deeper").mkdir(parents=True)
    (proj / "dload.toml").write_text(text)
    return proj, proj / "sub" / "deeper"


def test_relative_paths_in_dload_toml_are_relative_to_its_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj, sub = _project(tmp_path, 'root = "./myroot"\ncache_dir = "../cache"\n')
    for cwd in (proj, sub):
        monkeypatch.chdir(cwd)
        s = resolve_settings()
        assert s.root == str(proj / "myroot")
        assert s.cache_dir == str(tmp_path / "cache")
        assert s.sources["root"] == str(proj / "dload.toml")


def test_urls_absolute_and_home_paths_in_dload_toml_are_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, sub = _project(tmp_path, 'root = "s3://b/p"\ncache_dir = "/abs/cache"\n')
    monkeypatch.chdir(sub)
    s = resolve_settings()
    assert (s.root, s.cache_dir) == ("s3://b/p", "/abs/cache")
    _, sub = _project(tmp_path / "t", 'root = "~/r"\ncache_dir = "~/c"\n')
    monkeypatch.chdir(sub)
    s = resolve_settings()
    assert s.root == "~/r"  # expanded where the storage opens it, as before
    assert s.cache_dir == str(Path(os.environ["HOME"]) / "c")


def test_a_relative_path_in_the_user_config_is_relative_to_its_directory() -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True)
    path.write_text('root = "roots/main"\n')
    with pytest.warns(UserWarning, match=r"root = 'roots/main' in .*config.toml is relative.*"
                                         r"dload init --user --root /absolute/path"):
        assert resolve_settings().root == str(path.parent / "roots" / "main")


def test_relative_env_and_argument_paths_stay_relative_to_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, sub = _project(tmp_path, 'root = "./myroot"\n')
    monkeypatch.chdir(sub)
    monkeypatch.setenv("DLOAD_ROOT", "./envroot")
    assert resolve_settings().root == "./envroot"
    assert resolve_settings(root="rel").root == "rel"


def test_commits_from_a_project_subdirectory_use_the_project_root(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("a")
    monkeypatch.chdir(proj)
    assert run("init", "--project", "--root", "./myroot").out == (
        f"wrote {proj / 'dload.toml'}: set root=./myroot\n")
    run("commit", "a", "--from", str(data))
    monkeypatch.chdir(proj / "sub")
    run("commit", "b", "--from", str(data))
    assert [d["name"] for d in run("ls", "--json").json] == ["a", "b"]
    assert not (proj / "sub" / "myroot").exists()
    st = run("status", "--json").json
    assert st["settings"]["root"] == {"value": str(proj / "myroot"),
                                      "source": str(proj / "dload.toml")}
    line = run("status").out.splitlines()[1]
    assert line.split() == ["root", str(proj / "myroot"), str(proj / "dload.toml")]


def test_status_shows_a_relative_root_argument_as_the_absolute_path_used(
        tmp_path: Path, run: RunFn) -> None:
    st = run("status", "--root", "rel/root", "--cache-dir", "c", "--json").json
    assert st["settings"]["root"]["value"] == str(Path.cwd() / "rel" / "root")
    assert st["settings"]["cache_dir"]["value"] == str(Path.cwd() / "c")
    assert st["settings"]["root"]["source"] == "argument"


def test_init_user_stores_a_relative_root_as_an_absolute_path(run: RunFn) -> None:
    run("init", "--root", "here/root", "--cache-dir", "~/c")
    lines = user_config_path().read_text().splitlines()
    assert f'root = "{Path.cwd() / "here" / "root"}"' in lines
    assert 'cache_dir = "~/c"' in lines  # a home path already means the same everywhere
    run("init", "--root", "s3://bucket/p")
    assert 'root = "s3://bucket/p"' in user_config_path().read_text().splitlines()
