"""Start-up cost: ``import dload_arrow`` and ``dload --help`` load no heavy library.

pyarrow, numpy, duckdb and the S3 client took 0.5-0.8 s to import before a ``dload --help``
could print; the package's names now load on first use (PEP 562).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import dload_arrow

HEAVY = ("pyarrow", "numpy", "duckdb", "pandas", "polars", "fsspec", "s3fs", "torch",
         "asyncio")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("code", [
    "import dload_arrow",
    "from dload_arrow import DloadError, NotFoundError, __version__",
    "import dload_arrow.cli.main",
])
def test_importing_the_package_and_the_cli_loads_no_heavy_library(code: str) -> None:
    loaded = _modules_after(code)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_dload_help_runs_without_the_heavy_libraries() -> None:
    code = ("import sys\nfrom dload_arrow.cli.main import main\n"
            "rc = main(['--help'])\n"
            "assert rc == 0, rc\n"
            "heavy = set(sys.modules) & set(sys.argv[1].split())\n"
            "assert not heavy, sorted(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code, " ".join(HEAVY)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "commit" in out.stdout and "demo" in out.stdout


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in dload_arrow.__all__:
        assert getattr(dload_arrow, name) is not None, name
        assert name in dir(dload_arrow)
    from dload_arrow import Repository, mix
    from dload_arrow.pipeline import mix as pipeline_mix
    from dload_arrow.repository import Repository as Repo

    assert Repository is Repo and mix is pipeline_mix
    assert dload_arrow.pipeline.mix is pipeline_mix  # subpackages still reachable by attribute
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dload_arrow.nope  # noqa: B018
