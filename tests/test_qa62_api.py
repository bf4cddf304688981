"""QA api62: the public API's hints and docs match what it takes. Combinators take Datasets
and views, ``Dataset.shuffle()`` is a ``DatasetPipe`` (``order_array``), ``derive`` spells out
its options, numpy arrays pass where the runtime takes them, ``append`` documents its
``None``s."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np

import dload_arrow as dl

USER = '''
from __future__ import annotations

import numpy as np

import dload_arrow as dl
from dload_arrow.stats import shuffle_quality
from dload_arrow.torch import as_iterable_dataset

repo = dl.Repository.open("/tmp/x")
images, captions = repo.dataset("photos"), repo.dataset("tiny")
exact = dl.mix([images, captions], np.array([0.7, 0.3]), seed=42, exact=True, stop="all")
curriculum = dl.choice([images.where("label < 5"), images], [0.5, 0.5], seed=3)
both = dl.concat([images, captions.pipeline()])
pairs = dl.zip_with([images, images])
picked = dl.select(dl.from_iterable([0, 1]), [images, captions])
p = images.shuffle(1000, seed=0)
q = shuffle_quality(p.order_array(0), shard_of=p.shard_ids())
t = images.take(np.arange(3))
report = as_iterable_dataset(p).check(num_workers=2)
print(report.feasible if report is not None else None)
repo.derive("lt3", p, shard_size="64MB", force=True)
repo.derive("lt3", p, forse=True)
'''


def test_the_tutorials_calls_type_check_and_a_derive_typo_is_found(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(USER)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                        str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    errors = [line for line in r.stdout.splitlines() if "error:" in line]
    assert len(errors) == 1, r.stdout + r.stderr
    assert 'user.py:23: error: Unexpected keyword argument "forse" for "derive"' in errors[0]


def test_derive_and_append_document_their_options() -> None:
    params = inspect.signature(dl.Repository.derive).parameters
    assert [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY] == [
        "meta", "recipe", "progress", "force", "shard_size", "row_group_size", "schema"]
    doc = inspect.getdoc(dl.Repository.append) or ""
    for arg in ("key:", "meta:", "recipe:", "shard_size, row_group_size:", "progress:",
                "Returns:", "Raises:"):
        assert arg in doc, arg
    assert "None (the default) keeps the latest version's" in doc


def test_derive_passes_only_given_options_so_memos_keep_their_key(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(20)], progress=False)
    pipe = repo.dataset("d").pipeline().map(lambda r: {**r, "y": r["x"] * 2})
    first = repo.derive("e", pipe)
    assert repo.derive("e", pipe).shards_uploaded == 0  # memoized
    assert repo.derive("e", pipe).version == first.version
    again = repo.derive("e", pipe, row_group_size="1KB")  # another layout: computed
    assert again.seconds > 0 and again.version != first.version


def test_numpy_indices_and_weights_are_taken(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(20)], progress=False)
    ds = repo.dataset("d")
    assert ds.take(np.arange(3))["x"].to_pylist() == [0, 1, 2]
    mixed = dl.mix([ds, repo.dataset("d").shuffle(seed=1)], np.array([0.5, 0.5]), seed=0)
    assert len(list(mixed.take(6))) == 6


def test_sizes_share_names_and_return_types_are_exported(tmp_path: Path) -> None:
    import dload_arrow.errors
    import dload_arrow.repository as rp
    from dload_arrow.read.pull import CacheStatus, PullReport
    from dload_arrow.store.ref_log import LogEntry

    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    v = repo.commit("d", [(f"k{i}", {"x": i}) for i in range(5)], progress=False)
    ds = repo.dataset("d")
    assert (v.num_bytes, v.num_shards) == (v.bytes_total, v.shards_total) == (
        ds.num_bytes, ds.num_shards) == (repo.versions("d")[0].num_bytes, 1)
    assert (rp.CacheStatus, rp.PullReport, rp.LogEntry) == (CacheStatus, PullReport, LogEntry)
    assert all(n[0].isupper() for n in dload_arrow.errors.__all__)  # the classes only
    shown = dir(dl)
    assert {"torch", "stats", "Repository", "mix"} <= set(shown)
    assert not {"Any", "TYPE_CHECKING", "importlib", "annotations"} & set(shown)


def test_an_iteration_says_what_it_iterates(tmp_path: Path) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(5)], progress=False)
    pipe = repo.dataset("d").shuffle(seed=1)
    it = iter(pipe)
    assert repr(it) == f"<iteration of epoch 0 over {pipe!r}>"
    next(it)
    pipe.load_state_dict(it.state_dict())
    assert repr(iter(pipe)).startswith("<iteration of epoch 0, resumed from a state over ")


def test_choice_takes_weights_by_mixs_name(tmp_path: Path) -> None:
    import pytest

    a = dl.from_iterable(lambda: iter([0] * 50), finite=True)
    b = dl.from_iterable(lambda: iter([1] * 50), finite=True)
    by_p = list(dl.choice([a, b], [0.3, 0.7], seed=5).take(20))
    assert list(dl.choice([a, b], weights=[0.3, 0.7], seed=5).take(20)) == by_p
    with pytest.raises(TypeError, match=r"p=\[\.\.\.\] or weights=\[\.\.\.\] \(both were"):
        dl.choice([a, b], [0.5, 0.5], weights=[0.5, 0.5])
    with pytest.raises(TypeError, match="neither was given"):
        dl.choice([a, b])
