"""Settings as users set them (QA cfg56).

- the ceiling directory's own dload.toml was read (git does not look there), so a stray
  /tmp/dload.toml still set the root of every project under /tmp;
- a dload.toml (or user config) that is a directory or a dangling link was skipped silently:
  the commit went to another root;
- ``dload init --endpoint-url http://KEY:SECRET@host`` wrote the secret into the file;
- a misspelt DLOAD_* variable had no effect and no word;
- an endpoint in ``storage_options`` silently beat ``endpoint_url``, and s3fs's
  ``client_kwargs`` one failed inside aiobotocore;
- ``dload init --root ' /x'`` wrote what every command then refuses; a relative XDG_* moved
  the default root with the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_run import runner

from dload_arrow import ConfigError, Repository
from dload_arrow.config import find_up, resolve_settings


def test_the_ceilings_own_file_is_not_read_from_below(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ceiling = tmp_path / "tmpdir"
    (ceiling / "proj").mkdir(parents=True)
    (ceiling / "dload.toml").write_text('root = "/stray/root"\n')
    monkeypatch.setenv("DLOAD_CEILING_DIRECTORIES", str(ceiling))
    from dload_arrow import config_values

    monkeypatch.setattr(config_values, "_SKIPPED", set())
    with pytest.warns(UserWarning, match=r"dload\.toml is not read: .*tmpdir is in "
                                         "DLOAD_CEILING_DIRECTORIES"):  # once (QA compat56)
        assert find_up("dload.toml", ceiling / "proj") is None
    monkeypatch.chdir(ceiling / "proj")
    assert resolve_settings().sources["root"] == "default"
    monkeypatch.chdir(ceiling)  # started there: its own file, as git does
    assert resolve_settings().root == "/stray/root"


@pytest.mark.parametrize("make", ["dangling", "directory"])
def test_a_settings_file_that_is_no_file_is_refused(make: str, tmp_path: Path) -> None:
    path = Path.cwd() / "dload.toml"
    if make == "dangling":
        path.symlink_to(tmp_path / "moved" / "dload.toml")
        what = "a link to .* which does not exist;"
    else:
        path.mkdir()
        what = "a directory, not a file;"
    with pytest.raises(ConfigError, match=rf"dload\.toml is {what}"):
        Repository.open()
    os.unlink(path) if make == "dangling" else path.rmdir()
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "dload" / "config.toml"
    user.mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"config\.toml is a directory"):
        Repository.open()


def test_init_refuses_credentials_and_blanks_before_writing(
        capsys: pytest.CaptureFixture[str]) -> None:
    run = runner(capsys)
    err = run("init", "--project", "--endpoint-url", "http://AKIA:s3cret@127.0.0.1:9000",
              rc=1).err
    assert "holds credentials" in err and "s3cret" not in err
    assert not Path("dload.toml").exists()
    err = run("init", "--project", "--root", " /data/x", rc=1).err
    assert "begins or ends with a blank" in err and "--root" in err
    err = run("init", "--project", "--cache-dir", "c ", rc=1).err
    assert "begins or ends with a blank" in err
    assert not Path("dload.toml").exists()


def test_a_misspelt_variable_is_warned_of(monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow import config_values

    monkeypatch.setattr(config_values, "_WARNED", set())
    monkeypatch.setenv("DLOAD_CACHEBUDGET", "abc")
    with pytest.warns(UserWarning, match="DLOAD_CACHEBUDGET is not one dload reads "
                                         r"\(did you mean DLOAD_CACHE_BUDGET\?"):
        resolve_settings()


def test_relative_xdg_dirs_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", ".local/share")
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    s = resolve_settings()
    home = Path(os.environ["HOME"])
    assert s.root == str(home / ".local" / "share" / "dload" / "root")
    assert s.cache_dir == str(home / ".cache" / "dload")


def test_two_endpoints_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"two S3 endpoints for 's3://bkt/p': "
                                          r"'http://127.0.0.1:1' \(endpoint_url.*'http://127.0.0.1:2"
                                          r"' \(storage_options\)"):
        Repository.open("s3://bkt/p", endpoint_url="http://127.0.0.1:1",
                        storage_options={"endpoint_url": "http://127.0.0.1:2"})
    with pytest.raises(ConfigError, match="its client_kwargs"):
        Repository.open("s3://bkt/p", endpoint_url="http://127.0.0.1:1",
                        storage_options={"client_kwargs": {"endpoint_url": "http://127.0.0.1:2"}})
    repo = Repository.open("s3://bkt/p", storage_options={
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:2"}})  # one endpoint: taken
    assert "endpoint_url" not in repo.storage._options  # type: ignore[attr-defined]


def test_settings_typos_and_file_forms_say_what_was_meant() -> None:
    with pytest.raises(TypeError, match=r"resolve_settings\(\) got \['cache_budgt'\]"):
        resolve_settings(cache_budgt="1GB")
    toml = Path("dload.toml")
    toml.write_bytes(b"\xef\xbb\xbfroot = \"bom-root\"\n")  # Notepad's byte-order mark
    assert resolve_settings().root.endswith("bom-root")
    toml.write_text('[dload]\nroot = "x"\n')
    with pytest.raises(ConfigError, match=r"not in a \[dload\] table"):
        resolve_settings()
    toml.write_text('cache-budget = "5GB"\n')
    with pytest.raises(ConfigError, match=r"did you mean cache_budget\?"):
        resolve_settings()


def test_credentials_in_an_endpoint_are_refused_wherever_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """(QA docs56b) storage_options' endpoint, and one a local root leaves unused."""
    secret = "http://AKIA:s3cret@127.0.0.1:9000"
    for opts in ({"endpoint_url": secret}, {"client_kwargs": {"endpoint_url": secret}}):
        with pytest.raises(ConfigError, match="holds credentials") as e:
            Repository.open("s3://bkt/p", storage_options=opts)
        assert "s3cret" not in str(e.value)
    monkeypatch.setenv("DLOAD_ENDPOINT_URL", secret)
    with pytest.raises(ConfigError, match=r"\(from env DLOAD_ENDPOINT_URL\) holds credentials"):
        Repository.open(Path.cwd() / "local-root")
    monkeypatch.setenv("DLOAD_ENDPOINT_URL", "minio:9000")  # not checked further, unused
    Repository.open(Path.cwd() / "local-root")


def test_an_empty_misspelt_variable_is_not_warned_of(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from dload_arrow import config_values

    monkeypatch.setattr(config_values, "_WARNED", set())
    monkeypatch.setenv("DLOAD_CACHEBUDGET", "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolve_settings()


def test_a_dangling_settings_link_reads_plainly() -> None:
    os.symlink("/nowhere/dload.toml", "dload.toml")
    with pytest.raises(ConfigError, match=r"is a link to '/nowhere/dload.toml', which does not "
                                          r"exist; fix it or delete it"):
        Repository.open()
