"""Settings resolution, human sizes and durations, dload.lock pins, tags and version prefixes."""

from __future__ import annotations

import os
import tomllib
import warnings
from pathlib import Path

import pytest

from dload_arrow import ConfigError, NotFoundError, Repository
from dload_arrow.config import resolve_settings, user_config_path
from dload_arrow.repository.lock import read_lock
from dload_arrow.sizes import format_bytes, parse_duration, parse_size


def write_user_config(text: str) -> Path:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_when_nothing_is_configured() -> None:
    s = resolve_settings()
    home = Path(os.environ["HOME"])
    assert s.root == str(home / ".local" / "share" / "dload" / "root")
    assert s.cache_dir == str(home / ".cache" / "dload")
    assert s.cache_budget == "auto" and s.endpoint_url is None
    assert set(s.sources.values()) == {"default"}


def test_resolution_order_env_then_project_then_user_then_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = write_user_config(
        'root = "/user/root"\ncache_dir = "/user/cache"\ncache_budget = "5GB"\n'
        'endpoint_url = "http://user:9000"\n'
    )
    project = tmp_path / "proj"
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    (project / "dload.toml").write_text('root = "s3://proj/root"\ncache_budget = "7GB"\n')
    monkeypatch.chdir(deep)  # dload.toml is found up the tree
    monkeypatch.setenv("DLOAD_CACHE_BUDGET", "9GB")

    s = resolve_settings()
    assert s.cache_budget == "9GB" and s.sources["cache_budget"] == "env"
    assert s.root == "s3://proj/root" and s.sources["root"] == str(project / "dload.toml")
    assert s.cache_dir == "/user/cache" and s.sources["cache_dir"] == str(user)
    assert s.endpoint_url == "http://user:9000" and s.sources["endpoint_url"] == str(user)

    explicit = resolve_settings(cache_budget="1GB", root="/explicit")
    assert explicit.cache_budget == "1GB" and explicit.sources["cache_budget"] == "argument"
    assert explicit.root == "/explicit"

    monkeypatch.setenv("DLOAD_ROOT", "/env/root")
    assert resolve_settings().root == "/env/root"


def test_r2_account_id_sets_the_endpoint_unless_one_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("R2_ACCOUNT_ID", "abc123")
    assert resolve_settings().endpoint_url == "https://abc123.r2.cloudflarestorage.com"
    monkeypatch.setenv("DLOAD_ENDPOINT_URL", "http://127.0.0.1:9000")
    assert resolve_settings().endpoint_url == "http://127.0.0.1:9000"


def test_repository_open_uses_the_resolved_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLOAD_ROOT", str(tmp_path / "envroot"))
    Path("dload.toml").write_text(f'cache_dir = "{tmp_path / "c"}"\n')
    repo = Repository.open()
    assert repo.storage.url == "file://" + str(tmp_path / "envroot")
    assert repo.read_context.cache_dir == str(tmp_path / "c")
    repo.commit("d", [("a", {"x": 1})], progress=False)
    assert (tmp_path / "envroot" / "datasets" / "d").is_dir()


def test_bad_config_files_are_reported_with_their_path(tmp_path: Path) -> None:
    Path("dload.toml").write_text("root = \n")
    with pytest.raises(ConfigError, match=r"dload.toml"):
        resolve_settings()
    Path("dload.toml").write_text('rooot = "/x"\n')
    with pytest.raises(ConfigError, match=r"unknown keys.*rooot"):
        resolve_settings()
    Path("dload.toml").write_text('root = ""\n')
    with pytest.raises(ConfigError, match="root is empty"):
        resolve_settings()


@pytest.mark.parametrize(("text", "expected"), [
    ("60GB", 60 * 10**9), ("512MiB", 512 * 2**20), ("1.5 GiB", int(1.5 * 2**30)),
    ("4096", 4096), (4096, 4096), ("2tb", 2 * 10**12), ("10k", 10_000), (" 3 MB ", 3 * 10**6),
])
def test_parse_size_accepts_human_sizes(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["abc", "12 parsecs", "-5GB", "", "GB", True, -1])
def test_parse_size_refuses_nonsense_with_an_example(bad: object) -> None:
    with pytest.raises(ConfigError, match="cache_budget"):
        parse_size(bad, "cache_budget")  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "expected"), [
    ("30s", 30.0), ("2h", 7200.0), ("7d", 7 * 86400.0), ("1.5m", 90.0), (0, 0.0), ("45", 45.0),
    ("1w", 604800.0),
])
def test_parse_duration_accepts_units(text: str | int, expected: float) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["1y", "soon", "", "-1h"])
def test_parse_duration_refuses_nonsense(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"grace.*'30s'"):
        parse_duration(bad, "grace")


def test_format_bytes() -> None:
    assert format_bytes(999) == "999 B"
    assert format_bytes(1_234_567) == "1.2 MB"
    assert format_bytes(3 * 10**12) == "3.0 TB"


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_cache_dir_is_refused_not_the_current_directory(
        tmp_path: Path, empty: str) -> None:
    """cache_dir="" made the current directory the cache (CACHEDIR.TAG, shards/ and locks/
    in a project folder, which backup tools then skip), where an empty root or budget is
    refused and an empty DLOAD_CACHE_DIR falls back to the default."""
    with pytest.raises(ConfigError, match=r"cache_dir is empty .* the current directory"):
        Repository.open(str(tmp_path / "root"), cache_dir=empty)
    assert not (Path.cwd() / "CACHEDIR.TAG").exists()
    (Path.cwd() / "dload.toml").write_text(f'cache_dir = "{empty}"\n')  # not anchored first
    with pytest.raises(ConfigError, match=r"cache_dir is empty \(from .*dload.toml\)"):
        Repository.open(str(tmp_path / "root"))


def test_an_endpoint_url_passed_with_a_local_root_warns_that_it_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bucket written without s3:// is a local folder of that name: the endpoint_url given
    with it was dropped in silence, and the user's data went to the local disk."""
    root = tmp_path / "bucket" / "data"
    with pytest.warns(UserWarning, match=r"endpoint_url 'http://127.0.0.1:9' is ignored: "
                      r"the root 'file://.*bucket/data' is a local directory; .* s3://"):
        Repository.open(str(root), endpoint_url="http://127.0.0.1:9")
    # one set for every root (env, config) is not the user's mistake: no warning
    monkeypatch.setenv("DLOAD_ENDPOINT_URL", "http://127.0.0.1:9")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Repository.open(str(root))


def test_gc_refuses_a_bad_grace(repo: Repository) -> None:
    with pytest.raises(ConfigError, match="grace"):
        repo.gc(grace="forever")


def test_pin_is_used_by_dataset_until_unpinned(repo: Repository, tmp_path: Path) -> None:
    v1 = repo.commit("d", [("a", {"x": 1})], progress=False)
    assert repo.pin("d") == v1.version
    lock = Path.cwd() / "dload.lock"
    assert read_lock(lock) == {"d": v1.version}
    v2 = repo.commit("d", [("a", {"x": 2})], progress=False)
    assert repo.dataset("d").version == v1.version  # the pin wins over latest
    assert repo.dataset("d", v2.version[:12]).version == v2.version  # explicit wins over pin

    sub = Path.cwd() / "src" / "pkg"
    sub.mkdir(parents=True)
    os.chdir(sub)  # the lock is found up the tree; the autouse fixture restores cwd
    assert repo.dataset("d").version == v1.version
    assert repo.pin("d", v2.version) == v2.version
    assert read_lock(lock) == {"d": v2.version}
    assert not (sub / "dload.lock").exists()

    assert repo.unpin("d") is True
    assert repo.unpin("d") is False
    assert read_lock(lock) == {}
    repo.commit("d", [("a", {"x": 3})], progress=False)
    assert repo.dataset("d").version != v2.version


def test_a_pin_to_a_version_the_root_lacks_names_the_lock_file(repo: Repository,
                                                               tmp_path: Path) -> None:
    repo.commit("d", [("a", {"x": 1})], progress=False)
    repo.pin("d")
    other = Repository.open(tmp_path / "other-root", cache_dir=tmp_path / "other-cache")
    other.commit("d", [("a", {"x": 2})], progress=False)
    with pytest.raises(NotFoundError) as err:
        other.dataset("d")
    msg = str(err.value)
    assert "pinned" in msg and str(Path.cwd() / "dload.lock") in msg
    assert "dload unpin d" in msg and "d@latest" in msg
    assert other.dataset("d", "latest").num_rows == 1  # explicit versions ignore the pin


def test_pin_keeps_other_pins_and_refuses_unknown_datasets(repo: Repository) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    b = repo.commit("b", [("k", {"x": 2})], progress=False)
    repo.pin("a")
    repo.pin("b")
    assert read_lock() == {"a": a.version, "b": b.version}
    with pytest.raises(NotFoundError, match="'nope'"):
        repo.pin("nope")
    assert "nope" not in read_lock()


def test_a_tampered_lock_file_is_refused() -> None:
    Path("dload.lock").write_text("[datasets\n")
    with pytest.raises(ConfigError, match=r"dload.lock"):
        read_lock()
    Path("dload.lock").write_text('[datasets]\n"d" = 3\n')
    with pytest.raises(ConfigError, match=r"dload.lock.*version ids"):
        read_lock()


def test_a_bad_pin_blocks_only_its_dataset_and_unpin_removes_it(repo: Repository) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    repo.commit("d", [("k", {"x": 2})], progress=False)
    Path("dload.lock").write_text(f'[datasets]\n"a" = "{a.version}"\n"d" = "../../etc"\n')
    with pytest.raises(ConfigError) as err:
        repo.dataset("d")  # the pin is checked where it is used, with the way out
    assert "'../../etc'" in str(err.value) and "dload unpin d" in str(err.value)
    assert repo.dataset("a").version == a.version  # the other pins still work
    assert repo.unpin("d") is True  # and the bad one can be removed
    assert read_lock() == {"a": a.version}
    assert repo.dataset("d")[0]["x"] == 2


def test_tags_resolve_and_move(repo: Repository) -> None:
    v1 = repo.commit("d", [("a", {"x": 1})], progress=False)
    v2 = repo.commit("d", [("a", {"x": 2})], progress=False)
    assert repo.tag("d", v1.version[:10], "stable") == v1.version
    assert repo.dataset("d", "stable").version == v1.version
    repo.tag("d", "latest", "stable")
    assert repo.dataset("d", "stable").version == v2.version
    assert repo.refs("d") == {"latest": v2.version, "stable": v2.version}
    info = {v.version: v for v in repo.versions("d")}
    assert info[v2.version].refs == ("latest", "stable")
    assert [e.action for e in repo.log("d") if e.ref == "stable"] == ["tag", "tag"]


def test_version_prefixes_resolve_and_ambiguity_is_an_error(repo: Repository) -> None:
    ids: list[str] = []
    i = 0
    while len({v[0] for v in ids}) == len(ids):  # until two ids share a first character
        ids.append(repo.commit("d", [("a", {"x": i})], progress=False).version)
        i += 1
    for vid in ids:
        assert repo.dataset("d", vid[:12]).version == vid
        assert repo.dataset("d", vid.upper()[:12]).version == vid
    shared = next(v[0] for v in ids if sum(w[0] == v[0] for w in ids) > 1)
    with pytest.raises(NotFoundError, match="ambiguous"):
        repo.dataset("d", shared)
    with pytest.raises(NotFoundError, match="no version or tag"):
        repo.dataset("d", "zzz")
    with pytest.raises(NotFoundError, match="no dataset 'missing'"):
        repo.dataset("missing")


def test_versions_are_listed_newest_first(repo: Repository) -> None:
    vids = [repo.commit("d", [("a", {"x": i})], progress=False).version for i in range(3)]
    listed = repo.versions("d")
    assert [v.version for v in listed] == vids[::-1]
    assert all(v.num_rows == 1 and v.num_shards == 1 and v.user for v in listed)


def test_lookups_stop_at_ceiling_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dload_arrow.config import find_up

    top = tmp_path / "outer"
    inner = top / "project" / "src"
    inner.mkdir(parents=True)
    (top / "dload.toml").write_text('root = "/outer"\n')
    monkeypatch.setenv("DLOAD_CEILING_DIRECTORIES", str(top / "project"))
    assert find_up("dload.toml", inner) is None
    # as git's: the search does not climb into a ceiling (QA cfg56: a stray /tmp/dload.toml
    # was read under DLOAD_CEILING_DIRECTORIES=/tmp)
    monkeypatch.setenv("DLOAD_CEILING_DIRECTORIES", os.pathsep.join(["/nowhere", str(top)]))
    assert find_up("dload.toml", inner) is None
    assert find_up("dload.toml", top) == top / "dload.toml"  # started there: its own
    monkeypatch.setenv("DLOAD_CEILING_DIRECTORIES", os.pathsep.join(["/nowhere", str(tmp_path)]))
    assert find_up("dload.toml", inner) == top / "dload.toml"
    monkeypatch.chdir(inner)
    assert resolve_settings().root == "/outer"


def test_pin_and_unpin_keep_the_users_comments_and_other_tables(repo: Repository) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    b = repo.commit("b", [("k", {"x": 2})], progress=False)
    c = repo.commit("c", [("k", {"x": 3})], progress=False)
    lock = Path("dload.lock")
    lock.write_text(
        "# datasets of the ICML run: do not bump without a rerun\n"
        "[datasets]\n"
        f'"a" = "{a.version}"  # the paper\'s numbers\n'
        "# b follows latest until the ablations are done\n"
        f'b = "{b.version}"\n'
        "\n"
        "[tool.mine]\n"
        'owner = "lab"\n'
    )
    b2 = repo.commit("b", [("k", {"x": 4})], progress=False)
    repo.pin("b")  # moves b only
    repo.pin("c")  # a new pin
    text = lock.read_text()
    assert text.startswith("# datasets of the ICML run")
    assert f'"a" = "{a.version}"  # the paper\'s numbers' in text
    assert "# b follows latest until the ablations are done" in text
    assert b2.version in text and b.version not in text
    assert text.index(c.version) < text.index("[tool.mine]")  # new pins join the table
    assert tomllib.loads(text)["tool"] == {"mine": {"owner": "lab"}}
    assert read_lock() == {"a": a.version, "b": b2.version, "c": c.version}

    assert repo.unpin("a") is True
    text = lock.read_text()
    assert a.version not in text and "ICML" in text and 'owner = "lab"' in text
    assert read_lock() == {"b": b2.version, "c": c.version}


def test_pin_adds_a_datasets_table_to_a_lock_file_without_one(repo: Repository) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    Path("dload.lock").write_text('# ours\n[tool]\nx = 1\n')
    repo.pin("a")
    text = Path("dload.lock").read_text()
    assert text.startswith("# ours\n[tool]\nx = 1\n")
    assert tomllib.loads(text) == {"tool": {"x": 1}, "datasets": {"a": a.version}}


_PINNER = """
import os, sys
from dload_arrow import Repository
os.chdir(sys.argv[2])
repo = Repository.open(sys.argv[1], cache_dir=sys.argv[3])
for _ in range(40):
    repo.pin(sys.argv[4])
"""


def test_processes_pinning_at_once_keep_every_pin(repo: Repository, tmp_path: Path) -> None:
    import subprocess
    import sys

    names = [f"ds{i}" for i in range(8)]
    versions = {n: repo.commit(n, [("k", {"x": i})], progress=False).version
                for i, n in enumerate(names)}
    project = tmp_path / "project"
    project.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", _PINNER, repo.storage.url.removeprefix(
        "file://"), str(project), str(tmp_path / f"c{n}"), n], stderr=subprocess.PIPE,
        text=True) for n in names]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(names), errors
    assert read_lock(project / "dload.lock") == versions
    assert [p.name for p in project.iterdir()] == ["dload.lock"]  # no temp files left


def test_a_symlinked_lock_file_is_edited_where_it_lives(repo: Repository, tmp_path: Path) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    shared = tmp_path / "shared" / "dload.lock"
    shared.parent.mkdir()
    shared.write_text("# shared by every checkout\n[datasets]\n")
    Path("dload.lock").symlink_to(shared)
    repo.pin("a")
    assert Path("dload.lock").is_symlink()  # not replaced by a file
    assert read_lock(shared) == {"a": a.version}
    assert shared.read_text().startswith("# shared by every checkout")


@pytest.mark.parametrize("key", ["root", "cache_dir"])
def test_a_path_setting_with_a_blank_at_an_edge_is_refused_naming_its_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """QA env53: DLOAD_ROOT=" /data/x" (relative: a folder named ' ' here) committed into
    ./ /data/x and said so nowhere; a trailing blank was refused, a leading one was not."""
    monkeypatch.chdir(tmp_path)
    env = {"root": "DLOAD_ROOT", "cache_dir": "DLOAD_CACHE_DIR"}[key]
    monkeypatch.setenv(env, f" {tmp_path}/x")
    with pytest.raises(ConfigError, match=rf"{key} ' {tmp_path}/x' \(from env {env}\) "
                       "begins or ends with a blank.*remove the blank"):
        resolve_settings()
    monkeypatch.delenv(env)
    Path("dload.toml").write_text(f'{key} = " /abs"\n')
    with pytest.raises(ConfigError, match=rf"{key} ' /abs' \(from .*dload.toml\)"):
        resolve_settings()
    Path("dload.toml").unlink()
    with pytest.raises(ConfigError, match=rf"{key} '{tmp_path}/y\\t' \(from argument {key}= / "
                                            rf"--{key.replace('_', '-')}\)"):
        resolve_settings(**{key: f"{tmp_path}/y\t"})
    with pytest.raises(ConfigError, match="begins or ends with a blank"):
        Repository.open(" s3://bucket/x") if key == "root" else resolve_settings(
            cache_dir=" c")
    assert not any(p.name.strip() == "" for p in tmp_path.iterdir())  # nothing made
