"""QA pass "config": dload.lock edits that would lose the user's text are refused, CRLF kept;
init warns when a new project file hides another; file:// paths, URL cache dirs, endpoints,
bytes paths, numeric budgets and a deleted working directory get clear answers."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_cli import DLOAD, dload

from dload_arrow import ConfigError, Repository
from dload_arrow.config import resolve_settings

A = "a" * 64


def _two(root: Path) -> tuple[str, str]:
    repo = Repository.open(root)
    a = repo.commit("a", [("k", {"x": 1})], progress=False).version
    b = repo.commit("b", [("k", {"x": 2})], progress=False).version
    return a, b


@pytest.mark.parametrize("pins", [f'datasets = {{ a = "{A}" }}', f'datasets.a = "{A}"',
                                  f'["datasets"]\na = "{A}"'])
def test_pin_refuses_to_rewrite_a_lock_whose_other_text_it_would_lose(pins: str) -> None:
    cwd = Path.cwd()
    _two(cwd / "root")
    text = f"# why these pins: the ICML numbers\n{pins}\n\n[tool.mine]\nowner = \"lab\"\n"
    (cwd / "dload.lock").write_text(text)
    r = dload("pin", "b", "--root", str(cwd / "root"), cwd=cwd, rc=1)
    assert "cannot edit the pins" in r.err and "unchanged" in r.err
    assert (cwd / "dload.lock").read_text() == text  # before: comment and [tool.mine] lost


def test_pin_rewrites_a_lock_that_holds_only_pins_in_another_shape() -> None:
    cwd = Path.cwd()
    a, b = _two(cwd / "root")
    (cwd / "dload.lock").write_text(f'datasets = {{ a = "{a}" }}\n')
    dload("pin", "b", "--root", str(cwd / "root"), cwd=cwd)
    from dload_arrow.repository.lock import read_lock

    assert read_lock(cwd / "dload.lock") == {"a": a, "b": b}


def test_pin_keeps_a_crlf_lock_crlf() -> None:
    cwd = Path.cwd()
    _, b = _two(cwd / "root")
    (cwd / "dload.lock").write_bytes(b"# why\r\n[datasets]\r\n\r\n[tool]\r\nowner = \"lab\"\r\n")
    dload("pin", "b", "--root", str(cwd / "root"), cwd=cwd)
    data = (cwd / "dload.lock").read_bytes()
    assert f'"b" = "{b}"'.encode() in data and b"\n" not in data.replace(b"\r\n", b"")


def test_init_in_a_project_subfolder_warns_that_the_new_file_hides_the_projects() -> None:
    cwd = Path.cwd()
    dload("init", "--project", "--root", "data", cwd=cwd)
    (cwd / "train").mkdir()
    r = dload("init", "--project", "--cache-budget", "2GB", cwd=cwd / "train")
    assert f"hides {cwd / 'dload.toml'}" in r.err and "root=data" in r.err
    assert "hides" not in dload("init", "--project", "--cache-budget", "3GB", cwd=cwd).err


def test_file_urls_are_the_paths_they_name(monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = Path.cwd()
    (cwd / "dload.toml").write_text('root = "file://data"\ncache_dir = "file:///tmp/x-cache"\n')
    (cwd / "sub").mkdir()
    monkeypatch.chdir(cwd / "sub")
    s = resolve_settings()
    assert s.root == str(cwd / "data")  # relative to the file, as a plain path is
    assert s.cache_dir == "/tmp/x-cache"
    assert resolve_settings(root=f"file://localhost{cwd}/r").root == f"{cwd}/r"


def test_a_url_cache_dir_is_refused_naming_its_source() -> None:
    with pytest.raises(ConfigError, match=r"cache_dir 's3://b/c' \(from argument cache_dir= / "
                                          r"--cache-dir\) is a URL"):
        resolve_settings(cache_dir="s3://b/c")


def test_a_bad_endpoint_is_refused_for_s3_roots_naming_its_source(
        monkeypatch: pytest.MonkeyPatch) -> None:
    (Path.cwd() / "dload.toml").write_text('endpoint_url = "minio.internal:9000"\n')
    with pytest.raises(ConfigError, match=r"'minio.internal:9000' \(from .*dload.toml\)"):
        resolve_settings(root="s3://bucket/data")
    assert resolve_settings(root="local").endpoint_url == "minio.internal:9000"  # unused
    monkeypatch.setenv("R2_ACCOUNT_ID", " ")
    with pytest.raises(ConfigError, match="env R2_ACCOUNT_ID"):
        resolve_settings(root="s3://bucket/data")


def test_a_short_pin_is_shown_as_such_not_as_gone() -> None:
    cwd = Path.cwd()
    a, _ = _two(cwd / "root")
    (cwd / "dload.lock").write_text(f'[datasets]\na = "{a[:12]}"\n')
    out = dload("ls", "--root", str(cwd / "root"), cwd=cwd).out
    assert f"{a[:12]} (not a full id)" in out and "(gone)" not in out
    err = dload("head", "a", "--root", str(cwd / "root"), cwd=cwd, rc=1).err
    assert f"the pin of 'a' in {cwd / 'dload.lock'}, '{a[:12]}'" in err
    assert f"dload pin a@{a[:12]}" in err


def test_a_deleted_working_directory_is_named() -> None:
    gone = Path.cwd() / "gone"
    gone.mkdir()
    r = subprocess.run(["bash", "-c", f'cd "{gone}" && rmdir "{gone}" && "{DLOAD}" status'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "working directory no longer exists" in r.stderr, r.stderr


def test_a_bytes_root_is_the_path_it_spells() -> None:
    root = Path.cwd() / "r"
    repo = Repository.open(os.fsencode(root))
    repo.commit("t", [("k", {"x": 1})], progress=False)
    assert (root / "datasets" / "t").is_dir()


def test_numeric_budgets_are_read_as_numbers() -> None:
    with pytest.raises(ConfigError, match="must not be negative"):
        resolve_settings(cache_budget=-5)
    assert resolve_settings(cache_budget=1e16).cache_budget == "10000000000000000"
    assert resolve_settings(cache_budget=2.5e9).cache_budget == "2500000000"


def test_a_comment_with_a_unicode_line_separator_does_not_block_a_pin() -> None:
    cwd = Path.cwd()
    _, b = _two(cwd / "root")
    text = "# why\u2028still the comment\n[datasets]\n"
    (cwd / "dload.lock").write_text(text, encoding="utf-8")
    dload("pin", "b", "--root", str(cwd / "root"), cwd=cwd)
    got = (cwd / "dload.lock").read_text(encoding="utf-8")
    assert got.startswith("# why\u2028still the comment\n[datasets]\n") and b in got


def test_a_lock_with_mixed_line_ends_is_written_with_lf() -> None:
    cwd = Path.cwd()
    _two(cwd / "root")
    (cwd / "dload.lock").write_bytes(b"# why\r\n[datasets]\n")
    dload("pin", "b", "--root", str(cwd / "root"), cwd=cwd)
    assert b"\r\n" not in (cwd / "dload.lock").read_bytes().replace(b"# why\r\n", b"")


def test_a_file_url_in_the_user_config_is_not_called_relative(tmp_path: Path) -> None:
    import warnings

    from dload_arrow.config import user_config_path

    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'root = "file://{tmp_path}/abs"\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_settings().root == f"{tmp_path}/abs"


def test_init_does_not_warn_of_a_file_above_the_ceiling(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    cwd = Path.cwd()
    (cwd / "dload.toml").write_text('root = "data"\n')
    (cwd / "proj").mkdir()
    r = dload("init", "--project", "--cache-budget", "2GB", cwd=cwd / "proj",
              env={"DLOAD_CEILING_DIRECTORIES": str(cwd / "proj")})
    assert "hides" not in r.err


def test_status_shows_the_settings_before_refusing_a_bad_one() -> None:
    cwd = Path.cwd()
    r = dload("status", "--cache-dir", "s3://b/c", cwd=cwd, rc=1)
    assert "cache_dir" in r.out and "s3://b/c" in r.out and "argument" in r.out
    assert "is a URL" in r.err
    r = dload("status", "--root", "s3://bucket/x", cwd=cwd, rc=1,
              env={"DLOAD_ENDPOINT_URL": "minio:9000"})
    assert "minio:9000" in r.out
    assert "endpoint_url 'minio:9000' (from env DLOAD_ENDPOINT_URL)" in r.err
    got = json.loads(dload("status", "--json", "--cache-dir", "s3://b/c", cwd=cwd, rc=1).out)
    assert got["settings"]["cache_dir"] == {"value": "s3://b/c", "source": "argument"}
    assert "is a URL" in got["error"]
