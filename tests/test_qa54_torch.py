"""to_device over persistent workers, a loop left early while a worker is mid-batch (QA
longrun54): the wrapper's thread was given 5 s to leave the loader; a batch that took longer
left it shutting the old iteration down while the next epoch reset the same DataLoader
iterator (torch: FileNotFoundError, "_workers_done_event state does not match", or an abort).
Now every next use waits for that thread first."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device  # noqa: E402

_FLAG = "DLOAD_TEST_SLOW_FLAG"


def _slow_while_flagged(batch: dict[str, Any]) -> dict[str, Any]:
    """A heavy augmentation: 6 s a batch while the flag file exists (epoch 0 only)."""
    if os.path.exists(os.environ[_FLAG]) and batch["label"][0] != 0:
        time.sleep(6)
    return batch


def test_an_epoch_left_while_a_persistent_worker_is_mid_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = tmp_path / "slow"
    flag.touch()
    monkeypatch.setenv(_FLAG, str(flag))  # the workers (forked or spawned) read it
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", ((f"k{i:04d}", {"label": i}) for i in range(256)), progress=False)
    pipe = repo.dataset("a").batch(32).map(_slow_while_flagged)
    loader = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=2,
                                      persistent_workers=True), "cpu")
    loader.set_epoch(0)
    for batch in loader:  # batch 0 is fast; worker 1 is 6 s into batch 1
        assert batch["label"][0].item() == 0
        break
    flag.unlink()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        loader.set_epoch(1)  # waits for the old iteration's thread to leave the loader
    assert any("waiting for the previous iteration of the wrapped StatefulLoader"
               in str(w.message) for w in got)
    labels = sorted(int(x) for b in loader for x in b["label"])
    assert labels == list(range(256))  # the next epoch, whole, once
    assert (loader.state_dict()["epoch"], loader.state_dict()["position"]) == (2, 0)  # done
