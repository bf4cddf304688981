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

from dload_arrow import ConfigError, Repository  # noqa: E402
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


def _list_loader() -> Any:
    from torch.utils.data import DataLoader, TensorDataset

    class Epochs(DataLoader):  # type: ignore[type-arg]
        def set_epoch(self, e: int) -> None:
            self.epoch = e

    return Epochs(TensorDataset(torch.arange(64.0)), batch_size=8)


def test_a_peek_still_referenced_does_not_hang_the_next_loop() -> None:
    """(review54) iter()/set_epoch() waited for the thread of an iteration nobody had ended:
    a peek kept in a variable hung the training loop forever. The newest ends it now."""
    loader = to_device(_list_loader(), "cpu")
    it = iter(loader)
    assert next(it)[0].tolist() == [0.0, 1, 2, 3, 4, 5, 6, 7]  # a notebook cell's peek
    got = [b[0] for b in loader]  # the training loop: the whole epoch, from its start
    assert torch.cat(got).tolist() == list(range(64))
    with pytest.raises(ConfigError, match="to_device: this iteration was ended by a newer "
                                          "one over the same loader"):
        next(it)  # at once: no item made before the newer one began
    it2 = iter(loader)
    assert next(it2)[0].tolist()[0] == 0
    loader.set_epoch(1)  # returns: a running iteration is neither ended nor waited for
    assert loader.loader.epoch == 1
    assert next(it2)[0].tolist()[0] == 8  # it goes on


def _freeze_count(batch: dict[str, Any]) -> dict[str, Any]:
    import gc

    return {**batch, "frozen": [gc.get_freeze_count()] * len(batch["label"])}


def test_forked_workers_never_collect_the_parents_objects(tmp_path: Path) -> None:
    """A worker forked while the parent held garbage finalized it in the child and crashed
    there under load (segfault, "Garbage-collecting"): the parent's objects arrive frozen
    in the workers, and the parent is left unfrozen."""
    import gc
    import multiprocessing

    if multiprocessing.get_context().get_start_method() != "fork":
        pytest.skip("only forked workers inherit the parent's objects")
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", ((f"k{i:04d}", {"label": i}) for i in range(64)), progress=False)
    pipe = repo.dataset("a").batch(16).map(_freeze_count)
    loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=2)
    frozen = [int(x) for b in loader for x in b["frozen"]]
    assert len(frozen) == 64 and min(frozen) > 1000  # the trainer's objects, frozen there
    assert gc.get_freeze_count() == 0  # and not here
    # any DataLoader running the dataset: each worker freezes what it inherited, once
    from torch.utils.data import DataLoader

    plain = DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2)
    frozen = [int(x) for b in plain for x in b["frozen"]]
    assert len(frozen) == 64 and min(frozen) > 1000
    assert gc.get_freeze_count() == 0
    # (review54b) a program that froze objects itself keeps exactly its freeze
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        assert len([b for b in loader]) == 4
        assert gc.get_freeze_count() > mine // 2  # not unfrozen (objects freed may go)
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("next_loop", ["a new wrapper", "the loader itself"])
def test_the_next_loop_waits_for_a_to_device_loop_left_early(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, next_loop: str) -> None:
    """`for batch in to_device(loader, d)` builds a wrapper per epoch (review54b), and a loop
    may go over the loader itself next (review54c): the wait must follow the loader, not the
    wrapper, or the next epoch resets persistent workers still being shut down by the left
    loop's thread (crash or hang)."""
    flag = tmp_path / "slow"
    flag.touch()
    monkeypatch.setenv(_FLAG, str(flag))
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", ((f"k{i:04d}", {"label": i}) for i in range(256)), progress=False)
    pipe = repo.dataset("a").batch(32).map(_slow_while_flagged)
    loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=2, persistent_workers=True)
    for _batch in to_device(loader, "cpu"):
        break
    flag.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the wait's own warning)
        again = to_device(loader, "cpu") if next_loop == "a new wrapper" else loader
        labels = sorted(int(x) for b in again for x in b["label"])
    assert labels == list(range(256))


def test_load_state_dict_inside_a_loop_ends_it_and_reports_the_loaded_state(
        tmp_path: Path) -> None:
    """(review54b) items made before the load went on overwriting the wrapper's state."""
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", ((f"k{i:04d}", {"label": i}) for i in range(40)), progress=False)
    loader = to_device(StatefulLoader(as_iterable_dataset(repo.dataset("a").shuffle(8, seed=1))),
                       "cpu")
    it = iter(loader)
    for _ in range(2):
        next(it)
    saved = loader.state_dict()
    for _ in range(6):
        next(it)
    loader.load_state_dict(saved)
    assert loader.state_dict()["position"] == 2
    with pytest.raises(ConfigError, match="ended by a newer one"):
        next(it)
    assert loader.state_dict()["position"] == 2
    rest = [int(b["label"]) for b in loader]
    assert len(rest) == 38 and loader.state_dict()["epoch"] == 1


def test_load_state_dict_on_a_loader_without_one_says_what_to_wrap() -> None:
    """(review54c) a bare AttributeError, raised after the running iteration was ended."""
    loader = to_device(_list_loader(), "cpu")
    it = iter(loader)
    first = next(it)[0].tolist()
    with pytest.raises(ConfigError, match="to_device: the wrapped Epochs has no load_state_dict "
                                          r"to resume from; wrap a dload_arrow\.torch"):
        loader.load_state_dict({"epoch": 0, "position": 1})
    assert next(it)[0].tolist() == [x + 8 for x in first]  # the loop goes on untouched


def test_a_to_device_wrapper_is_not_wrapped_again(tmp_path: Path) -> None:
    """(review54c) the outer wrapper's state counted the inner queue's items too: one item
    ahead, so a resume skipped one. Wrapping twice is refused, naming the way."""
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("a", ((f"k{i:04d}", {"label": i}) for i in range(8)), progress=False)
    inner = to_device(StatefulLoader(as_iterable_dataset(repo.dataset("a").batch(2))), "cpu")
    with pytest.raises(ConfigError, match=r"the loader is a to_device wrapper already; wrap "
                                          r"the loader inside it once, to_device\(loader.loader, "
                                          r"'cpu'\)"):
        to_device(inner, "cpu")
    got = [b["label"].tolist() for b in to_device(inner.loader, "cpu")]
    assert got == [[0, 1], [2, 3], [4, 5], [6, 7]]
