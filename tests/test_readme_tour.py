"""The README's tour runs as written on the embedded default root, and its training loop sees
every digit and every extra row once an epoch (QA: mix's default stop="first" ended the tour's
epoch after about 330 of its 10,100 rows, which the README did not say)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")
README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_tour_runs_and_its_loop_reads_every_row_once() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    code = blocks[0]
    assert code.count("    ...\n") == 1
    code = code.replace("    ...\n", "    seen.extend(batch['__key__'])\n"
                        "    shapes.add(tuple(batch['image'].shape[1:]))\n")
    scope: dict[str, object] = {"seen": [], "shapes": set()}
    exec(compile(code, str(README), "exec"), scope)
    seen = scope["seen"]
    assert isinstance(seen, list) and len(seen) == 10_100 and len(set(seen)) == 10_100
    assert scope["shapes"] == {(8, 8)}
    again = scope["repo"].commit("digits", ((f"img/{i:05d}", {  # type: ignore[attr-defined]
        "image": __import__("numpy").full((8, 8), i % 256, "uint8"), "label": i % 10})
        for i in range(10_000)), meta={"source": "synthetic"}, progress=False)
    v = scope["v"]
    assert again.version == v.version and again.shards_uploaded == 0  # type: ignore[attr-defined]
