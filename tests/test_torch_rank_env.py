"""The launcher's RANK / WORLD_SIZE / LOCAL_WORLD_SIZE are checked, and a bad value is named:
WORLD_SIZE=0 used to be taken as one process."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset  # noqa: E402


@pytest.fixture
def pipe(repo: Repository) -> Any:
    repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(12)], progress=False)
    return repo.dataset("d").pipeline()


@pytest.mark.parametrize(("env", "match"), [
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE='0': a process count must be >= 1"),
    ({"WORLD_SIZE": "0", "RANK": "0"}, "WORLD_SIZE='0'"),
    ({"WORLD_SIZE": "-2", "RANK": "0"}, "WORLD_SIZE='-2'"),
    ({"WORLD_SIZE": "two", "RANK": "0"}, "WORLD_SIZE='two' is not an integer"),
    ({"WORLD_SIZE": "2", "RANK": "1.0"}, "RANK='1.0' is not an integer"),
    ({"WORLD_SIZE": "2", "RANK": "2"}, r"rank=2, world_size=2: .*\(rank from environment "
                                       r"variable RANK, world_size from environment variable "
                                       r"WORLD_SIZE\)"),
    ({"WORLD_SIZE": "2", "RANK": "-1"}, r"rank=-1, .*rank from environment variable RANK"),
])
def test_a_bad_launcher_environment_is_refused_naming_the_variable(
        pipe: Any, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], match: str) -> None:
    monkeypatch.delenv("RANK", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=match):
        as_iterable_dataset(pipe)


def test_arguments_win_over_a_bad_environment(pipe: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "0")
    monkeypatch.setenv("RANK", "x")
    ds = as_iterable_dataset(pipe, rank=1, world_size=3)
    assert (ds.rank, ds.world_size) == (1, 3)
    with pytest.raises(ConfigError,
                       match=r"rank=3, world_size=3: .*rank from rank=, world_size from world_si"):
        as_iterable_dataset(pipe, rank=3, world_size=3)


def test_local_world_size_zero_is_refused(pipe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    ds = as_iterable_dataset(pipe)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "0")
    with pytest.raises(ConfigError, match="LOCAL_WORLD_SIZE='0'"):
        ds.check(num_workers=2)
    with pytest.raises(ConfigError, match="LOCAL_WORLD_SIZE='0'"):
        list(ds)
