"""The TUTORIAL's resume loop with torchdata's StatefulDataLoader resumes exactly: the state is
loaded into the dataset before the loop reads its epoch. (The loop used to pair
``loader.load_state_dict``, which torchdata applies only at the next iteration, with
``ds.state_dict()["epoch"]``, stale then: the saved epoch ran twice.)"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sdl = pytest.importorskip("torchdata.stateful_dataloader")

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create:UserWarning", "ignore:'set_vital' is deprecated"
)
TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "TUTORIAL.md"
N, EPOCHS = 40, 2


def _tutorial_loop() -> str:
    """The TUTORIAL's StatefulDataLoader resume block, its loop body recording each batch."""
    blocks = re.findall(r"^```python\n(.*?)^```", TUTORIAL.read_text(), re.S | re.M)
    code = next(b for b in blocks if "StatefulDataLoader(ds" in b and "load_state_dict" in b)
    assert code.count("        ...\n") == 1
    return code.replace("        ...\n", "        got.append((epoch, list(batch['__key__'])))\n")


@pytest.mark.parametrize("workers", [0, 2])
def test_the_tutorial_statefuldataloader_resume_loop_is_exact(repo: Repository,
                                                              workers: int) -> None:
    repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(N)], progress=False)
    pipe = repo.dataset("d").shuffle(64, seed=5).batch(4)
    ds = as_iterable_dataset(pipe)
    loader = sdl.StatefulDataLoader(ds, batch_size=None, num_workers=workers)
    before: list[tuple[int, list[str]]] = []
    for epoch in range(EPOCHS):
        ds.set_epoch(epoch)
        for step, batch in enumerate(loader):
            before.append((epoch, list(batch["__key__"])))
            if (epoch, step) == (1, 3):
                saved = loader.state_dict()
                break
    got: list[tuple[int, list[str]]] = []
    exec(_tutorial_loop(), {"pipe": pipe, "saved": saved, "as_iterable_dataset":
                            as_iterable_dataset, "got": got})
    assert {e for e, _ in got} == {1}  # only the rest of the saved epoch, not epoch 1 again
    assert len(got) == N // 4 - 4
    epoch1 = [k for e, keys in before + got if e == 1 for k in keys]
    assert Counter(epoch1) == Counter(f"k{i:03d}" for i in range(N))
