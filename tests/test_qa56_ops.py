"""A dataset's life with several writers (QA ops56).

- two processes appending the same rows without keys at once built the same version (the same
  rows numbered from the same count); the second took "latest already points at it" as its own
  success, and its rows were lost. It is rebased now, and refused for its colliding keys;
- a stored 12-character key of Unicode digits ('00000000000²') crashed every append without
  keys: int() refuses what str.isdigit() accepts.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pytest

from dload_arrow import ConflictError, Repository
from dload_arrow.read.random_access import stored_keys
from dload_arrow.store.commit import commit_samples
from dload_arrow.store.manifest import Manifest


def _append_from(repo: Repository, parent: Manifest, rows: list[dict[str, int]]) -> None:
    """An append that started while ``parent`` was latest (what a second process does)."""
    def read_keys(m: Manifest, shards: Sequence[int]) -> pa.Array:
        return stored_keys(repo.storage, m, shards)

    commit_samples(repo.storage, "d", rows, parent=parent, read_keys=read_keys, progress=False,
                   rebase=lambda: repo.manifest("d", "latest"),
                   protected=frozenset(parent.digests()), protected_by=parent.version)


def test_an_identical_concurrent_append_is_refused_not_lost(any_repo: Repository) -> None:
    repo = any_repo
    repo.commit("d", [{"x": 0}], progress=False)
    before = repo.manifest("d", "latest")
    rows = [{"x": 1}, {"x": 2}, {"x": 3}]
    first = repo.append("d", rows, progress=False)
    with pytest.raises(ConflictError, match="another append published rows meanwhile whose "
                                            "keys collide"):
        _append_from(repo, before, rows)  # the same rows, numbered from the same count
    assert repo.manifest("d", "latest").version == first.version  # the first one stands
    assert repo.dataset("d").num_rows == 4
    again = repo.append("d", rows, progress=False)  # appended again, as the error says
    assert again.num_rows == 7


def test_an_identical_commit_is_still_the_same_version(repo: Repository) -> None:
    a = repo.commit("c", [{"x": 1}], progress=False)
    assert repo.commit("c", [{"x": 1}], progress=False).version == a.version


def test_unicode_digit_keys_are_no_row_numbers(repo: Repository) -> None:
    repo.commit("u", [("00000000000\u00b2", {"x": 1})], progress=False)
    v = repo.append("u", [{"x": 2}], progress=False)  # crashed: int('...²')
    keys = repo.dataset("u").to_arrow().column("__key__").to_pylist()
    assert v.num_rows == 2 and "000000000001" in keys
