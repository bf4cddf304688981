"""QA volumes65, 3-D medical volumes: `dload head` made every volume Python lists to print
its shape (11 s and 1.8 GB for five 16 MB rows); under `ulimit -v` a read failed in malloc,
glibc's per-thread arenas holding the address space; a windowed shuffle of large rows held
three windows and a few rows more than its memory check counted."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def test_head_shows_tensors_without_their_values(
        local_root: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("vols", [(f"p{i}", {"image": np.full((4, 8, 8), i, np.float32), "age": i})
                         for i in range(3)] + [("p9", {"image": None, "age": 9})])
    import dload_arrow.row_values as row_values

    seen: list[list[str]] = []
    convert = row_values.table_rows
    monkeypatch.setattr(row_values, "table_rows",
                        lambda t, *a, **k: (seen.append([str(x) for x in t.schema.types]),
                                            convert(t, *a, **k))[1])
    run: RunFn = runner(capsys, ["--root", local_root])
    out = run("head", "vols", "-n", "5").out
    assert out.count("float[4, 8, 8]") == 3 and "p9" in out
    assert seen and not any("fixed_size_list" in t for types in seen for t in types)
    values = run("head", "vols", "-n", "1", "--json").json
    assert values[0]["image"] == [0.0] * 256  # --json: the values, as documented


def test_malloc_arenas_are_capped_under_an_address_space_limit() -> None:
    code = "import dload_arrow.allocator as a; print(a.cap_malloc_arenas())"
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert free.stdout.strip() == "False"

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))

    capped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            preexec_fn=limit)
    assert capped.stdout.strip() == "True", capped.stderr


def test_the_window_memory_check_counts_rows_beside_the_windows(
        repo: dl.Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit("big", [(f"v{i}", {"image": np.full(262_144, i, np.float32)})  # 1 MiB rows
                        for i in range(6)], row_group_size="1MB")
    ds = repo.dataset("big")
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "5MB")  # 3 windows (3 MB) fit, 6 rows do not
    with pytest.warns(UserWarning, match=r"holds about 3 windows and 3 rows \(6\.\d MB\)"):
        ds.shuffle(1, seed=0)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "8MB")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sorted(r["__key__"] for r in ds.shuffle(1, seed=0)) == [f"v{i}" for i in range(6)]
