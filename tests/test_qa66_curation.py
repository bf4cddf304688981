"""QA curation66, a data-curation team: a derive whose filter read a compiled regex, an Arrow
array (a keep-list from repo.sql()), a polars or pandas Series returned its memo after the
value changed, its old rows kept: these were fingerprinted by type alone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import dload_arrow as dl
from dload_arrow.pipeline.fingerprint import function_identity as fingerprint


@pytest.mark.parametrize(("a", "b"), [
    (re.compile("cookie"), re.compile("cookie|buy now")),
    (re.compile("x"), re.compile("x", re.IGNORECASE)),
    (pa.array(["d0", "d1"]), pa.array(["d0"])),
    (pa.chunked_array([["d0"], ["d1"]]), pa.chunked_array([["d0"], ["d2"]])),
    (pa.table({"k": ["d0"]}), pa.table({"k": ["d1"]})),
    (pl.Series(["d0", "d1"]), pl.Series(["d0"])),
    (pl.DataFrame({"k": [1]}), pl.DataFrame({"k": [2]})),
    (pd.Series([1, 2]), pd.Series([1, 3])),
    (pd.DataFrame({"k": [1]}), pd.DataFrame({"k": [1]}, index=[5])),
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])),
    (pd.Series(["a", "b"], dtype="category"), pd.Series(["d", "c"], dtype="category")),
    (pa.array(["a", "b"]).dictionary_encode(), pa.array(["d", "c"]).dictionary_encode()),
    (pl.Series(["a", "b"], dtype=pl.Categorical), pl.Series(["d", "c"], dtype=pl.Categorical)),
    (pa.array([{"k": [1]}, {"k": [2]}]).slice(1), pa.array([{"k": [1]}, {"k": [3]}]).slice(1)),
    (pd.DataFrame({"k": [1, "x"]}), pd.DataFrame({"k": [2, "x"]})),
])
def test_data_a_function_reads_is_fingerprinted_by_content(a: Any, b: Any) -> None:
    def make(value: Any) -> Any:
        def keep(r: dict[str, Any]) -> bool:
            return value is not None
        return keep

    assert fingerprint(make(a)) == fingerprint(make(a))
    assert fingerprint(make(a)) != fingerprint(make(b))
    copy = a.copy() if hasattr(a, "copy") and not isinstance(a, re.Pattern) else a
    assert fingerprint(make(a)) == fingerprint(make(copy))


def test_a_tightened_regex_makes_a_new_derivation(tmp_path: Path) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    texts = ["cookie banner", "buy now", "good text"]
    repo.commit("raw", [(f"d{i}", {"text": texts[i % 3]}) for i in range(9)])
    raw = repo.dataset("raw")
    boiler = [re.compile("cookie")]

    def not_boiler(r: dict[str, Any]) -> bool:
        return not boiler[0].search(r["text"])

    assert repo.derive("clean", raw.pipeline().filter(not_boiler)).num_rows == 6
    boiler[0] = re.compile("cookie|buy now")
    assert repo.derive("clean", raw.pipeline().filter(not_boiler)).num_rows == 3
    keep = repo.sql("SELECT min(__key__) AS k FROM samples('raw') GROUP BY text").column("k")

    def kept(r: dict[str, Any]) -> bool:
        return r["__key__"] in keep.to_pylist()

    assert repo.derive("dedup", raw.pipeline().filter(kept)).num_rows == 3
    keep = pa.chunked_array([["d0"]])
    assert repo.derive("dedup", raw.pipeline().filter(kept)).num_rows == 1


def test_another_datasets_version_id_is_named_so_and_the_rollback_advice_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA curation66 3, 4: `dload tag clean@<raw's id> x` said "has no manifest ... (was it
    removed?)" with a warm cache; `dload tag clean@OLD latest` advised committing the data
    again, which gives another id (no parents, no meta) for a derived version."""
    from cli_run import RunFn, runner

    root = str(tmp_path / "r")
    repo = dl.Repository.open(root, cache_dir=str(tmp_path / "c"))
    raw = repo.commit("raw", [(f"d{i}", {"q": i / 10}) for i in range(10)])
    good = repo.derive("clean", repo.dataset("raw").where("q > 0.5"))
    repo.derive("clean", repo.dataset("raw").where("q > 0.1"))
    for cache in ("c", "c2"):
        run: RunFn = runner(capsys, ["--root", root, "--cache-dir", str(tmp_path / cache)])
        for args in (("tag", f"clean@{raw.version}", "release-1"),
                     ("info", f"clean@{raw.version[:12]}")):
            err = run(*args, rc=1).err
            assert "is a version of 'raw', not of 'clean'" in err
            assert f"raw@{raw.version[:12]}" in err and "removed" not in err
    err = run("tag", f"clean@{good.version[:12]}", "latest", rc=1).err
    assert "meta=v.meta, recipe=v.recipe, parents=v.parents" in err
    v = repo.dataset("clean", good.version)
    again = repo.commit("clean", v, meta=v.meta, recipe=v.recipe, parents=v.parents)
    assert again.version == good.version == repo.dataset("clean").version
