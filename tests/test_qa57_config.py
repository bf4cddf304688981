"""Errors name the setting's surface as a user set it (carried from QA cfg56): the variable
(``env DLOAD_CACHE_BUDGET``), the argument and flag, or the file; a budget too small names
every way to raise it, dload.toml included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dload_arrow import Repository
from dload_arrow.config import resolve_settings
from dload_arrow.errors import ConfigError, InfeasiblePlanError


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DLOAD_ROOT", "DLOAD_CACHE_DIR", "DLOAD_CACHE_BUDGET", "DLOAD_ENDPOINT_URL",
                "R2_ACCOUNT_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(("var", "value", "said"), [
    ("DLOAD_CACHE_BUDGET", "50G8", r"cache budget \(from env DLOAD_CACHE_BUDGET\) '50G8'"),
    ("DLOAD_CACHE_DIR", "s3://b/c", r"cache_dir 's3://b/c' \(from env DLOAD_CACHE_DIR\)"),
    ("DLOAD_ENDPOINT_URL", "minio:9000",
     r"endpoint_url 'minio:9000' \(from env DLOAD_ENDPOINT_URL\)"),
])
def test_an_environment_variable_is_named(monkeypatch: pytest.MonkeyPatch, var: str,
                                          value: str, said: str) -> None:
    monkeypatch.setenv(var, value)
    monkeypatch.setenv("DLOAD_ROOT", "s3://bucket/p")  # (an endpoint is checked where used)
    with pytest.raises(ConfigError, match=said):
        resolve_settings()


def test_an_argument_is_named_with_its_flag() -> None:
    with pytest.raises(ConfigError, match=r"\(from argument cache_budget= / --cache-budget\)"):
        resolve_settings(cache_budget="50G8")
    with pytest.raises(ConfigError, match=r"root is empty \(from argument root= / --root: ' '\)"):
        resolve_settings(root=" ")


def test_a_budget_too_small_names_dload_toml_among_the_ways(memory_root: str,
                                                           tmp_path: Path) -> None:
    repo = Repository.open(memory_root, cache_dir=tmp_path / "c", cache_budget="100B")
    repo.commit("d", [{"__key__": str(i), "x": b"y" * 1000} for i in range(50)],
                progress=False)
    with pytest.raises(InfeasiblePlanError, match=r"cache_budget in dload\.toml"):
        list(repo.dataset("d").shuffle(full=True, seed=0))


@pytest.mark.parametrize(("var", "value"), [("DLOAD_DIRECT_GET", "maybe"),
                                            ("DLOAD_MEMORY_LIMIT", "8GiB_please"),
                                            ("DLOAD_CACHE_WAIT", "-1")])
def test_an_environment_only_variable_is_checked_when_a_repository_opens(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, var: str, value: str) -> None:
    """QA cfg56: a bad DLOAD_DIRECT_GET passed every command until a download met it, a bad
    DLOAD_MEMORY_LIMIT until a commit of a large sample; refused at once now."""
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        Repository.open(tmp_path / "root")


def test_status_lists_the_environment_only_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_cli import dload

    cwd = Path.cwd()
    r = dload("status", "--json", cwd=cwd, env={"DLOAD_MEMORY_LIMIT": "8GB",
                                                "DLOAD_DIRECT_GET": "0"})
    env = json.loads(r.out)["environment"]
    assert env["DLOAD_MEMORY_LIMIT"] == {"value": "8GB", "effective": "8.0 GB", "error": None}
    assert env["DLOAD_DIRECT_GET"]["effective"].startswith("0 ")
    assert env["DLOAD_CACHE_WAIT"] == {"value": None, "effective": "600 s", "error": None}
    r = dload("status", cwd=cwd, env={"DLOAD_CACHE_WAIT": "soon"}, rc=1)
    assert "environment: DLOAD_MEMORY_LIMIT unset" in r.out
    assert "DLOAD_CACHE_WAIT='soon': REFUSED (see the error)" in r.out
    assert "DLOAD_CACHE_WAIT='soon' is not a number of seconds" in r.err


def test_status_json_still_prints_json_when_a_setting_is_refused(tmp_path: Path) -> None:
    """QA review57: ``dload status --json`` printed nothing (the error alone, on stderr)."""
    from test_cli import dload

    r = dload("status", "--json", cwd=Path.cwd(), env={"DLOAD_CACHE_WAIT": "soon"}, rc=1)
    got = json.loads(r.out)
    assert got["environment"]["DLOAD_CACHE_WAIT"]["error"].startswith("DLOAD_CACHE_WAIT='soon'")
    assert got["error"] == got["environment"]["DLOAD_CACHE_WAIT"]["error"]
    assert got["settings"]["root"]["source"] == "default"
    assert "is not a number of seconds" in r.err
    (tmp_path / "afile").write_text("x")
    r = dload("status", "--json", "--root", str(tmp_path / "afile"), cwd=Path.cwd(), rc=1)
    assert "is a file, not a directory" in json.loads(r.out)["error"]


@pytest.mark.parametrize(("how", "said"), [
    ({"env": {"DLOAD_CACHE_BUDGET": "lots"}}, "from env DLOAD_CACHE_BUDGET"),
    ({"args": ("--cache-budget", "lots")}, "from argument cache_budget= / --cache-budget"),
    ({"toml": "root = [\n"}, "cannot read config file"),
    ({"toml": "colour = 1\n"}, "unknown keys"),
])
def test_status_json_when_the_settings_cannot_be_resolved(how: dict[str, Any], said: str) -> None:
    """QA review58: a bad budget or dload.toml, refused before any setting is known, still
    printed nothing with --json."""
    from test_cli import dload

    cwd = Path.cwd()
    if "toml" in how:
        (cwd / "dload.toml").write_text(how["toml"])
    r = dload("status", "--json", *how.get("args", ()), cwd=cwd, env=how.get("env", {}), rc=1)
    got = json.loads(r.out)
    assert got["settings"] is None and said in got["error"] and said in r.err
    assert got["environment"]["DLOAD_CACHE_WAIT"]["effective"] == "600 s"
