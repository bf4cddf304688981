"""A new user's first hour, as the docs say it (QA docs55).

- ``to_pandas()`` on an install without pandas (pandas is an extra) failed with a bare
  ``ModuleNotFoundError``; it names the extra now, as the torch adapter does;
- an ``s3://`` root without s3fs said "use a local path or s3://bucket/prefix" to a root
  that was one; it names the ``[s3]`` extra;
- ``dload ls`` before the first commit failed on the embedded default root (nothing a user
  could have mistyped), where the tutorial promises ``(none)``;
- derive's unknown-keyword error mixed a plain list with a Python one; ``dload log``'s
  ``restore`` rows ran into the next column.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import dload

from dload_arrow import Repository

_NO = """import sys
class _Missing:  # as if {mod} were not installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == {mod!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _Missing())
"""


def _without(module: str, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _NO.format(mod=module) + code], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def test_to_pandas_without_pandas_names_the_extra(tmp_path: Path, local_root: str) -> None:
    code = (f"from dload_arrow import Repository\nrepo = Repository.open({local_root!r})\n"
            "repo.commit('p', [('a', {'x': 1})], progress=False)\n"
            "try:\n    repo.dataset('p').to_pandas()\n"
            "except ImportError as e:\n    print('said:', e)\n")
    r = _without("pandas", code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "said: to_pandas() needs pandas, which is not installed here: pip install "
        "'dload-arrow[pandas]' (or read with to_arrow() or to_polars())"), r.stdout


def test_an_s3_root_without_s3fs_names_the_extra(tmp_path: Path) -> None:
    code = ("from dload_arrow import Repository\n"
            "try:\n    Repository.open('s3://bucket/datasets')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    r = _without("s3fs", code, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("ConfigError root 's3://bucket/datasets': S3 roots need s3fs, "
                                "which is not installed here: pip install 'dload-arrow[s3]'")


def test_ls_on_the_untouched_default_root_is_empty_not_an_error(tmp_path: Path) -> None:
    default = Path(os.environ["HOME"]) / ".local" / "share" / "dload" / "root"
    r = dload("ls", cwd=tmp_path)
    assert r.out.strip() == "(none)" and f"no datasets under {default} (the default root) yet: " \
        "`dload demo` or `dload commit NAME --from PATH` creates the first" in r.err, r.err
    assert dload("ls", "--json", cwd=tmp_path).out.strip() == "[]"
    assert not default.exists()  # listing made nothing
    r = dload("ls", "--root", str(tmp_path / "typo"), cwd=tmp_path, rc=1)  # a mistype still is
    assert f"root {tmp_path / 'typo'} (from --root) does not exist" in r.err
    r = dload("info", "x", cwd=tmp_path, rc=1)  # a named dataset: where to look is the question
    assert "(from the default root) does not exist" in r.err


def test_derive_lists_what_it_takes_in_one_form(repo: Repository) -> None:
    repo.commit("a", [("k", {"x": 1})], progress=False)
    with pytest.raises(TypeError) as e:
        repo.derive("b", repo.dataset("a").pipeline(), forse=True)  # type: ignore[call-arg]
    assert str(e.value) == (
        "derive('b') got unexpected keyword argument(s) forse; it takes meta, recipe, "
        "progress, force, shard_size, row_group_size, schema")


def test_log_keeps_two_spaces_after_every_action(repo: Repository, local_root: str) -> None:
    repo.commit("d", [("a", {"x": 1})], progress=False)
    v2 = repo.append("d", [("b", {"x": 2})], progress=False).version
    os.remove(os.path.join(local_root, "datasets", "d", "refs", "latest"))
    repo.tag("d", v2, "latest")  # logged as a restore
    moves = [line for line in str(repo.lineage("d")).split("ref moves:\n", 1)[1].splitlines()
             if line.startswith("  20")]
    assert [line.split()[3] for line in moves] == ["commit", "append", "restore"], moves
    for line in moves:  # every action, the longest included, is followed by two spaces
        assert re.search(r" latest {5}(commit|append|restore) {2,}\S", line), line
