"""QA errors61 and notebook61: text that is not UTF-8 (a byte in another encoding, which Python
reads as a lone surrogate) refused where it came in instead of breaking SQL for the whole
root; dload.lock pins that pin nothing; CLI messages in CLI terms."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.errors import ConfigError, SchemaError, SqlError

LATIN1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # 'caf\udce9'


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def repo(local_root: str) -> dl.Repository:
    r = dl.Repository.open(local_root)
    r.commit("photos", [("a", {"x": 1})], progress=False)
    return r


@pytest.mark.parametrize("kw", [{"recipe": f"# {LATIN1}\nprint(1)\n"},
                                {"meta": {"source": LATIN1}},
                                {"meta": {"nested": [{"k": LATIN1}]}}])
def test_recipe_and_meta_that_are_not_unicode_are_refused(repo: dl.Repository,
                                                          kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"is not valid Unicode: it holds a lone surrogate"):
        repo.commit("other", [("b", {"x": 2})], progress=False, **kw)  # type: ignore[arg-type]
    assert repo.datasets() == ["photos"]
    assert repo.sql("select count(*) as n from versions").to_pylist() == [{"n": 1}]


def test_cli_meta_that_is_not_utf8_is_refused(tmp_path: Path, run: RunFn,
                                              repo: dl.Repository) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("hi")
    err = run("commit", "other", "--from", str(tmp_path / "src"), "--meta",
              f"source={LATIN1}", rc=1).err
    assert "meta is not valid Unicode" in err
    assert run("sql", "select name, meta from versions", "--json").json[0]["name"] == "photos"


@pytest.mark.parametrize(("sample", "words"), [
    ({f"a{LATIN1}": 1}, "column name 'a"),
    ({"a": f"v{LATIN1}"}, "column 'a': value 'v"),
])
def test_column_names_and_values_that_are_not_unicode_say_so(
        repo: dl.Repository, sample: dict[str, object], words: str) -> None:
    with pytest.raises(SchemaError, match="is not valid Unicode") as e:
        repo.commit("z", [("k", sample)], progress=False)
    assert words in str(e.value) and "wider type" not in str(e.value)


@pytest.mark.parametrize("value", [{"s": {1, 2}}, {"s": [{1, 2}]}])
def test_a_set_inside_a_dict_is_refused_as_in_a_list(repo: dl.Repository,
                                                     value: dict[str, object]) -> None:
    with pytest.raises(SchemaError, match=r"a set .* whose order changes"):
        repo.commit("z", [("k", {"d": value})], progress=False)


def test_a_query_that_is_not_utf8_is_a_user_error(run: RunFn, repo: dl.Repository) -> None:
    with pytest.raises(SqlError, match="the query is not UTF-8 text"):
        repo.sql(f"select '{LATIN1}'")
    assert "the query is not UTF-8 text" in run("sql", f"select '{LATIN1}'", rc=1).err


def test_a_root_that_is_not_utf8_is_a_user_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = os.path.join(str(tmp_path), f"donn{LATIN1}es")
    os.makedirs(os.fsencode(root))
    err = runner(capsys)("ls", "--root", root, rc=1).err
    assert "is not UTF-8" in err and "rename the folder" in err


@pytest.mark.parametrize(("text", "words"), [
    ('photos = "{v}"\n', "'photos' is outside the [datasets] table"),
    ('[dataset]\nphotos = "{v}"\n', "a table [dataset] (pins go in [datasets])"),
])
def test_pins_outside_the_datasets_table_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: RunFn, repo: dl.Repository,
        text: str, words: str) -> None:
    old = repo.dataset("photos").version
    repo.commit("photos", [("a", {"x": 1}), ("b", {"x": 2})], progress=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dload.lock").write_text(text.format(v=old))
    with pytest.raises(ConfigError, match=re.escape(words)):
        repo.dataset("photos")
    assert words in run("info", "photos", rc=1).err


def test_a_bad_name_in_the_lock_is_warned_by_ls_and_unpin_removes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: RunFn,
        repo: dl.Repository) -> None:
    v = repo.dataset("photos").version
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dload.lock").write_text(f'[datasets]\n"photos" = "{v}"\n"my photos" = "{v}"\n')
    r = run("ls")
    assert "photos" in r.out and "pins 'my photos', which is no dataset name" in r.err
    assert "dload unpin 'my photos'" in r.err
    run("unpin", "my photos")
    assert "my photos" not in (tmp_path / "dload.lock").read_text()
    assert run("ls").err == ""
    assert repo.unpin("nosuch") is False


def test_export_speaks_cli(tmp_path: Path, run: RunFn, repo: dl.Repository,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    err = run("export", "photos", "nokey", "--to", str(tmp_path / "o"), rc=1).err
    assert "`dload head photos` shows keys" in err and "default=" not in err
    monkeypatch.chdir(tmp_path)
    assert "--to: is empty" in run("export", "photos", "a", "--to", "", rc=1).err
    assert not list(tmp_path.glob("a.*"))


def test_a_remote_root_own_files_are_not_an_input(s3_root: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = dl.Repository.open(s3_root)
    v = repo.commit("photos", [("a", {"x": 1})], progress=False).version
    run = runner(capsys, ["--root", s3_root])
    err = run("commit", "mine", "--from", f"{s3_root}/", rc=1).err
    assert "is a dload root" in err and "manifests/" not in err
    dl.Repository.open(f"{s3_root}2").commit("other", [("a", {"x": 1})], progress=False)
    err = run("commit", "mine", "--from", f"{s3_root}2/datasets/", rc=1).err
    assert f"`dload ls --root {s3_root}2`" in err
    err = run("commit", "mine", "--from", f"{s3_root}//datasets/photos/", rc=1).err
    assert "one of the folders where dload keeps its own data" in err
    manifest = f"{s3_root}/datasets/photos/manifests/{v}.arrow"
    err = run("commit", "mf", "--from", manifest, rc=1).err
    assert "one of the folders where dload keeps its own data" in err
    assert repo.datasets() == ["photos"]


def test_cli_words_for_limits_short_ids_and_lock_folders(
        tmp_path: Path, run: RunFn, repo: dl.Repository,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert "1<=x<=9223372036854775807" in run("head", "photos", "-n", str(10**20), rc=1).err
    v = repo.dataset("photos").version
    err = run("diff", v[:2], v[:3], rc=1).err
    assert "A bare version id needs 4 hex digits or more" in err
    monkeypatch.setenv("DLOAD_LOCK", str(tmp_path / "nowhere" / "x.lock"))
    err = run("pin", "photos", rc=1).err
    assert "its folder" in err and "does not exist; create it, or unset DLOAD_LOCK" in err


def test_raw_os_errors_read_as_sentences() -> None:
    from dload_arrow.cli.main import _os_text

    denied = _os_text(PermissionError(13, "Permission denied", "unread.tar"))
    assert denied.startswith("'unread.tar': Permission denied; this user may not use it")
    assert _os_text(FileNotFoundError(2, "No such file or directory", "x")).endswith(
        "check the path")
    assert _os_text(PermissionError("a message of ours")) == "a message of ours"


def test_an_unreachable_endpoint_names_its_setting(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLOAD_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    err = runner(capsys)("ls", "--root", "s3://bucket/x", rc=1).err
    assert "is the server up at that address? It comes from DLOAD_ENDPOINT_URL" in err


def test_cache_status_says_when_this_user_cannot_write_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: RunFn,
        repo: dl.Repository) -> None:
    from dload_arrow.read import context

    cache = repo.settings.cache_dir
    repo.dataset("photos").to_arrow()  # the cache dir and its folders exist
    assert context.unwritable(cache) is None
    assert "cannot be used" not in run("cache", "status").out
    real = os.access
    monkeypatch.setattr(context.os, "access",  # the folder of another user, as uid 65534
                        lambda p, mode: False if os.fspath(p) == cache else real(p, mode))
    assert context.unwritable(cache) == f"this user cannot write {cache}"
    out = run("cache", "status").out
    assert f"cannot be used: this user cannot write {cache}" in out
    assert run("cache", "status", "--json").json["unwritable"].startswith("this user")


def test_other_tables_in_the_lock_beside_datasets_are_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo: dl.Repository) -> None:
    v = repo.dataset("photos").version
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dload.lock").write_text(
        f'[datasets]\nphotos = "{v}"\n[old_datasets]\nphotos = "{v}"\n[dataset_notes]\nx = 1\n')
    assert repo.dataset("photos").version == v
    (tmp_path / "dload.lock").write_text(f'[datasets]\nphotos = "{v}"\n[Dataset]\nx = "{v}"\n')
    with pytest.raises(ConfigError, match=r"a table \[Dataset\]"):
        repo.dataset("photos")
