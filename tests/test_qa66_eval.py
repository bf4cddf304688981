"""QA eval66, model evaluation on fixed slices: a length= smaller than a where() slice cut the
evaluation without a word (a larger one warned), and a refusal quoted an internal ticket
name ("QA kfold65") to users."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.torch import as_iterable_dataset


def test_a_length_shorter_than_the_epoch_is_warned_of(tmp_path: Path) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("t", [(f"k{i:03d}", {"label": i % 5}) for i in range(100)])
    view = repo.dataset("t").where("label = 3")  # 20 rows: 5 batches of 4
    for world, length in ((2, 3), (1, 3), (2, 4)):
        with pytest.warns(UserWarning, match=r"epoch 0 has more items than its length "
                          rf"\({length}, .*position {length} on were not delivered"):
            keys = [k for r in range(world) for b in as_iterable_dataset(
                view.pipeline().batch(4), rank=r, world_size=world, length=length)
                for k in b["__key__"]]
        assert len(set(keys)) == 4 * length
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for world in (1, 2):
            keys = [k for r in range(world) for b in as_iterable_dataset(
                view.pipeline().batch(4), rank=r, world_size=world, length=5,
                uneven="drop" if world == 2 else "pad") for k in b["__key__"]]
            assert len(set(keys)) == (20 if world == 1 else 16)


def test_no_message_quotes_an_internal_ticket_name() -> None:
    """Messages are for users: "(QA kfold65)" belongs in comments and docstrings."""
    ticket = re.compile(r"\bQA [a-z]+\d\d")
    found = []
    for path in Path(dl.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.value) for n in ast.walk(tree)  # (docstrings, attribute docstrings)
                if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        found += [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and id(n) not in docs and ticket.search(n.value)]
    assert found == []
