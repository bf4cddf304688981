"""docs/TUTORIAL.md can be pasted top to bottom: every ```python block runs, in order.

The blocks run in one fresh Python process, as a user pasting them would, in an empty working
directory with the default local root (HOME and the XDG directories point into tmp_path;
DLOAD_ROOT and DLOAD_CACHE_DIR stay unset, as the autouse fixture leaves them).

Convention: a block that cannot run offline (a real provider's S3 endpoint, a GPU) opens with
the fence info string ```python no-run. It is still shown as Python; this test skips it and
says so. Use it only where a block truly needs a remote service or a GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "TUTORIAL.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
NO_RUN = "no-run"


def python_blocks(text: str) -> list[tuple[int, bool, str]]:
    """``(line, runnable, code)`` of each ```python block, in order."""
    blocks = []
    for m in FENCE.finditer(text):
        info = m.group(1).split()
        if not info or info[0] != "python":
            continue
        line = text.count("\n", 0, m.start()) + 1
        blocks.append((line, NO_RUN not in info[1:], m.group(2)))
    return blocks


def test_marker_is_read() -> None:
    text = "```python\na = 1\n```\n\n```python no-run\nb = 2\n```\n\n```toml\nc = 3\n```\n"
    assert python_blocks(text) == [(1, True, "a = 1\n"), (5, False, "b = 2\n")]


def _script(blocks: list[tuple[int, bool, str]]) -> str:
    """One program: each block compiled under its own name, so a traceback points at it."""
    parts = ["import sys"]
    for line, _, code in blocks:
        parts.append(f"print('--- block at TUTORIAL.md line {line}', file=sys.stderr, flush=True)")
        parts.append(f"exec(compile({code!r}, 'TUTORIAL.md:{line}', 'exec'))")
    return "\n".join(parts) + "\n"


def test_tutorial_runs_in_order(tmp_path: Path) -> None:
    blocks = python_blocks(TUTORIAL.read_text())
    assert len(blocks) > 20
    skipped = [line for line, runnable, _ in blocks if not runnable]
    if skipped:
        print(f"skipped (marked {NO_RUN}): blocks at lines {skipped}")
    runnable = [b for b in blocks if b[1]]

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "DLOAD_CEILING_DIRECTORIES": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
    })
    script = tmp_path / "tutorial_blocks.py"
    script.write_text(_script(runnable))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        started = re.findall(r"--- block at TUTORIAL.md line (\d+)", done.stderr)
        line = int(started[-1]) if started else None
        code = next((c for ln, _, c in runnable if ln == line), "")
        raise AssertionError(
            f"the block at docs/TUTORIAL.md line {line} failed:\n{code}\n"
            f"stdout (tail):\n{done.stdout[-2000:]}\nstderr (tail):\n{done.stderr[-5000:]}"
        )
    assert (home / ".local" / "share" / "dload" / "root").is_dir()  # the default root was used
