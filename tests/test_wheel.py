"""The built wheel ships the package, the SQL files from sql/ and the `dload` console script."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Both come with the dev extra; building without isolation needs no network.
    import build  # noqa: F401
    import hatchling  # noqa: F401

    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
         str(REPO)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (whl,) = out.glob("dload_arrow-*.whl")
    return whl


def test_every_sql_file_is_inside_the_wheel(wheel: Path) -> None:
    sql = sorted(
        p.relative_to(REPO / "sql").as_posix() for p in (REPO / "sql").rglob("*") if p.is_file()
    )
    assert sql, "sql/ is empty"
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [p for p in sql if f"dload_arrow/sql/{p}" not in names]
    assert missing == []
    with zipfile.ZipFile(wheel) as z:
        for p in sql:
            assert z.read(f"dload_arrow/sql/{p}") == (REPO / "sql" / p).read_bytes()


def test_wheel_holds_the_package_and_the_console_script(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = z.read(entry_points).decode()
    assert "dload_arrow/__init__.py" in names
    assert "dload_arrow/store/commit.py" in names
    assert "dload_arrow/py.typed" in names  # PEP 561: type checkers read our annotations
    assert not any(n.startswith("tests/") for n in names)
    assert "dload = dload_arrow.cli.entry:console" in scripts
