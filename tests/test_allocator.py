"""Arrow allocates through a fork-safe allocator once dload_arrow is imported (Linux).

pyarrow's bundled mimalloc 3 has no fork handlers: a DataLoader worker forked while another
thread of the parent was allocating crashed with SIGSEGV, once in every few suite runs
(``tests/test_qa8_torch.py``, "DataLoader worker exited unexpectedly").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dload_arrow import Repository

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the allocator is only changed on Linux")


def _backend_after(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run(
        [sys.executable, "-c",
         f"{code}\nimport pyarrow as pa\nprint(pa.default_memory_pool().backend_name)"],
        capture_output=True, text=True, check=True, env={**environ, **env})
    return out.stdout.split()[-1]


@pytest.mark.parametrize("code", [
    "import dload_arrow",
    "from dload_arrow import Repository",
    "import pyarrow, pyarrow.parquet\nimport dload_arrow",  # pyarrow loaded first
    "import pyarrow as pa\npa.array([1, 2])\nimport dload_arrow.torch",
])
def test_importing_dload_arrow_leaves_arrow_off_mimalloc(code: str) -> None:
    assert _backend_after(code) in ("jemalloc", "system")


def test_the_users_own_choice_of_arrow_allocator_stands() -> None:
    code = "import dload_arrow"
    assert _backend_after(code, ARROW_DEFAULT_MEMORY_POOL="mimalloc") == "mimalloc"
    assert _backend_after(code, ARROW_DEFAULT_MEMORY_POOL="system") == "system"


def test_the_allocator_choice_loads_no_pyarrow() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import dload_arrow, sys\nprint('pyarrow' in sys.modules)"],
        capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _backend(_: object) -> str:
    import pyarrow as pa

    return str(pa.default_memory_pool().backend_name)


def test_dataloader_workers_allocate_with_the_fork_safe_pool(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset

    repo = Repository.open(tmp_path / "root")
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(4)], progress=False)
    pipe = repo.dataset("d").pipeline().map(_backend)
    seen = set(StatefulLoader(as_iterable_dataset(pipe), num_workers=2))
    assert seen and not seen & {"mimalloc"}


_REUSE = """
import resource
import dload_arrow
import numpy as np, pyarrow as pa, pyarrow.compute as pc
src = pa.array(np.ones(1 << 20, np.int64))  # 8 MiB: what a shuffled window's columns take
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    pc.add(src, 1)  # made and freed: the next one may reuse its pages
before = faults()
for _ in range(20):
    pc.add(src, 1)
print(pa.default_memory_pool().backend_name, (faults() - before) // 20)
"""


def _pages_faulted_per_buffer(**env: str) -> tuple[str, int]:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ARROW_DEFAULT_MEMORY_POOL", "JE_ARROW_MALLOC_CONF")}
    out = subprocess.run([sys.executable, "-c", _REUSE], capture_output=True, text=True,
                         check=True, env={**environ, **env})
    backend, faults = out.stdout.split()
    return backend, int(faults)


def test_jemalloc_keeps_its_own_purging_unless_the_user_opts_in() -> None:
    # Keeping freed pages (muzzy_decay_ms:-1) doubled shuffled record batches but let RSS and
    # cgroup usage grow epoch after epoch (QA "memory"): an opt-in, not dload's default.
    backend, faults = _pages_faulted_per_buffer()
    if backend != "jemalloc":
        pytest.skip(f"Arrow allocates with {backend} here (no jemalloc in this pyarrow build)")
    assert faults > 1000  # freed pages go back to the kernel: Arrow's own options
    _, kept = _pages_faulted_per_buffer(JE_ARROW_MALLOC_CONF="muzzy_decay_ms:-1")
    assert kept < 200  # the opt-in the docs describe works
