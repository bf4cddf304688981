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
    assert text.startswith(f"Version('d', {v.version[:12]}, 3 rows in 1 shard ")
    assert "object at 0x" not in text and len(text) < 160
    assert repr(v.manifest) == f"Manifest('d', {v.version[:12]}, 3 rows, 1 shard)"


def test_loaders_catalogs_and_wide_mixes_show_short_reprs(repo: Repository) -> None:
    import dload_arrow as dl
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device

    loader = StatefulLoader(as_iterable_dataset(dl.from_iterable(list(range(5))),
                                                to_tensors=False))
    assert repr(loader).startswith("StatefulLoader(StreamDataset(")
    assert repr(to_device(loader, "cpu")) == (
        "DeviceLoader(StatefulLoader, device=cpu, prefetch=2)")
    assert repr(repo.catalog).startswith("Catalog(")
    wide = dl.mix([dl.from_iterable(list(range(i + 1))) for i in range(50)], seed=0)
    assert "... 46 more" in repr(wide) and len(repr(wide)) < 400
