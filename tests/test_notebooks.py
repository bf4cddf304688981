"""The notebooks in notebooks/ are stored without outputs and execute against a local root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted(Path(__file__).resolve().parents[1].joinpath("notebooks").glob("*.ipynb"))


def _ensure_kernel() -> None:
    """The python3 kernelspec of this interpreter (installed into its prefix when missing)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix"],
                       check=True, capture_output=True)


def test_there_are_notebooks_to_run() -> None:
    assert {p.name for p in NOTEBOOKS} >= {"explore_catalog.ipynb",
                                           "prepare_training_set.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    book = nbformat.read(path, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} holds outputs; clear them before committing")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _ensure_kernel()
    monkeypatch.setenv("DLOAD_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("DLOAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DLOAD_CACHE_BUDGET", "unlimited")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        book, timeout=240, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    ran = [c for c in book.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in ran)
