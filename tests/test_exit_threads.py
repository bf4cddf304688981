"""At exit no dload thread is left to be ended inside Arrow's C++ (CPython 3.11 ends a daemon
thread that asks for the GIL back during finalization with pthread_exit, whose unwinding
through C++ frames is std::terminate: "terminate called without an active exception", exit
134, seen after a script left a torch DataLoader iterator open with pad_collate)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import atexit, threading, sys
    import pyarrow as pa, dload_arrow as dl
    repo = dl.Repository.open(sys.argv[1])
    repo.commit("t", [(f"k{i:03d}", {"tokens": [i] * (i % 4 + 1)}) for i in range(300)],
                schema=pa.schema([("tokens", pa.list_(pa.int32()))]), shard_size="2KiB",
                progress=False)
    held = []

    def check():  # registered first, so run last (atexit is last in, first out)
        names = sorted(t.name for t in threading.enumerate() if t.name.startswith("dload"))
        print("closed" if held[0]._closed else "open", names, flush=True)

    atexit.register(check)
    it = iter(repo.dataset("t").shuffle(seed=0).batch(4, collate=dl.pad_collate()))
    next(it)  # left open, mid-epoch
    held.append(it)
""")


def test_an_open_iteration_is_closed_and_the_closer_ends_before_finalization(
        tmp_path: Path) -> None:
    script = tmp_path / "leave_open.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "root")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "closed []", (done.stdout, done.stderr)
