"""An empty version (an unset variable) is refused everywhere, never a prefix of every id."""

from __future__ import annotations

import pytest

from dload_arrow import ConfigError, Repository


def _rows(n: int) -> list[tuple[str, dict[str, int]]]:
    return [(f"k{i}", {"x": i}) for i in range(n)]


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_version_is_refused_not_matched_to_every_version(
        repo: Repository, empty: str) -> None:
    repo.commit("d", _rows(3), progress=False)
    for call in (lambda: repo.dataset("d", empty), lambda: repo.rm("d", empty),
                 lambda: repo.pin("d", empty), lambda: repo.resolve("d", empty)):
        with pytest.raises(ConfigError, match="is empty"):
            call()
    assert repo.datasets() == ["d"]
    with pytest.raises(ConfigError, match="version must be a str"):
        repo.pin("d", 0)  # type: ignore[arg-type]
    assert repo.pin("d") == repo.resolve("d")


def test_a_version_and_a_manifest_show_short_reprs(repo: Repository) -> None:
    v = repo.commit("d", _rows(3), progress=False)
    text = repr(v)
    assert text.startswith(f"Version('d', {v.version[:12]}, 3 rows in 1 shards")
    assert "object at 0x" not in text and len(text) < 160
    assert repr(v.manifest) == f"Manifest('d', {v.version[:12]}, 3 rows, 1 shards)"
