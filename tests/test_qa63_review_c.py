"""QA review63c, of the fixes of review63b: a well plate's keys (A01..H12) read as one scheme
whichever letter leads; a child made with os.fork after SQL exits cleanly; the uint64 advice
skips NaN and pd.NA cells."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository
from dload_arrow.errors import SchemaError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.mark.parametrize("missing", ["G05", "B05"])
def test_a_well_missing_its_image_is_no_table_of_labels(tmp_path: Path, run: RunFn,
                                                        missing: str) -> None:
    d = tmp_path / "plate"
    d.mkdir()
    for r in "ABCDEFGH":
        for c in range(1, 13):
            if f"{r}{c:02d}" != missing:
                (d / f"{r}{c:02d}.png").write_bytes(b"\x89PNG fake")
            (d / f"{r}{c:02d}.txt").write_text("20x, DAPI")
    assert "A table of labels" not in run("commit", "plate", "--from", str(d)).err


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("query", [False, True])
def test_an_os_fork_child_exits_cleanly_after_sql(tmp_path: Path, query: bool) -> None:
    import subprocess

    script = tmp_path / "fork.py"
    script.write_text(f"""
import os, sys
import pyarrow as pa
from dload_arrow import Repository
repo = Repository.open({str(tmp_path / 'root')!r}, cache_dir={str(tmp_path / 'cache')!r})
repo.commit("d", pa.table({{"__key__": ["a"], "x": [1]}}), progress=False)
repo.sql("select count(*) from versions")
pid = os.fork()
if pid == 0:
    if {query}:
        assert repo.sql("select count(*) from shards").column(0).to_pylist() == [1]
    sys.exit(0)
_, status = os.waitpid(pid, 0)
print("signal" if os.WIFSIGNALED(status) else f"exit {{os.WEXITSTATUS(status)}}")
""")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "exit 0", out.stdout + out.stderr


@pytest.mark.parametrize("first", [None, np.nan, pd.NA])
def test_the_uint64_advice_skips_missing_cells(repo: Repository, first: object) -> None:
    df = pd.DataFrame({"ids": pd.Series([first, [[1, 2**64 - 1]]], dtype=object)})
    with pytest.raises(SchemaError) as e:
        repo.commit("x", df, progress=False)
    advice = re.search(r"schema=(pa\.schema\(.*\]\))", str(e.value))
    assert advice is not None and "astype('uint64')" not in str(e.value)
    repo.commit("x", df, schema=eval(advice.group(1), {"pa": pa}), progress=False)
    assert repo.dataset("x").to_arrow().column("ids").to_pylist() == [None, [[1, 2**64 - 1]]]
