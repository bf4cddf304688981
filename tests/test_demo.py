"""`dload demo` on the embedded default root: everything it promises, in one run."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from test_cli import dload

from dload_arrow import Repository


def test_demo_on_the_embedded_default_root() -> None:
    cwd = Path.cwd()
    out = dload("demo", "--json", cwd=cwd).json
    assert out["recommit"] == {"same_id": True, "bytes_uploaded": 0, "shards_uploaded": 0}
    assert [r["name"] for r in out["sql"]["rows"]] == ["demo-extra", "demo-images"]
    assert [r["num_rows"] for r in out["sql"]["rows"]] == [128, 256]
    if importlib.util.find_spec("torch") is not None:
        train = out["train"]
        assert train["steps"] > 5 and train["last_loss"] < train["first_loss"]
    else:
        assert out["train"] is None
    # the embedded default: a local root in the (test-isolated) user data dir
    default_root = Path(os.environ["XDG_DATA_HOME"]) / "dload" / "root"
    repo = Repository.open(default_root)
    assert repo.datasets() == ["demo-extra", "demo-images"]
    assert repo.dataset("demo-images").version == out["versions"]["demo-images"]
    text = dload("demo", "--root", str(cwd / "r2"), cwd=cwd).out  # ids do not depend on root
    assert out["versions"]["demo-images"][:12] in text and "same id" in text
    assert ("trained a linear model" in text) or ("skipped training" in text)


def test_the_demo_skips_training_when_torch_is_installed_but_does_not_import(
        tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)  # found by find_spec, fails as a broken CUDA build does
    (fake / "torch" / "__init__.py").write_text("raise ImportError('libcudart.so.12: cannot "
                                                "open shared object file')\n")
    path = os.pathsep.join(p for p in (str(fake), os.environ.get("PYTHONPATH", "")) if p)
    out = dload("demo", "--json", "--root", str(tmp_path / "r"), cwd=tmp_path,
                env={"PYTHONPATH": path}).json
    assert out["train"] is None and out["versions"]["demo-images"]
    text = dload("demo", "--root", str(tmp_path / "r"), cwd=tmp_path,
                 env={"PYTHONPATH": path}).out
    assert "skipped training: torch is installed but does not import (ImportError: " in text


def test_the_demo_trains_on_what_it_committed_whatever_dload_lock_pins() -> None:
    cwd = Path.cwd()
    root = str(cwd / "root")
    first = dload("demo", "--samples", "3", "--steps", "1", "--json", "--root", root,
                  cwd=cwd).json["versions"]["demo-images"]
    dload("pin", "demo-images", "--root", root, cwd=cwd)  # ./dload.lock now names `first`
    dload("demo", "--samples", "40", "--steps", "1", "--root", root, cwd=cwd)
    dload("rm", "demo-images", "--version", first[:12], "--yes", "--root", root, cwd=cwd)
    out = dload("demo", "--samples", "40", "--steps", "2", "--json", "--root", root,
                cwd=cwd).json
    assert out["versions"]["demo-images"] != first
    if importlib.util.find_spec("torch") is not None:
        assert out["train"]["steps"] == 2  # before: "pinned to version ... removed", exit 1
