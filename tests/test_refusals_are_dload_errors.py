"""Every deliberate refusal is a DloadError (a ConfigError for a bad argument, which is also a
ValueError), so `except dl.DloadError` catches them and the CLI prints one `dload: error:`
line instead of reporting an internal error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from cli_run import runner

import dload_arrow as dl
from dload_arrow.errors import ConfigError


@pytest.fixture
def ds(repo: dl.Repository) -> Any:
    repo.commit("im", ((f"k{i:04d}", {"label": i % 10}) for i in range(100)), progress=False)
    return repo.dataset("im")


CALLS: dict[str, Callable[[Any], Any]] = {
    "second shuffle": lambda ds: ds.shuffle(10, seed=0).shuffle(10, seed=1),
    "shuffle(0)": lambda ds: ds.shuffle(0, seed=0),
    "head(-1)": lambda ds: ds.head(-1),
    "batch(0)": lambda ds: ds.pipeline().batch(0),
    "shard(3, 2)": lambda ds: ds.pipeline().shard(3, 2),
    "mix with a negative weight": lambda ds: dl.mix([ds, ds], [1, -1], seed=0),
    "describe(exact=False) of a view": lambda ds: ds.where("label < 3").describe(exact=False),
}


@pytest.mark.parametrize("what", sorted(CALLS))
def test_a_bad_argument_is_a_config_error(ds: Any, what: str) -> None:
    with pytest.raises(ConfigError) as e:
        CALLS[what](ds)
    assert isinstance(e.value, ValueError)  # what it was before: `except ValueError` holds


def test_cli_head_with_a_huge_count_is_a_user_error(
        ds: Any, local_root: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = runner(capsys, ["--root", local_root])
    r = run("head", "im", "-n", "99999999999999999999", rc=1)
    assert "dload: error:" in r.err and "internal error" not in r.err
